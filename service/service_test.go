package service_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/service"
)

// testModel returns a small untrained hourly model.
func testModel(t *testing.T) *model.Model {
	t.Helper()
	m, err := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 16, Frequencies: 8, TopK: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	return m
}

// testConfig is a service on an embedded broker with any free ports.
func testConfig() service.Config {
	cfg := service.DefaultConfig()
	cfg.EmbeddedBroker = "127.0.0.1:0"
	cfg.MetricsListen = "127.0.0.1:0"
	cfg.Pipeline.Cadence = time.Hour
	cfg.Readings.MaxFuture = 1e5 * time.Hour
	cfg.Stream.BatchLatency = 5 * time.Millisecond
	return cfg
}

// TestRun: one Config makes a running service: readings in through the
// embedded broker, forecasts out, /metrics served, a clean stop that
// releases the broker and the listener.
func TestRun(t *testing.T) {
	svc, err := service.New(context.Background(), testConfig(), service.WithModel(testModel(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()

	kc := kafkatest.Client(t, svc.Config().Kafka.Brokers)
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for step := range 26 {
		r := readings.Reading{Series: "s", Time: t0.Add(time.Duration(step) * time.Hour), Values: []float64{float64(step % 24)}}
		msgs = append(msgs, kafka.Message{Key: []byte("s"), Value: readings.AppendJSON(nil, r, readings.Config{})})
	}
	kafkatest.Produce(t, kc, "readings", msgs...)
	if n := len(kafkatest.ReadN(t, kc, "forecasts", 3, 60*time.Second)); n != 3 {
		t.Errorf("%d forecasts, want 3 (26 readings, lookback 24)", n)
	}
	resp, err := http.Get("http://" + svc.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics: %s", resp.Status)
	}
	metrics := svc.MetricsAddr()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of cancel")
	}
	ln, err := net.Listen("tcp", metrics)
	if err != nil {
		t.Errorf("the metrics address is still taken after Run: %v", err)
	} else {
		ln.Close()
	}
}

// TestNewFailsCleanly: a configuration New cannot start says which key to
// fix, and what New had started (the embedded broker) is stopped again.
func TestNewFailsCleanly(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	broker, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the broker
	if err != nil {
		t.Fatal(err)
	}
	brokerAddr := broker.Addr().String()
	broker.Close()
	cfg := testConfig()
	cfg.EmbeddedBroker = brokerAddr
	cfg.MetricsListen = busy.Addr().String()
	if _, err := service.New(context.Background(), cfg, service.WithModel(testModel(t))); err == nil || !strings.Contains(err.Error(), "metrics.listen") {
		t.Fatalf("New with a busy metrics port = %v, want an error naming metrics.listen", err)
	}
	ln, err := net.Listen("tcp", brokerAddr)
	if err != nil {
		t.Fatalf("the embedded broker still holds %s after New failed: %v", brokerAddr, err)
	}
	ln.Close()

	cfg = testConfig()
	cfg.ModelPath = ""
	if _, err := service.New(context.Background(), cfg); err == nil || !strings.HasPrefix(err.Error(), "model.path") {
		t.Errorf("New without a model = %v, want an error starting with model.path", err)
	}
}

// TestResumesFromCheckpoint: with online.checkpoint_dir holding a promoted
// version of the model's shape, the service serves it, with its version.
func TestResumesFromCheckpoint(t *testing.T) {
	base := testModel(t)
	learned := base.Clone()
	learned.Params().Theta[0] += 0.5
	learned.Refresh()
	dir := t.TempDir()
	if _, err := online.SaveCheckpoint(dir, learned, 4, 5); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Online.CheckpointDir = dir
	svc, err := service.New(context.Background(), cfg, service.WithModel(base))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	m, version := svc.Pipeline().Model()
	if version != 4 || m.Params().Theta[0] != learned.Params().Theta[0] {
		t.Errorf("serving version %d (θ₀ %v), want the checkpoint's version 4 (θ₀ %v)", version, m.Params().Theta[0], learned.Params().Theta[0])
	}
}

// TestReadyz: /healthz answers while the service runs; /readyz answers 200
// once the group is joined, the partitions assigned and their windows
// rebuilt, with a body that says so, and the learner gauge names this
// lone replica the learner (it owns partition 0).
func TestReadyz(t *testing.T) {
	cfg := testConfig()
	cfg.Online.Enabled = true
	svc, err := service.New(context.Background(), cfg, service.WithModel(testModel(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + svc.MetricsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200", code)
	}
	var code int
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for code, body = get("/readyz"); code != http.StatusOK && time.Now().Before(deadline); code, body = get("/readyz") {
		time.Sleep(50 * time.Millisecond)
	}
	if code != http.StatusOK || !strings.Contains(body, `"partitions":[0,1,2]`) || !strings.Contains(body, `"rebuilt":true`) {
		t.Fatalf("/readyz: %d %s; want 200 with partitions [0,1,2], rebuilt", code, body)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, m := get("/metrics")
		if strings.Contains(m, "freqlens_service_learner 1") && strings.Contains(m, "freqlens_service_ready 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("freqlens_service_learner and freqlens_service_ready did not reach 1 within 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
