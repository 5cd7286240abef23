package online

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/online/calibration"
)

// tracker remembers the forecasts of up to TrackSeries series until their
// horizon has been observed, scores them against the realised values, and
// turns every completed forecast into a replay pair.
//
// Every tracked series keeps its last L+H values, and of each of its last H
// forecasts the values at sampledSteps steps drawn at random (with the
// bounds published there): what its own error and intervals are scored on.
// The first fullSeries series tracked (a place frees when one is forgotten)
// keep more: every value of their last H forecasts, so that the error per
// horizon step is measured on every step even when few series are served,
// and the history the spectrum of a fine-tuning round reads (SpectrumSteps).
type tracker struct {
	mu      sync.Mutex
	L, H, C int
	history int // steps of history kept by a series of the full tier: max(L+H, the spectrum's)
	cadence time.Duration
	norm    normaliser
	cap     int // 0: no cap
	fullCap int
	full    int // series of the full tier
	series  map[string]*seriesState
	errs    *errorStats
	replay  *replay
	newest  time.Time  // latest observed step over all series (data time)
	pairs   int64      // pairs made
	refused int64      // forecasts of series beyond the cap
	iv      *intervals // nil without interval levels
	// restored holds the saved calibration of series not seen yet since a
	// restart (restoreCalibration), until the data passes restoredUntil.
	restored                    map[string]calibration.Series
	restoredFrom, restoredUntil time.Time // the newest saved step, and L+H steps after it
	// tookOnArrival counts the series that took another replica's state
	// when first seen, since the last adoptCalibrations.
	tookOnArrival int
	// others holds the saved calibration, in the other replicas' files, of
	// series not seen here (adoptCalibrations), for a rebalance that moves
	// one here; replaced at every read.
	others  map[string]calibration.Series
	scratch struct {
		in, tgt, scale, issue []float64
		key                   []byte
		x, fc                 []float64   // one field's window and forecast
		lower, upper          [][]float64 // one field's bounds, per level
	}
}

// seriesState is one tracked series: a ring of its last values, the step
// each of its last H forecasts was issued at, their sampled steps, and its
// running scale.
type seriesState struct {
	last   int64 // latest observed step
	first  int64 // earliest step in the ring since the last reset
	seen   int64 // data time of the newest window's end, Unix ns
	seed   uint64
	values []float32 // ring × C: L+H steps, or tracker.history in the full tier
	issued []int64   // per slot (step mod H): the step its forecast was issued at; none when free
	// lags are the sampled steps (1 … H; 0 for none) of each slot's
	// forecast, sampledSteps per slot, and sampled their values (× C).
	lags    []uint16
	sampled []float32
	pending []float32 // the full tier only: H slots × H×C forecast values
	welford []welford // per channel
	// scaledTo is the last step the welford already holds, restored with
	// them after a restart (0 otherwise): the window rewritten then holds it.
	scaledTo int64
	// fresh is true while the series' calibration started here, from no
	// saved state: a rebalance that moved it here may still give it one.
	fresh bool
	// arrived is the first step of the series' current run here (since
	// it was new, or came back after missing steps), before the last step
	// seen before that run (none for a new series), and taken the last
	// step of the saved state it took (none before any): what tells a
	// state another replica saved of it while it was away (handedOver).
	arrived, before, taken int64
	sqErr                  float64 // rolling normalised squared error of the series
	iv                     *seriesIntervals
}

// none marks a free slot.
const none = math.MinInt64

type welford struct{ n, mean, m2 float64 }

func (w *welford) add(v float64) {
	w.n++
	d := v - w.mean
	w.mean += d / w.n
	w.m2 += d * (v - w.mean)
}

func (w *welford) std() float64 {
	if w.n < 2 {
		return 0
	}
	return math.Sqrt(w.m2 / (w.n - 1))
}

func newTracker(L, H, C, history int, cadence time.Duration, norm normaliser, cap, fullCap, halfLife int, r *replay, iv *intervals) *tracker {
	t := &tracker{L: L, H: H, C: C, history: max(L+H, history), cadence: cadence, norm: norm, cap: cap, fullCap: fullCap,
		series: make(map[string]*seriesState), errs: newErrorStats(H, halfLife), replay: r, iv: iv}
	t.scratch.in = make([]float64, L*C)
	t.scratch.tgt = make([]float64, H*C)
	t.scratch.scale = make([]float64, C)
	t.scratch.issue = make([]float64, C)
	t.scratch.x, t.scratch.fc = make([]float64, L), make([]float64, H)
	if iv != nil {
		for range iv.levels {
			t.scratch.lower = append(t.scratch.lower, make([]float64, H))
			t.scratch.upper = append(t.scratch.upper, make([]float64, H))
		}
	}
	return t
}

func (t *tracker) newState(key []byte) *seriesState {
	ring := t.L + t.H
	s := &seriesState{
		seed:    seriesSeed(key),
		issued:  make([]int64, t.H),
		lags:    make([]uint16, t.H*sampledSteps),
		sampled: make([]float32, t.H*sampledSteps*t.C),
		welford: make([]welford, t.C),
	}
	if t.full < t.fullCap {
		t.full++
		ring = t.history
		s.pending = make([]float32, t.H*t.H*t.C)
	}
	s.values = make([]float32, ring*t.C)
	s.reset(none)
	s.arrived, s.before, s.taken = none, none, none
	if t.iv != nil {
		s.iv = t.iv.newSeries()
		s.fresh = true
		t.takeRestored(key, s)
	}
	return s
}

func (s *seriesState) reset(step int64) {
	s.last, s.first = step, step+1
	for i := range s.issued {
		s.issued[i] = none
	}
}

// ring is the number of steps s's values hold.
func (s *seriesState) ring(C int) int { return len(s.values) / C }

func mod(a int64, n int) int { return int(((a % int64(n)) + int64(n)) % int64(n)) }

// seriesSeed hashes a series name (FNV-1a) into the seed of its sampled
// steps.
func seriesSeed(key []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, b := range key {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return h
}

// drawLags writes the sampled steps of the forecast issued at step at: one
// in each of len(dst) equal parts of 1 … H, drawn by a hash of seed and
// at (0 for a part that is empty, when H < len(dst)).
func drawLags(dst []uint16, seed uint64, at int64, H int) {
	R := len(dst)
	for r := range R {
		lo, hi := r*H/R, (r+1)*H/R // the part (lo, hi]
		if hi == lo {
			dst[r] = 0
			continue
		}
		u := splitmix64(seed ^ (uint64(at)*0x9e3779b97f4a7c15 + uint64(r)))
		dst[r] = uint16(lo + 1 + int(u%uint64(hi-lo)))
	}
}

// splitmix64 is the finaliser of SplitMix64: a well-mixed 64-bit hash.
func splitmix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// observe records the forecast fc (H×F) issued for the window x (L×F) of
// series that ends at end, after scoring earlier forecasts against the
// window's new steps. F is the tracker's C, or any number of fields for a
// one-channel tracker (an independent model, which forecasts each field as
// a series of its own): each field is then tracked as the series
// "<series>/<field index>". With interval levels it fills lower and upper
// (one H×F slice per level) with the forecast's intervals and reports
// whether they are published.
func (t *tracker) observe(series string, end time.Time, x, fc []float64, lower, upper [][]float64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if end.After(t.newest) {
		t.newest = end
	}
	F := len(fc) / t.H
	if F == t.C {
		t.scratch.key = append(t.scratch.key[:0], series...)
		return t.observeKey(t.scratch.key, end, x, fc, lower, upper)
	}
	// One channel per field: split the window, the forecast and the
	// bounds by field, and put the bounds back.
	L, H := t.L, t.H
	sc := &t.scratch
	published := true
	for f := range F {
		for i := range L {
			sc.x[i] = x[i*F+f]
		}
		for h := range H {
			sc.fc[h] = fc[h*F+f]
		}
		var lo, hi [][]float64
		if len(lower) > 0 {
			lo, hi = sc.lower, sc.upper
		}
		sc.key = strconv.AppendInt(append(append(sc.key[:0], series...), '/'), int64(f), 10)
		if !t.observeKey(sc.key, end, sc.x, sc.fc, lo, hi) {
			published = false
			continue
		}
		for k := range lo {
			for h := range H {
				lower[k][h*F+f], upper[k][h*F+f] = lo[k][h], hi[k][h]
			}
		}
	}
	return published && len(lower) > 0
}

// observeKey is observe of one tracked series (t.C channels) named key;
// the caller holds t.mu.
func (t *tracker) observeKey(key []byte, end time.Time, x, fc []float64, lower, upper [][]float64) bool {
	step := end.UnixNano() / int64(t.cadence)
	s := t.series[string(key)]
	if s == nil {
		if t.cap > 0 && len(t.series) >= t.cap {
			t.refused++
			if t.iv == nil || len(lower) != len(t.iv.levels) {
				return false
			}
			return t.iv.untracked(step, fc, t.windowScale(x), lower, upper)
		}
		s = t.newState(key)
		t.series[string(key)] = s
	}
	s.seen = end.UnixNano()
	L, H, C := t.L, t.H, t.C
	if s.last == none || step > s.last+1 { // a new run: new, or back after missing steps
		s.arrived, s.before = step, s.last
	}
	switch {
	case s.last == none || step-s.last > int64(L):
		// New, or back after a gap longer than a window: nothing joins.
		s.reset(step - int64(L))
	case step <= s.last:
		// Not a new step: nothing to score, the forecast is a repeat of the
		// one issued at this step (after a restart, or a late correction);
		// it gets intervals from the current thresholds.
		if slot := mod(step, H); t.iv != nil && s.issued[slot] == step {
			return t.iv.reissue(s.iv, slot, step, fc, t.seriesScale(s), lower, upper)
		}
		return false
	}
	ring := s.ring(C)
	// Write the window: it holds the latest values of steps end−L+1 … end,
	// late corrections included.
	for i := range L {
		st := step - int64(L-1-i)
		dst := s.values[mod(st, ring)*C:][:C]
		for c := range C {
			dst[c] = float32(x[i*C+c])
		}
	}
	for st := s.last + 1; st <= step; st++ {
		t.score(s, st)
	}
	s.last = step
	slot := mod(step, H)
	s.issued[slot] = step
	if s.pending != nil {
		dst := s.pending[slot*H*C : (slot+1)*H*C]
		for i, v := range fc {
			dst[i] = float32(v)
		}
	}
	lags := s.lags[slot*sampledSteps : (slot+1)*sampledSteps]
	drawLags(lags, s.seed, step, H)
	for r, lag := range lags {
		if lag == 0 {
			continue
		}
		dst := s.sampled[(slot*sampledSteps+r)*C:][:C]
		for c := range C {
			dst[c] = float32(fc[(int(lag)-1)*C+c])
		}
	}
	if t.iv == nil {
		return false
	}
	if len(lower) != len(t.iv.levels) {
		lower, upper = nil, nil
	}
	return t.iv.issue(s.iv, slot, step, lags, fc, t.seriesScale(s), lower, upper)
}

// score scores the forecasts of s that predicted step st, whose values are
// in s's ring: in the full tier every one for the error statistics, and
// the sampled steps of each for the series' error and intervals (and for
// the error statistics outside the full tier). A forecast whose horizon
// ends at st becomes a replay pair.
func (t *tracker) score(s *seriesState, st int64) {
	H, C := t.H, t.C
	v := s.values[mod(st, s.ring(C))*C:][:C]
	if st > s.scaledTo {
		for c := range C {
			s.welford[c].add(float64(v[c]))
		}
	}
	for slot, at := range s.issued {
		if at == none || st <= at || st > at+int64(H) {
			continue
		}
		h := int(st - at) // 1 … H
		if s.pending != nil {
			f := s.pending[slot*H*C+(h-1)*C:][:C]
			for c := range C {
				t.noteError(h, c, (float64(f[c])-float64(v[c]))/t.scale(s, c))
			}
		}
		for r, lag := range s.lags[slot*sampledSteps : (slot+1)*sampledSteps] {
			if int(lag) != h {
				continue
			}
			f := s.sampled[(slot*sampledSteps+r)*C:][:C]
			for c := range C {
				e := (float64(f[c]) - float64(v[c])) / t.scale(s, c)
				s.sqErr += (e*e - s.sqErr) / 256
				if s.pending == nil {
					t.noteError(h, c, e)
				}
				if t.iv != nil {
					t.iv.score(s.iv, slot, r, h-1, c, st, float64(f[c]), float64(v[c]), e, t.scale(s, c))
				}
			}
		}
		if h == H {
			if t.iv != nil {
				t.iv.completed(s.iv)
			}
			t.complete(s, at)
			s.issued[slot] = none
		}
	}
}

// noteError adds the normalised error e of horizon step h (1-based),
// channel c to the error statistics and the intervals' shape.
func (t *tracker) noteError(h, c int, e float64) {
	t.errs.add(h-1, e)
	if t.iv != nil {
		t.iv.noteError((h-1)*t.C+c, e)
	}
}

// seriesScale returns the scale of each of s's channels in scratch.
func (t *tracker) seriesScale(s *seriesState) []float64 {
	for c := range t.C {
		t.scratch.issue[c] = t.scale(s, c)
	}
	return t.scratch.issue
}

// windowScale returns the scale of each channel for a series that is not
// tracked: the model's training std (mixed), else the window's own std.
func (t *tracker) windowScale(x []float64) []float64 {
	sc := t.scratch.issue
	for c := range t.C {
		if t.norm.std != nil {
			sc[c] = t.norm.std[c]
			continue
		}
		var w welford
		for i := c; i < len(x); i += t.C {
			w.add(x[i])
		}
		sc[c] = w.std()
		if !(sc[c] > 1e-12) {
			sc[c] = 1
		}
	}
	return sc
}

// scale is the divisor that normalises channel c's errors.
func (t *tracker) scale(s *seriesState, c int) float64 {
	if t.norm.std != nil {
		return t.norm.std[c]
	}
	if sd := s.welford[c].std(); sd > 1e-12 {
		return sd
	}
	return 1
}

// complete turns the forecast issued at step at, whose horizon has just been
// observed, into a replay pair.
func (t *tracker) complete(s *seriesState, at int64) {
	L, H, C, ring := t.L, t.H, t.C, s.ring(t.C)
	if at-int64(L-1) < s.first {
		return
	}
	for i := range L {
		src := s.values[mod(at-int64(L-1-i), ring)*C:][:C]
		for c, v := range src {
			t.scratch.in[i*C+c] = float64(v)
		}
	}
	for i := range H {
		src := s.values[mod(at+1+int64(i), ring)*C:][:C]
		for c, v := range src {
			t.scratch.tgt[i*C+c] = float64(v)
		}
	}
	for c := range C {
		t.scratch.scale[c] = t.scale(s, c)
	}
	t.replay.add(t.scratch.in, t.scratch.tgt, t.scratch.scale, at*int64(t.cadence), s.seed)
	t.pairs++
}

// recentRows returns the last steps values of up to maxSeries series of
// the full tier whose history holds that many contiguous steps, side by
// side as channels (row-major: steps rows of k·C values), for the spectrum
// of the recent data. Series are taken in name order, so the result does
// not depend on map order. It returns nil when no series has the history.
func (t *tracker) recentRows(steps, maxSeries int) (rows []float64, channels int) {
	if steps > t.history {
		return nil, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for k, s := range t.series {
		if s.pending != nil && s.last != none && s.last-s.first+1 >= int64(steps) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	names = names[:min(len(names), maxSeries)]
	if len(names) == 0 {
		return nil, 0
	}
	C := t.C
	width := len(names) * C
	rows = make([]float64, steps*width)
	for j, k := range names {
		s := t.series[k]
		for i := range steps {
			st := s.last - int64(steps-1-i)
			for c, v := range s.values[mod(st, s.ring(C))*C:][:C] {
				rows[i*width+j*C+c] = float64(v)
			}
		}
	}
	return rows, width
}

// newestTime returns the newest data time the tracker has seen.
func (t *tracker) newestTime() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.newest
}

// expire forgets series not seen within the last L+H steps of data time.
func (t *tracker) expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	cut := t.newest.Add(-time.Duration(t.L+t.H) * t.cadence).UnixNano()
	if t.restored != nil && t.newest.After(t.restoredUntil) {
		t.restored = nil // the series not back by now are idle
	}
	for k, s := range t.series {
		if s.seen < cut {
			if t.iv != nil {
				t.iv.leave(s.iv)
			}
			if s.pending != nil {
				t.full--
			}
			delete(t.series, k)
		}
	}
}

// SeriesError is one series' rolling normalised MSE.
type SeriesError struct {
	Series string  `json:"series"`
	MSE    float64 `json:"mse"`
}

// worst returns the n tracked series with the highest rolling MSE.
func (t *tracker) worst(n int) []SeriesError {
	if n <= 0 {
		return []SeriesError{}
	}
	top := newTopN(n, func(a, b SeriesError) int {
		return cmp.Or(cmp.Compare(b.MSE, a.MSE), cmp.Compare(a.Series, b.Series)) // worst first
	})
	t.mu.Lock()
	for k, s := range t.series {
		top.add(SeriesError{Series: k, MSE: s.sqErr})
	}
	t.mu.Unlock()
	return top.items
}

// topN keeps the first n items in the order of cmp, in order, without
// holding the rest: a report of the worst few among a million series
// costs n items, not a million.
type topN[T any] struct {
	n     int
	cmp   func(a, b T) int
	items []T
}

func newTopN[T any](n int, cmp func(a, b T) int) *topN[T] { return &topN[T]{n: n, cmp: cmp} }

// add offers v; n ≤ 0 keeps every item.
func (k *topN[T]) add(v T) {
	if k.n > 0 && len(k.items) == k.n && k.cmp(v, k.items[k.n-1]) >= 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(k.items, v, k.cmp)
	if k.n > 0 && len(k.items) == k.n {
		k.items = k.items[:k.n-1]
	}
	k.items = slices.Insert(k.items, i, v)
}

// errorStats is the online error: per horizon step, exponentially weighted
// means of the squared and absolute normalised error, and running totals.
type errorStats struct {
	decay           float64
	sq, abs, weight []float64 // per horizon step
	count           int64
	sumSq, sumAbs   float64
	hist            prometheus.Observer // absolute errors; nil without metrics
}

func newErrorStats(H, halfLife int) *errorStats {
	return &errorStats{decay: math.Pow(0.5, 1/float64(halfLife)),
		sq: make([]float64, H), abs: make([]float64, H), weight: make([]float64, H)}
}

func (e *errorStats) add(h int, err float64) {
	a := math.Abs(err)
	e.sq[h] = e.decay*e.sq[h] + err*err
	e.abs[h] = e.decay*e.abs[h] + a
	e.weight[h] = e.decay*e.weight[h] + 1
	e.count++
	e.sumSq += err * err
	e.sumAbs += a
	if e.hist != nil {
		e.hist.Observe(a)
	}
}

// bucket returns the rolling MSE and MAE over horizon steps [lo, hi).
func (e *errorStats) bucket(lo, hi int) (mse, mae float64, ok bool) {
	var w float64
	for h := lo; h < hi; h++ {
		if e.weight[h] > 0 {
			mse += e.sq[h] / e.weight[h]
			mae += e.abs[h] / e.weight[h]
			w++
		}
	}
	if w == 0 {
		return 0, 0, false
	}
	return mse / w, mae / w, true
}

// SeriesCalibration is one tracked series' interval coverage: at each
// level, the share of its published, realised sampled steps whose value the
// interval held.
type SeriesCalibration struct {
	Series string `json:"series"`
	// Scored counts the series' published sampled steps that were realised.
	Scored int64 `json:"scored"`
	// Coverage is per level, in the order of Learner.Levels.
	Coverage []float64 `json:"coverage"`
	// Deviation is the largest |coverage − level| over the levels.
	Deviation float64 `json:"deviation"`
}

// calibration returns the tracked series with at least minScored scored
// steps, those whose coverage is furthest from nominal first, at most n of
// them (every one when n ≤ 0). Ties go by name.
func (t *tracker) calibration(n, minScored int) []SeriesCalibration {
	if t.iv == nil {
		return nil
	}
	top := newTopN(n, func(a, b SeriesCalibration) int {
		return cmp.Or(cmp.Compare(b.Deviation, a.Deviation), cmp.Compare(a.Series, b.Series))
	})
	t.mu.Lock()
	defer t.mu.Unlock()
	levels := t.iv.levels
	cov := make([]float64, len(levels))
	for k, s := range t.series {
		scored := s.iv.scored[0]
		if int(scored) < max(minScored, 1) {
			continue
		}
		dev := 0.0
		for l, level := range levels {
			cov[l] = float64(s.iv.covered[l]) / float64(s.iv.scored[l])
			dev = max(dev, math.Abs(cov[l]-level))
		}
		if n > 0 && len(top.items) == n && dev < top.items[n-1].Deviation {
			continue // saves the copy of cov
		}
		top.add(SeriesCalibration{Series: k, Scored: int64(scored), Coverage: slices.Clone(cov), Deviation: dev})
	}
	return top.items
}
