package service_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/internal/loopback"
	"github.com/freqlens/freqlens/service"
)

// TestProbesWhileWaitingForBrokers: while a replica waits for its brokers
// at start, /healthz answers 200 (a liveness probe must not restart a
// replica for waiting) and /readyz 503 naming the brokers it waits for;
// once they come up it starts and serves on the same address. If they
// never do, New gives up after kafka.connect_timeout and frees the address.
func TestProbesWhileWaitingForBrokers(t *testing.T) {
	metrics, brokerAddr, probes := kafkatest.FreeAddr(t), kafkatest.FreeAddr(t), kafkatest.FreeAddr(t)
	cfg := testConfig()
	cfg.EmbeddedBroker = ""
	cfg.MetricsListen = metrics
	cfg.ProbeListen = probes // the same answers there
	cfg.Kafka.Brokers = []string{brokerAddr}
	cfg.Kafka.ConnectTimeout = time.Minute
	type made struct {
		svc *service.Service
		err error
	}
	started := make(chan made, 1)
	go func() {
		svc, err := service.New(context.Background(), cfg, service.WithModel(testModel(t)))
		started <- made{svc, err}
	}()
	waitFor(t, metrics, "/readyz", http.StatusServiceUnavailable, "waiting for the Kafka brokers "+brokerAddr)
	waitFor(t, probes, "/readyz", http.StatusServiceUnavailable, "waiting for the Kafka brokers "+brokerAddr)
	for _, addr := range []string{metrics, probes} {
		if code, body := probe(addr, "/healthz"); code != http.StatusOK {
			t.Errorf("/healthz on %s while waiting for the brokers: %d %s, want 200", addr, code, body)
		}
	}

	topics := map[string]int{}
	for _, topic := range cfg.Topics() {
		topics[topic] = 3
	}
	b, err := embedded.Start(brokerAddr, topics)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var m made
	select {
	case m = <-started:
	case <-time.After(time.Minute):
		t.Fatal("New did not return within a minute of the brokers coming up")
	}
	if m.err != nil {
		t.Fatalf("New once the brokers came up: %v", m.err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.svc.Run(ctx) }()
	waitFor(t, metrics, "/readyz", http.StatusOK, `"ready":true`)
	waitFor(t, probes, "/readyz", http.StatusOK, `"ready":true`)
	stopCleanly(t, cancel, done, metrics)

	cfg.Kafka.Brokers = []string{loopback.Refused(t)}
	cfg.Kafka.ConnectTimeout = 2 * time.Second
	if _, err := service.New(context.Background(), cfg, service.WithModel(testModel(t))); err == nil || !strings.Contains(err.Error(), "kafka.connect_timeout") {
		t.Fatalf("New with brokers that never come up = %v, want an error naming kafka.connect_timeout", err)
	}
	for _, addr := range []string{metrics, probes} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("the address %s is still taken after New gave up: %v", addr, err)
		}
		ln.Close()
	}
}

// probe GETs path on addr: its status and body, or 0 when nothing answers.
func probe(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls path on addr until it answers code with a body holding
// want, for at most 30s.
func waitFor(t *testing.T, addr, path string, code int, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body := probe(addr, path)
		if got == code && strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d %s after 30s; want %d with %q", path, got, body, code, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
