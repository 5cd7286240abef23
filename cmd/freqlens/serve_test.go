package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/broadcast"
	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/internal/loopback"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/wire"
)

// saveTestModel writes a small untrained hourly model to dir.
func saveTestModel(t *testing.T, dir string) (*model.Model, string) {
	t.Helper()
	m, err := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 16, Frequencies: 8, TopK: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	path := filepath.Join(dir, "m.safetensors")
	if err := modelfile.Save(m, path); err != nil {
		t.Fatal(err)
	}
	return m, path
}

// startServe runs `freqlens serve` with an embedded broker and the
// configuration yaml (a model is added) until the test ends and returns the
// broker address.
func startServe(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	_, modelPath := saveTestModel(t, dir)
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("model: {path: %q}\n%s", modelPath, yaml)), 0o644)
	broker := kafkatest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg, "--embedded-broker", broker, "--metrics-addr", ""}, &bytes.Buffer{}, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d after SIGINT-like cancellation, want 0; stderr:\n%s", code, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop within 20s")
		}
	})
	// Wait for the broker to accept connections.
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", broker)
		if err == nil {
			c.Close()
			break
		}
		if i > 200 {
			t.Fatalf("embedded broker did not come up: %v\n%s", err, stderr.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
	return broker
}

// TestServeWithKcat drives the service with an independent Kafka client:
// kcat (librdkafka) produces readings and consumes forecasts and
// attributions.
func TestServeWithKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (Debian package kcat; CI installs it)")
	}
	broker := startServe(t, "input: {cadence: 1h, max_future: 100000h}\nmetrics: {listen: \"\"}\n")

	var in bytes.Buffer
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for step := range 30 {
		for _, s := range []string{"k-1", "k-2"} {
			fmt.Fprintf(&in, `%s|{"series":"%s","ts":"%s","value":%g}`+"\n", s, s,
				t0.Add(time.Duration(step)*time.Hour).Format(time.RFC3339), 10+math.Sin(float64(step)/24*2*math.Pi))
		}
	}
	prod := exec.Command(kcat, "-P", "-b", broker, "-t", "readings", "-K|")
	prod.Stdin = &in
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	const want = 2 * (30 - 24 + 1)
	consume := func(topic string) [][]byte {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, "-C", "-b", broker, "-t", topic, "-o", "beginning", "-c", fmt.Sprint(want), "-q", "-f", "%s\n")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kcat -C %s: %v", topic, err)
		}
		return bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	}
	forecasts := consume("forecasts")
	if len(forecasts) != want {
		t.Fatalf("kcat read %d forecasts, want %d", len(forecasts), want)
	}
	byKey := map[string]wire.Forecast{}
	for _, line := range forecasts {
		f, err := wire.DecodeForecastJSON(line)
		if err != nil {
			t.Fatalf("forecast %q: %v", line, err)
		}
		if len(f.Values) != 6 || f.ModelVersion != 1 {
			t.Errorf("forecast %+v", f)
		}
		byKey[f.Series+f.TS.String()] = f
	}
	for _, line := range consume("attributions") {
		var a struct {
			Series      string
			TS          time.Time
			Residual    []float64
			Frequencies []struct {
				Values []float64
			}
		}
		if err := json.Unmarshal(line, &a); err != nil {
			t.Fatalf("attribution %q: %v", line, err)
		}
		f, ok := byKey[a.Series+a.TS.String()]
		if !ok {
			t.Fatalf("attribution for %s at %s has no forecast", a.Series, a.TS)
		}
		for h, v := range f.Values {
			sum := a.Residual[h]
			for _, fr := range a.Frequencies {
				sum += fr.Values[h]
			}
			if math.Abs(sum-v) > 1e-9*math.Max(1, math.Abs(v)) {
				t.Fatalf("%s step %d: residual + frequencies = %v, forecast %v", a.Series, h, sum, v)
			}
		}
	}
}

// TestDemo runs the one-command demo briefly: it trains, forecasts within
// seconds and stops cleanly.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo trains a model; skipped in -short mode")
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"demo", "--duration", "12s", "--series", "4", "--train-epochs", "1",
		"--rate", "20", "--metrics-addr", ""}, &out, &errOut)
	if code != 0 {
		t.Fatalf("demo exited %d: %s\n%s", code, errOut.String(), out.String())
	}
	text := out.String()
	for _, want := range []string{"epoch 1/1", "first forecast", "readings/s", "s-0 at", "residual", "stopped:", "online: MSE", "the model's test MSE ", "fine-tuning rounds: "} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "map[") {
		t.Errorf("demo output prints a Go map:\n%s", text)
	}
}

// TestServeResumesFromModelsTopic: a service that starts with topics.models
// set serves the newest version another replica published there, not the
// model file's, and its /online report says so and names the worst series.
func TestServeResumesFromModelsTopic(t *testing.T) {
	b, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 1, "forecasts": 1, "attributions": 1,
		"readings.dlq": 1, "drift": 1, "models": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	m, modelPath := saveTestModel(t, dir)
	// Another replica promoted version 7.
	learned := m.Clone()
	learned.Params().Theta[0] += 0.5
	learned.Refresh()
	learned.Meta.Version = 7
	kc := kafkatest.Client(t, b.Addrs())
	pub, err := broadcast.NewModels(kc, "models", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.Publish(context.Background(), learned); err != nil {
		t.Fatal(err)
	}

	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("model: {path: %q}\nkafka: {brokers: [%q]}\ninput: {cadence: 1h, max_future: 100000h}\n"+
		"topics: {models: models}\n", modelPath, b.Addrs()[0])), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	metrics := kafkatest.FreeAddr(t)
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg, "--metrics-addr", metrics}, &bytes.Buffer{}, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d, want 0; stderr:\n%s", code, stderr.String())
		}
	}()

	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for step := range 30 {
		msgs = append(msgs, kafka.Message{Key: []byte("s"), Value: fmt.Appendf(nil, `{"series":"s","ts":"%s","value":%g}`,
			t0.Add(time.Duration(step)*time.Hour).Format(time.RFC3339), 10+math.Sin(float64(step)))})
	}
	kafkatest.Produce(t, kc, "readings", msgs...)
	msg := kafkatest.ReadN(t, kc, "forecasts", 1, 60*time.Second)[0]
	f, err := wire.DecodeForecastJSON(msg.Value)
	if err != nil {
		t.Fatal(err)
	}
	if f.ModelVersion != 7 {
		t.Errorf("the forecast carries model_version %d, want 7 (the newest on the models topic)", f.ModelVersion)
	}

	// The /online report: version, scored steps, the worst series.
	var rep online.Report
	for deadline := time.Now().Add(30 * time.Second); rep.ScoredSteps == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("/online never reported a scored forecast step: %+v\n%s", rep, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get("http://" + metrics + "/online?worst=5")
		if err != nil {
			continue
		}
		err = json.NewDecoder(resp.Body).Decode(&rep)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("/online: %v", err)
		}
	}
	if rep.ModelVersion != 7 || len(rep.Frequencies) != 8 || len(rep.WorstSeries) != 1 || rep.WorstSeries[0].Series != "s" {
		t.Errorf("/online = %+v; want version 7, 8 frequencies and series s among the worst", rep)
	}
	if len(rep.Horizon) == 0 || rep.Horizon[0].Bucket != "all" || math.IsNaN(rep.Horizon[0].MSE) {
		t.Errorf("/online horizon = %+v, want the rolling error by horizon bucket, \"all\" first", rep.Horizon)
	}
	// The live view: serve logs its address and shows the series.
	if want := `msg="live view" url=http://` + metrics + "/"; !strings.Contains(stderr.String(), want) {
		t.Errorf("serve did not log %s:\n%s", want, stderr.String())
	}
	var live struct {
		Series   string `json:"series"`
		Forecast [][]float64
	}
	if code := getJSON(t, "http://"+metrics+"/live/forecast?series=s", &live); code != http.StatusOK || live.Series != "s" || len(live.Forecast) != 1 {
		t.Errorf("/live/forecast?series=s: %d %+v, want series s's latest forecast", code, live)
	}
	resp, err := http.Get("http://" + metrics + "/online?worst=many")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("/online?worst=many: %s, want 400", resp.Status)
	}
}

// TestReplay: replay produces one reading per column and row through the
// Kafka layer, with the brokers from --brokers or from a serve --config
// (kafka.brokers and topics.input), and refuses to run without either.
func TestReplay(t *testing.T) {
	b, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 1, "sensors": 1, "long": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	data := writeSynthetic(t, dir, "s.csv", 3, 10)
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("kafka: {brokers: [%q]}\ntopics: {input: sensors}\n", b.Addrs()[0])), 0o644)
	kc := kafkatest.Client(t, b.Addrs())
	for _, tc := range []struct {
		name  string
		args  []string
		topic string
	}{
		{"brokers flag", []string{"--brokers", b.Addrs()[0], "--topic", "readings"}, "readings"},
		{"serve config", []string{"--config", cfg}, "sensors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(append([]string{"replay", "--data", data, "--limit", "4"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("replay exited %d: %s%s", code, out, errOut)
			}
			if n := len(kafkatest.ReadAll(t, kc, tc.topic)); n != 3*4 {
				t.Errorf("topic %s holds %d readings, want 12 (3 columns × 4 rows)", tc.topic, n)
			}
		})
	}
	if code, _, errOut := runCLI("replay", "--data", data); code != 2 || !strings.Contains(errOut, "--brokers") {
		t.Errorf("replay without brokers exited %d: %s; want 2 and a message naming --brokers", code, errOut)
	}

	// A long CSV whose series column holds text ids: each row one reading
	// of its series, keyed by the id as written.
	long := filepath.Join(dir, "long.csv")
	os.WriteFile(long, []byte("date,sensor,flow\n2024-01-01 00:00,s-17,10\n2024-01-01 00:00,Main St,11\n2024-01-01 01:00,s-17,12\n"), 0o644)
	if code, out, errOut := runCLI("replay", "--data", long, "--series-column", "sensor", "--brokers", b.Addrs()[0], "--topic", "long"); code != 0 {
		t.Fatalf("replay --series-column of text ids exited %d: %s%s", code, out, errOut)
	}
	var keys []string
	for _, m := range kafkatest.ReadAll(t, kc, "long") {
		keys = append(keys, string(m.Key))
	}
	if slices.Sort(keys); !slices.Equal(keys, []string{"Main St", "s-17", "s-17"}) {
		t.Errorf("replay --series-column wrote readings keyed %q, want s-17 twice and Main St once", keys)
	}
}

// getJSON decodes the JSON body of a GET into v and returns the status.
func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

// TestServeRefusesBadWebConfig: serve exits 2 with one line naming
// metrics.web_config, the file and what is wrong, before it connects to
// anything, when the web configuration cannot be served, whether the key
// comes from the file or from the environment.
func TestServeRefusesBadWebConfig(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"typo.yml":   "tls_server_config: {cert_file: c.pem, keyfile: k.pem}\n",
		"plain.yml":  "basic_auth_users: {prometheus: hunter2}\n",
		"nocert.yml": "tls_server_config: {cert_file: c.pem, key_file: k.pem}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing listens on the broker: the check comes before connecting.
	base := "kafka: {brokers: [\"127.0.0.1:1\"]}\ninput: {cadence: 1h}\nmodel: {path: m.safetensors}\n"
	missing := filepath.Join(dir, "missing.yml")
	for _, tc := range []struct {
		name, webConfig string
		env             bool // metrics.web_config from FREQLENS_METRICS_WEB_CONFIG, not the file
		want            []string
	}{
		{name: "missing file", webConfig: missing, want: []string{missing, "cannot be read", "no such file"}},
		{name: "missing file from the environment", webConfig: missing, env: true, want: []string{missing, "cannot be read"}},
		{name: "unknown key", webConfig: "typo.yml", want: []string{"field keyfile not found", "fix the file"}},
		{name: "a password instead of its hash", webConfig: "plain.yml", want: []string{"basic_auth_users.prometheus is not a bcrypt hash", "htpasswd"}},
		{name: "missing certificate", webConfig: "nocert.yml", want: []string{"cert_file", filepath.Join(dir, "c.pem")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.webConfig)
			if filepath.IsAbs(tc.webConfig) {
				path = tc.webConfig
			}
			yaml := base + fmt.Sprintf("metrics: {web_config: %q}\n", path)
			if tc.env {
				yaml = base
				t.Setenv("FREQLENS_METRICS_WEB_CONFIG", path)
			}
			cfg := filepath.Join(dir, "serve.yaml")
			if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			code, _, errOut := runCLI("serve", "--config", cfg)
			if code != 2 {
				t.Errorf("exit status %d, want 2 (stderr %q)", code, errOut)
			}
			if n := strings.Count(strings.TrimRight(errOut, "\n"), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want one: %q", n+1, errOut)
			}
			if !strings.HasPrefix(errOut, "freqlens serve: metrics.web_config ") {
				t.Errorf("stderr %q does not start with the key, metrics.web_config", errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("serve took %s to refuse the file: it should not wait for the brokers", d)
			}
		})
	}
}

// TestDemoRefusesABusyMetricsAddress: a metrics address already in use is
// said before the demo trains its model, naming the flag.
func TestDemoRefusesABusyMetricsAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	code, out, errOut := runCLI("demo", "--metrics-addr", ln.Addr().String())
	if code != 2 || !strings.Contains(errOut, "--metrics-addr "+ln.Addr().String()) || strings.Contains(out, "training") {
		t.Errorf("demo on a busy metrics address exited %d after %v, stdout %q, stderr %q; want status 2 naming --metrics-addr before training",
			code, time.Since(start), out, errOut)
	}
}

// TestServeStoppedWhileWaitingForBrokers: SIGTERM (here the context) while
// serve waits for brokers that do not answer stops it as a running
// service stops, exit 0, and says so, not exit 2 blaming
// kafka.connect_timeout, which would send an operator to the wrong setting.
func TestServeStoppedWhileWaitingForBrokers(t *testing.T) {
	dir := t.TempDir()
	_, modelPath := saveTestModel(t, dir)
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("model: {path: %q}\nkafka: {brokers: [%q], connect_timeout: 5m}\ninput: {cadence: 1h}\n",
		modelPath, loopback.Refused(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg, "--metrics-addr", kafkatest.FreeAddr(t)}, &bytes.Buffer{}, &stderr)
	}()
	time.Sleep(time.Second)
	cancel()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(stderr.String(), "stopped before serving") || strings.Contains(stderr.String(), "gave up after") {
			t.Errorf("stopped while waiting for brokers: exit %d, stderr:\n%s\nwant exit 0, saying it stopped before serving", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop within 30 s of being told to; stderr:\n%s", stderr.String())
	}
}
