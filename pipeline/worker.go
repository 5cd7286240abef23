package pipeline

import (
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/freqlens/freqlens/explain"
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

	ex      *explain.Explainer // for exModel; rebuilt when the model changes
	exModel *model.Model
	expl    *explain.Explanation
	ends    []int64            // the window end times of a forward pass, Unix nanoseconds
	obs     online.Observation // reused for every forecast handed to the learner
	issued  wire.Forecast      // reused for every forecast handed to the forecast observer
	lower   [][]float64        // obs.Lower and obs.Upper's storage: one slice per level
	upper   [][]float64
}

// rowGroup is the rows of one batch that belong to one partition.
type rowGroup struct {
	partition int
	rows      []int
}

// rowsOf returns the worker's row list for partition, reusing storage.
func (w *worker) rowsOf(partition int) *[]int {
	for i := range w.groups {
		if w.groups[i].partition == partition {
			return &w.groups[i].rows
		}
	}
	if len(w.groups) < cap(w.groups) {
		w.groups = w.groups[:len(w.groups)+1]
		g := &w.groups[len(w.groups)-1]
		g.partition, g.rows = partition, g.rows[:0]
		return &g.rows
	}
	w.groups = append(w.groups, rowGroup{partition: partition})
	return &w.groups[len(w.groups)-1].rows
}

// set returns the Set of partition, creating it.
func (w *worker) set(p *Pipeline, partition int) (*window.Set, error) {
	if s := w.sets[partition]; s != nil {
		return s, nil
	}
	s, err := window.New(p.shape, p.win, window.WithLogger(p.log), window.WithClock(p.now), window.WithBudget(p.budget))
	if err != nil {
		return nil, err
	}
	w.sets[partition] = s
	return s, nil
}

// forget drops the windows of partition, keeping its counters.
func (w *worker) forget(partition int) {
	s := w.sets[partition]
	if s == nil {
		return
	}
	st := s.Stats()
	st.Active = 0 // its series are gone; its counts stay
	s.Reset()
	delete(w.sets, partition)
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

// share is one worker's forecasts of one batch, with the storage they point
// into, the rows it refused, and the error that kept the worker from
// processing its rows.
type share struct {
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
	shares    []share
	all       []wire.Forecast
	ingest    []time.Time
	outRange  []int   // rows dead-lettered as out of range before the commit
	tooLate   []int   // rows dead-lettered as too late before the commit
	tooLateBy []int64 // how many steps behind their series' newest, by row of tooLate
	nonFinite []int   // rows dead-lettered for a non-finite forecast before the commit
}

func newOutBatch(workers int) *outBatch { return &outBatch{shares: make([]share, workers)} }

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
	for i := range ob.shares {
		sh := &ob.shares[i]
		sh.fs, sh.ingest, sh.arena, sh.contribs, sh.err = shrink(sh.fs, t), shrink(sh.ingest, t), trimmed(sh.arena, t), shrink(sh.contribs, t), nil
		sh.intervals, sh.rhythms = shrink(sh.intervals, t), shrink(sh.rhythms, t)
		sh.outRange, sh.tooLate, sh.tooLateBy, sh.nonFinite = shrink(sh.outRange, t), shrink(sh.tooLate, t), shrink(sh.tooLateBy, t), shrink(sh.nonFinite, t)
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

// gather lists every share's forecasts in one slice for the sink, and its
// refused rows, and keeps the first error of a share.
func (ob *outBatch) gather() {
	ob.err = nil
	for i := range ob.shares {
		sh := &ob.shares[i]
		if ob.err == nil {
			ob.err = sh.err
		}
		ob.all = append(ob.all, sh.fs...)
		ob.ingest = append(ob.ingest, sh.ingest...)
		ob.outRange = append(ob.outRange, sh.outRange...)
		ob.tooLate, ob.tooLateBy = append(ob.tooLate, sh.tooLate...), append(ob.tooLateBy, sh.tooLateBy...)
		ob.nonFinite = append(ob.nonFinite, sh.nonFinite...)
	}
}

// take returns n floats of the share's arena. The arena is sized for the
// whole batch before any forecast takes from it, so slices stay valid.
func (sh *share) take(n int) []float64 {
	s := sh.arena[len(sh.arena) : len(sh.arena)+n : len(sh.arena)+n]
	sh.arena = sh.arena[:len(sh.arena)+n]
	return s
}

// run feeds the worker's rows to the windows of their partitions and
// forecasts every window that became ready, in chunks of at most MaxBatch
// windows. The rows of a rebuild batch only change the windows.
func (w *worker) run(p *Pipeline, v *versioned, rec arrow.Record, rebuild bool, sh *share) {
	if !w.appendRows(p, rec, rebuild, sh) {
		return
	}
	n := w.ready.Len()
	if n == 0 || !w.explainerFor(p, v.m, sh) {
		return
	}
	levels := w.reserve(p, v.m, n, sh)
	HC := v.m.Horizon() * len(p.wiring.Fields)
	for lo := 0; lo < n; lo += p.cfg.MaxBatch {
		hi := min(lo+p.cfg.MaxBatch, n)
		y := w.forward(p, v.m, lo, hi)
		for i := lo; i < hi; i++ {
			w.issue(p, v, sh, i, i-lo, y[(i-lo)*HC:(i-lo+1)*HC], levels)
		}
	}
	w.forgetBatch(p)
}

// appendRows appends the worker's rows to the windows of their partitions,
// collecting the windows that became ready (none for a rebuild batch) and
// the rows refused as out of range or too late; it reports false, with
// sh.err set, when a window refuses the record.
func (w *worker) appendRows(p *Pipeline, rec arrow.Record, rebuild bool, sh *share) bool {
	w.ready.Reset()
	out := &w.ready
	if rebuild {
		out = nil
	}
	for _, g := range w.groups {
		set, err := w.set(p, g.partition)
		if err == nil {
			err = set.Append(rec, g.rows, out)
		}
		if err != nil {
			// The stream guarantees the schema, so this is a bug upstream; the
			// write stage dead-letters the batch rather than commit it unread.
			sh.err = fmt.Errorf("window append: %w", err)
			return false
		}
	}
	w.refresh()
	sh.outRange = append(sh.outRange, w.ready.OutOfRange...)
	sh.tooLate, sh.tooLateBy = append(sh.tooLate, w.ready.TooLate...), append(sh.tooLateBy, w.ready.TooLateBy...)
	return true
}

// explainerFor makes the worker's explainer the model m's, building one
// when the model changed; it reports false, with sh.err set, when m does
// not fit the readings.
func (w *worker) explainerFor(p *Pipeline, m *model.Model, sh *share) bool {
	if w.exModel == m {
		return true
	}
	ex, err := explain.New(m, len(p.wiring.Fields))
	if err != nil {
		sh.err = fmt.Errorf("the model does not fit the readings: %w", err) // SetModel rules this out
		return false
	}
	w.ex, w.exModel = ex, m
	return true
}

// reserve sizes the share's arenas for n forecasts of model m, with their
// parts and intervals, so that slices taken from them stay valid through
// the batch, and returns the learner's interval levels (none without one).
func (w *worker) reserve(p *Pipeline, m *model.Model, n int, sh *share) []float64 {
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
	if need := n * perWindow; cap(sh.arena) < need {
		sh.arena = make([]float64, 0, need)
	}
	if need := n * maxContribs; cap(sh.contribs) < need {
		sh.contribs = make([]wire.Contribution, 0, need)
	}
	if need := n * rhythms; cap(sh.rhythms) < need {
		sh.rhythms = make([]wire.RhythmPart, 0, need)
	}
	if need := n * len(levels); cap(sh.intervals) < need {
		sh.intervals = make([]wire.Interval, 0, need)
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
func (w *worker) issue(p *Pipeline, v *versioned, sh *share, i, j int, y []float64, levels []float64) {
	m := v.m
	HC, LC := len(y), m.Lookback()*len(p.wiring.Fields)
	f := wire.Forecast{
		Series: w.ready.Series[i], TS: w.ready.End[i], ModelVersion: v.version,
		Cadence: p.wiring.Cadence, Fields: p.wiring.Fields, Horizon: m.Horizon(),
	}
	if p.wiring.SkipAttributions {
		f.Values = sh.take(HC)
		copy(f.Values, y)
	} else if p.wiring.SharesOnly {
		// The explainer's own storage, warm in the cache; only the
		// forecast is kept (the parts are dropped below).
		w.expl = w.ex.ExplainInto(j, w.expl, nil)
		f.Values = sh.take(HC)
		copy(f.Values, w.expl.Forecast)
	} else {
		// The explanation's numbers are taken from the batch's
		// arena, where the forecast keeps them: no copy.
		w.expl = w.ex.ExplainInto(j, w.expl, sh.take)
		f.Values = w.expl.Forecast
	}
	if !p.wiring.SkipAttributions {
		w.attribute(p, m, sh, &f)
	}
	if !finite(&f) {
		sh.nonFinite = append(sh.nonFinite, w.ready.Rows[i])
		return
	}
	window := w.ready.Values[i*LC : (i+1)*LC]
	if p.learner != nil {
		for k := range levels {
			w.lower[k], w.upper[k] = sh.take(HC), sh.take(HC)
		}
		w.obs = online.Observation{Series: f.Series, End: f.TS, Window: window, Forecast: f.Values,
			Lower: w.lower, Upper: w.upper}
		if !p.wiring.SkipAttributions {
			w.obs.Contributions, w.obs.Rhythms = w.expl.Contributions, w.expl.Rhythms
		}
		if p.learner.Observe(&w.obs) && finiteBounds(w.lower, w.upper) {
			first := len(sh.intervals)
			for k, level := range levels {
				sh.intervals = append(sh.intervals, wire.Interval{Level: level, Lower: w.lower[k], Upper: w.upper[k]})
			}
			f.Intervals = sh.intervals[first:len(sh.intervals):len(sh.intervals)]
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
	sh.fs = append(sh.fs, f)
	sh.ingest = append(sh.ingest, w.ready.Ingest[i])
}

// attribute sets forecast f's parts from the worker's explanation: α, the
// residual (and whether it reads every field), each frequency's
// contribution and each rhythm's, with their periods in time, in storage of
// the share's arenas.
func (w *worker) attribute(p *Pipeline, m *model.Model, sh *share, f *wire.Forecast) {
	e := w.expl
	f.Alpha = e.Alpha
	f.Residual = e.Residual
	f.ResidualAllChannels = m.Config().ChannelMix
	first := len(sh.contribs)
	for _, c := range e.Contributions {
		r, cycle := m.RhythmOf(c.ID)
		sh.contribs = append(sh.contribs, wire.Contribution{
			ID: c.ID, PeriodSteps: c.PeriodSteps, Share: c.Share, Values: c.Values,
			Period: time.Duration(math.Round(c.PeriodSteps * float64(p.wiring.Cadence))),
			Cycle:  cycle, Rhythm: r,
		})
	}
	f.Frequencies = sh.contribs[first:len(sh.contribs):len(sh.contribs)]
	firstR := len(sh.rhythms)
	for _, rp := range e.Rhythms {
		sh.rhythms = append(sh.rhythms, wire.RhythmPart{
			Index: rp.Index, PeriodSteps: rp.PeriodSteps, Share: rp.Share, Frequencies: rp.Frequencies, Values: rp.Values,
			Period: time.Duration(math.Round(rp.PeriodSteps * float64(p.wiring.Cadence))),
		})
	}
	f.Rhythms = sh.rhythms[firstR:len(sh.rhythms):len(sh.rhythms)]
}

// trimIdle drops the ready windows' buffers a backlog's batches grew
// beyond keepBytes, as outBatch.trimIdle does for the forecasts'.
func (w *worker) trimIdle(t *trim) {
	r := &w.ready
	r.Series, r.End, r.Values, r.Ingest = shrink(r.Series, t), shrink(r.End, t), trimmed(r.Values, t), shrink(r.Ingest, t)
	r.Rows, r.OutOfRange, r.TooLate = shrink(r.Rows, t), shrink(r.OutOfRange, t), shrink(r.TooLate, t)
}

// forgetBatch drops the worker's references into the share's arena (the
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
