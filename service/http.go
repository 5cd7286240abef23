package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/freqlens/freqlens/internal/registry"

	"github.com/freqlens/freqlens/online"
)

// NewRegistry returns a registry with the Go runtime, process and build
// metrics (freqlens_build_info); the packages add theirs.
func NewRegistry() (*prometheus.Registry, error) {
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
	if err := registry.Register(reg, "service", collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), info); err != nil {
		return nil, err
	}
	return reg, nil
}

// metricsServer serves /metrics and the service's other handlers on a
// socket bound by bindMetrics; a nil *metricsServer serves nothing.
type metricsServer struct {
	ln        *lentListener
	srv       *http.Server
	log       *slog.Logger
	webConfig string // metrics.web_config; "" serves plain HTTP
	scheme    string // "https" when the web configuration sets up TLS, else "http"
	done      chan struct{}
}

// bindMetrics binds cfg.MetricsListen ("" binds nothing and returns nil)
// once for the life of the service, so that a busy port is an error
// before anything runs and the address stays bound from the waiting
// listener to the serving one: a probe or a scrape between the two waits in
// the socket's queue instead of being refused, and no other process can
// take the port.
func bindMetrics(cfg Config) (*net.TCPListener, error) {
	if cfg.MetricsListen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen %s: %w (pass --metrics-addr with a free port, or set metrics.listen)", cfg.MetricsListen, err)
	}
	return ln.(*net.TCPListener), nil
}

// lentListener is the metrics socket lent to one server: its Close ends
// that server's Accept (through a deadline) and leaves the socket open for
// the next server; the Service closes the socket itself.
type lentListener struct {
	tcp    *net.TCPListener
	closed atomic.Bool
}

// lend returns the socket as a listener for one server.
func lend(tcp *net.TCPListener) (*lentListener, error) {
	if err := tcp.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	return &lentListener{tcp: tcp}, nil
}

func (l *lentListener) Accept() (net.Conn, error) {
	c, err := l.tcp.Accept()
	if err != nil && l.closed.Load() {
		return nil, net.ErrClosed
	}
	return c, err
}

func (l *lentListener) Close() error {
	if l.closed.CompareAndSwap(false, true) {
		return l.tcp.SetDeadline(time.Now())
	}
	return nil
}

func (l *lentListener) Addr() net.Addr { return l.tcp.Addr() }

// listenMetrics serves reg on /metrics beside the handlers of mux on the
// socket tcp (nil serves nothing and returns nil): behind the web
// configuration's TLS, basic authentication and headers
// (cfg.MetricsWebConfig, through the exporter-toolkit), then the Host
// check (hostCheck), with the security headers on every response
// (withSecurityHeaders).
func listenMetrics(cfg Config, tcp *net.TCPListener, reg *prometheus.Registry, mux *http.ServeMux, log *slog.Logger) (*metricsServer, error) {
	if tcp == nil {
		return nil, nil
	}
	addr := cfg.MetricsListen
	scheme := "http"
	if cfg.MetricsWebConfig != "" {
		wc, err := readWebConfig(cfg.MetricsWebConfig)
		if err != nil {
			return nil, err
		}
		if wc.TLSConfig.IsEnabled() {
			scheme = "https"
		} else if len(wc.Users) > 0 {
			log.Warn("metrics.web_config has basic_auth_users but no tls_server_config: passwords cross the network in clear text; "+
				"add a certificate", "web_config", cfg.MetricsWebConfig)
		}
	}
	ln, err := lend(tcp)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen %s: %w", addr, err)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if cfg.MetricsPprof {
		registerPprof(mux)
	}
	srv := &http.Server{
		Handler:           withSecurityHeaders(newHostCheck(mux, addr, cfg.MetricsAllowedHosts, log)),
		ReadHeaderTimeout: 5 * time.Second,
		// The server's own errors (a failed TLS handshake: a client that
		// does not trust the certificate, or speaks plain HTTP) go to the
		// service's log, not to the standard logger.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelInfo),
	}
	return &metricsServer{ln: ln, srv: srv, log: log, webConfig: cfg.MetricsWebConfig, scheme: scheme}, nil
}

// registerPprof serves net/http/pprof's handlers under /debug/pprof/ on mux
// (its index lists the profiles: heap, allocs, goroutine, profile?seconds=N
// for CPU, trace …), behind the listener's TLS, authentication and Host
// check. Importing net/http/pprof also registers them on net/http's default
// mux; nothing here serves that mux, and nothing must (internal/structure's
// TestNoDefaultServeMux checks).
func registerPprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// start serves in the background until stop: with a web configuration
// through the exporter-toolkit's web.Serve (which wraps the handler in its
// basic authentication and headers and serves TLS when configured),
// without one in plain HTTP.
func (m *metricsServer) start() {
	if m == nil {
		return
	}
	m.serve()
	m.log.Info("metrics", "url", m.url("/metrics"))
	m.log.Info("live view", "url", m.url("/"))
}

// serve is start without the log lines that give the addresses.
func (m *metricsServer) serve() {
	if m == nil {
		return
	}
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
		var err error
		if m.webConfig == "" {
			err = m.srv.Serve(m.ln)
		} else {
			err = web.Serve(m.ln, m.srv, &web.FlagConfig{WebConfigFile: &m.webConfig}, m.log.With("component", "web"))
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("metrics server", "err", err)
		}
	}()
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

// url returns the URL of path on the listener, https with TLS.
func (m *metricsServer) url(path string) string {
	return m.scheme + "://" + m.ln.Addr().String() + path
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
