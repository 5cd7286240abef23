package backtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/service"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
)

// Options say how to run a backtest.
type Options struct {
	// Config is the serve configuration to replay with: its input.*,
	// window.*, service.* and online.* settings and output.intervals mean
	// what they mean to serve. Its Kafka, topics and metrics are not used,
	// nor online.checkpoint_dir (nothing is written) and online.duty (a
	// round computes without pausing).
	Config service.Config
	// From, when set, is where scoring starts: the readings before it only
	// fill the windows, as a restarted service's rebuild does, and are
	// neither forecast nor learnt from.
	From time.Time
	// Every is the length of a stretch of the timeline; 0 picks one from
	// the history's span (a day for a span of ten days or more at a cadence
	// of an hour or less).
	Every time.Duration
	// Focus, when set, keeps the timeline to the forecasts of these series
	// (one sensor's shock among many); the scores are every series'.
	Focus []string
	// MaxBatch caps the readings of one batch, which otherwise holds one
	// step of data time of every series.
	//
	// Default: 65536
	MaxBatch int
	// Progress, when set, receives a line every two seconds and one at the
	// end.
	Progress io.Writer
	// Log receives the service's log lines (fine-tuning rounds, drift);
	// nil discards them.
	Log *slog.Logger
}

// Run replays h through the serving path with m as the model `serve` would
// load: the windows, the model, the online learner's intervals, error,
// fine-tuning rounds and drift, wired as serve wires them, in data time.
// It scores every forecast against the realised values beside seasonal
// naive forecasts, the frozen model and static bands, and returns the
// report. m is not changed: fine-tuning promotes copies of it.
func Run(ctx context.Context, m *model.Model, h *History, o Options) (*Report, error) {
	start := time.Now()
	if h.Len() == 0 {
		return nil, errors.New("backtest: the history holds no readings")
	}
	if first, last := h.span(); !o.From.IsZero() && o.From.After(last) {
		return nil, fmt.Errorf("backtest: --from %s is after the history's last reading (%s; the first is %s); give a time within it",
			o.From.UTC().Format(time.RFC3339), last.Format(time.RFC3339), first.Format(time.RFC3339))
	}
	cfg := o.Config
	cfg.Readings.ValueFields = h.Fields
	if cfg.Cadence == 0 {
		cfg.Cadence = m.Meta.Cadence
	}
	if cfg.Cadence <= 0 {
		return nil, errors.New("backtest: neither the model nor the configuration gives the readings' cadence; set input.cadence")
	}
	if m.Meta.Cadence == 0 {
		m = m.Clone()
		m.Meta.Cadence = cfg.Cadence
	}
	cfg.Online.Duty = 1
	cfg.Online.CheckpointDir = ""
	if o.MaxBatch <= 0 {
		o.MaxBatch = 65536
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wiring := cfg.Wiring(max(m.Meta.Version, 1))
	if err := pipeline.CheckModel(wiring, m); err != nil {
		return nil, fmt.Errorf("backtest: %w", err)
	}

	var events []online.DriftEvent
	learner, err := online.New(cfg.Online, m, online.WithLogger(log), online.WithDriftEvents(func(e online.DriftEvent) {
		events = append(events, e)
	}))
	if err != nil {
		return nil, err
	}

	src := &source{h: h, maxRows: o.MaxBatch, warmUntil: math.MinInt64, done: make(chan struct{}), refused: map[string]int{}}
	var sc *scorer
	keepWindows := cfg.Online.Enabled // the frozen model forecasts them again
	p, err := pipeline.New(wiring, cfg.Pipeline, src, cfg.Window, m, sink.SinkFunc(func(context.Context, []wire.Forecast) error { return nil }),
		pipeline.WithOnline(learner), pipeline.WithLogger(log), pipeline.WithClock(src.clock),
		pipeline.WithForecastObserver(func(f *wire.Forecast, window, _ []float64) {
			sc.observe(f, window, keepWindows, int(h.index[f.Series]))
		}))
	if err != nil {
		return nil, fmt.Errorf("backtest: %w", err)
	}
	g := newGrid(h, cfg.Cadence, window.AlignOffset(p.Align(), cfg.Cadence), mixedStd(m))
	src.g = g
	if !o.From.IsZero() {
		src.warmUntil = g.step(o.From.UnixMilli())
	}
	first, last := h.span()
	every := o.Every
	if every <= 0 {
		every = timelineStretch(first, last, cfg.Cadence)
	}
	sc = newScorer(g, m.Lookback(), m.Horizon(), cfg.Cadence, cfg.Online.Intervals, m.Meta.ErrorQuantiles, o.From, every)
	if len(o.Focus) > 0 {
		sc.focus = make([]bool, len(h.Series))
		for _, name := range o.Focus {
			i, ok := h.index[name]
			if !ok {
				return nil, fmt.Errorf("backtest: the history has no series %q to keep the timeline to", name)
			}
			sc.focus[i] = true
		}
	}

	r := &run{m: m, sc: sc, learner: learner, p: p, progress: o.Progress, first: first, last: last, started: start}
	if cfg.Online.Enabled {
		if r.frozen, err = explain.New(m, len(h.Fields)); err != nil {
			return nil, err
		}
	}
	src.after = r.after

	pctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- p.Run(pctx) }()
	select {
	case <-src.done:
		stop()
		err = <-ran
	case err = <-ran:
		if err == nil {
			err = errors.New("backtest: the pipeline stopped before the history was replayed")
		}
	}
	if err == nil {
		err = src.err
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	r.score() // what the last batch left, if the pipeline was stopped early
	learner.Refresh(p)
	r.printProgress(true)
	rep := r.report(h, cfg, src, events, time.Since(start))
	if rep.Points == 0 {
		return nil, fmt.Errorf("backtest: nothing was scored: no forecast has a realised step whose seasonal naive forecast exists (lookback %d, horizon %d, from the scoring start on); give a longer history or an earlier --from",
			m.Lookback(), m.Horizon())
	}
	return rep, nil
}

// mixedStd is the scale of a mixed model's channels (its training
// standard deviations), nil for a model without them.
func mixedStd(m *model.Model) []float64 {
	if m.Config().Mode == model.Mixed && len(m.Meta.Std) == m.Channels() {
		return m.Meta.Std
	}
	return nil
}

// timelineStretch picks the timeline's stretch: a day when the span holds
// ten of them at a cadence of an hour or less, else about a hundredth of
// the span in whole steps.
func timelineStretch(first, last time.Time, cadence time.Duration) time.Duration {
	span := last.Sub(first)
	if cadence <= time.Hour && span >= 10*24*time.Hour {
		return 24 * time.Hour
	}
	n := max(1, int64(span/cadence)/100)
	return time.Duration(n) * cadence
}

// run is one backtest's state between batches.
type run struct {
	m        *model.Model
	frozen   *explain.Explainer // the frozen model; nil when it is the one served
	sc       *scorer
	learner  *online.Learner
	p        *pipeline.Pipeline
	progress io.Writer
	rounds   []Round
	first    time.Time
	last     time.Time
	now      time.Time
	started  time.Time
	printed  time.Time
	x        []float64
	ends     []int64
}

// after runs between batches, at data time now: it scores what the batch
// issued and lets the learner do what its clock says is due.
func (r *run) after(ctx context.Context, now time.Time) error {
	r.now = now
	r.score()
	if res, ran := r.learner.Advance(ctx, r.p, now); ran {
		r.rounds = append(r.rounds, roundOf(now, res))
	}
	r.printProgress(false)
	return nil
}

// score scores the forecasts observed since the last call, running the
// frozen model on their windows first when it is not the one served.
func (r *run) score() {
	its := r.sc.drain()
	if len(its) == 0 {
		return
	}
	if r.frozen == nil {
		for _, it := range its {
			r.sc.score(it, nil)
		}
		r.sc.recycle(its)
		return
	}
	const chunk = 256
	L, H, C := r.sc.L, r.sc.H, r.sc.C
	for lo := 0; lo < len(its); lo += chunk {
		part := its[lo:min(lo+chunk, len(its))]
		r.x, r.ends = r.x[:0], r.ends[:0]
		for _, it := range part {
			r.x = append(r.x, it.window[:L*C]...)
			r.ends = append(r.ends, it.end.UnixNano())
		}
		var ends []int64
		if r.m.ReadsTime() {
			ends = r.ends
		}
		y := r.frozen.Forecast(r.x, ends)
		for i, it := range part {
			r.sc.score(it, y[i*H*C:(i+1)*H*C])
		}
	}
	r.sc.recycle(its)
}

// printProgress writes a progress line every two seconds, and at the end.
func (r *run) printProgress(final bool) {
	if r.progress == nil {
		return
	}
	if !final && time.Since(r.printed) < 2*time.Second {
		return
	}
	r.printed = time.Now()
	frac := 1.0
	if span := r.last.Sub(r.first); span > 0 && !final {
		frac = float64(r.now.Sub(r.first)) / float64(span)
	}
	promoted, rejected := 0, 0
	for _, rd := range r.rounds {
		switch rd.Outcome {
		case string(online.OutcomePromoted):
			promoted++
		case string(online.OutcomeRejectedWorse):
			rejected++
		}
	}
	fmt.Fprintf(r.progress, "backtest: %3.0f%% of the history (data time %s), %d forecasts, %d rounds (%d promoted, %d rejected), %.0fs\n",
		100*frac, r.now.Format("2006-01-02 15:04"), r.sc.forecasts, len(r.rounds), promoted, rejected, time.Since(r.started).Seconds())
}
