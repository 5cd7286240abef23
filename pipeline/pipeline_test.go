package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/window"
)

const (
	lookback = 24
	horizon  = 6
)

// service is a pipeline running against an in-process broker.
type service struct {
	brokers []string
	cancel  context.CancelFunc
	done    chan error
	p       *pipeline.Pipeline
	reg     *prometheus.Registry
}

// testModel returns an untrained model: the plumbing does not care how
// good the forecasts are, only that they are complete and delivered.
func testModel(t *testing.T, mode model.Mode, channels int) *model.Model {
	t.Helper()
	m, err := model.New(model.Config{Lookback: lookback, Horizon: horizon, Channels: channels, Mode: mode, Hidden: 16, Frequencies: 8, TopK: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	return m
}

func startBroker(t *testing.T) *stream.Broker {
	t.Helper()
	b, err := stream.StartBroker("127.0.0.1:0", map[string]int{"readings": 3, "forecasts": 3, "attributions": 3, "readings.dlq": 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// startService runs a pipeline on broker b until the test ends.
func startService(t *testing.T, b *stream.Broker, m *model.Model, fields []string, format sink.Format) *service {
	t.Helper()
	reg := prometheus.NewRegistry()
	src, err := stream.NewConsumer(stream.Config{
		Brokers: b.Addrs(), Group: "freqlens", Topic: "readings", DeadLetterTopic: "readings.dlq",
		ValueFields: fields, BatchLatency: 5 * time.Millisecond, MaxFuture: 100000 * time.Hour,
	}, stream.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	snk, err := sink.New(sink.Config{Brokers: b.Addrs(), ForecastTopic: "forecasts", AttributionTopic: "attributions", Format: format},
		sink.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Config{Fields: fields, Cadence: time.Hour, ShutdownTimeout: 5 * time.Second},
		src, window.Config{MaxGap: 3}, m, snk, pipeline.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &service{brokers: b.Addrs(), cancel: cancel, done: make(chan error, 1), p: p, reg: reg}
	go func() { s.done <- p.Run(ctx) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels the service and waits for its clean shutdown.
func (s *service) stop(t *testing.T) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("Run after cancel = %v, want nil (clean shutdown)", err)
		}
	case <-time.After(15 * time.Second):
		t.Error("the pipeline did not stop within 15s of cancellation")
	}
}

// produce writes readings of the given series, steps [from, to), one per
// hour, values a sine per series (and per field).
func produce(t *testing.T, brokers []string, series []string, fields []string, from, to int) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "readings", Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	cfg := stream.Config{ValueFields: fields}
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for step := from; step < to; step++ {
		for i, s := range series {
			vals := make([]float64, len(fields))
			for c := range vals {
				vals[c] = 100*float64(c+1) + 10*math.Sin(2*math.Pi*float64(step)/24+float64(i))
			}
			r := stream.Reading{Series: s, Time: t0.Add(time.Duration(step) * time.Hour), Values: vals}
			msgs = append(msgs, kafka.Message{Key: []byte(s), Value: stream.AppendJSON(nil, r, cfg)})
		}
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// readTopic consumes n messages of topic from the start (its own group).
func readTopic(t *testing.T, brokers []string, topic string, n int, timeout time.Duration) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, GroupID: "reader-" + topic + fmt.Sprint(time.Now().UnixNano()),
		StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []kafka.Message
	for len(out) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("read %s: got %d of %d messages: %v", topic, len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestEndToEnd: readings in through Kafka, forecasts and attributions out
// through Kafka, one per ready window, complete, keyed by series, with a
// deterministic forecast-id; metrics lint clean.
func TestEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   model.Mode
		fields []string
		format sink.Format
	}{
		{"independent single field json", model.Independent, []string{"value"}, sink.FormatJSON},
		{"independent two fields arrow", model.Independent, []string{"temp", "humidity"}, sink.FormatArrow},
		{"mixed three fields json", model.Mixed, []string{"a", "b", "c"}, sink.FormatJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t)
			channels := len(tc.fields)
			if tc.mode == model.Independent {
				channels = 1
			}
			svc := startService(t, b, testModel(t, tc.mode, channels), tc.fields, tc.format)
			series := []string{"s-1", "s-2", "s-3", "s-4"}
			const steps = lookback + 9 // 10 windows per series
			produce(t, svc.brokers, series, tc.fields, 0, steps)
			want := len(series) * 10

			fc := readTopic(t, svc.brokers, "forecasts", want, 60*time.Second)
			at := readTopic(t, svc.brokers, "attributions", want, 30*time.Second)
			byID := map[string]sink.Forecast{}
			decodeF, decodeA := sink.DecodeForecastJSON, sink.DecodeAttributionJSON
			if tc.format == sink.FormatArrow {
				decodeF = func(b []byte) (sink.Forecast, error) { return sink.DecodeForecastArrow(b, nil) }
				decodeA = func(b []byte) (sink.Forecast, error) { return sink.DecodeAttributionArrow(b, nil) }
			}
			for _, m := range fc {
				f, err := decodeF(m.Value)
				if err != nil {
					t.Fatal(err)
				}
				if string(m.Key) != f.Series {
					t.Errorf("forecast key %q, series %q", m.Key, f.Series)
				}
				id := header(m, sink.HeaderForecastID)
				if id != sink.ForecastID(f.Series, f.TS, 1) {
					t.Errorf("forecast-id %q is not the deterministic id of (%s, %s, 1)", id, f.Series, f.TS)
				}
				if len(f.Values) != horizon*len(tc.fields) {
					t.Fatalf("forecast has %d values, want %d", len(f.Values), horizon*len(tc.fields))
				}
				byID[id] = f
			}
			if len(byID) != want {
				t.Errorf("%d distinct forecasts, want %d", len(byID), want)
			}
			for _, m := range at {
				a, err := decodeA(m.Value)
				if err != nil {
					t.Fatal(err)
				}
				f, ok := byID[header(m, sink.HeaderForecastID)]
				if !ok {
					t.Fatalf("attribution %s has no forecast", header(m, sink.HeaderForecastID))
				}
				full, err := sink.Merge(f, a)
				if err != nil {
					t.Fatal(err)
				}
				for j, v := range full.Values {
					sum := full.Residual[j]
					for _, c := range full.Frequencies {
						sum += c.Values[j]
					}
					if d := math.Abs(sum - v); d > 1e-9*math.Max(1, math.Abs(v)) {
						t.Fatalf("%s at %s value %d: residual + contributions = %v, forecast %v", f.Series, f.TS, j, sum, v)
					}
				}
			}
			if problems, err := testutil.GatherAndLint(svc.reg); err != nil || len(problems) > 0 {
				t.Errorf("metrics lint: %v %v", problems, err)
			}
			if got := testutil.ToFloat64(gauge(t, svc.reg, "freqlens_window_series_active")); got != float64(len(series)) {
				t.Errorf("freqlens_window_series_active = %v, want %d", got, len(series))
			}
		})
	}
}

// gauge finds a metric by name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			v := mf.GetMetric()[0].GetGauge().GetValue()
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "copy"})
			g.Set(v)
			return g
		}
	}
	t.Fatalf("metric %s not registered", name)
	return nil
}

// TestForecastsOnly: with no attribution topic the pipeline skips the
// attributions and the sink writes forecasts alone.
func TestForecastsOnly(t *testing.T) {
	b := startBroker(t)
	reg := prometheus.NewRegistry()
	src, err := stream.NewConsumer(stream.Config{Brokers: b.Addrs(), Group: "g", Topic: "readings", DeadLetterTopic: "readings.dlq",
		MaxFuture: 1e5 * time.Hour, BatchLatency: 5 * time.Millisecond}, stream.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	snk, err := sink.New(sink.Config{Brokers: b.Addrs(), ForecastTopic: "forecasts"}, sink.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Config{Fields: []string{"value"}, Cadence: time.Hour, SkipAttributions: true},
		src, window.Config{}, testModel(t, model.Independent, 1), snk, pipeline.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	produce(t, b.Addrs(), []string{"s-1", "s-2"}, []string{"value"}, 0, lookback+2)
	msgs := readTopic(t, b.Addrs(), "forecasts", 6, 60*time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := sink.DecodeForecastJSON(m.Value); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPoisonGoesToDeadLetters: a malformed reading is dead-lettered and the
// service keeps forecasting the good ones.
func TestPoisonGoesToDeadLetters(t *testing.T) {
	b := startBroker(t)
	svc := startService(t, b, testModel(t, model.Independent, 1), []string{"value"}, sink.FormatJSON)
	w := &kafka.Writer{Addr: kafka.TCP(svc.brokers...), Topic: "readings", Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	bad := []kafka.Message{
		{Key: []byte("s-1"), Value: []byte(`{"series":"s-1","ts":"2026-01-05T00:00:00Z","value":"NaN"}`)},
		{Key: []byte("s-1"), Value: []byte(`not json at all`)},
	}
	if err := w.WriteMessages(context.Background(), bad...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	produce(t, svc.brokers, []string{"s-1"}, []string{"value"}, 0, lookback)
	fc := readTopic(t, svc.brokers, "forecasts", 1, 60*time.Second)
	if len(fc) != 1 {
		t.Fatalf("got %d forecasts", len(fc))
	}
	dlq := readTopic(t, svc.brokers, "readings.dlq", 2, 30*time.Second)
	reasons := []string{header(dlq[0], "freqlens-dlq-reason"), header(dlq[1], "freqlens-dlq-reason")}
	if !strings.Contains(strings.Join(reasons, ","), "non_finite") || !strings.Contains(strings.Join(reasons, ","), "unparsable") {
		t.Errorf("dead-letter reasons %v, want non_finite and unparsable", reasons)
	}
}

// TestRestartLosesNothing: a service stopped halfway and restarted in the
// same consumer group forecasts every window at least once.
func TestRestartLosesNothing(t *testing.T) {
	b := startBroker(t)
	m := testModel(t, model.Independent, 1)
	series := []string{"a", "b", "c"}
	first := startService(t, b, m, []string{"value"}, sink.FormatJSON)
	produce(t, first.brokers, series, []string{"value"}, 0, lookback+4) // 5 windows each
	readTopic(t, first.brokers, "forecasts", 15, 60*time.Second)
	first.stop(t)

	second := startService(t, b, m, []string{"value"}, sink.FormatJSON)
	produce(t, second.brokers, series, []string{"value"}, lookback+4, lookback+9) // 5 more each
	// The restarted service rebuilds windows only from readings after the
	// committed offsets; windows resume once it has seen lookback steps
	// again, so count distinct (series, ts) over the whole topic instead.
	msgs := readTopic(t, second.brokers, "forecasts", 15, 60*time.Second)
	seen := map[string]bool{}
	for _, m := range msgs {
		seen[header(m, sink.HeaderForecastID)] = true
	}
	if len(seen) < 15 {
		t.Errorf("%d distinct forecasts after the restart, want at least the first run's 15", len(seen))
	}
	s := second.p.Stats()
	if s.Readings != int64(len(series)*5) {
		t.Errorf("the restarted service consumed %d readings, want only the %d new ones (offsets were committed)", s.Readings, len(series)*5)
	}
}

// TestShutdownDrainsAndCommits: cancelling Run stops fetching, writes what
// was fetched, commits, and returns nil promptly.
func TestShutdownDrainsAndCommits(t *testing.T) {
	b := startBroker(t)
	svc := startService(t, b, testModel(t, model.Independent, 1), []string{"value"}, sink.FormatJSON)
	produce(t, svc.brokers, []string{"x"}, []string{"value"}, 0, lookback+2)
	readTopic(t, svc.brokers, "forecasts", 3, 60*time.Second)
	start := time.Now()
	svc.stop(t)
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	if svc.p.Stats().LastCommit.IsZero() {
		t.Error("nothing was committed")
	}
}

// TestObserverAndModelSwap: SetModel changes the version on new forecasts.
func TestObserverAndModelSwap(t *testing.T) {
	b := startBroker(t)
	m := testModel(t, model.Independent, 1)
	var mu sync.Mutex
	versions := map[int64]int{}
	reg := prometheus.NewRegistry()
	src, _ := stream.NewConsumer(stream.Config{Brokers: b.Addrs(), Group: "g", Topic: "readings", DeadLetterTopic: "readings.dlq", MaxFuture: 1e5 * time.Hour, BatchLatency: 5 * time.Millisecond}, stream.WithRegisterer(reg))
	mem := sink.NewMemory()
	p, err := pipeline.New(pipeline.Config{Fields: []string{"value"}, Cadence: time.Hour}, src, window.Config{}, m, mem,
		pipeline.WithRegisterer(reg), pipeline.WithObserver(func(f *sink.Forecast) { mu.Lock(); versions[f.ModelVersion]++; mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	produce(t, b.Addrs(), []string{"s"}, []string{"value"}, 0, lookback)
	waitFor(t, func() bool { return mem.Len() >= 1 })
	if err := p.SetModel(m.Clone(), 2); err != nil {
		t.Fatal(err)
	}
	produce(t, b.Addrs(), []string{"s"}, []string{"value"}, lookback, lookback+1)
	waitFor(t, func() bool { return mem.Len() >= 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if versions[1] != 1 || versions[2] != 1 {
		t.Errorf("forecasts per model version = %v, want one of version 1 and one of version 2", versions)
	}
	wrong, _ := model.New(model.Config{Lookback: lookback, Horizon: horizon, Channels: 2}, 1)
	if err := p.SetModel(wrong, 3); err == nil {
		t.Error("SetModel accepted a 2-channel mixed model for one-field readings")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(errors.New("condition not met within 60s"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewRejectsMismatches(t *testing.T) {
	m := testModel(t, model.Mixed, 3)
	for _, tc := range []struct {
		name string
		cfg  pipeline.Config
		want string
	}{
		{"field count", pipeline.Config{Fields: []string{"a", "b"}, Cadence: time.Hour}, "value fields"},
		{"cadence", pipeline.Config{Fields: []string{"a", "b", "c"}, Cadence: 5 * time.Minute}, "cadence"},
		{"no fields", pipeline.Config{Cadence: time.Hour}, "value fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.New(tc.cfg, nil, window.Config{}, m, sink.NewMemory())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
