package online

import (
	"math"

	"github.com/freqlens/freqlens/model"
)

// Prediction intervals by online conformal prediction.
//
// Every tracked series keeps, per interval level, horizon step and channel,
// two thresholds in normalised units: qLo for how far the realised value may
// fall below the forecast and qHi for how far above. The interval issued is
//
//	[ŷ − qLo·σ, ŷ + qHi·σ]
//
// with σ the series' scale (the model's training std for a mixed model, the
// series' running std for an independent one), and its bounds are kept until
// the step is realised. Then each side moves as adaptive conformal
// inference prescribes (Gibbs & Candès 2021, in its quantile-tracking form,
// Angelopoulos, Candès & Tibshirani 2023), on the log scale:
//
//	log q ← log q + η·(miss − α/2),  α = 1 − level,
//
// where miss is 1 when the realised value fell outside that side of the
// issued interval. A side that misses more often than α/2 widens, one that
// misses less narrows, so whatever the forecaster and however its errors
// drift, the rate of misses is held at α: over T steps the fraction of
// misses of a side is within log(q_max/q_min)/(η·T) of α/2, since log q
// moves by exactly η·(misses − T·α/2). Updating log q rather than q makes
// the step a fraction of the threshold itself, so one rate suits every data
// scale and horizon step, and a threshold grows tenfold in
// ln 10/(η·(1 − α/2)) misses when the errors jump (23 at η = 0.1), where an
// additive step sized for the old errors would take hundreds. Two sides
// instead of one symmetric width let the interval follow a forecast that
// is biased, as a model is after its data changes.
//
// A new series starts from the mean thresholds of the calibrated series;
// before any series is calibrated, from the quantiles of the model's errors
// on held-out windows recorded at training (model.Meta.ErrorQuantiles:
// split conformal prediction, valid from the first forecast while the data
// looks like the held-out windows), published at once; and for a model
// without them, from a Gaussian guess at its first forecast (σ = √(π/2)·the mean absolute error seen so far at that step),
// moved with a larger step (warmRate) until its intervals are published once
// it has scored warmScores forecasts over the whole horizon (or at once when
// it started from calibrated series). Series
// beyond online.track_series are not scored; their forecasts get the mean
// thresholds of the calibrated series, scaled by the model's std (mixed) or
// their window's own (independent).

// warmScores is how many forecasts a new series must have scored at the
// last horizon step before its own thresholds are published.
const warmScores = 32

// warmRate multiplies the step (up to 1) while a series warms up: its
// thresholds start from a guess and should be near their level after
// warmScores steps, and a high level narrows by only η·α/2 per hit (a 95%
// threshold twice too wide takes 277 hits to halve at η = 0.1, 92 at 0.3).
// Larger steps leave the thresholds noisier when they are published:
// measured on the random feeds of TestIntervalCoverageOnRandomFeeds (30
// seeds) and the pipeline's end-to-end test, 3 kept both within 1 point on
// average, where 10 over-covered by up to 7 points in a short run.
const warmRate = 3

// intervals is the calibration shared by all series: the levels, the step
// scale per horizon step and channel, the mean thresholds of calibrated
// series, and the coverage of the intervals issued.
type intervals struct {
	levels []float64
	// grow and shrink multiply a threshold after a miss and after a hit,
	// per level: exp(η·(1 − α/2)) and exp(−η·α/2); warm* with the larger
	// step of a series that is not calibrated yet.
	grow, shrink, warmGrow, warmShrink []float64
	n                                  int     // H×C
	decay                              float64 // of the running mean absolute error
	// absErr and weight: the exponentially weighted mean absolute
	// normalised error per horizon step and channel (absErr/weight).
	absErr, weight []float64
	// prior holds the lower then the upper thresholds (2 × levels × H × C)
	// from the model's held-out errors (model.Meta.ErrorQuantiles); nil
	// when the model has none.
	prior []float64
	// sumLo and sumHi add up the thresholds of the calibrated series, per
	// level × H × C; calibrated counts them.
	sumLo, sumHi []float64
	calibrated   int
	// Coverage of the published intervals, per level: totals, and an
	// exponentially weighted rate.
	scored, covered []int64
	recent, recentW []float64
}

func newIntervals(levels []float64, rate float64, H, C, halfLife int, prior *model.ErrorQuantiles) *intervals {
	if len(levels) == 0 {
		return nil
	}
	n, k := H*C, len(levels)
	iv := &intervals{
		levels: append([]float64(nil), levels...), n: n,
		decay:  math.Pow(0.5, 1/float64(halfLife)),
		absErr: make([]float64, n), weight: make([]float64, n),
		sumLo: make([]float64, k*n), sumHi: make([]float64, k*n),
		scored: make([]int64, k), covered: make([]int64, k),
		recent: make([]float64, k), recentW: make([]float64, k),
	}
	if prior != nil && prior.Horizon == H && prior.Channels == C {
		// The thresholds of the model's held-out errors: where every series
		// starts, published at once.
		iv.prior = make([]float64, 2*k*n)
		for l, level := range levels {
			for i := range n {
				h, c := i/C, i%C
				iv.prior[l*n+i] = max(-prior.Quantile((1-level)/2, h, c), minThreshold)
				iv.prior[(k+l)*n+i] = max(prior.Quantile((1+level)/2, h, c), minThreshold)
			}
		}
	}
	warm := min(warmRate*rate, 1)
	for _, l := range levels {
		half := (1 - l) / 2
		iv.grow = append(iv.grow, math.Exp(rate*(1-half)))
		iv.shrink = append(iv.shrink, math.Exp(-rate*half))
		iv.warmGrow = append(iv.warmGrow, math.Exp(warm*(1-half)))
		iv.warmShrink = append(iv.warmShrink, math.Exp(-warm*half))
	}
	return iv
}

// seriesIntervals is one series' calibration: its thresholds, the bounds
// issued at each of its last H steps (as offsets from the forecast, in the
// input's units), and whether its intervals are published.
type seriesIntervals struct {
	lo, hi []float64 // levels × H × C; NaN until the first guess
	// below and above are the issued offsets, H slots × levels × H × C:
	// the interval of slot s, level k, step h, channel c is
	// [ŷ − below, ŷ + above]; NaN where none was issued.
	below, above []float32
	published    []bool // per slot: the slot's intervals were published
	scoredLast   int    // forecasts scored at the last horizon step
	calibrated   bool   // counted in intervals.sum*
}

func (iv *intervals) newSeries(H int) *seriesIntervals {
	k := len(iv.levels)
	s := &seriesIntervals{
		lo: make([]float64, k*iv.n), hi: make([]float64, k*iv.n),
		below: make([]float32, H*k*iv.n), above: make([]float32, H*k*iv.n),
		published: make([]bool, H),
	}
	switch {
	case iv.calibrated > 0:
		inv := 1 / float64(iv.calibrated)
		for i := range s.lo {
			s.lo[i], s.hi[i] = iv.sumLo[i]*inv, iv.sumHi[i]*inv
		}
		iv.join(s)
	case iv.prior != nil:
		copy(s.lo, iv.prior[:len(s.lo)])
		copy(s.hi, iv.prior[len(s.lo):])
		iv.join(s)
	default:
		for i := range s.lo {
			s.lo[i], s.hi[i] = math.NaN(), math.NaN()
		}
	}
	return s
}

// join counts s among the calibrated series.
func (iv *intervals) join(s *seriesIntervals) {
	s.calibrated = true
	iv.calibrated++
	for i := range s.lo {
		iv.sumLo[i] += s.lo[i]
		iv.sumHi[i] += s.hi[i]
	}
}

// leave removes s from the calibrated series (it is forgotten).
func (iv *intervals) leave(s *seriesIntervals) {
	if !s.calibrated {
		return
	}
	s.calibrated = false
	iv.calibrated--
	for i := range s.lo {
		iv.sumLo[i] -= s.lo[i]
		iv.sumHi[i] -= s.hi[i]
	}
	if iv.calibrated == 0 { // no rounding left behind
		clear(iv.sumLo)
		clear(iv.sumHi)
	}
}

// meanAbs is the running mean absolute normalised error at index i (h·C+c),
// 0 before any.
func (iv *intervals) meanAbs(i int) float64 {
	if iv.weight[i] == 0 {
		return 0
	}
	return iv.absErr[i] / iv.weight[i]
}

// issue computes the interval offsets of a forecast of series s issued in
// slot, from its thresholds and the scale of each channel (len(scale) = C),
// and stores them.
// It returns whether they are published.
func (iv *intervals) issue(s *seriesIntervals, slot int, scale []float64) bool {
	k, n := len(iv.levels), iv.n
	publish := s.calibrated
	below := s.below[slot*k*n : (slot+1)*k*n]
	above := s.above[slot*k*n : (slot+1)*k*n]
	for l, level := range iv.levels {
		z := gaussianHalfWidth(level)
		for i := range n {
			j := l*n + i
			if math.IsNaN(s.lo[j]) {
				// The first guess: a Gaussian of the mean absolute error
				// seen so far at this step (σ = √(π/2)·E|e|).
				if m := iv.meanAbs(i); m > 0 {
					s.lo[j] = max(z*math.Sqrt(math.Pi/2)*m, minThreshold)
					s.hi[j] = s.lo[j]
				}
			}
			sc := scale[i%len(scale)]
			below[j], above[j] = float32(s.lo[j]*sc), float32(s.hi[j]*sc)
			if l > 0 {
				// Nested: a higher level's interval holds the lower one's.
				// Each level's thresholds move by its own misses, so they
				// can cross for a while; widening only raises coverage.
				below[j], above[j] = max(below[j], below[j-n]), max(above[j], above[j-n])
			}
			if math.IsNaN(s.lo[j]) {
				publish = false
			}
		}
	}
	s.published[slot] = publish
	return publish
}

// score moves the thresholds of step h (0-based), channel c of series s by
// the forecast issued in slot, which predicted f where v was realised, and
// counts the coverage of its published intervals. e is the normalised
// error, which feeds the step scale.
func (iv *intervals) score(s *seriesIntervals, slot, h, c, C int, f, v, e float64) {
	k, n := len(iv.levels), iv.n
	i := h*C + c
	iv.absErr[i] = iv.decay*iv.absErr[i] + math.Abs(e)
	iv.weight[i] = iv.decay*iv.weight[i] + 1
	base := slot * k * n
	for l := range iv.levels {
		j := l*n + i
		below, above := float64(s.below[base+j]), float64(s.above[base+j])
		if math.IsNaN(below) || math.IsNaN(above) || math.IsNaN(v) || math.IsNaN(f) {
			continue
		}
		missLo, missHi := v < f-below, v > f+above
		if s.published[slot] {
			iv.count(l, !missLo && !missHi)
		}
		iv.move(s, l, &s.lo[j], &iv.sumLo[j], missLo)
		iv.move(s, l, &s.hi[j], &iv.sumHi[j], missHi)
	}
}

// minThreshold keeps a threshold positive, so that its log is defined.
const minThreshold = 1e-9

// move multiplies the threshold *q of level index l by grow after a miss
// and by shrink after a hit, and keeps the calibrated series' sum *sum in
// step.
func (iv *intervals) move(s *seriesIntervals, l int, q, sum *float64, miss bool) {
	grow, shrink := iv.grow[l], iv.shrink[l]
	if !s.calibrated {
		grow, shrink = iv.warmGrow[l], iv.warmShrink[l]
	}
	old := *q
	if miss {
		*q = max(old*grow, minThreshold)
	} else {
		*q = max(old*shrink, minThreshold)
	}
	if s.calibrated {
		*sum += *q - old
	}
}

// count records whether a published interval of level index l covered its
// realised value.
func (iv *intervals) count(l int, covered bool) {
	iv.scored[l]++
	hit := 0.0
	if covered {
		iv.covered[l]++
		hit = 1
	}
	iv.recent[l] = iv.decay*iv.recent[l] + hit
	iv.recentW[l] = iv.decay*iv.recentW[l] + 1
}

// scoredLastStep notes that s scored a forecast at the last horizon step,
// and publishes its intervals once it has scored warmScores of them.
func (iv *intervals) scoredLastStep(s *seriesIntervals) {
	s.scoredLast++
	if !s.calibrated && s.scoredLast >= warmScores {
		for i := range s.lo {
			if math.IsNaN(s.lo[i]) {
				return
			}
		}
		iv.join(s)
	}
}

// untracked fills lower and upper (one H×C slice per level) for a forecast
// fc of a series that is not tracked, from the mean thresholds of the
// calibrated series; it returns false when none is calibrated.
func (iv *intervals) untracked(fc []float64, scale []float64, lower, upper [][]float64) bool {
	if iv.calibrated == 0 {
		return false
	}
	inv := 1 / float64(iv.calibrated)
	for l := range iv.levels {
		for i, y := range fc {
			sc := scale[i%len(scale)]
			lower[l][i], upper[l][i] = atFloat32(y-iv.sumLo[l*iv.n+i]*inv*sc), atFloat32(y+iv.sumHi[l*iv.n+i]*inv*sc)
			if l > 0 { // nested, as issue makes them
				lower[l][i], upper[l][i] = min(lower[l][i], lower[l-1][i]), max(upper[l][i], upper[l-1][i])
			}
		}
	}
	return true
}

// write fills lower and upper from the offsets issued in slot.
func (iv *intervals) write(s *seriesIntervals, slot int, fc []float64, lower, upper [][]float64) {
	k, n := len(iv.levels), iv.n
	base := slot * k * n
	for l := range iv.levels {
		for i, y := range fc {
			j := base + l*n + i
			lower[l][i], upper[l][i] = atFloat32(y-float64(s.below[j])), atFloat32(y+float64(s.above[j]))
		}
	}
}

// atFloat32 rounds a bound to float32 precision, which the output layouts
// keep (package wire), so that what is published is what consumers decode.
func atFloat32(v float64) float64 { return float64(float32(v)) }

// gaussianHalfWidth is the half-width, in standard deviations, of the
// central interval of a Gaussian holding level of its mass.
func gaussianHalfWidth(level float64) float64 { return math.Sqrt2 * math.Erfinv(level) }

// Coverage is the coverage of the published intervals of one level.
type Coverage struct {
	Level float64 `json:"level"`
	// Scored and Covered count the published interval steps whose value was
	// realised, and those that held it.
	Scored  int64 `json:"scored"`
	Covered int64 `json:"covered"`
	// Recent is the rate over about the last online.error_half_life scored
	// steps (exponentially weighted); 0 before any.
	Recent float64 `json:"recent"`
}

// Rate returns Covered/Scored over the stretch since an earlier Coverage of
// the same level (zero Coverage: since the start), NaN when nothing was
// scored in between.
func (c Coverage) Rate(since Coverage) float64 {
	n := c.Scored - since.Scored
	if n <= 0 {
		return math.NaN()
	}
	return float64(c.Covered-since.Covered) / float64(n)
}

func (iv *intervals) coverage() []Coverage {
	if iv == nil {
		return nil
	}
	out := make([]Coverage, len(iv.levels))
	for l, level := range iv.levels {
		out[l] = Coverage{Level: level, Scored: iv.scored[l], Covered: iv.covered[l]}
		if iv.recentW[l] > 0 {
			out[l].Recent = iv.recent[l] / iv.recentW[l]
		}
	}
	return out
}
