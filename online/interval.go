package online

import (
	"math"

	"github.com/freqlens/freqlens/model"
)

// Prediction intervals by online conformal prediction.
//
// The interval issued for a tracked series at horizon step h, channel c
// and level l is
//
//	[ŷ − κlo_lc·m_hc·σ_c,  ŷ + κhi_lc·m_hc·σ_c]
//
// with σ_c the series' scale (the model's training std for a mixed model,
// the series' running std for an independent one), m_hc the mean absolute
// normalised error at step h of channel c over every tracked series (the
// shape of the errors along the horizon: small at the first steps, larger
// later, the same for every series a model serves), and κ the series' own
// thresholds in units of m: one per level, side and channel. So every
// series has its own width (a quiet sensor and a noisy one each get theirs)
// while what all series share, how the error grows with the step, is
// learnt once from all of them.
//
// Every forecast is scored at sampledSteps of its H steps, drawn at random
// one from each part of the horizon (a hash of the series and the step, so
// a run repeats); the forecast and the bounds published at those steps are
// kept until the step is realised. Then each side of each level moves as
// adaptive conformal inference prescribes (Gibbs & Candès 2021, in its
// quantile-tracking form, Angelopoulos, Candès & Tibshirani 2023), on the
// log scale:
//
//	log κ ← log κ + η·(miss − α/2),  α = 1 − level,
//
// where miss is 1 when the realised value fell outside that side of the
// published interval. A side that misses more often than α/2 widens, one
// that misses less narrows, so whatever the forecaster and however its
// errors drift, each series' rate of misses over its sampled steps is held
// at α: over T of them the fraction of misses of a side is within
// log(κ_max/κ_min)/(η·T) of α/2, since log κ moves by exactly
// η·(misses − T·α/2). As the sampled steps are uniform within each part of
// the horizon, their misses are those of the whole horizon without bias.
// Updating log κ rather than κ makes the step a fraction of the threshold
// itself, so one rate suits every data scale, and a threshold grows
// tenfold in ln 10/(η·(1 − α/2)) misses when the errors jump (23 at
// η = 0.1). Two sides instead of one symmetric width let the interval
// follow a forecast that is biased, as a model is after its data changes.
//
// Scoring a sample of steps instead of all H (each realised step against
// every forecast that predicted it) is what keeps a series small: the H²
// issued bounds per level the full scoring needs (147 KB per series at
// H = 96 with two levels) become 2·sampledSteps·H per level.
//
// A new series starts from the mean thresholds of the calibrated series;
// before any series is calibrated, from the quantiles of the model's errors
// on held-out windows recorded at training (model.Meta.ErrorQuantiles:
// split conformal prediction, valid from the first forecast while the data
// looks like the held-out windows), published at once; and for a model
// without them, from a Gaussian guess, published once warmScores of its
// forecasts have completed their horizon. Those starts are the widths of
// other series, or of all of them pooled, and a quiet sensor among noisy
// ones would take hundreds of steps to narrow from there by the
// calibration's small steps. So while a series warms up (its first
// warmScores forecasts) its thresholds follow its own errors: once it has
// ownErrors sampled errors, κ is the Gaussian guess for their mean
// absolute size, z·√(π/2)·mean(|e|/m) (the half-width of a Gaussian whose
// mean absolute deviation is that), and from the end of the warm-up the
// calibration moves it. Series beyond online.track_series are not scored;
// their forecasts get the mean thresholds of the calibrated series, scaled
// by the model's std (mixed) or their window's own (independent).

// sampledSteps is how many steps of each issued forecast are scored: one
// drawn from each of sampledSteps equal parts of the horizon.
const sampledSteps = 2

// warmScores is how many forecasts of a new series complete their horizon
// while it warms up: its thresholds follow its own errors, and without a
// start from other series or the model its intervals are published after.
const warmScores = 32

// ownErrors is how many sampled errors a warming series needs before its
// thresholds follow them.
const ownErrors = 8

// priorWeight is how many errors the shape's prior (from the model's
// held-out error quantiles) counts for, per step and channel, before the
// realised errors outweigh it.
const priorWeight = 8

// minThreshold keeps a threshold positive, so that its log is defined.
const minThreshold = 1e-9

// intervals is the calibration shared by all series: the levels, the
// shape of the errors along the horizon, the mean thresholds of the
// calibrated series, the coverage of the intervals issued, and scratch for
// the tracker's goroutine (it holds the tracker's lock).
type intervals struct {
	levels []float64
	// grow and shrink multiply a threshold after a miss and after a hit,
	// per level: exp(η·(1 − α/2)) and exp(−η·α/2).
	grow, shrink []float64
	// guess is the Gaussian first guess of κ per level, z·√(π/2).
	guess []float64
	H, C  int
	n     int     // H×C
	decay float64 // of the running mean absolute error
	// absErr and weight: the exponentially weighted mean absolute
	// normalised error per horizon step and channel (absErr/weight), the
	// shape m.
	absErr, weight []float64
	// prior holds κ from the model's held-out errors, the lower sides then
	// the upper (2 × levels × C); nil when the model has none.
	prior []float64
	// sumLo and sumHi add up the thresholds of the calibrated series, per
	// level × C; calibrated counts them.
	sumLo, sumHi []float64
	calibrated   int
	// Coverage of the published intervals at the sampled steps, per
	// level: totals, and an exponentially weighted rate.
	scored, covered []int64
	recent, recentW []float64
	// Scratch: the shape at this issue (n), the offsets below and above
	// the forecast (levels × n).
	m, below, above []float64
}

func newIntervals(levels []float64, rate float64, H, C, halfLife int, prior *model.ErrorQuantiles) *intervals {
	if len(levels) == 0 {
		return nil
	}
	n, k := H*C, len(levels)
	iv := &intervals{
		levels: append([]float64(nil), levels...), H: H, C: C, n: n,
		decay:  math.Pow(0.5, 1/float64(halfLife)),
		absErr: make([]float64, n), weight: make([]float64, n),
		sumLo: make([]float64, k*C), sumHi: make([]float64, k*C),
		scored: make([]int64, k), covered: make([]int64, k),
		recent: make([]float64, k), recentW: make([]float64, k),
		m: make([]float64, n), below: make([]float64, k*n), above: make([]float64, k*n),
	}
	if prior != nil && prior.Horizon == H && prior.Channels == C {
		iv.setPrior(prior)
	}
	for _, l := range levels {
		half := (1 - l) / 2
		iv.grow = append(iv.grow, math.Exp(rate*(1-half)))
		iv.shrink = append(iv.shrink, math.Exp(-rate*half))
		iv.guess = append(iv.guess, gaussianHalfWidth(l)*math.Sqrt(math.Pi/2))
	}
	return iv
}

// setPrior starts the shape from the mean absolute error of the model's
// held-out errors at each step, and κ from their quantiles in units of it,
// so that the first intervals are the held-out quantiles (exactly so when
// the quantiles grow along the horizon in proportion to the mean absolute
// error).
func (iv *intervals) setPrior(q *model.ErrorQuantiles) {
	k, C := len(iv.levels), iv.C
	iv.prior = make([]float64, 2*k*C)
	for i := range iv.n {
		h, c := i/C, i%C
		mae := max(quantileMeanAbs(q, h, c), minThreshold)
		iv.absErr[i], iv.weight[i] = priorWeight*mae, priorWeight
		for l, level := range iv.levels {
			iv.prior[l*C+c] += max(-q.Quantile((1-level)/2, h, c), minThreshold) / mae / float64(iv.H)
			iv.prior[(k+l)*C+c] += max(q.Quantile((1+level)/2, h, c), minThreshold) / mae / float64(iv.H)
		}
	}
}

// quantileMeanAbs is E|e| of the error at step h, channel c, from its
// recorded quantiles: ∫|Q(p)|dp by the trapezoid rule between the recorded
// probabilities, with the outermost quantile held over the tails.
func quantileMeanAbs(q *model.ErrorQuantiles, h, c int) float64 {
	at := func(k int) float64 { return math.Abs(q.Values[(k*q.Horizon+h)*q.Channels+c]) }
	n := len(q.Probs)
	s := q.Probs[0]*at(0) + (1-q.Probs[n-1])*at(n-1)
	for k := 1; k < n; k++ {
		s += (q.Probs[k] - q.Probs[k-1]) * (at(k) + at(k-1)) / 2
	}
	return s
}

// seriesIntervals is one series' calibration: its thresholds, the bounds
// published at its sampled steps, and whether its intervals are published.
type seriesIntervals struct {
	lo, hi []float64 // κ, levels × C; NaN until the first guess
	// bounds holds, per slot and sampled step, the published lower bounds
	// (levels × C) then the upper ones: H × sampledSteps × 2 × levels × C.
	bounds     []float32
	published  []bool // per slot: the slot's intervals were published
	completed  int    // forecasts whose horizon was realised
	calibrated bool   // counted in intervals.sum*
	// scored and covered count the series' own published sampled steps
	// that were realised, per level, and those that held the value.
	scored, covered []uint32
	// own sums |e|/m of the sampled errors of the warm-up per channel;
	// owned counts them.
	own   []float64
	owned int
}

func (iv *intervals) newSeries() *seriesIntervals {
	k, C := len(iv.levels), iv.C
	s := &seriesIntervals{
		lo: make([]float64, k*C), hi: make([]float64, k*C),
		bounds:    make([]float32, iv.H*sampledSteps*2*k*C),
		published: make([]bool, iv.H),
		scored:    make([]uint32, k), covered: make([]uint32, k),
		own: make([]float64, C),
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

// noteError adds the normalised error e at index i (h·C+c) to the shape.
func (iv *intervals) noteError(i int, e float64) {
	iv.absErr[i] = iv.decay*iv.absErr[i] + math.Abs(e)
	iv.weight[i] = iv.decay*iv.weight[i] + 1
}

// shape fills iv.m with the mean absolute error of every step and channel;
// a step without errors yet takes the straight line between its nearest
// neighbours that have some (or the nearest one). It returns false when a
// channel has none at all.
func (iv *intervals) shape() bool {
	H, C := iv.H, iv.C
	for c := range C {
		prev := -1 // the last step with errors
		for h := range H {
			i := h*C + c
			if iv.weight[i] == 0 {
				continue
			}
			iv.m[i] = iv.absErr[i] / iv.weight[i]
			switch {
			case prev < 0:
				for g := range h {
					iv.m[g*C+c] = iv.m[i]
				}
			case prev < h-1:
				a, b := iv.m[prev*C+c], iv.m[i]
				for g := prev + 1; g < h; g++ {
					iv.m[g*C+c] = a + (b-a)*float64(g-prev)/float64(h-prev)
				}
			}
			prev = h
		}
		if prev < 0 {
			return false
		}
		for g := prev + 1; g < H; g++ {
			iv.m[g*C+c] = iv.m[prev*C+c]
		}
	}
	return true
}

// offsets fills iv.below and iv.above (levels × H×C) with the distances of
// series s's interval bounds from its forecast, given the scale of each
// channel (len C), and reports whether they exist: the shape is known and
// s has thresholds (after the Gaussian guess when it has none yet).
func (iv *intervals) offsets(s *seriesIntervals, scale []float64) bool {
	if !iv.shape() {
		return false
	}
	k, n, C := len(iv.levels), iv.n, iv.C
	for l := range k {
		for c := range C {
			if j := l*C + c; math.IsNaN(s.lo[j]) {
				s.lo[j], s.hi[j] = iv.guess[l], iv.guess[l]
			}
		}
	}
	for l := range k {
		for i := range n {
			c := i % C
			w := iv.m[i] * scale[c]
			b, a := s.lo[l*C+c]*w, s.hi[l*C+c]*w
			if l > 0 {
				// Nested: a higher level's interval holds the lower one's.
				// Each level's thresholds move by its own misses, so they
				// can cross for a while; widening only raises coverage.
				b, a = max(b, iv.below[(l-1)*n+i]), max(a, iv.above[(l-1)*n+i])
			}
			iv.below[l*n+i], iv.above[l*n+i] = b, a
		}
	}
	return true
}

// issue computes the intervals of forecast fc (H×C) of series s issued in
// slot, whose sampled steps are lags (1-based; 0 for none), with the scale
// of each channel. It keeps the bounds at the sampled steps and, when lower
// and upper have room (one H×C slice per level), writes every bound there.
// It returns whether the intervals are published.
func (iv *intervals) issue(s *seriesIntervals, slot int, lags []uint16, fc, scale []float64, lower, upper [][]float64) bool {
	k, n, C := len(iv.levels), iv.n, iv.C
	ok := iv.offsets(s, scale)
	b := s.bounds[slot*sampledSteps*2*k*C : (slot+1)*sampledSteps*2*k*C]
	for r, lag := range lags {
		rec := b[r*2*k*C : (r+1)*2*k*C]
		for j := range rec {
			rec[j] = float32(math.NaN())
		}
		if lag == 0 || !ok {
			continue
		}
		h := int(lag) - 1
		for l := range k {
			for c := range C {
				i, y := h*C+c, fc[h*C+c]
				rec[l*C+c] = float32(y - iv.below[l*n+i])
				rec[(k+l)*C+c] = float32(y + iv.above[l*n+i])
			}
		}
	}
	s.published[slot] = ok && s.calibrated
	if !s.published[slot] {
		return false
	}
	if len(lower) == k {
		iv.write(fc, lower, upper)
	}
	return true
}

// reissue writes the intervals of a forecast issued again at a step that
// already had one (after a restart, or a late correction) from series s's
// current thresholds, keeping the sampled bounds of the first; it returns
// whether they are published.
func (iv *intervals) reissue(s *seriesIntervals, slot int, fc, scale []float64, lower, upper [][]float64) bool {
	if !s.published[slot] || len(lower) != len(iv.levels) || !iv.offsets(s, scale) {
		return false
	}
	iv.write(fc, lower, upper)
	return true
}

// write fills lower and upper from fc and the offsets in iv.below and
// iv.above.
func (iv *intervals) write(fc []float64, lower, upper [][]float64) {
	n := iv.n
	for l := range iv.levels {
		for i, y := range fc {
			lower[l][i], upper[l][i] = atFloat32(y-iv.below[l*n+i]), atFloat32(y+iv.above[l*n+i])
		}
	}
}

// score moves series s's thresholds of channel c by the bounds published
// for sampled step r of slot at horizon step h (0-based), whose realised
// value is v and normalised error e, and counts the coverage of published
// intervals. While s warms up its thresholds follow its own errors
// instead.
func (iv *intervals) score(s *seriesIntervals, slot, r, h, c int, v, e float64) {
	k, C := len(iv.levels), iv.C
	rec := s.bounds[(slot*sampledSteps+r)*2*k*C:][:2*k*C]
	warm := s.completed < warmScores
	for l := range k {
		lo, hi := float64(rec[l*C+c]), float64(rec[(k+l)*C+c])
		if math.IsNaN(lo) || math.IsNaN(hi) || math.IsNaN(v) {
			continue
		}
		missLo, missHi := v < lo, v > hi
		if s.published[slot] {
			held := !missLo && !missHi
			iv.count(l, held)
			s.scored[l]++
			if held {
				s.covered[l]++
			}
		}
		if !warm || s.owned < ownErrors {
			j := l*C + c
			iv.move(s, l, &s.lo[j], &iv.sumLo[j], missLo)
			iv.move(s, l, &s.hi[j], &iv.sumHi[j], missHi)
		}
	}
	if !warm || math.IsNaN(e) {
		return
	}
	i := h*C + c
	if m := iv.absErr[i] / iv.weight[i]; m > 0 {
		s.own[c] += math.Abs(e) / m
		if c == C-1 {
			s.owned++
		}
	}
	if s.owned >= ownErrors {
		own := s.own[c] / float64(s.owned)
		for l := range k {
			j := l*C + c
			q := max(iv.guess[l]*own, minThreshold)
			if s.calibrated && !math.IsNaN(s.lo[j]) {
				iv.sumLo[j] += q - s.lo[j]
				iv.sumHi[j] += q - s.hi[j]
			}
			s.lo[j], s.hi[j] = q, q
		}
	}
}

// move multiplies the threshold *q of level index l by grow after a miss
// and by shrink after a hit, and keeps the calibrated series' sum *sum in
// step.
func (iv *intervals) move(s *seriesIntervals, l int, q, sum *float64, miss bool) {
	old := *q
	if miss {
		*q = max(old*iv.grow[l], minThreshold)
	} else {
		*q = max(old*iv.shrink[l], minThreshold)
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

// completed notes that a forecast of s completed its horizon, and
// publishes s's intervals once warmScores have.
func (iv *intervals) completed(s *seriesIntervals) {
	s.completed++
	if !s.calibrated && s.completed >= warmScores {
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
	if iv.calibrated == 0 || !iv.shape() {
		return false
	}
	inv := 1 / float64(iv.calibrated)
	k, n, C := len(iv.levels), iv.n, iv.C
	for l := range k {
		for i := range n {
			c := i % C
			w := iv.m[i] * scale[c] * inv
			b, a := iv.sumLo[l*C+c]*w, iv.sumHi[l*C+c]*w
			if l > 0 { // nested, as offsets makes them
				b, a = max(b, iv.below[(l-1)*n+i]), max(a, iv.above[(l-1)*n+i])
			}
			iv.below[l*n+i], iv.above[l*n+i] = b, a
		}
	}
	iv.write(fc, lower, upper)
	return true
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
	// realised and scored (the sampled steps of every forecast), and those
	// that held it.
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
