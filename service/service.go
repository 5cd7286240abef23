package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/broadcast"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/liveview"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/wire"
)

// embeddedPartitions is how many partitions every topic gets on the
// embedded broker.
const embeddedPartitions = 3

// embeddedRetainBytes is what the embedded broker keeps of each partition.
// It holds everything in memory, and without a bound it kept every forecast
// and attribution the demo ever produced (with it, the demo's RSS levels
// off at about 820 MB after six minutes). Three partitions of JSON readings
// (about 80 bytes each) still hold the rebuild span (L + max_gap + 1 steps)
// of some 12,000 series at L = 96.
const embeddedRetainBytes = 32 << 20

// Service is one running `freqlens serve`: the Kafka client, the consumer,
// the pipeline, the sink, the online learner with its drift events and
// models topic, and the metrics listener, built from one Config.
type Service struct {
	cfg     Config
	log     *slog.Logger
	reg     *prometheus.Registry
	broker  *embedded.Broker // nil without an embedded broker
	kc      *kafkaconn.Client
	learner *online.Learner
	p       *pipeline.Pipeline
	src     *stream.Consumer
	snk     *sink.Producer
	models  *broadcast.Models // nil without topics.models
	states  *broadcast.States // nil without topics.state
	// servedFrom names where the version served at the start came from
	// when not model.path: a checkpoint directory or the models topic.
	servedFrom string
	events     *broadcast.Events // nil without topics.drift
	outbox     *outbox
	metrics    *metricsServer
	metricsLn  *net.TCPListener // metrics.listen's socket, bound by New until Close; nil without one
	wait       *waiting         // the metrics listener while New waits; nil once serving
	// probe serves /healthz and /readyz on metrics.probe_listen (nil
	// without one); probeReadyz is its /readyz: the waiting one, then the
	// serving one.
	probe       *http.Server
	probeLn     net.Listener
	probeReadyz atomic.Pointer[http.HandlerFunc]
	live        *liveview.View // nil without a metrics listener
	watch       *watch
	base        *model.Model
	closeErr    error
	once        sync.Once
}

// Option sets a collaborator of a Service.
type Option func(*options)

type options struct {
	log     *slog.Logger
	model   *model.Model
	reg     *prometheus.Registry
	observe func(*wire.Forecast)
}

// WithLogger logs through l. Default: nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithModel serves m instead of loading Config.ModelPath (the demo trains
// its own). Its cadence, when unset, is the configured input.cadence.
func WithModel(m *model.Model) Option { return func(o *options) { o.model = m } }

// WithRegistry registers every metric with reg (and serves reg on
// /metrics). Default: a new registry with the Go runtime, process and
// build metrics.
func WithRegistry(reg *prometheus.Registry) Option { return func(o *options) { o.reg = reg } }

// WithObserver calls f with every forecast once the sink acknowledged it
// (pipeline.WithObserver).
func WithObserver(f func(*wire.Forecast)) Option { return func(o *options) { o.observe = f } }

// New validates cfg and assembles the service: it starts the embedded
// broker when asked, loads the model, resumes from the newest version in
// online.checkpoint_dir or on topics.models when there is one (so a restart
// or another replica keeps what was learned), builds the learner, the
// consumer, the sink and the pipeline, and binds the metrics listener (a
// busy port is an error of New, not of Run). Nothing is consumed before
// Run. On error everything already started is stopped.
func New(ctx context.Context, cfg Config, opts ...Option) (_ *Service, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.validate(o.model == nil); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, log: o.log, reg: o.reg}
	if s.reg == nil {
		if s.reg, err = NewRegistry(); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	// The metrics listener answers /healthz from the start (a busy port is
	// refused before anything else is tried), and /readyz says what the
	// replica waits for until the serving listener takes the address.
	if err := s.serveWaiting("starting"); err != nil {
		return nil, err
	}
	// A model file is read before any broker is started or reached, so a
	// missing or broken one is said at once, not after kafka.connect_timeout.
	if s.base = o.model; s.base == nil && !s.bootstraps() {
		if s.base, err = s.loadModel(ctx); err != nil {
			return nil, err
		}
		// So is a model that cannot serve the configured readings.
		if err := pipeline.CheckModel(pipeline.Wiring{Fields: cfg.Readings.ValueFields, Cadence: cfg.Cadence}, s.base); err != nil {
			return nil, fmt.Errorf("model.path %s: %w", cfg.ModelPath, err)
		}
	}
	if cfg.EmbeddedBroker != "" {
		if err := s.startBroker(); err != nil {
			return nil, err
		}
	}
	if s.kc, err = kafkaconn.New(s.cfg.Kafka, kafkaconn.WithLogger(s.log)); err != nil {
		return nil, err
	}
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	if s.base == nil {
		if s.base, err = s.loadModel(ctx); err != nil {
			return nil, err
		}
	}
	if s.base.Meta.Cadence == 0 {
		s.base.Meta.Cadence = cfg.Cadence
	}
	s.waitFor(false, func() string { return "resuming: the newest model version, the learner and the consumer" })
	serve, version, err := s.resume(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.newLearner(ctx); err != nil {
		return nil, err
	}
	if cfg.MetricsListen != "" {
		if s.live, err = liveview.New(cfg.LiveView); err != nil {
			return nil, err
		}
	}
	if err := s.newPipeline(serve, version, o.observe); err != nil {
		return nil, err
	}
	if s.watch, err = newWatch(s.kc, s.log, s.reg, s.isLearner); err != nil {
		return nil, err
	}
	s.watch.modelsTopic = s.cfg.ModelsTopic

	mux := http.NewServeMux()
	mux.Handle("/online", onlineReport(s.learner, s.p))
	s.healthHandlers(mux)
	if s.live != nil {
		s.live.Register(mux)
	}
	s.stopWaiting()
	if s.metrics, err = listenMetrics(s.cfg, s.metricsLn, s.reg, mux, s.log); err != nil {
		return nil, err
	}
	return s, nil
}

// reach waits for the brokers (up to kafka.connect_timeout) and checks the
// topics, while the waiting listener says so.
func (s *Service) reach(ctx context.Context) error {
	reason := fmt.Sprintf("waiting for the Kafka brokers %s (kafka.brokers; gives up after kafka.connect_timeout = %v)",
		strings.Join(s.cfg.Kafka.Brokers, ","), s.cfg.Kafka.ConnectTimeout)
	s.waitFor(false, func() string { return reason })
	if err := s.kc.Connect(ctx); err != nil {
		return err
	}
	return s.checkTopicsExist(ctx)
}

// startBroker starts the embedded broker with every topic and points the
// Kafka configuration at it.
func (s *Service) startBroker() error {
	topics := map[string]int{}
	for _, t := range s.cfg.Topics() {
		topics[t] = embeddedPartitions
	}
	b, err := embedded.Start(s.cfg.EmbeddedBroker, topics, embedded.RetainBytes(embeddedRetainBytes))
	if err != nil {
		return fmt.Errorf("embedded broker on %s: %w", s.cfg.EmbeddedBroker, err)
	}
	s.broker = b
	s.cfg.Kafka.Brokers = b.Addrs()
	s.log.Info("embedded broker started", "addrs", b.Addrs(), "topics", s.cfg.Topics())
	return nil
}

// resume returns the model to serve and its version: the newest version in
// online.checkpoint_dir or on topics.models when it is newer than the base
// model and of its shape, else the base model.
func (s *Service) resume(ctx context.Context) (*model.Model, int64, error) {
	serve, version := s.base, s.base.Meta.Version
	if dir := s.cfg.Online.CheckpointDir; dir != "" {
		cp, err := online.LatestCheckpoint(dir, func(path string, err error) {
			s.log.Warn("skipping an unreadable checkpoint", "path", path, "err", err)
		})
		switch {
		case err != nil:
			return nil, 0, err
		case cp != nil && cp.Config() == s.base.Config():
			serve, version = cp, cp.Meta.Version
			s.servedFrom = "checkpoint in " + dir
			s.log.Info("resuming from the newest checkpoint", "dir", dir, "version", version)
		case cp != nil:
			s.log.Warn("the newest checkpoint has another shape than model.path; serving model.path", "dir", dir)
		}
	}
	topic := s.cfg.ModelsTopic
	if topic == "" {
		return serve, version, nil
	}
	models, err := broadcast.NewModels(s.kc, topic, s.cfg.Online.Keep)
	if err != nil {
		return nil, 0, err
	}
	s.models = models
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	newest, err := models.Latest(lctx, func(v int64, err error) {
		s.log.Warn("skipping an incomplete model version on the models topic", "topic", topic, "version", v, "err", err)
	})
	switch {
	case err != nil:
		return nil, 0, fmt.Errorf("reading the newest model version from topics.models %q: %w", topic, err)
	case newest != nil && newest.Config() != s.base.Config():
		s.log.Warn("the newest version on the models topic has another shape than model.path; ignoring it", "topic", topic, "version", newest.Meta.Version)
	case newest != nil && newest.Meta.Version > version:
		serve, version = newest, newest.Meta.Version
		s.servedFrom = "models topic " + topic
		s.log.Info("resuming from the models topic", "topic", topic, "version", version)
	}
	return serve, version, nil
}

// checkTopicsExist reports the first configured topic the brokers do not
// have, naming its key: FreqLens creates no topics (but on the embedded
// broker), and a misnamed output would otherwise fail every write while
// the input is consumed.
func (s *Service) checkTopicsExist(ctx context.Context) error {
	ts := s.cfg.topics()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.name
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Kafka.ConnectTimeout)
	defer cancel()
	missing, err := s.kc.MissingTopics(cctx, names)
	if err != nil {
		return fmt.Errorf("kafka: check the configured topics: %w", err)
	}
	if len(missing) == 0 {
		return nil
	}
	for _, t := range ts {
		if t.name == missing[0] {
			return fmt.Errorf("%s = %q: the brokers have no such topic; create it or correct the name (FreqLens creates no topics; missing: %q)",
				t.key, t.name, missing)
		}
	}
	return nil
}

// newLearner builds the online learner for the base model, publishing
// promoted versions to topics.models and drift events to topics.drift.
func (s *Service) newLearner(ctx context.Context) error {
	opts := []online.Option{online.WithRegisterer(s.reg), online.WithLogger(s.log), online.WithGate(s.isLearner)}
	var err error
	if s.outbox, err = newOutbox(s.log, s.reg); err != nil {
		return err
	}
	if s.models != nil {
		opts = append(opts, online.WithPublisher(s.outbox.publisher(s.models.Publish)))
	}
	if topic := s.cfg.DriftTopic; topic != "" {
		ev, err := broadcast.NewEvents(s.kc, topic)
		if err != nil {
			return err
		}
		s.events = ev
		opts = append(opts, online.WithDriftEvents(func(e online.DriftEvent) {
			key := strconv.Itoa(e.FrequencyID)
			s.outbox.event(fmt.Sprintf("drift event (%s) to topics.drift %q", e.Kind, topic), func(ctx context.Context) error {
				return ev.Write(ctx, key, e)
			})
		}))
	}
	if topic := s.cfg.StateTopic; topic != "" {
		if len(s.cfg.Online.Intervals) == 0 {
			s.log.Warn("topics.state keeps the prediction intervals' calibration, but online.intervals is empty: nothing is kept there", "topic", topic)
		}
		if s.states, err = broadcast.NewStates(s.kc, topic); err != nil {
			return err
		}
		opts = append(opts, online.WithStateStore(s.states))
	}
	l, err := online.New(s.cfg.Online, s.base, opts...)
	if err != nil {
		return err
	}
	s.learner = l
	if s.cfg.Online.Enabled && s.cfg.Learner != LearnerNever && s.cfg.Online.CheckpointDir == "" && s.cfg.ModelsTopic == "" {
		s.log.Warn("fine-tuned versions are kept in memory only: a restart serves model.path again as version 1 and numbers the next versions from there, " +
			"so a forecast-id (series, step, model version) can name two models; set online.checkpoint_dir or topics.models to keep them")
	}
	return nil
}

// newPipeline builds the consumer, the sink and the pipeline serving m. The
// consumer reads back enough history to rebuild windows of m's lookback,
// and, unless input.value_range is set, refuses values outside the range
// plausibleRange derives from m.
func (s *Service) newPipeline(m *model.Model, version int64, observe func(*wire.Forecast)) error {
	sc, in := s.cfg.Stream, s.cfg.InputFor(m)
	sc.RebuildSpan = pipeline.RebuildSpan(m.Lookback(), s.cfg.Window, s.cfg.Cadence)
	src, err := stream.NewConsumer(sc, in, s.kc, stream.WithRegisterer(s.reg), stream.WithLogger(s.log))
	if err != nil {
		return err
	}
	snk, err := sink.New(s.cfg.Sink, s.kc, sink.WithRegisterer(s.reg))
	if err != nil {
		src.Close(context.Background())
		return err
	}
	w := s.cfg.Wiring(version)
	opts := []pipeline.Option{pipeline.WithRegisterer(s.reg), pipeline.WithLogger(s.log), pipeline.WithOnline(s.learner)}
	if observe != nil {
		opts = append(opts, pipeline.WithObserver(observe))
	}
	if s.live != nil {
		opts = append(opts, pipeline.WithForecastObserver(s.live.Observe))
	}
	p, err := pipeline.New(w, s.cfg.Pipeline, src, s.cfg.Window, m, snk, opts...)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		snk.Close(ctx)
		src.Close(ctx)
		return err
	}
	s.p, s.src, s.snk = p, src, snk
	return nil
}

// Run serves /metrics, /online, /healthz and /readyz, watches the brokers,
// follows topics.models (serving each newer version another replica
// publishes) and runs the pipeline and the learner until ctx ends, then
// drains within service.shutdown_timeout and releases everything (see
// Close). It returns nil after a clean shutdown.
func (s *Service) Run(ctx context.Context) error {
	defer s.Close()
	s.metrics.start()
	m, version := s.p.Model()
	s.log.Info("serving", "input", s.cfg.Stream.Topic, "forecasts", s.cfg.Sink.ForecastTopic, "attributions", s.cfg.Sink.AttributionTopic,
		"model", cmp.Or(s.servedFrom, s.cfg.ModelPath), "version", version, "mode", m.Config().Mode, "lookback", m.Lookback(), "horizon", m.Horizon(),
		"cadence", s.cfg.Cadence, "align", s.p.Align())
	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.watch.run(bg, func() bool { return s.readiness().Ready }, s.delivery) })
	if s.models != nil {
		wg.Go(func() { s.models.Follow(bg, version, s.serveVersion, s.skippedVersion) })
	}
	if s.learner != nil {
		// Rounds, drift and the learner's metrics, until shutdown begins;
		// the pipeline hands it every forecast.
		wg.Go(func() { s.learner.Run(bg, s.p) })
	}
	wg.Go(func() { s.outbox.run(bg) })
	err := s.p.Run(ctx)
	stop()
	wg.Wait()
	if n := s.outbox.pending(); n > 0 {
		s.log.Warn("stopped with drift events or a model version not written to their topics", "waiting", n, "why", s.outbox.status().Err)
	}
	if err != nil {
		return err
	}
	s.log.Info("stopped cleanly", "forecasts", s.p.Stats().Forecasts)
	return nil
}

// serveVersion swaps in a version read from topics.models when it is newer
// than the one serving and has the base model's shape.
func (s *Service) serveVersion(m *model.Model) {
	if m.Config() != s.base.Config() {
		s.log.Warn("a version on the models topic has another shape than model.path; ignoring it", "topic", s.cfg.ModelsTopic, "version", m.Meta.Version)
		return
	}
	if _, cur := s.p.Model(); m.Meta.Version <= cur {
		return
	}
	if err := s.p.SetModel(m, m.Meta.Version); err != nil {
		s.log.Error("a version from the models topic cannot serve", "version", m.Meta.Version, "err", err)
		return
	}
	s.log.Info("serving a version published on the models topic", "topic", s.cfg.ModelsTopic, "version", m.Meta.Version)
}

func (s *Service) skippedVersion(v int64, err error) {
	s.log.Warn("skipping an incomplete model version on the models topic", "topic", s.cfg.ModelsTopic, "version", v, "err", err)
}

// Wiring is the pipeline's wiring serve gives a model of the given version:
// the input's value fields, cadence and alignment, and whether attributions
// are computed (topics.attributions and output.attributions) and kept whole.
// The backtest wires its pipeline with it too.
func (c Config) Wiring(version int64) pipeline.Wiring {
	return pipeline.Wiring{
		Fields: c.Readings.ValueFields, Cadence: c.Cadence, Align: c.wiringAlign(),
		SkipAttributions: c.Sink.AttributionTopic == "" || c.Sink.Attributions == wire.AttributionsOff,
		SharesOnly:       c.Sink.Attributions == wire.AttributionsSummary,
		ModelVersion:     max(version, 1),
	}
}

// InputFor returns the input.* settings serve decodes readings with for
// model m: input.value_range, unless set, is the range plausibleRange
// derives from m.
func (c Config) InputFor(m *model.Model) readings.Config {
	in := c.Readings
	if len(in.ValueRange) == 0 {
		in.ValueRange = plausibleRange(m)
	}
	return in
}

// plausibleSigmas is how many training standard deviations from the
// training mean a mixed model's input may lie before it is implausible.
const plausibleSigmas = 1e4

// plausibleAbs bounds the input of a model without stored statistics (an
// independent model serves series of any scale; each series' own range is
// window.max_jump's business): far beyond any sensor, far from float64's
// limits.
const plausibleAbs = 1e15

// plausibleRange is the default of input.value_range: the span of
// mean ± 10⁴ standard deviations over the channels of a mixed model's
// training statistics, else ±10¹⁵.
func plausibleRange(m *model.Model) []float64 {
	mean, std := m.Meta.Mean, m.Meta.Std
	if m.Config().Mode != model.Mixed || len(mean) == 0 || len(mean) != len(std) {
		return []float64{-plausibleAbs, plausibleAbs}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for c := range mean {
		lo = min(lo, mean[c]-plausibleSigmas*std[c])
		hi = max(hi, mean[c]+plausibleSigmas*std[c])
	}
	if !(lo < hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return []float64{-plausibleAbs, plausibleAbs}
	}
	return []float64{lo, hi}
}

// Close stops the metrics listener and closes the consumer and the sink
// (when Run has not), the drift and models writers, the Kafka client and
// the embedded broker. Run calls it when it returns;
// call it yourself only after a New whose Run is never called. It is
// idempotent.
func (s *Service) Close() error {
	s.once.Do(func() {
		var errs []error
		s.stopWaiting()
		s.stopProbe()
		if s.metrics != nil {
			s.metrics.stop()
		}
		if s.metricsLn != nil {
			s.metricsLn.Close()
		}
		if s.p != nil { // Run closes them; without Run they are open
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Pipeline.ShutdownTimeout)
			s.snk.Close(ctx)
			s.src.Close(ctx)
			cancel()
		}
		if s.events != nil {
			errs = append(errs, s.events.Close())
		}
		if s.states != nil {
			errs = append(errs, s.states.Close())
		}
		if s.models != nil {
			errs = append(errs, s.models.Close())
		}
		if s.kc != nil {
			s.kc.Close()
		}
		if s.broker != nil {
			s.broker.Close()
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Config returns the configuration in use; with an embedded broker its
// Kafka.Brokers are the broker's addresses.
func (s *Service) Config() Config { return s.cfg }

// Kafka returns the service's Kafka client (the demo's simulated sensors
// produce through it).
func (s *Service) Kafka() *kafkaconn.Client { return s.kc }

// Pipeline returns the running pipeline: its Stats, Model and SetModel.
func (s *Service) Pipeline() *pipeline.Pipeline { return s.p }

// Learner returns the online learner.
func (s *Service) Learner() *online.Learner { return s.learner }

// LiveViewURL returns the address of the live view (package liveview),
// https with TLS (metrics.web_config), "" without a metrics listener.
func (s *Service) LiveViewURL() string {
	if s.live == nil || s.metrics == nil {
		return ""
	}
	return s.metrics.url("/")
}

// MetricsAddr returns the address /metrics is served on, "" without a
// listener.
func (s *Service) MetricsAddr() string { return s.metrics.addr() }
