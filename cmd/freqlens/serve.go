package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/freqlens/freqlens/broadcast"
	"github.com/freqlens/freqlens/config"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/stream"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML configuration (see config.example.yaml)")
	embedded := fs.String("embedded-broker", "", "start an in-process Kafka-protocol broker on this address (e.g. 127.0.0.1:9092) and create the topics")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics here (overrides metrics.listen)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "config"); err != nil {
		return err
	}
	f, err := config.Load(*cfgPath, os.LookupEnv)
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		f.Metrics.Listen = metricsAddr
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	if *embedded != "" {
		b, err := startEmbedded(*embedded, f)
		if err != nil {
			return err
		}
		defer b.Close()
		log.Info("embedded broker started", "addrs", b.Addrs(), "topics", f.TopicNames())
	}
	if len(f.Kafka.Brokers) == 0 {
		return errors.New("kafka.brokers is empty: list your brokers (or FREQLENS_KAFKA_BROKERS), or pass --embedded-broker 127.0.0.1:9092")
	}
	base, err := model.Load(f.Model.Path)
	if err != nil {
		return err
	}
	if base.Meta.Cadence == 0 {
		base.Meta.Cadence = time.Duration(f.Input.Cadence)
	}
	kc, err := kafkaconn.New(f.KafkaConfig(), kafkaconn.WithLogger(log))
	if err != nil {
		return err
	}
	defer kc.Close()
	reg := newRegistry()
	learner, m, version, closeEvents, err := buildOnline(ctx, f, kc, base, reg, log)
	if err != nil {
		return err
	}
	defer closeEvents()
	p, err := buildPipeline(f, kc, m, reg, log, pipeline.WithOnline(learner))
	if err != nil {
		return err
	}
	if m != base { // resumed from a checkpoint: keep its version number
		if err := p.SetModel(m, version); err != nil {
			return err
		}
	}
	stopMetrics, err := serveMetrics(ctx, *f.Metrics.Listen, reg, log, onlineReport(learner, p))
	if err != nil {
		return err
	}
	defer stopMetrics()
	log.Info("serving", "input", f.Topics.Input, "forecasts", f.Topics.Forecasts, "attributions", *f.Topics.Attributions,
		"model", f.Model.Path, "mode", m.Config().Mode, "lookback", m.Lookback(), "horizon", m.Horizon())
	if err := p.Run(ctx); err != nil {
		return err
	}
	log.Info("stopped cleanly", "forecasts", p.Stats().Forecasts)
	return nil
}

// buildOnline creates the online learner for the trained model base and
// returns the model to serve: the newest version in online.checkpoint_dir
// or on topics.models, when there is one (so a restart or another replica
// keeps what was learned), else base. Drift events go to topics.drift,
// promoted versions to topics.models.
func buildOnline(ctx context.Context, f *config.File, kc *kafkaconn.Client, base *model.Model, reg prometheus.Registerer, log *slog.Logger) (
	l *online.Learner, serve *model.Model, version int64, closeEvents func(), err error) {
	oc := f.OnlineConfig()
	serve, version = base, base.Meta.Version
	if oc.CheckpointDir != "" {
		cp, err := online.LatestCheckpoint(oc.CheckpointDir, func(path string, err error) {
			log.Warn("skipping an unreadable checkpoint", "path", path, "err", err)
		})
		if err != nil {
			return nil, nil, 0, nil, err
		}
		if cp != nil && cp.Config() == base.Config() {
			serve, version = cp, cp.Meta.Version
			log.Info("resuming from the newest checkpoint", "dir", oc.CheckpointDir, "version", version)
		} else if cp != nil {
			log.Warn("the newest checkpoint has another shape than model.path; serving model.path", "dir", oc.CheckpointDir)
		}
	}
	opts := []online.Option{online.WithRegisterer(reg), online.WithLogger(log)}
	var closers []func()
	closeEvents = func() {
		for _, c := range closers {
			c()
		}
	}
	defer func() {
		if err != nil {
			closeEvents()
		}
	}()
	if topic := f.Topics.Models; topic != "" {
		models, err := broadcast.NewModels(kc, topic, oc.WithDefaults().Keep)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		closers = append(closers, func() { models.Close() })
		lctx, cancel := context.WithTimeout(ctx, time.Minute)
		newest, err := models.Latest(lctx, func(v int64, err error) {
			log.Warn("skipping an incomplete model version on the models topic", "topic", topic, "version", v, "err", err)
		})
		cancel()
		switch {
		case err != nil:
			return nil, nil, 0, nil, fmt.Errorf("reading the newest model version from topic %s: %w", topic, err)
		case newest != nil && newest.Config() != base.Config():
			log.Warn("the newest version on the models topic has another shape than model.path; ignoring it", "topic", topic, "version", newest.Meta.Version)
		case newest != nil && newest.Meta.Version > version:
			serve, version = newest, newest.Meta.Version
			log.Info("resuming from the models topic", "topic", topic, "version", version)
		}
		opts = append(opts, online.WithPublisher(models.Publish))
	}
	if topic := *f.Topics.Drift; topic != "" {
		ev, err := broadcast.NewEvents(kc, topic)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		closers = append(closers, func() { ev.Close() })
		opts = append(opts, online.WithDriftEvents(func(e online.DriftEvent) {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := ev.Write(wctx, strconv.Itoa(e.FrequencyID), e); err != nil {
				log.Error("drift event not written", "topic", topic, "err", err)
			}
		}))
	}
	l, err = online.New(oc, base, opts...)
	if err != nil {
		return nil, nil, 0, nil, fmt.Errorf("online: %w", err)
	}
	return l, serve, version, closeEvents, nil
}

// startEmbedded starts the in-process broker and points the configuration at it.
func startEmbedded(addr string, f *config.File) (*stream.Broker, error) {
	topics := map[string]int{}
	for _, t := range f.TopicNames() {
		topics[t] = 3
	}
	b, err := stream.StartBroker(addr, topics)
	if err != nil {
		return nil, fmt.Errorf("embedded broker on %s: %w", addr, err)
	}
	f.Kafka.Brokers = b.Addrs()
	return b, nil
}

// buildPipeline wires consumer, sink and pipeline from the configuration.
func buildPipeline(f *config.File, kc *kafkaconn.Client, m *model.Model, reg prometheus.Registerer, log *slog.Logger, opts ...pipeline.Option) (*pipeline.Pipeline, error) {
	src, err := stream.NewConsumer(f.StreamConfig(), kc, stream.WithRegisterer(reg), stream.WithLogger(log))
	if err != nil {
		return nil, err
	}
	snk, err := sink.New(f.SinkConfig(), kc, sink.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	opts = append([]pipeline.Option{pipeline.WithRegisterer(reg), pipeline.WithLogger(log)}, opts...)
	return pipeline.New(f.PipelineConfig(), src, f.WindowConfig(), m, snk, opts...)
}

// newRegistry returns a registry with the Go runtime, process and build
// metrics; the packages add theirs.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	version, goVersion := "devel", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
	}
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "freqlens_build_info",
		Help: "Build information; always 1.",
	}, []string{"version", "goversion"})
	info.WithLabelValues(version, goVersion).Set(1)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), info)
	return reg
}

// serveMetrics serves /metrics on addr until ctx ends; "" serves nothing.
// The listener is bound before it returns, so a busy port is an error now.
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, log *slog.Logger, report http.Handler) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener %s: %w (pass --metrics-addr with a free port, or set metrics.listen)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if report != nil {
		mux.Handle("/online", report)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	log.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-done
	}, nil
}

// onlineReport serves the learner's Report as JSON: GET /online?worst=N
// (default 20) lists the N series with the highest online error.
func onlineReport(l *online.Learner, srv online.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 20
		if v := r.URL.Query().Get("worst"); v != "" {
			k, err := strconv.Atoi(v)
			if err != nil || k < 0 {
				http.Error(w, fmt.Sprintf("worst=%q: want a number of series, 0 or more", v), http.StatusBadRequest)
				return
			}
			n = k
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(l.Report(srv, n))
	})
}
