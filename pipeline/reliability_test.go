package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
)

// running is a pipeline started by runPipeline.
type running struct {
	p    *pipeline.Pipeline
	reg  *prometheus.Registry
	stop func()
}

// windowConfig returns window.DefaultConfig changed by edit.
func windowConfig(edit func(*window.Config)) window.Config {
	win := window.DefaultConfig()
	edit(&win)
	return win
}

// readingsConfig returns readings.DefaultConfig with value fields fields
// (none: the default, value) and input.max_future far enough for the tests'
// readings of 2026.
func readingsConfig(fields []string) readings.Config {
	in := readings.DefaultConfig()
	if len(fields) > 0 {
		in.ValueFields = fields
	}
	in.MaxFuture = 1e5 * time.Hour
	return in
}

// wiring returns the tests' wiring: value fields fields (none: value),
// hourly steps, model version 1, attributions computed.
func wiring(fields ...string) pipeline.Wiring {
	if len(fields) == 0 {
		fields = []string{"value"}
	}
	return pipeline.Wiring{Fields: fields, Cadence: time.Hour, ModelVersion: 1}
}

// pipelineConfig returns pipeline.DefaultConfig with edit applied.
func pipelineConfig(edit func(*pipeline.Config)) pipeline.Config {
	pc := pipeline.DefaultConfig()
	edit(&pc)
	return pc
}

// onlineConfig returns online.DefaultConfig with edit applied.
func onlineConfig(edit func(*online.Config)) online.Config {
	cfg := online.DefaultConfig()
	edit(&cfg)
	return cfg
}

// sinkConfig returns sink.DefaultConfig with edit applied.
func sinkConfig(edit func(*sink.Config)) sink.Config {
	sk := sink.DefaultConfig()
	edit(&sk)
	return sk
}

// runPipeline runs a pipeline of the readings topic in group freqlens,
// writing to the forecasts topic (no attributions; sk, from
// sink.DefaultConfig, sets the rest of the sink) the fields (none: value),
// with opts, until stop or the end of the test. pc, sc and win start from
// their DefaultConfig; the shutdown timeout is 5s.
func runPipeline(t *testing.T, kc *kafkaconn.Client, m *model.Model, fields []string, pc pipeline.Config, win window.Config, sc stream.Config,
	sk sink.Config, opts ...pipeline.Option) *running {
	t.Helper()
	reg := prometheus.NewRegistry()
	w := wiring(fields...)
	w.SkipAttributions = true
	sc.Group, sc.Topic, sc.DeadLetterTopic = "freqlens", "readings", "readings.dlq"
	sc.BatchLatency = 5 * time.Millisecond
	sc.RebuildSpan = pipeline.RebuildSpan(lookback, win, time.Hour)
	src, err := stream.NewConsumer(sc, readingsConfig(w.Fields), kc, stream.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	sk.ForecastTopic, sk.AttributionTopic = "forecasts", ""
	snk, err := sink.New(sk, kc, sink.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	pc.ShutdownTimeout = 5 * time.Second
	p, err := pipeline.New(w, pc, src, win, m, snk, append([]pipeline.Option{pipeline.WithRegisterer(reg)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	r := &running{p: p, reg: reg}
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run after cancel = %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("the pipeline did not stop within 20s")
		}
	}
	t.Cleanup(r.stop)
	return r
}

// TestRefusedReadingsAreDeadLettered: a value far outside its series'
// range never reaches a window and is dead-lettered as out_of_range; a
// model whose forecasts are NaN writes none of them, and the reading that
// completed each window is dead-lettered as non_finite_output; both are
// counted, and the batches are committed.
func TestRefusedReadingsAreDeadLettered(t *testing.T) {
	t.Run("out of range", func(t *testing.T) {
		kc := startBroker(t)
		r := runPipeline(t, kc, testModel(t, model.Independent, 1), nil, pipeline.DefaultConfig(), window.DefaultConfig(), stream.DefaultConfig(), sink.DefaultConfig())
		produce(t, kc, []string{"a"}, []string{"value"}, 0, lookback)
		t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
		bad := readings.Reading{Series: "a", Time: t0.Add(lookback * time.Hour), Values: []float64{1e300}}
		kafkatest.Produce(t, kc, "readings", kafka.Message{Key: []byte("a"), Value: readings.AppendJSON(nil, bad, readings.DefaultConfig())})
		produce(t, kc, []string{"a"}, []string{"value"}, lookback+1, lookback+3)
		dlq := readTopic(t, kc, "readings.dlq", 1, 30*time.Second)
		if got := header(dlq[0], stream.HeaderReason); got != readings.ReasonOutOfRange || !bytes.Contains(dlq[0].Value, []byte("1e+300")) {
			t.Errorf("dead letter %s with reason %q, want the 1e300 reading as %q", dlq[0].Value, got, readings.ReasonOutOfRange)
		}
		waitFor(t, func() bool { return kafkatest.Uncommitted(t, kc, "freqlens", "readings") == 0 })
		for _, m := range kafkatest.ReadAll(t, kc, "forecasts") {
			f, err := wire.DecodeForecastJSON(m.Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range f.Values {
				if math.Abs(v) > 1e6 {
					t.Fatalf("forecast at %s holds %v: the refused reading reached a window", f.TS, v)
				}
			}
		}
		if got := metric(t, r.reg, "freqlens_window_out_of_range_total"); got != 1 {
			t.Errorf("freqlens_window_out_of_range_total = %v, want 1", got)
		}
	})
	t.Run("too late", func(t *testing.T) {
		kc := startBroker(t)
		r := runPipeline(t, kc, testModel(t, model.Independent, 1), nil, pipeline.DefaultConfig(), windowConfig(func(w *window.Config) { w.AllowedLateness = time.Hour }),
			stream.DefaultConfig(), sink.DefaultConfig())
		produce(t, kc, []string{"a"}, []string{"value"}, 0, lookback+2)
		t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
		late := readings.Reading{Series: "a", Time: t0.Add(5 * time.Hour), Values: []float64{42}}         // 20 steps late
		within := readings.Reading{Series: "a", Time: t0.Add(lookback * time.Hour), Values: []float64{7}} // one step late: updates it
		for _, rd := range []readings.Reading{late, within} {
			kafkatest.Produce(t, kc, "readings", kafka.Message{Key: []byte("a"), Value: readings.AppendJSON(nil, rd, readings.DefaultConfig())})
		}
		produce(t, kc, []string{"a"}, []string{"value"}, lookback+2, lookback+3)
		dlq := readTopic(t, kc, "readings.dlq", 1, 30*time.Second)
		if got := header(dlq[0], stream.HeaderReason); got != pipeline.ReasonTooLate || !bytes.Contains(dlq[0].Value, []byte("42")) {
			t.Errorf("dead letter %s with reason %q, want the late reading as %q", dlq[0].Value, got, pipeline.ReasonTooLate)
		}
		// Its error says how late it was, against what is allowed.
		if got, want := header(dlq[0], stream.HeaderError), "the reading's step is 20 steps (20h0m0s) behind its series' newest step, more than window.allowed_lateness (1h0m0s) allows"; !strings.Contains(got, want) {
			t.Errorf("dead letter's error %q does not say %q", got, want)
		}
		waitFor(t, func() bool { return kafkatest.Uncommitted(t, kc, "freqlens", "readings") == 0 })
		if n := len(kafkatest.ReadAll(t, kc, "readings.dlq")); n != 1 {
			t.Errorf("%d dead letters, want the one too-late reading", n)
		}
		if drops, updates := metric(t, r.reg, "freqlens_window_late_drops_total"), metric(t, r.reg, "freqlens_window_late_updates_total"); drops != 1 || updates != 1 {
			t.Errorf("freqlens_window_late_drops_total = %v, freqlens_window_late_updates_total = %v; want 1 and 1", drops, updates)
		}
	})
	t.Run("non-finite forecasts", func(t *testing.T) {
		kc := startBroker(t)
		m := testModel(t, model.Independent, 1)
		m.Params().ResB2[0] = math.NaN()
		m.Refresh()
		r := runPipeline(t, kc, m, nil, pipeline.DefaultConfig(), window.DefaultConfig(), stream.DefaultConfig(), sink.DefaultConfig())
		produce(t, kc, []string{"a", "b"}, []string{"value"}, 0, lookback+2) // 3 windows each
		dlq := readTopic(t, kc, "readings.dlq", 6, 30*time.Second)
		for _, d := range dlq {
			if got := header(d, stream.HeaderReason); got != pipeline.ReasonNonFiniteOutput {
				t.Errorf("dead letter reason %q, want %q", got, pipeline.ReasonNonFiniteOutput)
			}
		}
		waitFor(t, func() bool { return kafkatest.Uncommitted(t, kc, "freqlens", "readings") == 0 })
		if n := len(kafkatest.ReadAll(t, kc, "forecasts")); n != 0 {
			t.Errorf("%d forecasts written by a model whose forecasts are NaN, want 0", n)
		}
		if got := metric(t, r.reg, "freqlens_pipeline_nonfinite_forecasts_total"); got != 6 {
			t.Errorf("freqlens_pipeline_nonfinite_forecasts_total = %v, want 6", got)
		}
	})
}

// TestLimitsMeanWhatTheySay: window.max_series caps the series of the
// process over every worker and partition, and idle series expire within
// 1.25 times their TTL without any new reading.
func TestLimitsMeanWhatTheySay(t *testing.T) {
	kc := startBroker(t)
	r := runPipeline(t, kc, testModel(t, model.Independent, 1), nil, pipelineConfig(func(pc *pipeline.Config) { pc.Workers = 3 }),
		windowConfig(func(w *window.Config) { w.MaxSeries, w.SeriesTTL = 10, 2*time.Second }), stream.DefaultConfig(), sink.DefaultConfig())
	var series []string
	for i := range 40 {
		series = append(series, fmt.Sprintf("s-%02d", i))
	}
	produce(t, kc, series, []string{"value"}, 0, 3)
	waitFor(t, func() bool { return kafkatest.Uncommitted(t, kc, "freqlens", "readings") == 0 })
	last := time.Now()
	if got := metric(t, r.reg, "freqlens_window_series_active"); got != 10 {
		t.Errorf("freqlens_window_series_active = %v with window.max_series 10 over 3 workers and 3 partitions, want 10", got)
	}
	if got := metric(t, r.reg, "freqlens_window_series_rejected_total"); got != 30*3 {
		t.Errorf("freqlens_window_series_rejected_total = %v, want %d", got, 30*3)
	}
	waitFor(t, func() bool { return metric(t, r.reg, "freqlens_window_series_active") == 0 })
	if took := time.Since(last); took > 2*time.Second*5/4+time.Second {
		t.Errorf("idle series expired %v after their last reading, want within 1.25 × the 2s TTL (+1s for the commit)", took)
	}
}

// TestRebalanceForgetsAndLosesNothing: a second pipeline joining the group
// takes partitions from the first, which forgets their windows (its
// series_active falls to the series it keeps); every window is forecast,
// and duplicates, if any, are identical.
func TestRebalanceForgetsAndLosesNothing(t *testing.T) {
	kc := startBroker(t)
	m := testModel(t, model.Independent, 1)
	sc := stream.DefaultConfig()
	sc.SessionTimeout, sc.HeartbeatInterval, sc.RebalanceTimeout = 6*time.Second, time.Second, 6*time.Second
	var series []string
	for i := range 30 {
		series = append(series, fmt.Sprintf("s-%02d", i))
	}
	a := runPipeline(t, kc, m, nil, pipeline.DefaultConfig(), window.DefaultConfig(), sc, sink.DefaultConfig())
	produce(t, kc, series, []string{"value"}, 0, lookback+5)
	waitFor(t, func() bool { return kafkatest.Uncommitted(t, kc, "freqlens", "readings") == 0 })
	b := runPipeline(t, kc, m, nil, pipeline.DefaultConfig(), window.DefaultConfig(), sc, sink.DefaultConfig())
	for step := lookback + 5; step < lookback+25; step++ {
		produce(t, kc, series, []string{"value"}, step, step+1)
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, func() bool {
		return kafkatest.Uncommitted(t, kc, "freqlens", "readings") == 0 &&
			metric(t, a.reg, "freqlens_stream_assigned_partitions")+metric(t, b.reg, "freqlens_stream_assigned_partitions") == 3 &&
			metric(t, b.reg, "freqlens_stream_assigned_partitions") > 0
	})
	// One more step so both have forecast since the move.
	produce(t, kc, series, []string{"value"}, lookback+25, lookback+26)
	waitFor(t, func() bool { return kafkatest.Uncommitted(t, kc, "freqlens", "readings") == 0 })
	activeA, activeB := metric(t, a.reg, "freqlens_window_series_active"), metric(t, b.reg, "freqlens_window_series_active")
	if activeA+activeB != float64(len(series)) || activeA == float64(len(series)) {
		t.Errorf("series_active %v + %v after the move, want %d in all, split between the two", activeA, activeB, len(series))
	}
	checkWindows(t, kc, series, lookback-1, lookback+26)
}

// checkWindows checks that the forecasts topic holds a forecast (model
// version 1) of every window of series ending at steps [from, to), none
// other, and that the copies of each are byte-identical.
func checkWindows(t *testing.T, kc *kafkaconn.Client, series []string, from, to int) {
	t.Helper()
	want := windowIDs(series, from, to)
	copies := map[string][]byte{}
	dups := 0
	for _, m := range kafkatest.ReadAll(t, kc, "forecasts") {
		id := header(m, wire.HeaderForecastID)
		if !want[id] {
			t.Errorf("unexpected forecast %s", m.Value)
			continue
		}
		if prev, ok := copies[id]; ok {
			dups++
			if !bytes.Equal(prev, m.Value) {
				t.Errorf("two copies of forecast %s differ:\n%s\n%s", id, prev, m.Value)
			}
			continue
		}
		copies[id] = m.Value
	}
	if len(copies) != len(want) {
		t.Errorf("%d of %d windows forecast: %d lost", len(copies), len(want), len(want)-len(copies))
	}
	t.Logf("%d windows, %d duplicates (identical)", len(want), dups)
}
