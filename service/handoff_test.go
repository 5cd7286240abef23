package service

import (
	"bufio"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// listenMetricsForTest binds cfg.MetricsListen and returns its server; the
// socket is closed when t ends.
func listenMetricsForTest(t *testing.T, cfg Config, reg *prometheus.Registry, mux *http.ServeMux) (*metricsServer, error) {
	t.Helper()
	tcp, err := bindMetrics(cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { tcp.Close() })
	return listenMetrics(cfg, tcp, reg, mux, slog.New(slog.DiscardHandler))
}

// TestMetricsAddressStaysBound: the waiting listener hands the metrics
// socket to the serving one without unbinding it, so a client that connects
// between the two is answered by the second instead of refused, and no one
// else can bind the address meanwhile.
func TestMetricsAddressStaysBound(t *testing.T) {
	cfg := Config{MetricsListen: "127.0.0.1:0"}
	tcp, err := bindMetrics(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	addr := tcp.Addr().String()
	serve := func(body string) *metricsServer {
		mux := http.NewServeMux()
		mux.HandleFunc("/who", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(body)) })
		m, err := listenMetrics(cfg, tcp, reg, mux, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		m.serve()
		return m
	}
	get := func(c net.Conn) string {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("GET /who HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := make([]byte, 16)
		n, _ := resp.Body.Read(b)
		return string(b[:n])
	}

	first := serve("waiting")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if got := get(c); got != "waiting" {
		t.Fatalf("the first server answered %q, want waiting", got)
	}
	c.Close()
	first.stop()

	// Between the two servers the address is bound: another listener is
	// refused, and a client's connection waits in the queue.
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("%s could be bound by another listener between the two servers", addr)
	}
	between, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("a client connecting between the two servers was refused: %v", err)
	}
	defer between.Close()

	second := serve("serving")
	defer second.stop()
	if got := get(between); got != "serving" {
		t.Fatalf("the connection made between the servers was answered %q, want serving", got)
	}
}
