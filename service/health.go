package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/registry"
	"github.com/freqlens/freqlens/pipeline"
)

// watchEvery is how often the broker watch pings the brokers.
const watchEvery = 2 * time.Second

// watch follows whether the brokers answer while the service runs, and
// whether this replica is the learner: it logs an error once the brokers
// have been unreachable for kafka.unreachable_after and an info line when
// they answer again, and exports both as gauges.
type watch struct {
	kc      *kafkaconn.Client
	log     *slog.Logger
	after   time.Duration
	learner func() bool
	// modelsTopic is topics.models, where a learner publishes its
	// versions ("" for none), for the log.
	modelsTopic string

	mu        sync.Mutex
	reachable bool
	downSince time.Time // zero while reachable
	alarmed   bool      // the error was logged for this outage
	lastErr   error
	wasLead   bool
	// undelivered: the ERROR about failing writes was logged (writes
	// failed for kafka.unreachable_after while the brokers answered).
	undelivered bool

	reachableG prometheus.Gauge
	learnerG   prometheus.Gauge
	readyG     prometheus.Gauge
}

func newWatch(kc *kafkaconn.Client, log *slog.Logger, reg prometheus.Registerer, learner func() bool) (*watch, error) {
	w := &watch{
		kc: kc, log: log, after: kc.Config().UnreachableAfter, learner: learner, reachable: true,
		reachableG: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "freqlens_service_brokers_reachable",
			Help: "1 while a Kafka broker answers the service's pings (every 2s), 0 while none does.",
		}),
		learnerG: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "freqlens_service_learner",
			Help: "1 while this replica is the one that fine-tunes and publishes model versions (online.learner), else 0.",
		}),
		readyG: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "freqlens_service_ready",
			Help: "1 while /readyz answers 200: group joined, partitions assigned, windows rebuilt, brokers reachable.",
		}),
	}
	w.reachableG.Set(1)
	if err := registry.Register(reg, "service", w.reachableG, w.learnerG, w.readyG); err != nil {
		return nil, err
	}
	return w, nil
}

// run pings every watchEvery until ctx ends, and follows delivery, the
// worst of the service's writes.
func (w *watch) run(ctx context.Context, ready func() bool, delivery func() pipeline.Delivery) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, watchEvery)
		err := w.kc.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		w.note(err, now)
		w.noteDelivery(delivery(), now)
		w.lead()
		if ready() {
			w.readyG.Set(1)
		} else {
			w.readyG.Set(0)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// note records one ping's outcome at now.
func (w *watch) note(err error, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		if !w.reachable {
			level := slog.LevelDebug
			if w.alarmed {
				level = slog.LevelInfo
			}
			w.log.Log(context.Background(), level, "kafka brokers reachable again", "brokers", w.kc.Brokers(),
				"unreachable_for", now.Sub(w.downSince).Round(time.Second))
		}
		w.reachable, w.downSince, w.alarmed, w.lastErr = true, time.Time{}, false, nil
		w.reachableG.Set(1)
		return
	}
	if w.reachable {
		w.reachable, w.downSince = false, now
		w.reachableG.Set(0)
	}
	w.lastErr = err
	if !w.alarmed && now.Sub(w.downSince) >= w.after {
		w.alarmed = true
		w.log.Error("kafka brokers unreachable; forecasting is paused and resumes by itself when they answer",
			"brokers", w.kc.Brokers(), "for", now.Sub(w.downSince).Round(time.Second), "err", err)
	}
}

// noteDelivery logs one ERROR when writes have failed for
// kafka.unreachable_after while the brokers answer (a deleted or misnamed
// topic, a refused write: an outage of the brokers has its own), and one
// INFO when they succeed again.
func (w *watch) noteDelivery(d pipeline.Delivery, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case d.FailingSince.IsZero():
		if w.undelivered {
			w.undelivered = false
			w.log.Info("writes to kafka succeed again")
		}
	case !w.undelivered && w.reachable && now.Sub(d.FailingSince) >= w.after:
		w.undelivered = true
		w.log.Error("writes to kafka keep failing while the brokers answer; nothing is committed and /readyz says 503 until they succeed",
			"what", d.What, "for", now.Sub(d.FailingSince).Round(time.Second), "err", d.Err)
	}
}

// lead logs a change of the learner role.
func (w *watch) lead() {
	is := w.learner()
	w.mu.Lock()
	was := w.wasLead
	w.wasLead = is
	w.mu.Unlock()
	if is == was {
		return
	}
	if is {
		w.learnerG.Set(1)
		if w.modelsTopic != "" {
			w.log.Info("this replica is now the learner: it fine-tunes the model and publishes its versions", "topic", w.modelsTopic)
		} else {
			w.log.Info("this replica is now the learner: it fine-tunes the model it serves (no topics.models: other replicas do not receive its versions)")
		}
	} else {
		w.learnerG.Set(0)
		w.log.Info("this replica is no longer the learner: it follows the models topic")
	}
}

// brokersOK reports whether the last ping was answered, and the error of
// the last one that was not.
func (w *watch) brokersOK() (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reachable, w.lastErr
}

// readiness is the body of /readyz.
type readiness struct {
	Ready            bool  `json:"ready"`
	Joined           bool  `json:"joined"`
	Generation       int32 `json:"generation"`
	Partitions       []int `json:"partitions"`
	Rebuilt          bool  `json:"rebuilt"`
	BrokersReachable bool  `json:"brokers_reachable"`
	// Delivering is false while the service's writes (forecasts, dead
	// letters, commits, drift events, model versions) have been failing
	// for kafka.unreachable_after.
	Delivering bool   `json:"delivering"`
	Reason     string `json:"reason,omitempty"`
}

// readiness says whether the service forecasts what it is assigned.
func (s *Service) readiness() readiness {
	st := s.src.Status()
	ok, err := s.watch.brokersOK()
	d := s.delivery()
	failing := !d.FailingSince.IsZero() && time.Since(d.FailingSince) >= s.watch.after
	r := readiness{Joined: st.Joined, Generation: st.Generation, Partitions: slices.Clone(st.Partitions), Rebuilt: st.Rebuilt,
		BrokersReachable: ok, Delivering: !failing}
	switch {
	case !ok:
		r.Reason = "no kafka broker answers: " + err.Error()
	case failing:
		r.Reason = fmt.Sprintf("%s has failed for %v: %v", d.What, time.Since(d.FailingSince).Round(time.Second), d.Err)
	case !st.Joined:
		r.Reason = "not a member of consumer group " + s.cfg.Stream.Group + " (joining, or rebalancing)"
	case len(st.Partitions) == 0:
		r.Reason = "no input partition assigned (more replicas than partitions of " + s.cfg.Stream.Topic + "?)"
	case !st.Rebuilt:
		r.Reason = "rebuilding the windows of the assigned partitions"
	default:
		r.Ready = true
	}
	if r.Partitions == nil {
		r.Partitions = []int{}
	}
	return r
}

// delivery is the longest-failing of the pipeline's writes and the
// outbox's.
func (s *Service) delivery() pipeline.Delivery {
	d, o := s.p.Delivery(), s.outbox.status()
	if d.FailingSince.IsZero() || (!o.FailingSince.IsZero() && o.FailingSince.Before(d.FailingSince)) {
		return o
	}
	return d
}

// healthHandlers serves /healthz (the process serves: always 200) and
// /readyz (200 when ready, else 503), both with a JSON body, on mux and on
// the probe listener.
func (s *Service) healthHandlers(mux *http.ServeMux) {
	var readyz http.HandlerFunc = func(w http.ResponseWriter, r *http.Request) {
		rd := s.readiness()
		w.Header().Set("Content-Type", "application/json")
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(rd)
	}
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/readyz", readyz)
	s.probeReadyz.Store(&readyz)
}

// healthz answers a liveness probe: the process serves.
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"ok":true}` + "\n"))
}

// waiting is the metrics listener of a replica that cannot serve yet: it
// waits for the brokers, reads its model or its checkpoint, or bootstraps
// its first model. /healthz answers 200, since the process is alive and a
// liveness probe must not restart it for waiting; /readyz answers 503 with
// what it waits for; /metrics serves the registry. New starts it first and
// stops it just before the serving listener binds the same address.
type waiting struct {
	srv *metricsServer
	mu  sync.Mutex
	// reason says what the replica waits for; bootstrapping that it
	// trains its first model.
	reason        func() string
	bootstrapping bool
}

// serveWaiting starts s.wait with reason, on the metrics listener (when
// there is one) and the probe listener (when there is one).
func (s *Service) serveWaiting(reason string) error {
	w := &waiting{reason: func() string { return reason }}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", healthz)
	var readyz http.HandlerFunc = func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		reason, boot := w.reason, w.bootstrapping
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(rw).Encode(struct {
			Ready         bool   `json:"ready"`
			Bootstrapping bool   `json:"bootstrapping"`
			Reason        string `json:"reason"`
		}{false, boot, reason()})
	}
	mux.HandleFunc("/readyz", readyz)
	s.wait = w
	s.probeReadyz.Store(&readyz)
	if err := s.startProbe(); err != nil {
		return err
	}
	var err error
	if s.metricsLn, err = bindMetrics(s.cfg); err != nil {
		return err
	}
	srv, err := listenMetrics(s.cfg, s.metricsLn, s.reg, mux, s.log)
	if err != nil || srv == nil {
		return err
	}
	srv.serve()
	w.srv = srv
	return nil
}

// waitFor says what the replica waits for now on /readyz.
func (s *Service) waitFor(bootstrapping bool, reason func() string) {
	if s.wait == nil {
		return
	}
	s.wait.mu.Lock()
	s.wait.reason, s.wait.bootstrapping = reason, bootstrapping
	s.wait.mu.Unlock()
}

// stopWaiting stops the waiting listener; the socket stays bound for the
// serving one.
func (s *Service) stopWaiting() {
	if s.wait != nil {
		s.wait.srv.stop()
		s.wait = nil
	}
}

// startProbe serves /healthz and /readyz alone on metrics.probe_listen, in
// plain HTTP without the web configuration's authentication: the address
// a kubelet probes when the metrics listener asks for a password it
// cannot give. Both say only whether the replica lives and serves.
func (s *Service) startProbe() error {
	if s.cfg.ProbeListen == "" || s.probe != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.ProbeListen)
	if err != nil {
		return fmt.Errorf("metrics.probe_listen %s: %w (choose a free port, or leave it empty)", s.cfg.ProbeListen, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { (*s.probeReadyz.Load())(w, r) })
	s.probe = &http.Server{Handler: withSecurityHeaders(mux), ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelInfo)}
	s.probeLn = ln
	go s.probe.Serve(ln)
	s.log.Info("probes", "healthz", "http://"+ln.Addr().String()+"/healthz", "readyz", "http://"+ln.Addr().String()+"/readyz")
	return nil
}

// stopProbe shuts the probe listener down.
func (s *Service) stopProbe() {
	if s.probe == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.probe.Shutdown(ctx)
}

// isLearner reports whether this replica fine-tunes: online.enabled, and
// online.learner "always", or "auto" while this replica owns input
// partition 0.
func (s *Service) isLearner() bool {
	if !s.cfg.Online.Enabled {
		return false
	}
	switch s.cfg.Learner {
	case LearnerAlways:
		return true
	case LearnerNever:
		return false
	}
	if s.src == nil {
		return false
	}
	st := s.src.Status()
	return st.Joined && slices.Contains(st.Partitions, 0)
}

// The values of online.learner.
const (
	LearnerAuto   = "auto"
	LearnerAlways = "always"
	LearnerNever  = "never"
)
