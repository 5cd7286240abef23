package service_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/crypto/bcrypt"

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
	cfg.Cadence = time.Hour
	cfg.Readings.MaxFuture = 1e5 * time.Hour
	cfg.Stream.BatchLatency = 5 * time.Millisecond
	return cfg
}

// runService builds a service of cfg serving testModel and runs it until
// cancel; done receives what Run returns.
func runService(t *testing.T, cfg service.Config) (svc *service.Service, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	svc, err := service.New(context.Background(), cfg, service.WithModel(testModel(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(ctx) }()
	return svc, cancel, ran
}

// hourly returns steps JSON readings of series "s", an hour apart from
// 2026-01-05.
func hourly(steps int) []kafka.Message {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for step := range steps {
		r := readings.Reading{Series: "s", Time: t0.Add(time.Duration(step) * time.Hour), Values: []float64{float64(step % 24)}}
		msgs = append(msgs, kafka.Message{Key: []byte("s"), Value: readings.AppendJSON(nil, r, readings.DefaultConfig())})
	}
	return msgs
}

// TestRun: one Config makes a running service: readings in through the
// embedded broker, forecasts out, /metrics served, a clean stop that
// releases the broker and the listener.
func TestRun(t *testing.T) {
	svc, cancel, done := runService(t, testConfig())

	kc := kafkatest.Client(t, svc.Config().Kafka.Brokers)
	kafkatest.Produce(t, kc, "readings", hourly(26)...)
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
	stopCleanly(t, cancel, done, svc.MetricsAddr())
}

// stopCleanly cancels the context of a running service's Run, which must
// then return nil within 20s and leave the metrics address free.
func stopCleanly(t *testing.T, cancel context.CancelFunc, done <-chan error, metrics string) {
	t.Helper()
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
	brokerAddr := kafkatest.FreeAddr(t) // a free port for the broker
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
	svc, cancel, done := runService(t, cfg)
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

// TestMetricsOverTLSWithBasicAuth: with metrics.web_config naming a
// certificate and a user (the exporter-toolkit's format, relative paths
// from the file's directory), /metrics is served over TLS to that user
// only, the Host check and the file's headers still apply, and Run still
// stops cleanly and frees the port.
func TestMetricsOverTLSWithBasicAuth(t *testing.T) {
	certFile, keyFile := kafkatest.SelfSignedFiles(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(filepath.Dir(certFile), "web.yml")
	if err := os.WriteFile(webConfig, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n"+
		"basic_auth_users:\n  prometheus: %s\nhttp_server_config:\n  headers:\n    X-Frame-Options: sameorigin\n",
		filepath.Base(certFile), filepath.Base(keyFile), hash)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.MetricsWebConfig = webConfig
	cfg.ProbeListen = kafkatest.FreeAddr(t)
	svc, cancel, done := runService(t, cfg)
	addr := svc.MetricsAddr()
	// The probes, on a listener of their own, need no password (a kubelet
	// has none) and serve nothing else.
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 404, "/online": 404} {
		var resp *http.Response
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) { // ready once the partitions are assigned
			if resp, err = http.Get("http://" + cfg.ProbeListen + path); err != nil {
				t.Fatalf("GET %s on metrics.probe_listen: %v", path, err)
			}
			resp.Body.Close()
			if resp.StatusCode == want || time.Now().After(deadline) {
				break
			}
		}
		if resp.StatusCode != want {
			t.Errorf("GET %s on metrics.probe_listen: %s, want %d", path, resp.Status, want)
		}
	}
	if got, want := svc.LiveViewURL(), "https://"+addr+"/"; got != want {
		t.Errorf("LiveViewURL() = %q, want %q", got, want)
	}

	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemBytes)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer client.CloseIdleConnections()
	for _, tc := range []struct {
		name, user, password, host string
		want                       int
	}{
		{name: "the user", user: "prometheus", password: "s3cret", want: 200},
		{name: "no credentials", want: 401},
		{name: "a wrong password", user: "prometheus", password: "secret", want: 401},
		{name: "an unknown user", user: "grafana", password: "s3cret", want: 401},
		{name: "the user naming another host", user: "prometheus", password: "s3cret", host: "attacker.example", want: 421},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.user != "" {
				req.SetBasicAuth(tc.user, tc.password)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("GET /metrics: %s, want %d: %.300s", resp.Status, tc.want, body)
			}
			switch tc.want {
			case 200:
				if !strings.Contains(string(body), "freqlens_build_info") {
					t.Errorf("/metrics over TLS lacks freqlens_build_info: %.300s", body)
				}
				if got := resp.Header.Get("X-Frame-Options"); got != "sameorigin" {
					t.Errorf("X-Frame-Options = %q, want the web configuration's sameorigin", got)
				}
				if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
					t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
				}
			case 401:
				if got := resp.Header.Get("WWW-Authenticate"); got != "Basic" {
					t.Errorf("WWW-Authenticate = %q, want Basic", got)
				}
			}
		})
	}
	// Plain HTTP on the TLS port is not served.
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("GET http:// on the TLS listener answered 200")
		}
	}

	stopCleanly(t, cancel, done, addr)
	if c, err := net.DialTimeout("tcp", cfg.ProbeListen, time.Second); err == nil {
		c.Close()
		t.Error("metrics.probe_listen still accepts connections after Run returned")
	}
}

// TestNewRefusesABadWebConfig: a web configuration that cannot be served
// is refused by Validate (so before New connects to anything) and New,
// naming metrics.web_config.
func TestNewRefusesABadWebConfig(t *testing.T) {
	cfg := testConfig()
	cfg.MetricsWebConfig = filepath.Join(t.TempDir(), "missing.yml")
	cfg.ModelPath = "unused.safetensors"
	if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "metrics.web_config") {
		t.Errorf("Validate with a missing web config = %v, want an error starting with metrics.web_config", err)
	}
	if _, err := service.New(context.Background(), cfg, service.WithModel(testModel(t))); err == nil || !strings.HasPrefix(err.Error(), "metrics.web_config") {
		t.Errorf("New with a missing web config = %v, want an error starting with metrics.web_config", err)
	}
}

// TestEveryMetricIsDocumented: every metric a running service serves is
// named in the documentation (docs/ or deploy/), so an operator who finds
// one in /metrics can look it up.
func TestEveryMetricIsDocumented(t *testing.T) {
	svc, cancel, done := runService(t, testConfig())
	kc := kafkatest.Client(t, svc.Config().Kafka.Brokers)
	msgs := append(hourly(40), kafka.Message{Key: []byte("s"), Value: []byte("not json")})
	kafkatest.Produce(t, kc, "readings", msgs...)
	kafkatest.ReadN(t, kc, "forecasts", 17, 60*time.Second)
	resp, err := http.Get("http://" + svc.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	stopCleanly(t, cancel, done, svc.MetricsAddr())

	var docs strings.Builder
	for _, pattern := range []string{"../docs/*.md", "../deploy/*/*", "../deploy/*", "../README.md"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil {
				docs.Write(b)
			}
		}
	}
	served := 0
	for _, line := range strings.Split(string(body), "\n") {
		name, ok := strings.CutPrefix(line, "# HELP ")
		if !ok || !strings.HasPrefix(name, "freqlens_") {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		served++
		if !strings.Contains(docs.String(), name) {
			t.Errorf("%s is served but named in no document; add it to docs/operating.md's Metrics", name)
		}
	}
	if served < 40 {
		t.Errorf("only %d freqlens metrics served; the test should see the online and window metrics too", served)
	}
}

// TestIntervalCalibrationKeptAtShutdown: with output.intervals and
// online.checkpoint_dir, a service that stops keeps its series' interval
// calibration in the directory, and the next one on it reads it back.
func TestIntervalCalibrationKeptAtShutdown(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.Online.Intervals, cfg.Online.CheckpointDir = []float64{0.8, 0.95}, dir
	svc, cancel, done := runService(t, cfg)
	kc := kafkatest.Client(t, svc.Config().Kafka.Brokers)
	kafkatest.Produce(t, kc, "readings", hourly(60)...)
	kafkatest.ReadN(t, kc, "forecasts", 30, 60*time.Second)
	stopCleanly(t, cancel, done, svc.MetricsAddr())
	files, err := filepath.Glob(filepath.Join(dir, "intervals-*.gob"))
	if err != nil || len(files) != 1 {
		t.Fatalf("after the stop the checkpoint directory holds %v (%v), want one calibration file", files, err)
	}
	var logged bytes.Buffer
	again, err := service.New(context.Background(), cfg, service.WithModel(testModel(t)),
		service.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !strings.Contains(logged.String(), "interval calibration of the series seen before the restart is restored") || !strings.Contains(logged.String(), "series=1") {
		t.Errorf("the next service did not say it restored the calibration of the one series:\n%s", logged.String())
	}
}
