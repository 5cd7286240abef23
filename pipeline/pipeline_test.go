package pipeline_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/internal/registry/registrytest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
)

const (
	lookback = 24
	horizon  = 6
)

// service is a pipeline running against an in-process broker.
type service struct {
	kc     *kafkaconn.Client
	cancel context.CancelFunc
	done   chan error
	p      *pipeline.Pipeline
	reg    *prometheus.Registry
}

// testModel returns an untrained model: the plumbing does not care how
// good the forecasts are, only that they are complete and delivered. It has
// a daily rhythm with clock terms, so its forecasts depend on the time of
// each window as a trained model's do.
func testModel(t *testing.T, mode model.Mode, channels int) *model.Model {
	t.Helper()
	return newTestModel(t, model.Config{Channels: channels, Mode: mode})
}

// newTestModel is testModel of cfg's channels, mode and channel mix (a
// mix of small random weights, so that each residual reads the others).
func newTestModel(t *testing.T, cfg model.Config) *model.Model {
	t.Helper()
	cfg.Lookback, cfg.Horizon, cfg.Hidden, cfg.Frequencies, cfg.TopK = lookback, horizon, 16, 8, 3
	m, err := model.New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	m.SetRhythms([]cycles.Rhythm{{PeriodSteps: 24, Frequencies: []int{2, 5}, Harmonics: []int{1, 2}}})
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range m.Params().Clock {
		m.Params().Clock[i] = 0.05 * rng.NormFloat64()
	}
	for i := range m.Params().MixW {
		m.Params().MixW[i] = 0.1 * rng.NormFloat64()
	}
	if !m.ReadsTime() {
		t.Fatal("the test model does not read the time")
	}
	return m
}

// startBroker starts an embedded broker with the service's topics and
// returns a client of it.
func startBroker(t *testing.T) *kafkaconn.Client {
	t.Helper()
	b, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 3, "forecasts": 3, "attributions": 3, "readings.dlq": 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return kafkatest.Client(t, b.Addrs())
}

// newConsumer returns a consumer of the readings topic in group freqlens
// (fields default to value), its metrics registered with reg.
func newConsumer(t *testing.T, kc *kafkaconn.Client, reg prometheus.Registerer, fields ...string) *stream.Consumer {
	t.Helper()
	sc := stream.DefaultConfig() // group freqlens, topics readings and readings.dlq
	sc.BatchLatency = 5 * time.Millisecond
	sc.RebuildSpan = pipeline.RebuildSpan(lookback, windowConfig(func(w *window.Config) { w.MaxGap = 3 }), time.Hour)
	src, err := stream.NewConsumer(sc, readingsConfig(fields), kc, stream.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// startService runs a pipeline through kc until the test ends.
func startService(t *testing.T, kc *kafkaconn.Client, m *model.Model, fields []string, format wire.Format) *service {
	t.Helper()
	reg := prometheus.NewRegistry()
	src := newConsumer(t, kc, reg, fields...)
	snk, err := sink.New(sinkConfig(func(sk *sink.Config) { sk.Format = format }), kc, sink.WithRegisterer(reg)) // topics forecasts and attributions
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(wiring(fields...), pipelineConfig(func(pc *pipeline.Config) { pc.ShutdownTimeout = 5 * time.Second }),
		src, windowConfig(func(w *window.Config) { w.MaxGap = 3 }), m, snk, pipeline.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &service{kc: kc, cancel: cancel, done: make(chan error, 1), p: p, reg: reg}
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
func produce(t *testing.T, kc *kafkaconn.Client, series []string, fields []string, from, to int) {
	t.Helper()
	cfg := readingsConfig(fields)
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for step := from; step < to; step++ {
		for i, s := range series {
			vals := make([]float64, len(fields))
			for c := range vals {
				vals[c] = 100*float64(c+1) + 10*math.Sin(2*math.Pi*float64(step)/24+float64(i))
			}
			r := readings.Reading{Series: s, Time: t0.Add(time.Duration(step) * time.Hour), Values: vals}
			msgs = append(msgs, kafka.Message{Key: []byte(s), Value: readings.AppendJSON(nil, r, cfg)})
		}
	}
	kafkatest.Produce(t, kc, "readings", msgs...)
}

// runUntilStopped runs p until the returned stop is called, which cancels it and
// returns Run's error (nil for a clean shutdown).
func runUntilStopped(p *pipeline.Pipeline) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

// readTopic waits until topic holds at least n messages and returns them all.
func readTopic(t *testing.T, kc *kafkaconn.Client, topic string, n int, timeout time.Duration) []kafka.Message {
	t.Helper()
	return kafkatest.ReadN(t, kc, topic, n, timeout)
}

var header = kafkatest.Header

// TestEndToEnd: readings in through Kafka, forecasts and attributions out
// through Kafka, one per ready window, complete, keyed by series, with a
// deterministic forecast-id; metrics lint clean.
func TestEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   model.Mode
		fields []string
		format wire.Format
		mix    bool // the channel mix: each residual reads every field
	}{
		{"independent single field json", model.Independent, []string{"value"}, wire.FormatJSON, false},
		{"independent two fields arrow", model.Independent, []string{"temp", "humidity"}, wire.FormatArrow, false},
		{"mixed three fields json", model.Mixed, []string{"a", "b", "c"}, wire.FormatJSON, false},
		{"mixed two fields channel mix arrow", model.Mixed, []string{"temp", "humidity"}, wire.FormatArrow, true},
		{"mixed two fields channel mix json", model.Mixed, []string{"temp", "humidity"}, wire.FormatJSON, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := startBroker(t)
			channels := len(tc.fields)
			if tc.mode == model.Independent {
				channels = 1
			}
			m := newTestModel(t, model.Config{Channels: channels, Mode: tc.mode, ChannelMix: tc.mix})
			svc := startService(t, kc, m, tc.fields, tc.format)
			series := []string{"s-1", "s-2", "s-3", "s-4"}
			const steps = lookback + 9 // 10 windows per series
			produce(t, svc.kc, series, tc.fields, 0, steps)
			want := len(series) * 10

			fc := readTopic(t, svc.kc, "forecasts", want, 60*time.Second)
			at := readTopic(t, svc.kc, "attributions", want, 30*time.Second)
			byID := map[string]wire.Forecast{}
			decodeF, decodeA := wire.DecodeForecastJSON, wire.DecodeAttributionJSON
			if tc.format == wire.FormatArrow {
				decodeF = func(b []byte) (wire.Forecast, error) { return wire.DecodeForecastArrow(b, nil) }
				decodeA = func(b []byte) (wire.Forecast, error) { return wire.DecodeAttributionArrow(b, nil) }
			}
			for _, m := range fc {
				f, err := decodeF(m.Value)
				if err != nil {
					t.Fatal(err)
				}
				if string(m.Key) != f.Series {
					t.Errorf("forecast key %q, series %q", m.Key, f.Series)
				}
				id := header(m, wire.HeaderForecastID)
				if id != wire.ForecastID(f.Series, f.TS, 1) {
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
				f, ok := byID[header(m, wire.HeaderForecastID)]
				if !ok {
					t.Fatalf("attribution %s has no forecast", header(m, wire.HeaderForecastID))
				}
				full, err := wire.Merge(f, a)
				if err != nil {
					t.Fatal(err)
				}
				if full.ResidualAllChannels != tc.mix {
					t.Fatalf("%s at %s: ResidualAllChannels = %t, want %t (the model's channel mix)", f.Series, f.TS, full.ResidualAllChannels, tc.mix)
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
			if got := metric(t, svc.reg, "freqlens_window_series_active"); got != float64(len(series)) {
				t.Errorf("freqlens_window_series_active = %v, want %d", got, len(series))
			}
		})
	}
}

// metric returns the value of the counter or gauge name in reg.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return labelled(t, reg, name, "", "")
}

// labelled returns the value of the counter or gauge name{label=value} in
// reg (with label "", its first series).
func labelled(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	var labels []string
	if label != "" {
		labels = []string{label, value}
	}
	v, ok := registrytest.Value(reg, name, labels...)
	if !ok {
		t.Fatalf("no metric %s{%s=%q}", name, label, value)
	}
	return v
}

// TestForecastsOnly: with no attribution topic the pipeline skips the
// attributions and the sink writes forecasts alone.
func TestForecastsOnly(t *testing.T) {
	kc := startBroker(t)
	reg := prometheus.NewRegistry()
	src := newConsumer(t, kc, reg)
	snk, err := sink.New(sinkConfig(func(sk *sink.Config) { sk.AttributionTopic = "" }), kc, sink.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	w := wiring()
	w.SkipAttributions = true
	p, err := pipeline.New(w, pipeline.DefaultConfig(), src, window.DefaultConfig(), testModel(t, model.Independent, 1), snk, pipeline.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	stop := runUntilStopped(p)
	produce(t, kc, []string{"s-1", "s-2"}, []string{"value"}, 0, lookback+2)
	msgs := readTopic(t, kc, "forecasts", 6, 60*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := wire.DecodeForecastJSON(m.Value); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPoisonGoesToDeadLetters: a malformed reading is dead-lettered and the
// service keeps forecasting the good ones.
func TestPoisonGoesToDeadLetters(t *testing.T) {
	kc := startBroker(t)
	svc := startService(t, kc, testModel(t, model.Independent, 1), []string{"value"}, wire.FormatJSON)
	bad := []kafka.Message{
		{Key: []byte("s-1"), Value: []byte(`{"series":"s-1","ts":"2026-01-05T00:00:00Z","value":"NaN"}`)},
		{Key: []byte("s-1"), Value: []byte(`not json at all`)},
	}
	kafkatest.Produce(t, svc.kc, "readings", bad...)
	produce(t, svc.kc, []string{"s-1"}, []string{"value"}, 0, lookback)
	fc := readTopic(t, svc.kc, "forecasts", 1, 60*time.Second)
	if len(fc) != 1 {
		t.Fatalf("got %d forecasts", len(fc))
	}
	dlq := readTopic(t, svc.kc, "readings.dlq", 2, 30*time.Second)
	reasons := []string{header(dlq[0], "freqlens-dlq-reason"), header(dlq[1], "freqlens-dlq-reason")}
	if !strings.Contains(strings.Join(reasons, ","), "non_finite") || !strings.Contains(strings.Join(reasons, ","), "unparsable") {
		t.Errorf("dead-letter reasons %v, want non_finite and unparsable", reasons)
	}
}

// windowIDs returns the forecast-ids of the windows of series ending at
// steps [from, to) (model version 1).
func windowIDs(series []string, from, to int) map[string]bool {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	ids := map[string]bool{}
	for _, s := range series {
		for end := from; end < to; end++ {
			ids[wire.ForecastID(s, t0.Add(time.Duration(end)*time.Hour), 1)] = true
		}
	}
	return ids
}

// forecastIDs returns the forecast-id of every message on the forecasts
// topic, counting duplicates.
func forecastIDs(t *testing.T, kc *kafkaconn.Client) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for _, m := range kafkatest.ReadAll(t, kc, "forecasts") {
		ids[header(m, wire.HeaderForecastID)]++
	}
	return ids
}

// TestRestartLosesNoWindow: a service stopped after committing its input,
// restarted in the same consumer group after more readings arrived,
// rebuilds its windows from the readings before the committed offsets and
// forecasts the window of every reading the first run did not commit —
// checked by count and by forecast-id — and none of the windows the first
// run already committed.
func TestRestartLosesNoWindow(t *testing.T) {
	kc := startBroker(t)
	m := testModel(t, model.Independent, 1)
	series := []string{"a", "b", "c"}
	first := startService(t, kc, m, []string{"value"}, wire.FormatJSON)
	produce(t, kc, series, []string{"value"}, 0, lookback+4) // windows ending at steps L-1 … L+3: 5 per series
	readTopic(t, kc, "forecasts", 15, 60*time.Second)
	waitFor(t, func() bool { return kafkatest.Uncommitted(t, kc, "freqlens", "readings") <= 0 })
	first.stop(t)
	before := forecastIDs(t, kc)
	if want := windowIDs(series, lookback-1, lookback+4); len(before) != len(want) {
		t.Fatalf("the first run wrote %d distinct forecasts, want %d", len(before), len(want))
	}

	// Readings that arrive while the service is down: L+5 per series. The
	// restarted service rebuilds the windows as they were at the committed
	// offsets, so every one of these readings completes a window.
	from, to := lookback+4, 2*lookback+9
	produce(t, kc, series, []string{"value"}, from, to)
	if n := kafkatest.Uncommitted(t, kc, "freqlens", "readings"); n != int64(len(series)*(to-from)) {
		t.Fatalf("%d readings uncommitted before the restart, want %d", n, len(series)*(to-from))
	}
	want := windowIDs(series, from, to)

	second := startService(t, kc, m, []string{"value"}, wire.FormatJSON)
	eventually(30*time.Second, func() bool {
		return len(forecastIDs(t, kc)) >= len(before)+len(want) && kafkatest.Uncommitted(t, kc, "freqlens", "readings") <= 0
	})
	second.stop(t)

	after := forecastIDs(t, kc)
	for id := range want {
		if after[id] != 1 {
			t.Errorf("window %s of the uncommitted readings was forecast %d times, want once", id, after[id])
		}
	}
	for id, n := range after {
		if !want[id] && n != before[id] {
			t.Errorf("forecast %s: %d copies after the restart, %d before; the restart re-forecast a committed window or an unexpected one", id, n, before[id])
		}
	}
	st := second.p.Stats()
	if st.Forecasts != int64(len(want)) || st.Readings != int64(len(series)*(to-from)) {
		t.Errorf("the restarted service read %d readings and wrote %d forecasts, want %d and %d",
			st.Readings, st.Forecasts, len(series)*(to-from), len(want))
	}
}

// gatedSink holds every Write until release is closed, telling entered
// when the first Write is waiting.
type gatedSink struct {
	sink.Sink
	entered chan struct{}
	once    sync.Once
	release chan struct{}
}

func (g *gatedSink) Write(ctx context.Context, fs []wire.Forecast) error {
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Sink.Write(ctx, fs)
}

// TestShutdownDrainsAndCommits: readings already fetched when the stop
// signal comes are forecast, written and committed after it: a write held
// in flight at the signal completes and its batch is committed, with the
// commit made after the signal, and Run returns nil promptly.
func TestShutdownDrainsAndCommits(t *testing.T) {
	kc := startBroker(t)
	reg := prometheus.NewRegistry()
	src := newConsumer(t, kc, reg)
	mem := sink.NewMemory()
	gate := &gatedSink{Sink: mem, entered: make(chan struct{}), release: make(chan struct{})}
	p, err := pipeline.New(wiring(), pipelineConfig(func(pc *pipeline.Config) { pc.ShutdownTimeout = 10 * time.Second }),
		src, window.DefaultConfig(), testModel(t, model.Independent, 1), gate, pipeline.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	produce(t, kc, []string{"x"}, []string{"value"}, 0, lookback+2)
	select {
	case <-gate.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("no write reached the sink within 60s")
	}
	stopped := time.Now()
	cancel()
	time.Sleep(100 * time.Millisecond) // the stop signal has reached every stage
	close(gate.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after the stop signal = %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return within 15s of the stop signal")
	}
	if c := p.Stats().LastCommit; !c.After(stopped) {
		t.Errorf("last commit at %v, not after the stop signal at %v: the batch in flight was not drained", c, stopped)
	}
	if mem.Len() == 0 {
		t.Error("the forecasts of the batch in flight were not written")
	}
	if n := kafkatest.Uncommitted(t, kc, "freqlens", "readings"); n != 0 {
		t.Errorf("%d readings left uncommitted after a clean shutdown, want 0", n)
	}
}

// TestObserverAndModelSwap: SetModel changes the version on new forecasts.
func TestObserverAndModelSwap(t *testing.T) {
	kc := startBroker(t)
	m := testModel(t, model.Independent, 1)
	var mu sync.Mutex
	versions := map[int64]int{}
	reg := prometheus.NewRegistry()
	src := newConsumer(t, kc, reg)
	mem := sink.NewMemory()
	p, err := pipeline.New(wiring(), pipeline.DefaultConfig(), src, window.DefaultConfig(), m, mem,
		pipeline.WithRegisterer(reg), pipeline.WithObserver(func(f *wire.Forecast) { mu.Lock(); versions[f.ModelVersion]++; mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	stop := runUntilStopped(p)
	produce(t, kc, []string{"s"}, []string{"value"}, 0, lookback)
	waitFor(t, func() bool { return mem.Len() >= 1 })
	if err := p.SetModel(m.Clone(), 2); err != nil {
		t.Fatal(err)
	}
	produce(t, kc, []string{"s"}, []string{"value"}, lookback, lookback+1)
	waitFor(t, func() bool { return mem.Len() >= 2 })
	if err := stop(); err != nil {
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

// eventually reports whether cond became true within d.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
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
		w    pipeline.Wiring
		want string
	}{
		{"field count", wiring("a", "b"), "value fields"},
		{"cadence", pipeline.Wiring{Fields: []string{"a", "b", "c"}, Cadence: 5 * time.Minute, ModelVersion: 1}, "cadence"},
		{"no fields", pipeline.Wiring{Cadence: time.Hour, ModelVersion: 1}, "value fields"},
		{"no model version", pipeline.Wiring{Fields: []string{"a", "b", "c"}, Cadence: time.Hour}, "pipeline: model version 0; versions count from 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.New(tc.w, pipeline.DefaultConfig(), nil, window.DefaultConfig(), m, sink.NewMemory())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	// A mixed model that names its channels: the same fields in another
	// order are refused, in New and in SetModel; other names pass.
	named := m.Clone()
	named.Meta.ChannelNames = []string{"a", "b", "c"}
	for _, fields := range [][]string{{"c", "a", "b"}, {"b", "a", "c"}} {
		_, err := pipeline.New(wiring(fields...), pipeline.DefaultConfig(), nil, window.DefaultConfig(), named, sink.NewMemory())
		if err == nil || !strings.Contains(err.Error(), "in another order; this mixed model reads them as [a b c]") {
			t.Errorf("fields %v: New error %v, want the order refused", fields, err)
		}
	}
	p, err := pipeline.New(wiring("x", "y", "z"), pipeline.DefaultConfig(), nil, window.DefaultConfig(), named, sink.NewMemory())
	if err != nil {
		t.Fatalf("renamed fields: %v", err)
	}
	renamed := named.Clone()
	renamed.Meta.ChannelNames = []string{"y", "x", "z"}
	if err := p.SetModel(renamed, 2); err == nil || !strings.Contains(err.Error(), "another order") {
		t.Errorf("SetModel with the fields in another order: %v", err)
	}
}

// corruptingSource is a consumer whose first batch with rows reaches the
// pipeline with a record that lacks the value column, as a bug upstream
// would deliver it.
type corruptingSource struct {
	*stream.Consumer
	corrupted chan int // the number of messages of the corrupted batch
}

func (s *corruptingSource) Run(ctx context.Context, out chan<- *stream.Batch) error {
	mid := make(chan *stream.Batch)
	errc := make(chan error, 1)
	go func() { errc <- s.Consumer.Run(ctx, mid) }()
	for {
		select {
		case err := <-errc:
			return err
		case b := <-mid:
			if s.corrupted != nil && b.Record.NumRows() > 0 {
				rb := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(readings.Schema().Fields()[:3], nil))
				for i := range 3 {
					rb.Field(i).AppendNulls(int(b.Record.NumRows()))
				}
				b.Release()
				b.Record = rb.NewRecord()
				rb.Release()
				s.corrupted <- b.Messages
				s.corrupted = nil
			}
			select {
			case out <- b:
			case <-ctx.Done():
				b.Release()
				return <-errc
			}
		}
	}
}

// TestWindowErrorIsDeadLettered: a batch the windows refuse is not
// committed unread: its messages go to the dead-letter topic with reason
// window_error, it is counted, and only then is it committed.
func TestWindowErrorIsDeadLettered(t *testing.T) {
	kc := startBroker(t)
	reg := prometheus.NewRegistry()
	corrupted := make(chan int, 1)
	src := &corruptingSource{Consumer: newConsumer(t, kc, reg), corrupted: corrupted}
	p, err := pipeline.New(wiring(), pipeline.DefaultConfig(), src, window.DefaultConfig(),
		testModel(t, model.Independent, 1), sink.NewMemory(), pipeline.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	produce(t, kc, []string{"a", "b"}, []string{"value"}, 0, 3)
	n := <-corrupted
	dlq := readTopic(t, kc, "readings.dlq", n, 30*time.Second)
	if len(dlq) != n {
		t.Errorf("%d messages on the dead-letter topic, want the corrupted batch's %d", len(dlq), n)
	}
	for _, m := range dlq {
		if got := header(m, "freqlens-dlq-reason"); got != pipeline.ReasonWindow {
			t.Errorf("dead letter at offset %s has reason %q, want %q", header(m, "freqlens-source-offset"), got, pipeline.ReasonWindow)
		}
	}
	waitFor(t, func() bool { return kafkatest.Uncommitted(t, kc, "freqlens", "readings") == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := metric(t, reg, "freqlens_pipeline_window_errors_total"); got != 1 {
		t.Errorf("freqlens_pipeline_window_errors_total = %v, want 1", got)
	}
	if got := metric(t, reg, "freqlens_pipeline_dead_lettered_readings_total"); got != float64(n) {
		t.Errorf("freqlens_pipeline_dead_lettered_readings_total = %v, want %d", got, n)
	}
}
