package pipeline

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
)

// worker owns the windows of the series hashed onto it and a model
// explainer. Only the processor goroutine's batch step touches it.
type worker struct {
	set   *window.Set
	ready window.Batch
	rows  []int
	stats window.Stats

	ex      *model.Explainer // for exModel; rebuilt when the model changes
	exModel *model.Model
	expl    *model.Explanation
	obs     online.Observation // reused for every forecast handed to the learner
}

// part is one worker's forecasts of one batch, with the storage they point
// into, and the error that kept the worker from processing its rows.
type part struct {
	err      error
	fs       []wire.Forecast
	ingest   []time.Time
	arena    []float64
	contribs []wire.Contribution
}

// outBatch is the forecasts of one input batch, on its way to the sink.
type outBatch struct {
	in     *stream.Batch
	err    error // a worker could not process its rows: the batch is dead-lettered before its commit
	parts  []part
	all    []wire.Forecast
	ingest []time.Time
}

func newOutBatch(workers int) *outBatch { return &outBatch{parts: make([]part, workers)} }

func (ob *outBatch) reset(in *stream.Batch) {
	ob.in = in
	ob.all, ob.ingest = ob.all[:0], ob.ingest[:0]
	for i := range ob.parts {
		pt := &ob.parts[i]
		pt.fs, pt.ingest, pt.arena, pt.contribs, pt.err = pt.fs[:0], pt.ingest[:0], pt.arena[:0], pt.contribs[:0], nil
	}
}

// gather lists every part's forecasts in one slice for the sink, and keeps
// the first error of a part.
func (ob *outBatch) gather() {
	ob.err = nil
	for i := range ob.parts {
		if ob.err == nil {
			ob.err = ob.parts[i].err
		}
		ob.all = append(ob.all, ob.parts[i].fs...)
		ob.ingest = append(ob.ingest, ob.parts[i].ingest...)
	}
}

// take returns n floats of the part's arena. The arena is sized for the
// whole batch before any forecast takes from it, so slices stay valid.
func (pt *part) take(n int) []float64 {
	s := pt.arena[len(pt.arena) : len(pt.arena)+n : len(pt.arena)+n]
	pt.arena = pt.arena[:len(pt.arena)+n]
	return s
}

// run feeds the worker's rows to its windows and forecasts every window that
// became ready, in chunks of at most MaxBatch windows.
func (w *worker) run(p *Pipeline, v *versioned, rec arrow.Record, pt *part) {
	w.ready.Reset()
	if err := w.set.Append(rec, w.rows, &w.ready); err != nil {
		// The stream guarantees the schema, so this is a bug upstream; the
		// write stage dead-letters the batch rather than commit it unread.
		pt.err = fmt.Errorf("window append: %w", err)
		return
	}
	w.stats = w.set.Stats()
	n := w.ready.Len()
	if n == 0 {
		return
	}
	if w.exModel != v.m {
		ex, err := v.m.NewExplainer(len(p.cfg.Fields))
		if err != nil {
			pt.err = fmt.Errorf("the model does not fit the readings: %w", err) // SetModel rules this out
			return
		}
		w.ex, w.exModel = ex, v.m
	}
	m := v.m
	H, C, L := m.Horizon(), len(p.cfg.Fields), m.Lookback()
	HC := H * C
	maxContribs := m.Config().TopK
	if m.Config().Mode == model.Independent {
		maxContribs *= C
	}
	perWindow := HC
	if !p.cfg.SkipAttributions {
		perWindow = HC * (2 + maxContribs)
	}
	if need := n * perWindow; cap(pt.arena) < need {
		pt.arena = make([]float64, 0, need)
	}
	if need := n * maxContribs; cap(pt.contribs) < need {
		pt.contribs = make([]wire.Contribution, 0, need)
	}

	for lo := 0; lo < n; lo += p.cfg.MaxBatch {
		hi := min(lo+p.cfg.MaxBatch, n)
		start := p.now()
		y := w.ex.Forecast(w.ready.Values[lo*L*C : hi*L*C])
		p.met.forward.Observe(p.now().Sub(start).Seconds())
		p.met.batchWindows.Observe(float64(hi - lo))
		for i := lo; i < hi; i++ {
			f := wire.Forecast{
				Series: w.ready.Series[i], TS: w.ready.End[i], ModelVersion: v.version,
				Cadence: p.cfg.Cadence, Fields: p.cfg.Fields, Horizon: H,
			}
			f.Values = pt.take(HC)
			if p.cfg.SkipAttributions {
				copy(f.Values, y[(i-lo)*HC:(i-lo+1)*HC])
			} else {
				w.expl = w.ex.Explain(i-lo, w.expl)
				e := w.expl
				copy(f.Values, e.Forecast)
				f.Alpha = e.Alpha
				f.Residual = pt.take(HC)
				copy(f.Residual, e.Residual)
				first := len(pt.contribs)
				for _, c := range e.Contributions {
					vals := pt.take(HC)
					copy(vals, c.Values)
					pt.contribs = append(pt.contribs, wire.Contribution{
						ID: c.ID, PeriodSteps: c.PeriodSteps, Share: c.Share, Values: vals,
						Period: time.Duration(math.Round(c.PeriodSteps * float64(p.cfg.Cadence))),
					})
				}
				f.Frequencies = pt.contribs[first:len(pt.contribs):len(pt.contribs)]
			}
			if p.learner != nil {
				w.obs = online.Observation{Series: f.Series, End: f.TS, Window: w.ready.Values[i*L*C : (i+1)*L*C], Forecast: f.Values}
				if !p.cfg.SkipAttributions {
					w.obs.Contributions = w.expl.Contributions
				}
				p.learner.Observe(&w.obs)
			}
			pt.fs = append(pt.fs, f)
			pt.ingest = append(pt.ingest, w.ready.Ingest[i])
		}
	}
}
