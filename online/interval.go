package online

import (
	"math"
	"time"

	"github.com/freqlens/freqlens/model"
)

// Prediction intervals by online conformal prediction on a locally scaled
// error.
//
// The interval issued for a tracked series at horizon step h, channel c
// and level l, for a target at time τ, is
//
//	[ŷ − g·κlo_lc·w,  ŷ + g·κhi_lc·w],   w = m_hc · p_c(τ) · a_c · σ_c
//
// with g the pooled coverage correction of the level, side and channel
// (interval_pooled.go), and
//
//   - σ_c the series' scale (the model's training std for a mixed model,
//     the series' running std for an independent one), the unit of its
//     normalised errors e = (ŷ − y)/σ;
//   - m_hc the shape of the error along the horizon: the mean |e| at step
//     h over every tracked series divided by its mean over the steps (small
//     at the first steps, larger later; shared, as every series a model
//     serves shares it);
//   - p_c(τ) the shape of the error over the day: the mean of
//     |e|/(m_hc·a_c) of the targets in τ's hour (or part of the day), over
//     every tracked series and the last week or so of data, divided by its
//     mean over the day, shrunk towards 1 while few errors support it
//     (traffic errs more at the rush hours than at 3 a.m.);
//   - a_c the series' error level now (mixed towards its long-run level
//     at far steps: levelAt): a running mean of the sampled
//     |e|/(m_hc·p_c) with a half-life of levelHalfLife sampled errors (a day
//     or so of hourly data, a few hours at ten minutes), each counted at
//     most levelClip times the level (a spike does not blow the band up)
//     and the level held above levelFloor times its slow mean (a sensor
//     that sticks for a day does not collapse it). It rises and falls as
//     fast as the errors do: after a holiday, a storm or an outage the
//     band narrows again as soon as the errors do;
//   - κ the series' thresholds, one per level, side and channel: the
//     quantile of the locally scaled error that the interval needs.
//
// κ is what online conformal prediction calibrates. At each sampled step
// that is realised, each side of each level moves on the log scale by
// adaptive conformal inference (Gibbs & Candès 2021; quantile tracking,
// Angelopoulos, Candès & Tibshirani 2023), in three experts of different
// rates (interval_experts.go):
//
//	log κ ← log κ + η·(miss − α/2),  α = 1 − level,
//
// where miss is 1 when the realised value fell beyond the threshold on
// that side. The scale a carries the error's size, so κ only carries its
// shape (for Gaussian errors z·√(π/2): 1.6 at 80%, 2.5 at 95%), which
// hardly moves, and η can be small (online.interval_rate). κ learns only
// while the series is calm (its fast estimate agrees with its level): in
// a burst a miss says the scale lags, not that the shape changed, and a
// storm's misses would otherwise wind the 95% threshold up for weeks (a
// hit takes back 1/39 of a miss). What is published in bursts is
// calibrated by the pooled correction g instead (interval_pooled.go),
// which moves on every published interval by the same rule and whose miss
// rate over the tracked series converges to α/2 while it is within its
// cap.
//
// Levels are nested strictly: a higher level's thresholds are at least
// nestRatio times the next lower level's, and its bounds are put at least
// one float32 step outside them, so a 95% band always holds the 80% band
// and never equals it. A side's offset is also at most the largest error
// the series made lately (maxAbs): no band is wider than the errors have
// been.
//
// Every forecast is scored at sampledSteps of its H steps, drawn at random
// one from each part of the horizon (a hash of the series and the step, so
// a run repeats); the forecast and the bounds published at those steps are
// kept until the step is realised. Scoring a sample of steps instead of all
// H (each realised step against every forecast that predicted it) is what
// keeps a series small: 2·sampledSteps·H bounds per level instead of H².
//
// A new series starts from the mean thresholds and level of the calibrated
// series; before any series is calibrated, from the model's errors on
// held-out windows recorded at training (model.Meta.ErrorQuantiles: split
// conformal prediction, valid from the first forecast while the data looks
// like the held-out windows), published at once; and for a model without
// them, from a Gaussian guess, published once warmScores of its forecasts
// have completed their horizon. Its level then follows its own errors
// within a few of them (the start counts for levelPriorWeight errors), so
// a quiet sensor among noisy ones has its own narrow band at once. Series
// beyond online.track_series are not scored; their forecasts get the mean
// thresholds and level of the calibrated series, scaled by the model's std
// (mixed) or their window's own (independent).

// sampledSteps is how many steps of each issued forecast are scored: one
// drawn from each of sampledSteps equal parts of the horizon.
const sampledSteps = 2

// warmScores is how many forecasts of a new series complete their horizon
// before its intervals are published when nothing else gives it a start
// (no calibrated series, no held-out quantiles in the model).
const warmScores = 32

// The error level's dynamics, in sampled errors of the series.
const (
	// levelHalfLife is the half-life of the series' error level, and
	// fastHalfLife that of its fast estimate, which the band follows up
	// while it is above the level (fastLead).
	levelHalfLife = 256
	fastHalfLife  = 8
	// levelPriorWeight is how many errors a series' starting level counts
	// for.
	levelPriorWeight = 4
	// levelClip caps one error's part in the level at this many times the
	// level (or its fast estimate, when higher).
	levelClip = 5
	// longHalfLife is the half-life of the long-run level, which floors
	// the level at levelFloor times itself, and of the largest recent
	// error.
	longHalfLife = 1024
	levelFloor   = 0.3
	// longErrors is how many of its own errors the long-run level needs
	// before it floors the level.
	longErrors = 64
	// fastLead: the band's scale is the fast estimate over fastLead when
	// that is above the level. calmRatio: the thresholds and the day shape
	// learn only while the fast estimate is within calmRatio of the
	// level. slowClip caps one error's part in the level, once it rests
	// on settledErrors, at this many times the level. unsettledWeight caps
	// the weight of the errors behind the level once the fast estimate has
	// stayed calmRatio below it for awayErrors errors in a row, or above
	// it for awayUpErrors.
	fastLead        = 1.3
	calmRatio       = 1.5
	slowClip        = 5
	settledErrors   = 64
	unsettledWeight = 32
	awayErrors      = 16
	awayUpErrors    = 96
)

// The shape over the day.
const (
	// profileHalfLife is how long, in data time, the errors of a part of
	// the day are remembered.
	profileHalfLife = 7 * 24 * time.Hour
	// profilePrior is how many errors of a part of the day its shape needs
	// before they weigh as much as the flat start.
	profilePrior = 16
)

// A side's offset is at most maxAbsFactor times the largest recent error
// (decayed with slowHalfLife) once the series has made maxAbsErrors.
const (
	maxAbsFactor = 2
	maxAbsErrors = 16
)

// rateFactors are the learning rates of a threshold's experts, in units of
// online.interval_rate: the slowest keeps a stationary feed's band steady,
// the fastest follows a change of the error's shape within a few hundred
// errors. A faster expert is published only while its pinball loss has
// lately been lower than the slowest's by selectZ standard errors of the
// difference (over about lossHalfLife sampled errors): on a steady feed
// the faster experts' noise costs more than their speed gains, and a
// lucky stretch of one does not make it the published one.
var rateFactors = [...]float64{1, 4, 16}

const (
	experts      = len(rateFactors)
	lossHalfLife = 256
	selectZ      = 3
	// expertSpan bounds a faster expert's threshold within this factor of
	// the slowest's.
	expertSpan = 3
	// minLossErrors is how many errors the comparison needs before a
	// faster expert may be published.
	minLossErrors = 64
	// lossStride is the numbers of a side's losses: the weight of the
	// errors behind them, then per faster expert the mean and the mean
	// square of its pinball loss less the slowest's.
	lossStride = 1 + 2*(experts-1)
)

// snapshots is how many past copies of its experts' thresholds a series
// keeps, taken every H/(snapshots−1) steps: an expert is judged by the
// threshold it had when the forecast was issued (the copy taken at or
// before then), not by one that has since seen what happened.
const snapshots = 5

// nestRatio is how much larger than the next lower level's a level's
// thresholds are at least.
const nestRatio = 1.05

// priorWeight is how many errors the horizon shape's start (from the
// model's held-out error quantiles) counts for, per step and channel.
const priorWeight = 8

// minThreshold keeps thresholds and levels positive, so that their logs
// are defined.
const minThreshold = 1e-9

// intervals is the calibration shared by all series: the levels, the
// shapes of the error along the horizon and over the day, the mean state
// of the calibrated series, the coverage and score of the intervals
// issued, and scratch for the tracker's goroutine (it holds the tracker's
// lock).
type intervals struct {
	levels []float64
	// grow and shrink multiply an expert's threshold after a miss and
	// after a hit, per level and expert: exp(η·(1 − α/2)) and exp(−η·α/2).
	grow, shrink []float64
	lossD        float64 // per-error decay of the experts' losses
	// guess is the Gaussian first guess of κ per level, z·√(π/2).
	guess []float64
	H, C  int
	n     int     // H×C
	decay float64 // of the horizon shape's running mean
	// absErr and weight: the exponentially weighted mean absolute
	// normalised error per horizon step and channel (absErr/weight),
	// whose profile over the horizon is the shape m.
	absErr, weight []float64
	// The shape over the day: bins parts of a day of binMs each (1 when
	// the cadence is too coarse for one), the zone whose day it is, and
	// per bin and channel the time-decayed sum and weight of the errors'
	// part, with the step they were last decayed to.
	bins            int
	binMs, cadMs    int64
	loc             *time.Location
	profSum, profW  []float64
	profAt          []int64
	profHalfSteps   float64
	profile         []float64 // bins × C, the shape normalised to mean 1; valid while !profDirty
	profDirty       bool
	levelD, fastD   float64 // per-error decays of the level and its fast estimate
	longD           float64 // and of the long-run level and the largest error
	prior           []float64
	priorLevel      []float64 // per channel: the held-out errors' mean |e|
	priorMax        []float64 // per channel: their largest quantile's size
	sumLo, sumHi    []float64 // κ of the calibrated series, summed: levels × C
	sumLevel        []float64 // their levels, summed: C
	calibrated      int
	scored, covered []int64
	recent, recentW []float64
	// score and width add up the published intervals' interval score and
	// width at the scored steps, normalised (totals, and exponentially
	// weighted recent sums over recentW).
	scoreSum, widthSum       []float64
	recentScore, recentWidth []float64
	// Scratch: the horizon shape (n; computed when shapeOK is false, and
	// again once a horizon's worth of errors, fresh, were noted since), the
	// day shape at each step (H×C), and the offsets below and above the
	// forecast (levels × n).
	m, day, below, above []float64
	shapeOK              bool
	fresh                int
	// steer is the pooled coverage correction (levels × 2 sides × C, on
	// the log scale) and gain its exponential, which multiplies κ.
	steer, gain []float64
	// rho is the weight of the level of the moment at each horizon step,
	// exp(−(h+1)/levelMemory) (levelAt).
	rho []float64
}

func newIntervals(levels []float64, rate float64, H, C, halfLife int, prior *model.ErrorQuantiles, cadence time.Duration, loc *time.Location) *intervals {
	if len(levels) == 0 {
		return nil
	}
	n, k := H*C, len(levels)
	iv := &intervals{
		levels: append([]float64(nil), levels...), H: H, C: C, n: n,
		decay:  math.Pow(0.5, 1/float64(halfLife)),
		absErr: make([]float64, n), weight: make([]float64, n),
		sumLo: make([]float64, k*C), sumHi: make([]float64, k*C), sumLevel: make([]float64, C),
		scored: make([]int64, k), covered: make([]int64, k),
		recent: make([]float64, k), recentW: make([]float64, k),
		scoreSum: make([]float64, k), widthSum: make([]float64, k), recentScore: make([]float64, k), recentWidth: make([]float64, k),
		m: make([]float64, n), day: make([]float64, n), below: make([]float64, k*n), above: make([]float64, k*n),
		levelD: math.Pow(0.5, 1/float64(levelHalfLife)), fastD: math.Pow(0.5, 1/float64(fastHalfLife)),
		longD: math.Pow(0.5, 1/float64(longHalfLife)),
		loc:   loc, cadMs: cadence.Milliseconds(), bins: 1,
	}
	if iv.loc == nil {
		iv.loc = time.UTC
	}
	const day = 24 * time.Hour
	switch {
	case cadence <= 0:
	case cadence <= time.Hour && day%time.Hour == 0:
		iv.bins = 24
	case day%cadence == 0 && day/cadence >= 4:
		iv.bins = int(day / cadence)
	}
	iv.binMs = day.Milliseconds() / int64(iv.bins)
	if cadence > 0 {
		iv.profHalfSteps = float64(profileHalfLife / cadence)
	}
	iv.profSum, iv.profW, iv.profAt = make([]float64, iv.bins*C), make([]float64, iv.bins*C), make([]int64, iv.bins*C)
	iv.profile = make([]float64, iv.bins*C)
	for i := range iv.profile {
		iv.profile[i] = 1
	}
	if prior != nil && prior.Horizon == H && (prior.Channels == C || prior.Channels == 1) {
		iv.setPrior(prior)
	}
	for _, l := range levels {
		half := (1 - l) / 2
		for _, f := range rateFactors {
			iv.grow = append(iv.grow, math.Exp(f*rate*(1-half)))
			iv.shrink = append(iv.shrink, math.Exp(-f*rate*half))
		}
		iv.guess = append(iv.guess, gaussianHalfWidth(l)*math.Sqrt(math.Pi/2))
	}
	iv.lossD = math.Pow(0.5, 1/float64(lossHalfLife))
	iv.steer, iv.gain = make([]float64, 2*k*C), make([]float64, 2*k*C)
	for i := range iv.gain {
		iv.gain[i] = 1
	}
	iv.rho = make([]float64, H)
	for h := range H {
		iv.rho[h] = math.Exp(-float64(h+1) / levelMemory)
	}
	return iv
}

// setPrior starts the horizon shape from the mean absolute error of the
// model's held-out errors at each step, the level from their mean over the
// steps, and κ from their quantiles in units of both, so that the first
// intervals are the held-out quantiles (exactly so when the quantiles grow
// along the horizon in proportion to the mean absolute error).
func (iv *intervals) setPrior(q *model.ErrorQuantiles) {
	k, C, H := len(iv.levels), iv.C, iv.H
	iv.prior = make([]float64, 2*k*C)
	iv.priorLevel, iv.priorMax = make([]float64, C), make([]float64, C)
	iv.shapeOK = false
	for i := range iv.n {
		h, c := i/C, i%C
		qc := min(c, q.Channels-1)
		mae := max(quantileMeanAbs(q, h, qc), minThreshold)
		iv.absErr[i], iv.weight[i] = priorWeight*mae, priorWeight
		iv.priorLevel[c] += mae / float64(H)
		iv.priorMax[c] = max(iv.priorMax[c], -q.Quantile(0, h, qc), q.Quantile(1, h, qc), 3*mae)
		for l, level := range iv.levels {
			iv.prior[l*C+c] += max(-q.Quantile((1-level)/2, h, qc), minThreshold) / mae / float64(H)
			iv.prior[(k+l)*C+c] += max(q.Quantile((1+level)/2, h, qc), minThreshold) / mae / float64(H)
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

// seriesIntervals is one series' calibration: its thresholds and error
// level, the bounds published at its sampled steps, and whether its
// intervals are published.
type seriesIntervals struct {
	lo, hi []float64 // the published κ, levels × C; NaN until the first guess
	// expert holds every expert's κ per level, side (lower, upper),
	// channel and expert, ((l·2 + side)·C + c)·experts + e, and loss how
	// the faster experts' recent pinball losses compare with the slowest's
	// (lossStride numbers per level, side and channel).
	expert, loss []float64
	// snap holds the last snapshots copies of expert, taken at the steps
	// in snapAt (none for an empty one), the newest at snapNext−1.
	snap     []float32
	snapAt   []int64
	snapNext int
	// level, levelW: the error level per channel and the weight of the
	// errors behind it; fast its fast estimate and away how many errors in
	// a row that has been calmRatio away (signed: up positive); long the
	// long-run level, maxAbs the largest recent error (decayed) and seen
	// how many errors that rests on. level is NaN until the first error
	// when nothing gave it a start.
	level, levelW, fast, long, longW, maxAbs []float64
	away                                     []int16
	seen                                     []uint32
	// bounds holds, per slot and sampled step, the published lower bounds
	// (levels × C) then the upper ones: H × sampledSteps × 2 × levels × C;
	// unit the unit w of each channel's thresholds there (H × sampledSteps
	// × C), which the experts' thresholds are judged in.
	bounds, unit []float32
	published    []bool // per slot: the slot's intervals were published
	completed    int    // forecasts whose horizon was realised
	calibrated   bool   // counted in intervals.sum*
	// scored and covered count the series' own published sampled steps
	// that were realised, per level, and those that held the value.
	scored, covered []uint32
}

func (iv *intervals) newSeries() *seriesIntervals {
	k, C := len(iv.levels), iv.C
	s := &seriesIntervals{
		lo: make([]float64, k*C), hi: make([]float64, k*C),
		expert: make([]float64, 2*k*C*experts), loss: make([]float64, 2*k*C*lossStride),
		snap: make([]float32, snapshots*2*k*C*experts), snapAt: make([]int64, snapshots),
		level: make([]float64, C), levelW: make([]float64, C), fast: make([]float64, C), long: make([]float64, C),
		longW: make([]float64, C), maxAbs: make([]float64, C), away: make([]int16, C), seen: make([]uint32, C),
		bounds:    make([]float32, iv.H*sampledSteps*2*k*C),
		unit:      make([]float32, iv.H*sampledSteps*C),
		published: make([]bool, iv.H),
		scored:    make([]uint32, k), covered: make([]uint32, k),
	}
	switch {
	case iv.calibrated > 0:
		inv := 1 / float64(iv.calibrated)
		for i := range s.lo {
			s.lo[i], s.hi[i] = iv.sumLo[i]*inv, iv.sumHi[i]*inv
		}
		for c := range C {
			s.level[c] = iv.sumLevel[c] * inv
		}
		iv.startLevel(s)
		iv.join(s)
	case iv.prior != nil:
		copy(s.lo, iv.prior[:len(s.lo)])
		copy(s.hi, iv.prior[len(s.lo):])
		copy(s.level, iv.priorLevel)
		iv.startLevel(s)
		for c := range C {
			// The held-out errors' largest quantiles stand for the
			// largest error until the series has its own.
			s.maxAbs[c], s.seen[c] = iv.priorMax[c], maxAbsErrors
		}
		iv.join(s)
	default:
		for i := range s.lo {
			s.lo[i], s.hi[i] = math.NaN(), math.NaN()
		}
		for c := range C {
			s.level[c], s.fast[c] = math.NaN(), math.NaN()
		}
	}
	iv.startExperts(s)
	return s
}

// startLevel gives s's level, set from others, the weight of a start, and
// sets its fast estimate from it. The long-run level rests on the series'
// own errors only.
func (iv *intervals) startLevel(s *seriesIntervals) {
	for c := range s.level {
		s.level[c] = max(s.level[c], minThreshold)
		s.levelW[c], s.fast[c] = levelPriorWeight, s.level[c]
	}
}

// join counts s among the calibrated series.
func (iv *intervals) join(s *seriesIntervals) {
	s.calibrated = true
	iv.calibrated++
	for i := range s.lo {
		iv.sumLo[i] += s.lo[i]
		iv.sumHi[i] += s.hi[i]
	}
	for c := range s.level {
		iv.sumLevel[c] += s.level[c]
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
	for c := range s.level {
		iv.sumLevel[c] -= s.level[c]
	}
	if iv.calibrated == 0 { // no rounding left behind
		clear(iv.sumLo)
		clear(iv.sumHi)
		clear(iv.sumLevel)
	}
}

// offsets fills iv.below and iv.above (levels × H×C) with the distances of
// series s's interval bounds from its forecast issued at step at, given
// the scale of each channel (len C), and reports whether they exist: the
// shape is known and s has thresholds and a level (after the Gaussian
// guess when it has no thresholds yet).
func (iv *intervals) offsets(s *seriesIntervals, at int64, scale []float64) bool {
	if !iv.shape() {
		return false
	}
	k, n, C := len(iv.levels), iv.n, iv.C
	for c := range C {
		if math.IsNaN(s.level[c]) {
			return false
		}
	}
	guessed := false
	for l := range k {
		for c := range C {
			if j := l*C + c; math.IsNaN(s.lo[j]) {
				s.lo[j], s.hi[j] = iv.guess[l], iv.guess[l]
				guessed = true
			}
		}
	}
	if guessed {
		iv.startExperts(s)
	}
	iv.dayShape(at)
	for l := range k {
		for i := range n {
			c := i % C
			w := iv.m[i] * iv.day[i] * iv.levelAt(s, c, i/C) * scale[c]
			loK, hiK := s.lo[l*C+c]*iv.gain[(l*2)*C+c], s.hi[l*C+c]*iv.gain[(l*2+1)*C+c]
			if l > 0 {
				// Nested: a level's thresholds exceed the lower level's.
				loK = max(loK, nestRatio*iv.below[(l-1)*n+i]/w)
				hiK = max(hiK, nestRatio*iv.above[(l-1)*n+i]/w)
			}
			most := math.Inf(1)
			if s.seen[c] >= maxAbsErrors {
				most = maxAbsFactor * s.maxAbs[c] * scale[c]
			}
			b, a := min(loK*w, most), min(hiK*w, most)
			if l > 0 {
				b, a = max(b, iv.below[(l-1)*n+i]), max(a, iv.above[(l-1)*n+i])
			}
			iv.below[l*n+i], iv.above[l*n+i] = b, a
		}
	}
	return true
}

// issue computes the intervals of forecast fc (H×C) of series s issued at
// step at in slot, whose sampled steps are lags (1-based; 0 for none), with
// the scale of each channel. It keeps the bounds at the sampled steps and,
// when lower and upper have room (one H×C slice per level), writes every
// bound there. It returns whether the intervals are published.
func (iv *intervals) issue(s *seriesIntervals, slot int, at int64, lags []uint16, fc, scale []float64, lower, upper [][]float64) bool {
	k, n, C := len(iv.levels), iv.n, iv.C
	ok := iv.offsets(s, at, scale)
	if ok {
		iv.write(fc, nil, nil) // nests the offsets as float32 bounds
	}
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
		u := s.unit[(slot*sampledSteps+r)*C:][:C]
		for c := range C {
			i := h*C + c
			u[c] = float32(iv.m[i] * iv.day[i] * iv.levelAt(s, c, h) * scale[c])
		}
		for l := range k {
			for c := range C {
				i, y := h*C+c, fc[h*C+c]
				rec[l*C+c] = float32(y - iv.below[l*n+i])
				rec[(k+l)*C+c] = float32(y + iv.above[l*n+i])
			}
		}
	}
	s.published[slot] = ok && s.calibrated
	iv.snapshot(s, at)
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
func (iv *intervals) reissue(s *seriesIntervals, slot int, at int64, fc, scale []float64, lower, upper [][]float64) bool {
	if !s.published[slot] || len(lower) != len(iv.levels) || !iv.offsets(s, at, scale) {
		return false
	}
	iv.write(fc, nil, nil)
	iv.write(fc, lower, upper)
	return true
}

// write makes the offsets in iv.below and iv.above strictly nested at
// float32 precision, the bounds' precision on the wire: each level's bound
// lies at least one float32 step outside the lower level's. With lower and
// upper it then fills them from fc and the offsets.
func (iv *intervals) write(fc []float64, lower, upper [][]float64) {
	n := iv.n
	if lower == nil {
		for l := 1; l < len(iv.levels); l++ {
			for i, y := range fc {
				lo0, hi0 := atFloat32(y-iv.below[(l-1)*n+i]), atFloat32(y+iv.above[(l-1)*n+i])
				if lo := atFloat32(y - iv.below[l*n+i]); !(lo < lo0) {
					iv.below[l*n+i] = y - float64(math.Nextafter32(float32(lo0), float32(math.Inf(-1))))
				}
				if hi := atFloat32(y + iv.above[l*n+i]); !(hi > hi0) {
					iv.above[l*n+i] = float64(math.Nextafter32(float32(hi0), float32(math.Inf(1)))) - y
				}
			}
		}
		return
	}
	for l := range iv.levels {
		for i, y := range fc {
			lower[l][i], upper[l][i] = atFloat32(y-iv.below[l*n+i]), atFloat32(y+iv.above[l*n+i])
		}
	}
}

// count records whether a published interval of level index l covered its
// realised value, with its interval score and width (normalised).
func (iv *intervals) count(l int, covered bool, score, width float64) {
	iv.scored[l]++
	hit := 0.0
	if covered {
		iv.covered[l]++
		hit = 1
	}
	iv.scoreSum[l] += score
	iv.widthSum[l] += width
	iv.recent[l] = iv.decay*iv.recent[l] + hit
	iv.recentScore[l] = iv.decay*iv.recentScore[l] + score
	iv.recentWidth[l] = iv.decay*iv.recentWidth[l] + width
	iv.recentW[l] = iv.decay*iv.recentW[l] + 1
}

// completed notes that a forecast of s completed its horizon, and
// publishes s's intervals once warmScores have and it has a level.
func (iv *intervals) completed(s *seriesIntervals) {
	s.completed++
	if !s.calibrated && s.completed >= warmScores {
		for i := range s.lo {
			if math.IsNaN(s.lo[i]) {
				return
			}
		}
		for _, lvl := range s.level {
			if math.IsNaN(lvl) {
				return
			}
		}
		iv.join(s)
	}
}

// untracked fills lower and upper (one H×C slice per level) for a forecast
// fc issued at step at of a series that is not tracked, from the mean
// thresholds and level of the calibrated series; it returns false when
// none is calibrated.
func (iv *intervals) untracked(at int64, fc []float64, scale []float64, lower, upper [][]float64) bool {
	if iv.calibrated == 0 || !iv.shape() {
		return false
	}
	inv := 1 / float64(iv.calibrated)
	k, n, C := len(iv.levels), iv.n, iv.C
	iv.dayShape(at)
	for l := range k {
		for i := range n {
			c := i % C
			w := iv.m[i] * iv.day[i] * iv.sumLevel[c] * inv * scale[c]
			b, a := iv.sumLo[l*C+c]*inv*iv.gain[(l*2)*C+c]*w, iv.sumHi[l*C+c]*inv*iv.gain[(l*2+1)*C+c]*w
			if l > 0 { // nested, as offsets makes them
				b, a = max(b, nestRatio*iv.below[(l-1)*n+i]), max(a, nestRatio*iv.above[(l-1)*n+i])
			}
			iv.below[l*n+i], iv.above[l*n+i] = b, a
		}
	}
	iv.write(fc, nil, nil)
	iv.write(fc, lower, upper)
	return true
}

// IntervalScore is the interval (Winkler) score of [lo, hi] for value y at
// miscoverage alpha (Gneiting & Raftery 2007): the width plus 2/alpha times
// how far y lies outside. Lower is better: a band too wide pays for its
// width, one too narrow for its misses.
func IntervalScore(lo, hi, y, alpha float64) float64 {
	s := hi - lo
	if y < lo {
		s += 2 / alpha * (lo - y)
	} else if y > hi {
		s += 2 / alpha * (y - hi)
	}
	return s
}

// atFloat32 rounds a bound to float32 precision, which the output layouts
// keep (package wire), so that what is published is what consumers decode.
func atFloat32(v float64) float64 { return float64(float32(v)) }

// gaussianHalfWidth is the half-width, in standard deviations, of the
// central interval of a Gaussian holding level of its mass.
func gaussianHalfWidth(level float64) float64 { return math.Sqrt2 * math.Erfinv(level) }

// Coverage is the coverage and score of the published intervals of one
// level.
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
	// ScoreSum and WidthSum add up the interval (Winkler) score and the
	// width of every scored step, in units of each series' scale;
	// RecentScore and RecentWidth are their recent means, as Recent. A
	// band too wide shows in its score where coverage cannot show it.
	ScoreSum    float64 `json:"score_sum"`
	WidthSum    float64 `json:"width_sum"`
	RecentScore float64 `json:"recent_score"`
	RecentWidth float64 `json:"recent_width"`
	// Correction is the pooled coverage correction g of the level's lower
	// and upper side (interval_pooled.go), the geometric mean over the
	// channels: above 1 it widens what the series' thresholds alone would
	// publish, below 1 it narrows it, within poolCap either way.
	Correction [2]float64 `json:"pool_correction"`
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

// Score returns the mean interval score over the stretch since an earlier
// Coverage of the same level, NaN when nothing was scored in between.
func (c Coverage) Score(since Coverage) float64 {
	n := c.Scored - since.Scored
	if n <= 0 {
		return math.NaN()
	}
	return (c.ScoreSum - since.ScoreSum) / float64(n)
}

// Width returns the mean width over the stretch since an earlier Coverage
// of the same level, NaN when nothing was scored in between.
func (c Coverage) Width(since Coverage) float64 {
	n := c.Scored - since.Scored
	if n <= 0 {
		return math.NaN()
	}
	return (c.WidthSum - since.WidthSum) / float64(n)
}

func (iv *intervals) coverage() []Coverage {
	if iv == nil {
		return nil
	}
	out := make([]Coverage, len(iv.levels))
	for l, level := range iv.levels {
		out[l] = Coverage{Level: level, Scored: iv.scored[l], Covered: iv.covered[l], ScoreSum: iv.scoreSum[l], WidthSum: iv.widthSum[l]}
		for side := range 2 {
			sum := 0.0
			for c := range iv.C {
				sum += iv.steer[(l*2+side)*iv.C+c]
			}
			out[l].Correction[side] = math.Exp(sum / float64(iv.C))
		}
		if w := iv.recentW[l]; w > 0 {
			out[l].Recent, out[l].RecentScore, out[l].RecentWidth = iv.recent[l]/w, iv.recentScore[l]/w, iv.recentWidth[l]/w
		}
	}
	return out
}
