package fault

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
	"github.com/freqlens/freqlens/readings"
)

// Throughput as a user measures it: the freqlens binary serving from a
// broker in another process, beside kcat consuming the same readings from
// the same broker in the same run.
const (
	throughputSeries = 1000
	// throughputSteps of readings beyond the first window: every one makes
	// a forecast of every series.
	throughputSteps = 120
)

// BenchmarkServeProcess runs `freqlens serve` as a process in the
// production configuration (1,000 independent-mode series, a model of the
// default size at L = H = 96, JSON in and out, summary attributions, 80%
// and 95% intervals on every forecast, every series tracked) against the
// embedded broker in the benchmark's process, which already holds the
// readings of 96 + 120 hours of every series. It reports the readings
// forecast per second from the first forecast to the last
// (`readings/s`), kcat (librdkafka) consuming the same readings raw from
// the same broker (`kcat_readings/s`, the median of three reads; 0 when
// kcat is not installed) and their ratio. The broker, the service and
// kcat share the machine's cores, as they do when a user tries the
// service on one machine:
//
//	go test -run '^$' -bench ServeProcess -benchtime 1x ./fault/
func BenchmarkServeProcess(b *testing.B) {
	for b.Loop() {
		br, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 6, "forecasts": 6, "attributions": 6, "readings.dlq": 1},
			embedded.RetainBytes(8<<20)) // as a real broker's retention would: the readings fit whole
		if err != nil {
			b.Fatal(err)
		}
		addr := br.Addrs()[0]
		n := produceThroughputReadings(b, addr)
		cfg := serveConfig(addr, throughputModel(b), `output: {attributions: summary, intervals: [0.8, 0.95], write_timeout: 10s, max_attempts: 10}
online: {track_series: 0}
`)
		cfg = replaceOnce(b, cfg, "output: {write_timeout: 3s, max_attempts: 3}\n", "")
		cfg = replaceOnce(b, cfg, `topics: {attributions: "", drift: ""}`, `topics: {attributions: attributions, drift: ""}`)
		cfg = replaceOnce(b, cfg, "max_future: 100000h", "max_future: 100000h, max_past: 100000h")
		r := start(b, "serve", cfg)
		forecasts := func() float64 { return r.metric(`freqlens_sink_forecasts_written_total{topic="forecasts"}`) }
		want := float64(throughputSeries * (throughputSteps + 1))
		if !eventually(5*time.Minute, func() bool { return forecasts() > 0 }) {
			b.Fatalf("no forecast within 5 minutes:\n%s", tail(r.log(), 20))
		}
		first, f0 := time.Now(), forecasts()
		if !eventually(10*time.Minute, func() bool { return forecasts() >= want }) {
			b.Fatalf("%v of %v forecasts within 10 minutes:\n%s", forecasts(), want, tail(r.log(), 20))
		}
		elapsed := time.Since(first)
		rate := (want - f0) / elapsed.Seconds()
		r.kill()
		b.ReportMetric(rate, "readings/s")
		if raw := kcatRate(b, addr, n); raw > 0 {
			b.ReportMetric(raw, "kcat_readings/s")
			b.ReportMetric(rate/raw, "ratio_kcat")
		}
		br.Close()
	}
}

// replaceOnce replaces the one occurrence of old in the suite's serve
// config s, failing the benchmark when the config no longer holds it.
func replaceOnce(b *testing.B, s, old, new string) string {
	b.Helper()
	if !strings.Contains(s, old) {
		b.Fatalf("the suite's serve config no longer holds %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

// throughputModel writes an untrained model of the default size (N = 32,
// K = 8, d = 64) at L = H = 96, hourly, with error quantiles so that every
// forecast carries its intervals from the first, and returns its path.
func throughputModel(b *testing.B) string {
	b.Helper()
	m, err := model.New(model.Config{Horizon: 96, Channels: 1, Mode: model.Independent}, 1)
	if err != nil {
		b.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	H := m.Horizon()
	q := &model.ErrorQuantiles{Probs: []float64{0.025, 0.1, 0.9, 0.975}, Horizon: H, Channels: 1, Windows: 1, Values: make([]float64, 4*H)}
	for h := range H {
		for k, z := range []float64{-2, -1.3, 1.3, 2} {
			q.Values[k*H+h] = z * (0.2 + float64(h)/float64(H))
		}
	}
	m.Meta.ErrorQuantiles = q
	path := filepath.Join(b.TempDir(), "model.safetensors")
	if err := modelfile.Save(m, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// produceThroughputReadings writes 96 + throughputSteps hours of readings
// of every series to the readings topic and returns how many.
func produceThroughputReadings(b *testing.B, addr string) int {
	b.Helper()
	kc := kafkatest.Client(b, []string{addr})
	w := kc.NewWriter("readings")
	w.BatchTimeout, w.BatchSize = time.Millisecond, throughputSeries
	defer w.Close()
	cfg := readings.DefaultConfig()
	n := 0
	for k := range 96 + throughputSteps {
		msgs := make([]kafka.Message, throughputSeries)
		for i := range msgs {
			s := fmt.Sprintf("sensor-%04d", i)
			v := 200 + 50*math.Sin(2*math.Pi*float64(k)/24+float64(i)) + float64(i%7)
			msgs[i] = kafka.Message{Key: []byte(s), Value: readings.AppendJSON(nil, readings.Reading{Series: s, Time: t0.Add(time.Duration(k) * time.Hour), Values: []float64{v}}, cfg)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := w.WriteMessages(ctx, msgs...)
		cancel()
		if err != nil {
			b.Fatalf("produce hour %d: %v", k, err)
		}
		n += len(msgs)
	}
	return n
}

// kcatRate times kcat consuming the n readings of the readings topic from
// the beginning to its end, the median of three reads; 0 without kcat.
func kcatRate(b *testing.B, addr string, n int) float64 {
	b.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		return 0
	}
	var rates []float64
	for range 3 {
		start := time.Now()
		out, err := exec.Command(path, "-C", "-b", addr, "-t", "readings", "-o", "beginning", "-e", "-q", "-f", "%o\n").Output()
		if err != nil {
			b.Fatalf("kcat: %v", err)
		}
		elapsed := time.Since(start)
		if got := bytes.Count(out, []byte("\n")); got < n {
			b.Fatalf("kcat read %d messages, want %d", got, n)
		}
		rates = append(rates, float64(n)/elapsed.Seconds())
	}
	slices.Sort(rates)
	return rates[1]
}
