package online

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// tracker remembers the forecasts of up to TrackSeries series until their
// horizon has been observed, scores them against the realised values, and
// turns every completed forecast into a replay pair.
type tracker struct {
	mu      sync.Mutex
	L, H, C int
	ring    int // steps of history kept per series: max(L+H, the spectrum's)
	cadence time.Duration
	norm    normaliser
	cap     int
	series  map[string]*seriesState
	errs    *errorStats
	replay  *replay
	newest  time.Time  // latest observed step over all series (data time)
	pairs   int64      // pairs made
	refused int64      // forecasts of series beyond the cap
	iv      *intervals // nil without interval levels
	scratch struct {
		in, tgt, scale, issue []float64
		key                   []byte
		x, fc                 []float64   // one field's window and forecast
		lower, upper          [][]float64 // one field's bounds, per level
	}
}

// seriesState is one tracked series: a ring of its last values (L+H, or
// the spectrum's history when longer), the
// forecasts issued at each of its last H steps, and its running scale.
type seriesState struct {
	last    int64 // latest observed step
	first   int64 // earliest step in the ring since the last reset
	values  []float64
	pending []float32 // H slots × H×C forecast values
	issued  []int64   // step each slot was issued at; math.MinInt64 when free
	welford []welford // per channel
	sqErr   float64   // rolling normalised squared error of the series
	seen    time.Time
	iv      *seriesIntervals // nil without interval levels
}

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

func newTracker(L, H, C, history int, cadence time.Duration, norm normaliser, cap, halfLife int, r *replay, iv *intervals) *tracker {
	t := &tracker{L: L, H: H, C: C, ring: max(L+H, history), cadence: cadence, norm: norm, cap: cap,
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

func (t *tracker) newState() *seriesState {
	s := &seriesState{
		values:  make([]float64, t.ring*t.C),
		pending: make([]float32, t.H*t.H*t.C),
		issued:  make([]int64, t.H),
		welford: make([]welford, t.C),
	}
	if t.iv != nil {
		s.iv = t.iv.newSeries(t.H)
	}
	s.reset(math.MinInt64)
	return s
}

func (s *seriesState) reset(step int64) {
	s.last, s.first = step, step+1
	for i := range s.issued {
		s.issued[i] = math.MinInt64
	}
}

func mod(a int64, n int) int { return int(((a % int64(n)) + int64(n)) % int64(n)) }

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
		if len(t.series) >= t.cap {
			t.refused++
			if t.iv == nil || len(lower) != len(t.iv.levels) {
				return false
			}
			return t.iv.untracked(fc, t.windowScale(x), lower, upper)
		}
		s = t.newState()
		t.series[string(key)] = s
	}
	s.seen = end
	L, H, C := t.L, t.H, t.C
	switch {
	case s.last == math.MinInt64 || step-s.last > int64(L):
		// New, or back after a gap longer than a window: nothing joins.
		s.reset(step - int64(L))
	case step <= s.last:
		// Not a new step: nothing to score, the forecast is a repeat of the
		// one issued at this step (after a restart, or a late correction);
		// it gets that forecast's intervals.
		if slot := mod(step, H); t.iv != nil && s.issued[slot] == step && s.iv.published[slot] && len(lower) == len(t.iv.levels) {
			t.iv.write(s.iv, slot, fc, lower, upper)
			return true
		}
		return false
	}
	ring := t.ring
	// Write the window: it holds the latest values of steps end−L+1 … end,
	// late corrections included.
	for i := range L {
		st := step - int64(L-1-i)
		copy(s.values[mod(st, ring)*C:][:C], x[i*C:(i+1)*C])
	}
	// Score the new steps against every forecast that predicted them.
	for st := s.last + 1; st <= step; st++ {
		v := s.values[mod(st, ring)*C:][:C]
		for c := range C {
			s.welford[c].add(v[c])
		}
		for slot, at := range s.issued {
			if at == math.MinInt64 || st <= at || st > at+int64(H) {
				continue
			}
			h := int(st - at) // 1 … H
			f := s.pending[slot*H*C+(h-1)*C:][:C]
			for c := range C {
				e := (float64(f[c]) - v[c]) / t.scale(s, c)
				t.errs.add(h-1, e)
				s.sqErr += (e*e - s.sqErr) / 256
				if t.iv != nil {
					t.iv.score(s.iv, slot, h-1, c, C, float64(f[c]), v[c], e)
				}
			}
			if h == H {
				if t.iv != nil {
					t.iv.scoredLastStep(s.iv)
				}
				t.complete(s, at)
				s.issued[slot] = math.MinInt64
			}
		}
	}
	s.last = step
	slot := mod(step, H)
	s.issued[slot] = step
	dst := s.pending[slot*H*C : (slot+1)*H*C]
	for i, v := range fc {
		dst[i] = float32(v)
	}
	if t.iv == nil {
		return false
	}
	for c := range C {
		t.scratch.issue[c] = t.scale(s, c)
	}
	published := t.iv.issue(s.iv, slot, t.scratch.issue)
	if !published || len(lower) != len(t.iv.levels) {
		return false
	}
	t.iv.write(s.iv, slot, fc, lower, upper)
	return true
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
	L, H, C, ring := t.L, t.H, t.C, t.ring
	if at-int64(L-1) < s.first {
		return
	}
	for i := range L {
		copy(t.scratch.in[i*C:(i+1)*C], s.values[mod(at-int64(L-1-i), ring)*C:][:C])
	}
	for i := range H {
		copy(t.scratch.tgt[i*C:(i+1)*C], s.values[mod(at+1+int64(i), ring)*C:][:C])
	}
	for c := range C {
		t.scratch.scale[c] = t.scale(s, c)
	}
	t.replay.add(t.scratch.in, t.scratch.tgt, t.scratch.scale, at*int64(t.cadence))
	t.pairs++
}

// recentRows returns the last steps values of up to maxSeries tracked
// series whose history holds that many contiguous steps, side by side as
// channels (row-major: steps rows of k·C values), for the spectrum of the
// recent data. Series are taken in name order, so the result does not
// depend on map order. It returns nil when no series has the history.
func (t *tracker) recentRows(steps, maxSeries int) (rows []float64, channels int) {
	if steps > t.ring {
		return nil, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for k, s := range t.series {
		if s.last != math.MinInt64 && s.last-s.first+1 >= int64(steps) {
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
			copy(rows[i*width+j*C:][:C], s.values[mod(st, t.ring)*C:][:C])
		}
	}
	return rows, width
}

// newestStep is the newest observed data time in steps of the cadence since
// the Unix epoch.
func (t *tracker) newestStep() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	ns, cad := t.newest.UnixNano(), int64(t.cadence)
	if cad <= 0 {
		return 0
	}
	return float64(ns/cad) + float64(ns%cad)/float64(cad)
}

// expire forgets series not seen within the last L+H steps of data time.
func (t *tracker) expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	cut := t.newest.Add(-time.Duration(t.L+t.H) * t.cadence)
	for k, s := range t.series {
		if s.seen.Before(cut) {
			if t.iv != nil {
				t.iv.leave(s.iv)
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
	t.mu.Lock()
	out := make([]SeriesError, 0, len(t.series))
	for k, s := range t.series {
		out = append(out, SeriesError{Series: k, MSE: s.sqErr})
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b SeriesError) int {
		return cmp.Or(cmp.Compare(b.MSE, a.MSE), cmp.Compare(a.Series, b.Series)) // worst first
	})
	return out[:min(n, len(out))]
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
