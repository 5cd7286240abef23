package pipeline

import (
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
)

// worker owns the windows of the series hashed onto it, one window.Set per
// input partition (so that a partition's windows can be dropped when it
// moves away), and a model explainer. Only the processor goroutine's batch
// step touches it.
type worker struct {
	sets    map[int]*window.Set // by input partition
	groups  []rowGroup          // this batch's rows, by partition (reused)
	ready   window.Batch
	stats   window.Stats // of the live Sets plus retired
	retired window.Stats // the counters of Sets dropped with their partition

	ex      *model.Explainer // for exModel; rebuilt when the model changes
	exModel *model.Model
	expl    *model.Explanation
	ends    []int64            // the window end times of a forward pass, Unix nanoseconds
	obs     online.Observation // reused for every forecast handed to the learner
	issued  wire.Forecast      // reused for every forecast handed to the forecast observer
	lower   [][]float64        // obs.Lower and obs.Upper's storage: one slice per level
	upper   [][]float64
}

// rowGroup is the rows of one batch that belong to one partition.
type rowGroup struct {
	part int
	rows []int
}

// rowsOf returns the worker's row list for partition part, reusing storage.
func (w *worker) rowsOf(part int) *[]int {
	for i := range w.groups {
		if w.groups[i].part == part {
			return &w.groups[i].rows
		}
	}
	if len(w.groups) < cap(w.groups) {
		w.groups = w.groups[:len(w.groups)+1]
		g := &w.groups[len(w.groups)-1]
		g.part, g.rows = part, g.rows[:0]
		return &g.rows
	}
	w.groups = append(w.groups, rowGroup{part: part})
	return &w.groups[len(w.groups)-1].rows
}

// set returns the Set of partition part, creating it.
func (w *worker) set(p *Pipeline, part int) (*window.Set, error) {
	if s := w.sets[part]; s != nil {
		return s, nil
	}
	s, err := window.New(p.shape, p.win, window.WithLogger(p.log), window.WithClock(p.now), window.WithBudget(p.budget))
	if err != nil {
		return nil, err
	}
	w.sets[part] = s
	return s, nil
}

// forget drops the windows of partition part, keeping its counters.
func (w *worker) forget(part int) {
	s := w.sets[part]
	if s == nil {
		return
	}
	st := s.Stats()
	st.Active = 0 // its series are gone; its counts stay
	s.Reset()
	delete(w.sets, part)
	w.retired.Add(st)
	w.refresh()
}

// refresh recomputes the worker's stats from its Sets.
func (w *worker) refresh() {
	s := w.retired
	for _, set := range w.sets {
		s.Add(set.Stats())
	}
	w.stats = s
}

// part is one worker's forecasts of one batch, with the storage they point
// into, the rows it refused, and the error that kept the worker from
// processing its rows.
type part struct {
	err       error
	fs        []wire.Forecast
	ingest    []time.Time
	arena     []float64
	contribs  []wire.Contribution
	rhythms   []wire.RhythmPart
	intervals []wire.Interval
	outRange  []int   // rows the windows refused as out of range
	tooLate   []int   // rows too late for their step
	tooLateBy []int64 // how many steps behind their series' newest, by row of tooLate
	nonFinite []int   // rows whose window's forecast had a non-finite value
}

// outBatch is the forecasts of one input batch, on its way to the sink.
type outBatch struct {
	in        *stream.Batch
	err       error // a worker could not process its rows: the batch is dead-lettered before its commit
	parts     []part
	all       []wire.Forecast
	ingest    []time.Time
	outRange  []int   // rows dead-lettered as out of range before the commit
	tooLate   []int   // rows dead-lettered as too late before the commit
	tooLateBy []int64 // how many steps behind their series' newest, by row of tooLate
	nonFinite []int   // rows dead-lettered for a non-finite forecast before the commit
}

func newOutBatch(workers int) *outBatch { return &outBatch{parts: make([]part, workers)} }

// reset empties ob for the batch in, keeping its storage for reuse unless
// the last batch used a small part of it: the buffers a backlog's large
// batches grew are dropped at the first ordinary batch after, so memory
// goes back to what the steady flow needs (see shrink).
func (ob *outBatch) reset(in *stream.Batch) {
	ob.in = in
	ob.shrink(&trim{})
}

// trimIdle drops every buffer of ob above keepBytes: no batch came for a
// while, so what a backlog grew is not kept for the next one. It returns
// the bytes dropped.
func (ob *outBatch) trimIdle() uintptr {
	t := trim{idle: true}
	ob.shrink(&t)
	return t.dropped
}

func (ob *outBatch) shrink(t *trim) {
	ob.all, ob.ingest = shrink(ob.all, t), shrink(ob.ingest, t)
	ob.outRange, ob.tooLate, ob.tooLateBy, ob.nonFinite = shrink(ob.outRange, t), shrink(ob.tooLate, t), shrink(ob.tooLateBy, t), shrink(ob.nonFinite, t)
	for i := range ob.parts {
		pt := &ob.parts[i]
		pt.fs, pt.ingest, pt.arena, pt.contribs, pt.err = shrink(pt.fs, t), shrink(pt.ingest, t), trimmed(pt.arena, t), shrink(pt.contribs, t), nil
		pt.intervals, pt.rhythms = shrink(pt.intervals, t), shrink(pt.rhythms, t)
		pt.outRange, pt.tooLate, pt.tooLateBy, pt.nonFinite = shrink(pt.outRange, t), shrink(pt.tooLate, t), shrink(pt.tooLateBy, t), shrink(pt.nonFinite, t)
	}
}

// keepBytes is what a reused buffer may hold however little of it the last
// batch used.
const keepBytes = 1 << 20

// trim says which buffers shrink drops and counts their bytes.
type trim struct {
	idle    bool    // drop every buffer above keepBytes, used or not
	dropped uintptr // bytes dropped so far
}

// shrink returns s emptied for reuse, or nil (so it is allocated again at
// the size the next batch needs) when it holds more than keepBytes and the
// batch that just used it filled less than a quarter of it, or t is idle.
// A kept buffer is zeroed, so that the forecasts it held do not keep a
// dropped arena alive through their slices.
func shrink[T any](s []T, t *trim) []T {
	s = trimmed(s, t)
	clear(s)
	return s[:0]
}

// trimmed is shrink without the zeroing, for buffers of numbers, which
// hold no references and are written before they are read (the arena,
// about 12 KB a forecast).
func trimmed[T any](s []T, t *trim) []T {
	var zero T
	if size := uintptr(cap(s)) * unsafe.Sizeof(zero); size > keepBytes && (t.idle || len(s) < cap(s)/4) {
		t.dropped += size
		return nil
	}
	return s[:0]
}

// gather lists every part's forecasts in one slice for the sink, and its
// refused rows, and keeps the first error of a part.
func (ob *outBatch) gather() {
	ob.err = nil
	for i := range ob.parts {
		pt := &ob.parts[i]
		if ob.err == nil {
			ob.err = pt.err
		}
		ob.all = append(ob.all, pt.fs...)
		ob.ingest = append(ob.ingest, pt.ingest...)
		ob.outRange = append(ob.outRange, pt.outRange...)
		ob.tooLate, ob.tooLateBy = append(ob.tooLate, pt.tooLate...), append(ob.tooLateBy, pt.tooLateBy...)
		ob.nonFinite = append(ob.nonFinite, pt.nonFinite...)
	}
}

// take returns n floats of the part's arena. The arena is sized for the
// whole batch before any forecast takes from it, so slices stay valid.
func (pt *part) take(n int) []float64 {
	s := pt.arena[len(pt.arena) : len(pt.arena)+n : len(pt.arena)+n]
	pt.arena = pt.arena[:len(pt.arena)+n]
	return s
}

// run feeds the worker's rows to the windows of their partitions and
// forecasts every window that became ready, in chunks of at most MaxBatch
// windows. The rows of a rebuild batch only change the windows.
func (w *worker) run(p *Pipeline, v *versioned, rec arrow.Record, rebuild bool, pt *part) {
	if !w.appendRows(p, rec, rebuild, pt) {
		return
	}
	n := w.ready.Len()
	if n == 0 || !w.explainerFor(p, v.m, pt) {
		return
	}
	levels := w.reserve(p, v.m, n, pt)
	HC := v.m.Horizon() * len(p.wiring.Fields)
	for lo := 0; lo < n; lo += p.cfg.MaxBatch {
		hi := min(lo+p.cfg.MaxBatch, n)
		y := w.forward(p, v.m, lo, hi)
		for i := lo; i < hi; i++ {
			w.issue(p, v, pt, i, i-lo, y[(i-lo)*HC:(i-lo+1)*HC], levels)
		}
	}
	w.forgetBatch(p)
}

// appendRows appends the worker's rows to the windows of their partitions,
// collecting the windows that became ready (none for a rebuild batch) and
// the rows refused as out of range or too late; it reports false, with
// pt.err set, when a window refuses the record.
func (w *worker) appendRows(p *Pipeline, rec arrow.Record, rebuild bool, pt *part) bool {
	w.ready.Reset()
	out := &w.ready
	if rebuild {
		out = nil
	}
	for _, g := range w.groups {
		set, err := w.set(p, g.part)
		if err == nil {
			err = set.Append(rec, g.rows, out)
		}
		if err != nil {
			// The stream guarantees the schema, so this is a bug upstream; the
			// write stage dead-letters the batch rather than commit it unread.
			pt.err = fmt.Errorf("window append: %w", err)
			return false
		}
	}
	w.refresh()
	pt.outRange = append(pt.outRange, w.ready.OutOfRange...)
	pt.tooLate, pt.tooLateBy = append(pt.tooLate, w.ready.TooLate...), append(pt.tooLateBy, w.ready.TooLateBy...)
	return true
}

// explainerFor makes the worker's explainer the model m's, building one
// when the model changed; it reports false, with pt.err set, when m does
// not fit the readings.
func (w *worker) explainerFor(p *Pipeline, m *model.Model, pt *part) bool {
	if w.exModel == m {
		return true
	}
	ex, err := m.NewExplainer(len(p.wiring.Fields))
	if err != nil {
		pt.err = fmt.Errorf("the model does not fit the readings: %w", err) // SetModel rules this out
		return false
	}
	w.ex, w.exModel = ex, m
	return true
}

// reserve sizes the part's arenas for n forecasts of model m, with their
// parts and intervals, so that slices taken from them stay valid through
// the batch, and returns the learner's interval levels (none without one).
func (w *worker) reserve(p *Pipeline, m *model.Model, n int, pt *part) []float64 {
	HC := m.Horizon() * len(p.wiring.Fields)
	maxContribs := m.MaxContributions()
	if m.Config().Mode == model.Independent {
		maxContribs *= len(p.wiring.Fields)
	}
	rhythms := len(m.Meta.Rhythms)
	perWindow := HC
	if !p.wiring.SkipAttributions && !p.wiring.SharesOnly {
		perWindow = HC * (2 + maxContribs + rhythms)
	}
	var levels []float64
	if p.learner != nil {
		levels = p.learner.Levels()
		perWindow += 2 * len(levels) * HC
	}
	if need := n * perWindow; cap(pt.arena) < need {
		pt.arena = make([]float64, 0, need)
	}
	if need := n * maxContribs; cap(pt.contribs) < need {
		pt.contribs = make([]wire.Contribution, 0, need)
	}
	if need := n * rhythms; cap(pt.rhythms) < need {
		pt.rhythms = make([]wire.RhythmPart, 0, need)
	}
	if need := n * len(levels); cap(pt.intervals) < need {
		pt.intervals = make([]wire.Interval, 0, need)
	}
	if len(w.lower) != len(levels) {
		w.lower, w.upper = make([][]float64, len(levels)), make([][]float64, len(levels))
	}
	return levels
}

// forward runs model m over the ready windows lo to hi (one forward pass)
// and returns their forecasts, H×C each, in the explainer's storage.
func (w *worker) forward(p *Pipeline, m *model.Model, lo, hi int) []float64 {
	L, C := m.Lookback(), len(p.wiring.Fields)
	start := p.now()
	var ends []int64
	if m.ReadsTime() {
		w.ends = w.ends[:0]
		for _, t := range w.ready.End[lo:hi] {
			w.ends = append(w.ends, t.UnixNano())
		}
		ends = w.ends
	}
	y := w.ex.Forecast(w.ready.Values[lo*L*C:hi*L*C], ends)
	p.met.forward.Observe(p.now().Sub(start).Seconds())
	p.met.batchWindows.Observe(float64(hi - lo))
	return y
}

// issue turns ready window i (the j-th of its forward pass, whose forecast
// is y) into the forecast the sink writes: its parts unless attributions
// are skipped, its intervals from the learner, seen by the forecast
// observer; a forecast with a non-finite value is not issued, and the
// reading that completed its window is dead-lettered instead.
func (w *worker) issue(p *Pipeline, v *versioned, pt *part, i, j int, y []float64, levels []float64) {
	m := v.m
	HC, LC := len(y), m.Lookback()*len(p.wiring.Fields)
	f := wire.Forecast{
		Series: w.ready.Series[i], TS: w.ready.End[i], ModelVersion: v.version,
		Cadence: p.wiring.Cadence, Fields: p.wiring.Fields, Horizon: m.Horizon(),
	}
	if p.wiring.SkipAttributions {
		f.Values = pt.take(HC)
		copy(f.Values, y)
	} else if p.wiring.SharesOnly {
		// The explainer's own storage, warm in the cache; only the
		// forecast is kept (the parts are dropped below).
		w.expl = w.ex.ExplainInto(j, w.expl, nil)
		f.Values = pt.take(HC)
		copy(f.Values, w.expl.Forecast)
	} else {
		// The explanation's numbers are taken from the batch's
		// arena, where the forecast keeps them: no copy.
		w.expl = w.ex.ExplainInto(j, w.expl, pt.take)
		f.Values = w.expl.Forecast
	}
	if !p.wiring.SkipAttributions {
		w.attribute(p, m, pt, &f)
	}
	if !finite(&f) {
		pt.nonFinite = append(pt.nonFinite, w.ready.Rows[i])
		return
	}
	window := w.ready.Values[i*LC : (i+1)*LC]
	if p.learner != nil {
		for k := range levels {
			w.lower[k], w.upper[k] = pt.take(HC), pt.take(HC)
		}
		w.obs = online.Observation{Series: f.Series, End: f.TS, Window: window, Forecast: f.Values,
			Lower: w.lower, Upper: w.upper}
		if !p.wiring.SkipAttributions {
			w.obs.Contributions, w.obs.Rhythms = w.expl.Contributions, w.expl.Rhythms
		}
		if p.learner.Observe(&w.obs) && finiteBounds(w.lower, w.upper) {
			first := len(pt.intervals)
			for k, level := range levels {
				pt.intervals = append(pt.intervals, wire.Interval{Level: level, Lower: w.lower[k], Upper: w.upper[k]})
			}
			f.Intervals = pt.intervals[first:len(pt.intervals):len(pt.intervals)]
		}
	}
	if p.observeIssued != nil {
		var level []float64
		if !p.wiring.SkipAttributions {
			level = w.expl.Level
		}
		w.issued = f // a field, so that f does not escape
		p.observeIssued(&w.issued, window, level)
	}
	if p.wiring.SharesOnly && !p.wiring.SkipAttributions {
		sharesOnly(&f)
	}
	pt.fs = append(pt.fs, f)
	pt.ingest = append(pt.ingest, w.ready.Ingest[i])
}

// attribute sets forecast f's parts from the worker's explanation: α, the
// residual, each frequency's contribution and each rhythm's, with their
// periods in time, in storage of the part's arenas.
func (w *worker) attribute(p *Pipeline, m *model.Model, pt *part, f *wire.Forecast) {
	e := w.expl
	f.Alpha = e.Alpha
	f.Residual = e.Residual
	first := len(pt.contribs)
	for _, c := range e.Contributions {
		r, cycle := m.RhythmOf(c.ID)
		pt.contribs = append(pt.contribs, wire.Contribution{
			ID: c.ID, PeriodSteps: c.PeriodSteps, Share: c.Share, Values: c.Values,
			Period: time.Duration(math.Round(c.PeriodSteps * float64(p.wiring.Cadence))),
			Cycle:  cycle, Rhythm: r,
		})
	}
	f.Frequencies = pt.contribs[first:len(pt.contribs):len(pt.contribs)]
	firstR := len(pt.rhythms)
	for _, rp := range e.Rhythms {
		pt.rhythms = append(pt.rhythms, wire.RhythmPart{
			Index: rp.Index, PeriodSteps: rp.PeriodSteps, Share: rp.Share, Frequencies: rp.Frequencies, Values: rp.Values,
			Period: time.Duration(math.Round(rp.PeriodSteps * float64(p.wiring.Cadence))),
		})
	}
	f.Rhythms = pt.rhythms[firstR:len(pt.rhythms):len(pt.rhythms)]
}

// trimIdle drops the ready windows' buffers a backlog's batches grew
// beyond keepBytes, as outBatch.trimIdle does for the forecasts'.
func (w *worker) trimIdle(t *trim) {
	r := &w.ready
	r.Series, r.End, r.Values, r.Ingest = shrink(r.Series, t), shrink(r.End, t), trimmed(r.Values, t), shrink(r.Ingest, t)
	r.Rows, r.OutOfRange, r.TooLate = shrink(r.Rows, t), shrink(r.OutOfRange, t), shrink(r.TooLate, t)
}

// forgetBatch drops the worker's references into the part's arena (the
// last forecast handed to the learner and to the observer, the interval
// bounds' slices), which would otherwise keep a backlog's arena, tens of MB,
// alive after the pipeline's idle trim dropped it.
func (w *worker) forgetBatch(p *Pipeline) {
	w.obs, w.issued = online.Observation{}, wire.Forecast{}
	clear(w.lower)
	clear(w.upper)
	// The last explanation's numbers are in the batch's arena too, unless
	// they are the explainer's own (SharesOnly).
	if e := w.expl; e != nil && !p.wiring.SharesOnly {
		e.Forecast, e.Residual = nil, nil
		cs := e.Contributions[:cap(e.Contributions)]
		for i := range cs {
			cs[i].Values = nil
		}
		rs := e.Rhythms[:cap(e.Rhythms)]
		for i := range rs {
			rs[i].Values = nil
		}
	}
}

// sharesOnly drops f's per-step parts, which point into the explainer's
// storage that the next window overwrites (Wiring.SharesOnly).
func sharesOnly(f *wire.Forecast) {
	f.Residual = nil
	for k := range f.Frequencies {
		f.Frequencies[k].Values = nil
	}
	for k := range f.Rhythms {
		f.Rhythms[k].Values = nil
	}
}

// finiteBounds reports whether every interval bound is finite: an
// interval that is not is left out (the forecast is still written).
func finiteBounds(lower, upper [][]float64) bool {
	for k := range lower {
		for i := range lower[k] {
			if lo, hi := lower[k][i], upper[k][i]; math.IsNaN(lo) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsInf(hi, 0) {
				return false
			}
		}
	}
	return true
}

// finite reports whether every number of f (forecast, residual,
// contributions and rhythm parts) is finite.
func finite(f *wire.Forecast) bool {
	ok := func(xs []float64) bool {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false
			}
		}
		return true
	}
	if !ok(f.Values) || !ok(f.Residual) || math.IsNaN(f.Alpha) || math.IsInf(f.Alpha, 0) {
		return false
	}
	for _, c := range f.Frequencies {
		if !ok(c.Values) || math.IsNaN(c.Share) || math.IsInf(c.Share, 0) {
			return false
		}
	}
	for _, r := range f.Rhythms {
		if !ok(r.Values) || math.IsNaN(r.Share) || math.IsInf(r.Share, 0) {
			return false
		}
	}
	return true
}
