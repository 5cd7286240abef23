package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/broadcast"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/registry"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
	"github.com/freqlens/freqlens/training"
)

// BootstrapConfig is how a replica without a model file trains its first
// model from the input topic's history (model.bootstrap.*).
type BootstrapConfig struct {
	// MinHistory is how much history (from the earliest to the latest
	// reading) the topic must hold before the first model is trained
	// (model.bootstrap.min_history); 0 turns bootstrapping off: a missing
	// model.path is then an error.
	//
	// Default: 0 (off)
	MinHistory time.Duration
	// Horizon is the steps the model forecasts (model.bootstrap.horizon).
	// Required with MinHistory.
	Horizon int
	// Lookback is the steps of a window (model.bootstrap.lookback).
	//
	// Default: 96
	Lookback int
	// Epochs caps the training passes (model.bootstrap.epochs).
	//
	// Default: 50
	Epochs int
	// CheckEvery is how often a replica waiting for history reads the topic
	// again (model.bootstrap.check_every).
	//
	// Default: 1m
	CheckEvery time.Duration
	// TimeZone is the IANA zone whose wall clock times the bootstrapped
	// model's rhythms (model.bootstrap.time_zone; model.Meta.TimeZone).
	//
	// Default: "" (UTC)
	TimeZone string
}

// DefaultBootstrapConfig returns the defaults of model.bootstrap.*, off.
func DefaultBootstrapConfig() BootstrapConfig {
	return BootstrapConfig{Lookback: 96, Epochs: 50, CheckEvery: time.Minute}
}

// validate reports a bootstrap setting that cannot work.
func (b BootstrapConfig) validate() error {
	switch {
	case b.MinHistory < 0:
		return fmt.Errorf("model.bootstrap.min_history = %v is negative; use a duration such as 14d, or 0 to need a model file", b.MinHistory)
	case b.MinHistory == 0:
		return nil
	case b.Horizon < 1:
		return fmt.Errorf("model.bootstrap.horizon = %d; set the steps the bootstrapped model forecasts, e.g. 24", b.Horizon)
	case b.Lookback < 4:
		return fmt.Errorf("model.bootstrap.lookback = %d; use at least 4 steps (default 96)", b.Lookback)
	case b.Epochs < 1:
		return fmt.Errorf("model.bootstrap.epochs = %d; use at least 1 (default 50)", b.Epochs)
	case b.CheckEvery <= 0:
		return fmt.Errorf("model.bootstrap.check_every = %v; use a positive duration such as 1m", b.CheckEvery)
	}
	if _, err := time.LoadLocation(b.TimeZone); err != nil {
		return fmt.Errorf("model.bootstrap.time_zone = %q is no time zone; use an IANA name such as Europe/Berlin, or leave it empty for UTC", b.TimeZone)
	}
	return nil
}

// bootstrapMaxWindows caps the training windows of a bootstrap, as
// train's --max-windows does.
const bootstrapMaxWindows = 100_000

// bootstrapStatus is what /readyz and the metrics say while a replica
// bootstraps.
type bootstrapStatus struct {
	mu       sync.Mutex
	reason   string
	progress prometheus.Gauge
	history  prometheus.Gauge
	logged   string // the last wait logged, so that a wait is logged once
}

func (b *bootstrapStatus) set(reason string) {
	b.mu.Lock()
	b.reason = reason
	b.mu.Unlock()
}

func (b *bootstrapStatus) get() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reason
}

// bootstraps reports whether the service trains its first model: model.path
// does not exist and model.bootstrap is on.
func (s *Service) bootstraps() bool {
	_, err := os.Stat(s.cfg.ModelPath)
	return errors.Is(err, os.ErrNotExist) && s.cfg.Bootstrap.MinHistory > 0
}

// loadModel returns model.path, or, when it does not exist and
// model.bootstrap is on, the first model trained from the input topic's
// history (or published on topics.models by the replica that trained it).
func (s *Service) loadModel(ctx context.Context) (*model.Model, error) {
	if !s.bootstraps() {
		m, err := modelfile.Load(s.cfg.ModelPath)
		if errors.Is(err, os.ErrNotExist) && s.cfg.EmbeddedBroker != "" {
			// The embedded broker starts empty: there is no history to
			// train on before serve runs, so serve must train it.
			return nil, fmt.Errorf("model.path %s does not exist, and the embedded broker's topics start empty; set model.bootstrap.min_history and "+
				"model.bootstrap.horizon (as examples/quickstart.yaml does) so that serve trains its first model from the readings replay sends it", s.cfg.ModelPath)
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("model.path %s does not exist; train a model (freqlens train --from-topic --config …) "+
				"or set model.bootstrap.min_history to train the first one from the topic", s.cfg.ModelPath)
		}
		return m, err
	}
	return s.bootstrap(ctx)
}

// bootstrap trains the first model. While it runs the metrics listener
// answers /readyz with 503 and what the replica waits for, and
// freqlens_bootstrap_progress and freqlens_bootstrap_history_seconds
// follow it. One replica trains: the member of the group
// "<kafka.group>.bootstrap" that owns input partition 0; the others wait
// for the model on topics.models (without a models topic every replica
// trains its own). The model is written to model.path and published as
// version 1.
func (s *Service) bootstrap(ctx context.Context) (*model.Model, error) {
	bc := s.cfg.Bootstrap
	st := &bootstrapStatus{
		progress: prometheus.NewGauge(prometheus.GaugeOpts{Name: "freqlens_bootstrap_progress",
			Help: "Share of the first model's training done while the replica bootstraps (0 while it waits for history), 1 once done."}),
		history: prometheus.NewGauge(prometheus.GaugeOpts{Name: "freqlens_bootstrap_history_seconds",
			Help: "Span of the input topic's history at the last look while the replica bootstraps."}),
	}
	if err := registry.Register(s.reg, "bootstrap", st.progress, st.history); err != nil {
		return nil, err
	}
	st.set("bootstrapping: looking for a model on the models topic")
	s.waitFor(true, st.get)
	s.log.Info("no model yet: bootstrapping from the input topic", "model", s.cfg.ModelPath, "min_history", bc.MinHistory)

	var models *broadcast.Models
	if s.cfg.ModelsTopic != "" {
		var err error
		if models, err = broadcast.NewModels(s.kc, s.cfg.ModelsTopic, s.cfg.Online.Keep); err != nil {
			return nil, err
		}
		defer models.Close()
	}
	elect, err := newElection(ctx, s.kc, s.cfg.Stream.Group+".bootstrap", s.cfg.Stream.Topic, models == nil)
	if err != nil {
		return nil, err
	}
	defer elect.close()
	for {
		if models != nil {
			m, err := models.Latest(ctx, func(int64, error) {})
			if err != nil {
				return nil, fmt.Errorf("reading topics.models %q: %w", s.cfg.ModelsTopic, err)
			}
			if m != nil {
				s.log.Info("bootstrap: the first model came from the models topic", "topic", s.cfg.ModelsTopic, "version", m.Meta.Version)
				st.progress.Set(1)
				return m, saveModel(m, s.cfg.ModelPath)
			}
		}
		if elect.leader() {
			m, err := s.trainFirst(ctx, st, elect)
			if err != nil {
				return nil, err
			}
			if m != nil && models != nil {
				// A rebalance may have made another replica the trainer
				// meanwhile: the first model published wins, so that every
				// replica serves the same version 1.
				if other, err := models.Latest(ctx, func(int64, error) {}); err == nil && other != nil {
					s.log.Info("bootstrap: another replica published the first model first; serving it", "topic", s.cfg.ModelsTopic)
					return other, saveModel(other, s.cfg.ModelPath)
				}
				if err := models.Publish(ctx, m); err != nil {
					return nil, fmt.Errorf("publishing the first model to topics.models: %w", err)
				}
			}
			if m != nil {
				return m, saveModel(m, s.cfg.ModelPath)
			}
		} else {
			st.set(fmt.Sprintf("bootstrapping: another replica trains the first model once topic %s holds model.bootstrap.min_history (%v) of history; "+
				"waiting for it on topics.models", s.cfg.Stream.Topic, bc.MinHistory))
		}
		wait := bc.CheckEvery
		if !elect.leader() {
			wait = min(wait, 2*time.Second)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// trainFirst reads the topic's history and, when it spans
// model.bootstrap.min_history, trains the first model and returns it; nil,
// nil while the history is too short.
func (s *Service) trainFirst(ctx context.Context, st *bootstrapStatus, elect *election) (*model.Model, error) {
	bc := s.cfg.Bootstrap
	topic := s.cfg.Stream.Topic
	st.set("bootstrapping: reading the history of topic " + topic)
	split := history.Split{Lookback: bc.Lookback, Horizon: bc.Horizon, MaxWindows: bootstrapMaxWindows, Seed: 1}
	h, err := history.StepsFromTopic(ctx, s.kc, topic, history.TopicOptions{}, s.cfg.Readings, s.cfg.HistoryPanel(""), bc.Lookback+bc.Horizon)
	var span time.Duration
	if err == nil {
		span = h.Span
		st.history.Set(span.Seconds())
	}
	var d *history.Data
	if err == nil && span >= bc.MinHistory {
		d, err = h.Split(split)
	}
	if d == nil {
		// Too little history is waiting, not a failure.
		why := fmt.Sprintf("topic %s holds %v of history; model.bootstrap.min_history is %v", topic, span, bc.MinHistory)
		if err != nil {
			why = fmt.Sprintf("model.bootstrap.min_history is %v of history on topic %s, which has not one window yet (%v)", bc.MinHistory, topic, err)
		}
		if why != st.logged {
			s.log.Info("bootstrap: waiting for history", "why", why)
			st.logged = why
		}
		st.set("bootstrapping: waiting: " + why)
		return nil, nil
	}
	if !elect.leader() {
		return nil, nil // the group moved partition 0 while the history was read
	}
	s.log.Info("bootstrap: training the first model", "summary", d.Summary)
	res, err := training.Fit(ctx, d, bc.Lookback, bc.Horizon, training.Options{
		Epochs: bc.Epochs, Seed: 1, TimeZone: bc.TimeZone,
		Epoch: func(e training.EpochStats) {
			st.progress.Set(float64(e.Epoch) / float64(e.Epochs))
			st.set(fmt.Sprintf("bootstrapping: training the first model on %v of topic %s: epoch %d of at most %d", d.Span, topic, e.Epoch, e.Epochs))
		},
	})
	if err != nil {
		return nil, err
	}
	if res.Interrupted {
		return nil, ctx.Err()
	}
	m := res.Model
	m.Meta.Version = 1
	st.progress.Set(1)
	s.log.Info("bootstrap: first model trained", "model", s.cfg.ModelPath, "test_mse", res.Test.MSE,
		"epochs", res.Train.EpochsRun, "seconds", res.Seconds)
	return m, nil
}

// saveModel writes m to path through a temporary file and a rename, so that
// a crash never leaves half a model where serve looks for one.
func saveModel(m *model.Model, path string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := modelfile.Save(m, tmp); err != nil {
		return fmt.Errorf("model.path: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("model.path: %w", err)
	}
	return nil
}

// election says whether this replica trains the first model: the member of
// a consumer group of its own that owns input partition 0.
type election struct {
	always bool
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	is     bool
}

// newElection joins group on topic in the background; with always the
// replica trains regardless (there is no models topic to share a model).
func newElection(ctx context.Context, kc *kafkaconn.Client, group, topic string, always bool) (*election, error) {
	e := &election{always: always, done: make(chan struct{})}
	if always {
		close(e.done)
		return e, nil
	}
	cg, err := kc.NewConsumerGroup(kafkaconn.Group{ID: group, Topics: []string{topic},
		SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second, RebalanceTimeout: 10 * time.Second, JoinGroupBackoff: time.Second})
	if err != nil {
		return nil, err
	}
	gctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	go func() {
		defer close(e.done)
		defer cg.Close()
		for {
			gen, err := cg.Next(gctx)
			if err != nil {
				return
			}
			owns := slices.ContainsFunc(gen.Assignments[topic], func(a kafka.PartitionAssignment) bool { return a.ID == 0 })
			e.mu.Lock()
			e.is = owns
			e.mu.Unlock()
			// Hold the generation until the group changes.
			gen.Start(func(ctx context.Context) { <-ctx.Done() })
		}
	}()
	return e, nil
}

func (e *election) leader() bool {
	if e.always {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.is
}

func (e *election) close() {
	if e.cancel != nil {
		e.cancel()
	}
	<-e.done
}
