package fault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/wire"
)

// binary is the freqlens command built for the suite by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "freqlens-fault-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "freqlens")
	build := exec.Command("go", "build", "-o", binary, "github.com/freqlens/freqlens/cmd/freqlens")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "fault: go build the freqlens binary: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// The model of the suite: small, so that the service's cost is Kafka's.
const (
	lookback = 24
	horizon  = 6
)

// t0 is the time of step 0 of every series.
var t0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// cluster is a one-broker kfake cluster that the services reach through a
// TCP proxy, which the test can cut: kfake advertises the proxy's address,
// so every connection of the services goes through it.
type cluster struct {
	t     *testing.T
	kfake *kfake.Cluster
	proxy *kafkatest.Proxy
	kc    *kafkaconn.Client // the test's own client (through the proxy too)
}

// newCluster starts the cluster with the service's topics (3 partitions
// for the input and the outputs).
func newCluster(t *testing.T) *cluster {
	t.Helper()
	c, p := kafkatest.BehindProxy(t, kfake.ClusterID("fault"),
		kfake.SeedTopics(3, "readings", "forecasts"), kfake.SeedTopics(1, "readings.dlq", "models"))
	return &cluster{t: t, kfake: c, proxy: p, kc: kafkatest.Client(t, []string{p.Addr()})}
}

// modelFile writes the suite's untrained hourly model to dir.
func modelFile(t *testing.T, dir string) string {
	t.Helper()
	m, err := model.New(model.Config{Lookback: lookback, Horizon: horizon, Channels: 1, Mode: model.Independent, Hidden: 16, Frequencies: 8, TopK: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	path := filepath.Join(dir, "model.safetensors")
	if err := modelfile.Save(m, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveConfig is the YAML of a replica of the suite: short group timeouts
// so that a crash moves partitions within seconds, no attributions, drift
// or models topics (extra is appended).
func serveConfig(brokers, modelPath, extra string) string {
	return fmt.Sprintf(`kafka:
  brokers: [%q]
  dial_timeout: 2s
  connect_timeout: 20s
  unreachable_after: 3s
  session_timeout: 6s
  heartbeat_interval: 1s
  rebalance_timeout: 10s
topics: {attributions: "", drift: ""}
input: {cadence: 1h, max_future: 100000h, batch_latency: 5ms}
model: {path: %q}
output: {write_timeout: 3s, max_attempts: 3}
service: {shutdown_timeout: 15s}
%s`, brokers, modelPath, extra)
}

// replica is one running freqlens serve process.
type replica struct {
	t       testing.TB
	name    string
	cmd     *exec.Cmd
	logPath string
	metrics string
	exited  chan struct{}
	code    int
}

// start runs `freqlens serve` with the YAML config until it exits or the
// test ends (then it is killed).
func start(t testing.TB, name, yaml string) *replica {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &replica{t: t, name: name, logPath: filepath.Join(dir, "stderr.log"), metrics: kafkatest.FreeAddr(t), exited: make(chan struct{})}
	logf, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	level := "info"
	if os.Getenv("FREQLENS_FAULT_DEBUG") != "" {
		level = "debug"
	}
	r.cmd = exec.Command(binary, "serve", "--config", cfg, "--metrics-addr", r.metrics, "--log-level", level)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := r.cmd.Wait()
		logf.Close()
		r.code = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		}
		close(r.exited)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.exited
		switch {
		case os.Getenv("FREQLENS_FAULT_DEBUG") != "":
			t.Logf("--- %s stderr (%s):\n%s", r.name, r.logPath, r.log())
		case t.Failed():
			t.Logf("--- %s stderr (last 40 lines):\n%s", r.name, tail(r.log(), 40))
		}
	})
	return r
}

// log returns what the replica wrote to stderr so far.
func (r *replica) log() string {
	b, _ := os.ReadFile(r.logPath)
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// kill stops the replica with SIGKILL, as a crash would.
func (r *replica) kill() {
	r.t.Helper()
	r.cmd.Process.Kill()
	<-r.exited
}

// term stops the replica with SIGTERM and checks it drained and exited 0
// within its shutdown timeout.
func (r *replica) term() {
	r.t.Helper()
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		r.t.Fatalf("%s did not exit within 30s of SIGTERM", r.name)
	}
	if r.code != 0 {
		r.t.Errorf("%s exited %d after SIGTERM, want 0:\n%s", r.name, r.code, tail(r.log(), 20))
	}
}

// get fetches a path of the replica's metrics listener: status and body
// (status 0 when it does not answer).
func (r *replica) get(path string) (int, string) {
	resp, err := http.Get("http://" + r.metrics + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of a metric of the replica, summed over its
// labels, NaN when it cannot be read.
func (r *replica) metric(name string) float64 {
	_, body := r.get("/metrics")
	sum, found := 0.0, false
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if i := strings.LastIndexByte(rest, ' '); i >= 0 {
			var v float64
			if _, err := fmt.Sscan(rest[i+1:], &v); err == nil {
				sum, found = sum+v, true
			}
		}
	}
	if !found {
		return math.NaN()
	}
	return sum
}

// waitReady waits until the replica's /readyz answers 200.
func (r *replica) waitReady(within time.Duration) {
	r.t.Helper()
	if !eventually(within, func() bool { code, _ := r.get("/readyz"); return code == http.StatusOK }) {
		_, body := r.get("/readyz")
		r.t.Fatalf("%s not ready within %v: %s\n%s", r.name, within, body, tail(r.log(), 20))
	}
}

// eventually reports whether cond became true within d.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// feed produces readings of series for steps [from, to), one step (every
// series) per write, pausing every between steps, and calls at(step) before
// each step.
type feed struct {
	c      *cluster
	series []string
	// noise, when set, adds to each series' reading Gaussian noise of
	// that series' standard deviation, drawn from rng.
	noise []float64
	rng   *rand.Rand
}

func newFeed(c *cluster, n int) *feed {
	f := &feed{c: c}
	for i := range n {
		f.series = append(f.series, fmt.Sprintf("sensor-%03d", i))
	}
	return f
}

// value is the reading of series i at step k: a daily cycle per series.
func value(i, k int) float64 {
	return 100 + 10*float64(i%7) + 20*math.Sin(2*math.Pi*float64(k)/24+float64(i))
}

func (f *feed) produce(from, to int, every time.Duration, at func(step int)) {
	f.c.t.Helper()
	w := f.c.kc.NewWriter("readings")
	w.BatchTimeout = time.Millisecond
	w.BatchSize = 10000
	defer w.Close()
	for k := from; k < to; k++ {
		if at != nil {
			at(k)
		}
		msgs := make([]kafka.Message, len(f.series))
		for i, s := range f.series {
			v := value(i, k)
			if f.noise != nil {
				v += f.noise[i] * f.rng.NormFloat64()
			}
			r := readings.Reading{Series: s, Time: t0.Add(time.Duration(k) * time.Hour), Values: []float64{v}}
			msgs[i] = kafka.Message{Key: []byte(s), Value: readings.AppendJSON(nil, r, readings.DefaultConfig())}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := w.WriteMessages(ctx, msgs...)
		cancel()
		if err != nil {
			f.c.t.Fatalf("produce step %d: %v", k, err)
		}
		time.Sleep(every)
	}
}

// uncommitted returns how many readings group freqlens has not committed,
// -1 when the broker cannot say (unreachable); a group that has not joined
// yet has committed nothing.
func (c *cluster) uncommitted() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := kafkatest.UncommittedErr(ctx, c.kc, "freqlens", "readings")
	if err != nil {
		return -1
	}
	return n
}

// waitCommitted waits until group freqlens has committed every reading.
func (c *cluster) waitCommitted(within time.Duration, replicas ...*replica) {
	c.t.Helper()
	if !eventually(within, func() bool { return c.uncommitted() == 0 }) {
		for _, r := range replicas {
			if os.Getenv("FREQLENS_FAULT_DEBUG") != "" {
				r.cmd.Process.Signal(syscall.SIGQUIT) // Go prints every goroutine's stack
				<-r.exited
				c.t.Logf("--- %s (%s):\n%s", r.name, r.logPath, r.log())
				continue
			}
			c.t.Logf("--- %s:\n%s", r.name, tail(r.log(), 30))
		}
		c.t.Fatalf("%d readings still uncommitted after %v", c.uncommitted(), within)
	}
}

// outcome is what the forecasts topic holds against what it should.
type outcome struct {
	windows, lost, duplicates, unexpected int
}

// checkWindows checks that the forecasts topic holds a forecast of every
// window of the feed's series ending at steps [from, to) made by model
// version 1, nothing else, and that all copies of a forecast are
// byte-identical (the same forecast-id, the same values).
func (c *cluster) checkWindows(series []string, from, to int) outcome {
	c.t.Helper()
	want := map[string]bool{}
	for _, s := range series {
		for k := from; k < to; k++ {
			want[wire.ForecastID(s, t0.Add(time.Duration(k)*time.Hour), 1)] = true
		}
	}
	first := map[string][]byte{}
	var o outcome
	o.windows = len(want)
	for _, m := range kafkatest.ReadAll(c.t, c.kc, "forecasts") {
		id := kafkatest.Header(m, wire.HeaderForecastID)
		if !want[id] {
			o.unexpected++
			if o.unexpected <= 3 {
				c.t.Errorf("unexpected forecast %s: %s", id, m.Value)
			}
			continue
		}
		f, err := wire.DecodeForecastJSON(m.Value)
		if err != nil {
			c.t.Fatalf("forecast %s: %v", id, err)
		}
		for _, v := range f.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				c.t.Errorf("forecast %s holds %v", id, v)
			}
		}
		if prev, ok := first[id]; ok {
			o.duplicates++
			if !bytes.Equal(prev, m.Value) {
				c.t.Errorf("two copies of forecast %s differ:\n%s\n%s", id, prev, m.Value)
			}
			continue
		}
		first[id] = m.Value
	}
	o.lost = len(want) - len(first)
	if o.lost > 0 {
		n := 0
		for _, s := range series {
			for k := from; k < to && n < 5; k++ {
				if _, ok := first[wire.ForecastID(s, t0.Add(time.Duration(k)*time.Hour), 1)]; !ok {
					c.t.Errorf("lost: the window of %s ending at step %d", s, k)
					n++
				}
			}
		}
		c.t.Errorf("%d of %d windows lost", o.lost, len(want))
	}
	c.t.Logf("%d windows: %d lost, %d duplicates (all identical), %d unexpected", o.windows, o.lost, o.duplicates, o.unexpected)
	return o
}
