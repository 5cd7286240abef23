package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	runtimemetrics "runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
)

// Wiring is what the program decides for a Pipeline, not the user's
// service.* keys: the readings' value fields and cadence (from
// input.value_fields and input.cadence, which the windows and the model
// share), whether attributions are computed and the version of the model
// given to New. New takes it as given; it has no defaults.
type Wiring struct {
	// Fields are the value fields of a reading, in order
	// (input.value_fields). Required.
	Fields []string
	// Cadence is the step length readings are aligned to, a whole number of
	// milliseconds (input.cadence). Required.
	Cadence time.Duration
	// Align is which step a reading's time belongs to (input.align); empty
	// means the model's (model.Meta.StepAlign: the nearest step for a
	// model trained on a schedule's stamps that straddle the step times,
	// else the step a reading falls in).
	Align window.Align
	// SkipAttributions computes forecasts only, for sinks that do not write
	// attributions (the service sets it when topics.attributions is empty or
	// output.attributions is off).
	SkipAttributions bool
	// SharesOnly keeps each issued forecast's attribution to its shares:
	// its frequencies' and rhythms' Values and its Residual are nil, for
	// sinks that write attribution summaries (the service sets it when
	// output.attributions is summary). The parts' per-step values then
	// stay in the worker's scratch, reused window after window, instead of
	// the batch's arena: about a fifth of the memory a forecast writes. The
	// online learner and a ForecastObserverFunc still see them, during
	// their call.
	SharesOnly bool
	// ModelVersion is the version number of the model given to New, at
	// least 1 (the service sets it to the version it resumes from). New
	// checks it, with the model.
	ModelVersion int64
}

// Validate reports the first of the Wiring's Fields and Cadence that cannot
// work, naming the YAML key it comes from and saying what to change.
// Whether the model fits them, and ModelVersion, are New's checks.
func (w Wiring) Validate() error {
	switch {
	case len(w.Fields) == 0:
		return errors.New("input.value_fields is empty; list the reading's value fields, e.g. [value]")
	case w.Cadence <= 0:
		return fmt.Errorf("input.cadence = %v; it is required: the step length readings are aligned to, e.g. 5m or 1h", w.Cadence)
	case w.Cadence%time.Millisecond != 0:
		return fmt.Errorf("input.cadence = %v is not a whole number of milliseconds (timestamps are in ms); use e.g. %v",
			w.Cadence, max(w.Cadence.Round(time.Millisecond), time.Millisecond))
	case w.Align != "" && w.Align != window.AlignFloor && w.Align != window.AlignNearest:
		return fmt.Errorf("input.align = %q; use %s (a reading belongs to the step it falls in), %s (to the step whose time is nearest) or leave it out for the model's",
			w.Align, window.AlignFloor, window.AlignNearest)
	}
	return nil
}

// Config holds the service.* settings of a pipeline (but
// service.max_inflight_bytes, the consumer's), each naming its YAML key,
// which Validate's errors name too. New takes it as given: no field is
// filled in, so start from DefaultConfig and change what you mean to. The
// defaults below are DefaultConfig's.
type Config struct {
	// Workers is how many shards series are hashed onto; each owns its
	// windows and model workspace (service.workers); at least 1.
	//
	// Default: 2
	Workers int
	// MaxBatch is the most windows one forward pass takes
	// (service.max_batch); at least 1.
	//
	// Default: 256
	MaxBatch int
	// ShutdownTimeout bounds draining, writing and committing after the
	// context is cancelled (service.shutdown_timeout); positive.
	//
	// Default: 10s
	ShutdownTimeout time.Duration
	// ExpireEvery is how often idle series are expired
	// (service.expire_every), at most a quarter of window.series_ttl, so a
	// series is forgotten between its TTL and 1.25 times its TTL after its
	// last reading, whether readings flow or not. Positive.
	//
	// Default: 1m
	ExpireEvery time.Duration
}

// DefaultConfig returns the default of every setting: the Config to start
// from.
func DefaultConfig() Config {
	return Config{Workers: 2, MaxBatch: 256, ShutdownTimeout: 10 * time.Second, ExpireEvery: time.Minute}
}

// Validate reports the first setting that cannot work, naming its YAML key
// and saying what to write instead. Every field is checked as it is: a zero
// is a value, not the default.
func (c Config) Validate() error {
	d := DefaultConfig()
	switch {
	case c.Workers < 1:
		return fmt.Errorf("service.workers = %d; use at least 1 (default %d)", c.Workers, d.Workers)
	case c.MaxBatch < 1:
		return fmt.Errorf("service.max_batch = %d; use at least 1 window per forward pass (default %d)", c.MaxBatch, d.MaxBatch)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("service.shutdown_timeout = %v; use a positive duration (default %v)", c.ShutdownTimeout, d.ShutdownTimeout)
	case c.ExpireEvery <= 0:
		return fmt.Errorf("service.expire_every = %v; use a positive duration (default %v)", c.ExpireEvery, d.ExpireEvery)
	}
	return nil
}

// Source delivers batches of readings; *stream.Consumer is one.
type Source interface {
	// Run sends batches on out until ctx is done; it never closes out.
	Run(ctx context.Context, out chan<- *stream.Batch) error
	Close(ctx context.Context) error
}

// Option configures a Pipeline's collaborators.
type Option func(*Pipeline)

// WithRegisterer registers the pipeline's metrics (and the window
// counters it exports) with reg.
func WithRegisterer(reg prometheus.Registerer) Option { return func(p *Pipeline) { p.reg = reg } }

// WithLogger logs through l.
func WithLogger(l *slog.Logger) Option { return func(p *Pipeline) { p.log = l } }

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(p *Pipeline) { p.now = now } }

// WithObserver calls f with every forecast after the sink acknowledged it.
// The forecast's slices are reused afterwards: copy what you keep.
func WithObserver(f func(*wire.Forecast)) Option { return func(p *Pipeline) { p.observe = f } }

// ForecastObserverFunc sees one forecast as the pipeline issues it, before
// the sink has it: f with its attribution, the window it was computed from
// (L×C row-major, the input's units, oldest step first) and level, the
// per-field window mean inside f.Residual (nil when attributions are
// skipped). It runs on a worker's goroutine, several at once with more than
// one worker, on the hot path: it must not block, and everything it is
// given is reused after it returns, so it copies what it keeps.
type ForecastObserverFunc func(f *wire.Forecast, window, level []float64)

// WithForecastObserver calls f for every forecast issued (the live view
// keeps each series' latest). Forecasts with a non-finite value, which are
// never written, are not observed.
func WithForecastObserver(f ForecastObserverFunc) Option {
	return func(p *Pipeline) { p.observeIssued = f }
}

// WithOnline hands every issued forecast, with its window, to the online
// learner, which writes the forecast's intervals. Running the learner (its
// rounds, whose promotions swap the serving model through SetModel) is its
// owner's business: package service runs it beside the pipeline.
func WithOnline(l *online.Learner) Option { return func(p *Pipeline) { p.learner = l } }

// Pipeline is one running service instance.
type Pipeline struct {
	wiring  Wiring
	cfg     Config
	src     Source
	snk     sink.Sink
	workers []*worker
	log     *slog.Logger
	reg     prometheus.Registerer
	now     func() time.Time
	observe func(*wire.Forecast)
	// observeIssued sees every forecast as it is issued (WithForecastObserver).
	observeIssued ForecastObserverFunc
	learner       *online.Learner
	delivery      delivery
	met           *metrics
	seed          maphash.Seed
	shape         window.Shape   // of every Set: the model's lookback, the wiring's Fields and Cadence
	win           window.Config  // of every Set: the window.* settings
	budget        *window.Budget // window.max_series, shared by every Set
	expire        time.Duration  // the expiry period

	current atomic.Pointer[versioned]
	free    chan *outBatch
	// heap reads the heap's free, occupied and live bytes when idle (see
	// trimIdle).
	heap  [3]runtimemetrics.Sample
	stats counters
}

// versioned is a model with its version number.
type versioned struct {
	m       *model.Model
	version int64
}

// New checks that the model fits the readings and the windows and returns a
// pipeline ready to Run. w is the wiring and cfg the service.* settings,
// both taken as given (start cfg from DefaultConfig); win holds the window.*
// settings, taken as given too (start from window.DefaultConfig). The
// Sets' Shape comes from the model's lookback and w's Fields and Cadence.
func New(w Wiring, cfg Config, src Source, win window.Config, m *model.Model, snk sink.Sink, opts ...Option) (*Pipeline, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if w.ModelVersion < 1 {
		return nil, fmt.Errorf("pipeline: model version %d; versions count from 1", w.ModelVersion)
	}
	renamed, err := checkModel(w, m)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{wiring: w, cfg: cfg, src: src, snk: snk, log: slog.Default(), now: time.Now, seed: maphash.MakeSeed()}
	for _, o := range opts {
		o(p)
	}
	if renamed {
		p.log.Warn("input.value_fields are not the names of the model's channels; each field is read as the channel in its place",
			"value_fields", w.Fields, "model_channels", m.Meta.ChannelNames)
	}
	align := w.Align
	if align == "" {
		align = modelAlign(m)
	} else if trained := modelAlign(m); trained != align {
		p.log.Warn("input.align differs from how the model's training data was put on steps; a feed of the same clock then fills steps the model did not see filled",
			"input_align", align, "model_align", trained)
	}
	p.shape = window.Shape{Lookback: m.Lookback(), Fields: w.Fields, Cadence: w.Cadence, Align: align}
	if err := p.shape.Validate(); err != nil {
		return nil, err
	}
	if err := win.Validate(); err != nil {
		return nil, err
	}
	p.win = win
	p.budget = window.NewBudget(win.MaxSeries)
	p.expire = min(cfg.ExpireEvery, max(win.SeriesTTL/4, time.Millisecond))
	for range cfg.Workers {
		p.workers = append(p.workers, &worker{sets: map[int]*window.Set{}})
	}
	p.current.Store(&versioned{m: m, version: w.ModelVersion})
	met, err := newMetrics(p)
	if err != nil {
		return nil, err
	}
	p.met = met
	p.free = make(chan *outBatch, batchesInFlight)
	for range batchesInFlight {
		p.free <- newOutBatch(cfg.Workers)
	}
	return p, nil
}

// SetModel makes m, numbered version, the model of the next batch. Batches
// in flight finish on the model they started with.
func (p *Pipeline) SetModel(m *model.Model, version int64) error {
	if _, err := checkChannels(m, p.wiring.Fields); err != nil {
		return err
	}
	if _, err := explain.New(m, len(p.wiring.Fields)); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if m.Lookback() != p.current.Load().m.Lookback() {
		return fmt.Errorf("pipeline: the new model's lookback %d differs from the windows' %d", m.Lookback(), p.current.Load().m.Lookback())
	}
	if a := modelAlign(m); p.wiring.Align == "" && a != p.shape.Align {
		// The windows hold steps of the alignment they started with; a
		// restart (or input.align) applies the new one.
		p.log.Warn("the new model's training data was put on steps another way than the windows put the readings; they keep theirs until the service restarts",
			"windows_align", p.shape.Align, "model_align", a, "version", version)
	}
	p.current.Store(&versioned{m: m, version: version})
	p.met.modelVersion.Set(float64(version))
	return nil
}

// modelAlign is how m's training data was put on steps.
func modelAlign(m *model.Model) window.Align {
	if m.Meta.StepAlign == model.StepAlignNearest {
		return window.AlignNearest
	}
	return window.AlignFloor
}

// Align returns which step the windows put a reading on.
func (p *Pipeline) Align() window.Align { return p.shape.Align }

// Model returns the current model and its version.
func (p *Pipeline) Model() (*model.Model, int64) {
	v := p.current.Load()
	return v.m, v.version
}

// Stats are running totals since the pipeline started.
type Stats struct {
	Batches, Readings, Windows, Forecasts int64 // forecasts acknowledged by the sink
	ActiveSeries                          int
	LastCommit                            time.Time
}

type counters struct {
	batches, readings, windows, forecasts atomic.Int64
	active                                atomic.Int64
	lastCommit                            atomic.Int64 // unix nanoseconds
}

// Stats returns the running totals; safe to call from any goroutine.
func (p *Pipeline) Stats() Stats {
	s := Stats{
		Batches: p.stats.batches.Load(), Readings: p.stats.readings.Load(),
		Windows: p.stats.windows.Load(), Forecasts: p.stats.forecasts.Load(),
		ActiveSeries: int(p.stats.active.Load()),
	}
	if ns := p.stats.lastCommit.Load(); ns > 0 {
		s.LastCommit = time.Unix(0, ns)
	}
	return s
}

// Run consumes, forecasts and writes until ctx is cancelled, then drains
// within ShutdownTimeout. It returns nil after a clean shutdown.
func (p *Pipeline) Run(ctx context.Context) error {
	// drain outlives ctx by at most ShutdownTimeout.
	drain, cancelDrain := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelDrain()
	stopTimer := context.AfterFunc(ctx, func() { time.AfterFunc(p.cfg.ShutdownTimeout, cancelDrain) })
	defer stopTimer()

	g, gctx := errgroup.WithContext(drain)
	fetch, cancelFetch := context.WithCancel(gctx)
	defer cancelFetch()
	stopFetch := context.AfterFunc(ctx, cancelFetch)
	defer stopFetch()

	batches := make(chan *stream.Batch, 1)
	outputs := make(chan *outBatch, 1)
	g.Go(func() error {
		defer close(batches)
		err := p.src.Run(fetch, batches)
		if fetch.Err() != nil {
			return nil // stopping: not a failure
		}
		if err == nil {
			return errors.New("pipeline: the consumer stopped without being asked to")
		}
		return err
	})
	g.Go(func() error {
		defer close(outputs)
		return p.processLoop(gctx, batches, outputs)
	})
	g.Go(func() error { return p.writeLoop(gctx, outputs) })
	err := g.Wait()
	cancelFetch()

	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.ShutdownTimeout)
	defer cancel()
	if cerr := p.snk.Close(closeCtx); cerr != nil && err == nil && ctx.Err() == nil {
		err = cerr
	}
	if cerr := p.src.Close(closeCtx); cerr != nil && err == nil && ctx.Err() == nil {
		err = cerr
	}
	if ctx.Err() != nil {
		if drain.Err() != nil {
			p.log.Warn("shutdown deadline passed before everything was written; uncommitted readings will be consumed again",
				"shutdown_timeout", p.cfg.ShutdownTimeout)
		}
		return nil
	}
	return err
}

// processLoop turns batches of readings into batches of forecasts, and
// expires idle series every expiry period, with or without batches.
func (p *Pipeline) processLoop(ctx context.Context, in <-chan *stream.Batch, out chan<- *outBatch) error {
	tick := time.NewTicker(p.expire)
	defer tick.Stop()
	busy := false // a batch came since the last tick
	idle := 0     // ticks since the last one a batch came before
	for {
		var b *stream.Batch
		select {
		case <-tick.C:
			p.expireIdle(p.now())
			if busy {
				idle = 0
			} else {
				idle++
				p.trimIdle(idle <= idleReturns(p.expire))
			}
			busy = false
			continue
		case b = <-in:
			if b == nil {
				return nil // closed
			}
		}
		busy = true
		var ob *outBatch
		select {
		case ob = <-p.free:
		case <-ctx.Done():
			b.Release()
			return ctx.Err()
		}
		p.process(b, ob)
		select {
		case out <- ob:
		case <-ctx.Done():
			p.recycle(ob)
			return ctx.Err()
		}
	}
}

// writeLoop writes each batch's forecasts, waits for the acknowledgements,
// then commits the batch's input offsets, in order.
func (p *Pipeline) writeLoop(ctx context.Context, in <-chan *outBatch) error {
	for ob := range in {
		if err := p.write(ctx, ob); err != nil {
			p.recycle(ob)
			for rest := range in {
				p.recycle(rest)
			}
			return err
		}
		p.recycle(ob)
	}
	return nil
}

func (p *Pipeline) write(ctx context.Context, ob *outBatch) error {
	if len(ob.all) > 0 {
		if err := p.retry(ctx, "write forecasts", func() error { return p.snk.Write(ctx, ob.all) }); err != nil {
			return err
		}
	}
	if ob.err != nil {
		// Readings that never reached a window are not committed silently:
		// they go to the dead-letter topic first.
		var n int
		err := p.retry(ctx, "dead-letter a batch", func() (err error) {
			n, err = ob.in.DeadLetter(ctx, ReasonWindow, ob.err)
			return err
		})
		if err != nil {
			return err
		}
		p.met.windowErrors.Inc()
		p.met.deadLettered.Add(float64(n))
	}
	for _, r := range []struct {
		rows    []int
		reason  string
		cause   error
		causeOf func(i int) error
	}{
		{ob.outRange, readings.ReasonOutOfRange, errOutOfRange, nil},
		{ob.tooLate, ReasonTooLate, errTooLate, func(i int) error { return p.tooLate(ob.tooLateBy[i]) }},
		{ob.nonFinite, ReasonNonFiniteOutput, errNonFinite, nil},
	} {
		if len(r.rows) == 0 {
			continue
		}
		var n int
		err := p.retry(ctx, "dead-letter refused readings", func() (err error) {
			n, err = ob.in.DeadLetterRowsEach(ctx, r.rows, r.reason, r.cause, r.causeOf)
			return err
		})
		if err != nil {
			return err
		}
		p.met.deadLettered.Add(float64(n))
	}
	p.met.nonFinite.Add(float64(len(ob.nonFinite)))
	now := p.now()
	for i := range ob.all {
		p.met.endToEnd.Observe(now.Sub(ob.ingest[i]).Seconds())
		if p.observe != nil {
			p.observe(&ob.all[i])
		}
	}
	if err := p.retry(ctx, "commit offsets", func() error { return ob.in.Commit(ctx) }); err != nil {
		return err
	}
	p.stats.forecasts.Add(int64(len(ob.all)))
	p.stats.lastCommit.Store(now.UnixNano())
	p.met.lastCommit.Set(float64(now.UnixNano()) / 1e9)
	return nil
}

// Reasons of the readings the pipeline dead-letters after decoding, written
// in the freqlens-dlq-reason header (stream.HeaderReason) beside the
// decoders' readings.Reasons. They belong here, not with the input format:
// the message was well formed and plausible, and it is what the windows or
// the model made of it that is refused, so no decoder returns them and
// freqlens_stream_decode_errors_total does not count them
// (freqlens_pipeline_dead_lettered_readings_total does). The readings the
// windows refuse as implausible for their series (window.max_jump) are
// dead-lettered as readings.ReasonOutOfRange, the decoders' judgement made
// with the series' recent range.
const (
	// ReasonWindow: the batch could not be put into windows (a bug
	// upstream: the decoders guarantee the schema).
	ReasonWindow = "window_error"
	// ReasonNonFiniteOutput: the forecast or attribution of the window this
	// reading completed had a non-finite value, so it was not written.
	ReasonNonFiniteOutput = "non_finite_output"
	// ReasonTooLate: the reading arrived too late to update its step
	// (window.allowed_lateness; with window.late: dead_letter).
	ReasonTooLate = "too_late"
)

var (
	errOutOfRange = errors.New("the value lies far outside the range of its series' window (window.max_jump)")
	errNonFinite  = errors.New("the forecast of the window this reading completed has a non-finite value; it was not written")
	// errTooLate sums up the too-late readings of a batch in the log;
	// each dead letter says how late its reading was (Pipeline.tooLate).
	errTooLate = errors.New("the reading is older than its series' newest step by more than window.allowed_lateness, or than the series' window; it changed nothing")
)

// tooLate says how late a reading was that lay steps behind its series'
// newest step.
func (p *Pipeline) tooLate(steps int64) error {
	c := p.wiring.Cadence
	return fmt.Errorf("the reading's step is %d steps (%v) behind its series' newest step, more than window.allowed_lateness (%v) allows "+
		"or than the series' window holds; it changed nothing", steps, time.Duration(steps)*c, p.win.AllowedLateness)
}

// retry calls f until it succeeds or ctx ends, backing off from 100ms to 5s.
// Delivery is at-least-once: giving up would drop readings. While f fails
// the pipeline's delivery is failing (Stats.Delivery), which the service's
// readiness reports.
func (p *Pipeline) retry(ctx context.Context, what string, f func() error) error {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			p.delivery.ok()
			return nil
		}
		if errors.Is(err, sink.ErrInvalid) {
			// A forecast the sink can never write is a bug here, not an outage.
			return fmt.Errorf("pipeline: %s: %w", what, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("pipeline: %s: %w", what, err)
		}
		p.delivery.fail(what, err, p.now())
		level := slog.LevelDebug
		if attempt == 1 || attempt%10 == 0 {
			level = slog.LevelWarn
		}
		p.log.Log(ctx, level, "retrying", "what", what, "attempt", attempt, "err", err, "wait", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("pipeline: %s: %w", what, err)
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// Delivery says whether the write stage's last attempt failed: since when
// it has been failing (zero while it succeeds), what it was doing and the
// last error.
type Delivery struct {
	FailingSince time.Time
	What         string
	Err          error
}

// delivery is the write stage's Delivery, safe for concurrent use.
type delivery struct {
	mu sync.Mutex
	d  Delivery
}

func (d *delivery) ok() {
	d.mu.Lock()
	d.d = Delivery{}
	d.mu.Unlock()
}

func (d *delivery) fail(what string, err error, now time.Time) {
	d.mu.Lock()
	if d.d.FailingSince.IsZero() {
		d.d.FailingSince = now
	}
	d.d.What, d.d.Err = what, err
	d.mu.Unlock()
}

func (d *delivery) get() Delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.d
}

// Delivery returns whether the write stage is failing, since when and why.
// It is safe for concurrent use.
func (p *Pipeline) Delivery() Delivery { return p.delivery.get() }

// recycle releases a written batch's input and returns its buffers.
func (p *Pipeline) recycle(ob *outBatch) {
	if ob.in != nil {
		ob.in.Release()
		ob.in = nil
	}
	p.free <- ob
}

// process routes the batch's rows to the workers (by series) and their
// partitions' windows, runs the workers in parallel and gathers their
// forecasts into ob. A batch that says to forget partitions drops their
// windows first.
func (p *Pipeline) process(b *stream.Batch, ob *outBatch) {
	start := p.now()
	ob.reset(b)
	if len(b.Forget) > 0 {
		for _, w := range p.workers {
			for _, partition := range b.Forget {
				w.forget(partition)
			}
		}
	}
	rec := b.Record
	v := p.current.Load()
	W := len(p.workers)
	for _, w := range p.workers {
		w.groups = w.groups[:0]
	}
	if rec != nil && rec.NumRows() > 0 {
		series := rec.Column(0).(*array.String)
		for i := range int(rec.NumRows()) {
			w := p.workers[int(maphash.String(p.seed, series.Value(i))%uint64(W))]
			rows := w.rowsOf(b.Partition(i))
			*rows = append(*rows, i)
		}
		if !b.Rebuild {
			p.stats.readings.Add(rec.NumRows())
		}
	}
	var wg sync.WaitGroup
	for i, w := range p.workers {
		if len(w.groups) == 0 {
			continue
		}
		sh := &ob.shares[i]
		if i == W-1 {
			w.run(p, v, rec, b.Rebuild, sh)
			continue
		}
		wg.Go(func() { w.run(p, v, rec, b.Rebuild, sh) })
	}
	wg.Wait()
	ob.gather()
	p.stats.batches.Add(1)
	p.stats.windows.Add(int64(len(ob.all)))
	active := 0
	for _, w := range p.workers {
		active += w.stats.Active
	}
	p.stats.active.Store(int64(active))
	p.met.windowStats.update(p.workers)
	p.met.processing.Observe(p.now().Sub(start).Seconds())
}

// batchesInFlight is how many batches of forecasts the pipeline holds: one
// being filled, one being written, one spare.
const batchesInFlight = 3

// RebuildSpan returns how much event time before a partition's committed
// offset the consumer must read back (stream.Config.RebuildSpan) for
// windows of lookback steps configured by win (as given, like New) to be
// rebuilt exactly: L steps, the steps a gap fill may interpolate from, the
// allowed lateness and one step of rounding.
func RebuildSpan(lookback int, win window.Config, cadence time.Duration) time.Duration {
	return time.Duration(lookback+win.MaxGap+1)*cadence + win.AllowedLateness
}

// CheckModel returns the error New would give for serving m with w's value
// fields and cadence: a mixed model of another channel count, or of the
// same fields in another order, or a model of another cadence. A service
// calls it before it reaches the brokers, so that a model that cannot serve
// the configured readings is said at once.
func CheckModel(w Wiring, m *model.Model) error {
	_, err := checkModel(w, m)
	return err
}

func checkModel(w Wiring, m *model.Model) (renamed bool, err error) {
	if _, err := explain.New(m, len(w.Fields)); err != nil {
		return false, fmt.Errorf("pipeline: %w", err)
	}
	if renamed, err = checkChannels(m, w.Fields); err != nil {
		return false, err
	}
	if mc := m.Meta.Cadence; mc > 0 && mc != w.Cadence {
		return false, fmt.Errorf("input.cadence is %[2]s but the model was trained on %[1]s steps; "+
			"its learned periods would be read in the wrong units; set input.cadence: %[1]s or train on data of this cadence", mc, w.Cadence)
	}
	return renamed, nil
}

// checkChannels refuses a mixed model whose channels, as its file names
// them, are the value fields in another order: each field would be
// normalised with another channel's statistics and read by another
// channel's weights, with nothing to show for it. Names that differ
// otherwise are taken as renamed fields, in order, as the count check
// allows; renamed says so, for a warning.
func checkChannels(m *model.Model, fields []string) (renamed bool, err error) {
	names := m.Meta.ChannelNames
	if m.Config().Mode != model.Mixed || len(names) != len(fields) || slices.Equal(names, fields) {
		return false, nil
	}
	if a, b := slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(fields)); slices.Equal(a, b) {
		return false, fmt.Errorf("input.value_fields %v are the model's channels in another order; this mixed model reads them as %v: "+
			"list them in that order", fields, names)
	}
	return true, nil
}
