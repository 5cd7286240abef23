package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/freqlens/freqlens/online"
)

// NewRegistry returns a registry with the Go runtime, process and build
// metrics (freqlens_build_info); the packages add theirs.
func NewRegistry() *prometheus.Registry {
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

// metricsServer serves /metrics and the service's other handlers on a
// listener bound by listenMetrics; a nil *metricsServer serves nothing.
type metricsServer struct {
	ln   net.Listener
	srv  *http.Server
	log  *slog.Logger
	done chan struct{}
}

// listenMetrics binds addr ("" binds nothing and returns nil), so that a
// busy port is an error before anything runs, and serves reg on /metrics
// beside the handlers of mux.
func listenMetrics(addr string, reg *prometheus.Registry, mux *http.ServeMux, log *slog.Logger) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen %s: %w (pass --metrics-addr with a free port, or set metrics.listen)", addr, err)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return &metricsServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, log: log}, nil
}

// start serves in the background until stop.
func (m *metricsServer) start() {
	if m == nil {
		return
	}
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("metrics server", "err", err)
		}
	}()
	m.log.Info("metrics", "url", "http://"+m.ln.Addr().String()+"/metrics")
	m.log.Info("live view", "url", "http://"+m.ln.Addr().String()+"/")
}

// stop shuts the server down (waiting up to 2s for requests in flight) or,
// when it never started, closes the listener.
func (m *metricsServer) stop() {
	if m == nil {
		return
	}
	if m.done == nil {
		m.ln.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m.srv.Shutdown(ctx)
	<-m.done
}

func (m *metricsServer) addr() string {
	if m == nil {
		return ""
	}
	return m.ln.Addr().String()
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
