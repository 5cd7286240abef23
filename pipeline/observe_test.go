package pipeline_test

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

// What the pipeline shows of each forecast as it issues it: to the
// forecast observer, in full, and to the sink, as wired.

// issued is what a forecast observer was handed, copied.
type issued struct {
	f             wire.Forecast
	window, level []float64
}

// TestForecastObserver: WithForecastObserver sees every forecast as the
// sink gets it, with the window it was computed from (L×C row-major, the
// readings as produced) and the level inside its residual (each field's
// window mean).
func TestForecastObserver(t *testing.T) {
	kc := startBroker(t)
	fields := []string{"a", "b"}
	m := testModel(t, model.Independent, 1) // applied to each field
	var mu sync.Mutex
	var seen []issued
	reg := prometheus.NewRegistry()
	src := newConsumer(t, kc, reg, fields...)
	mem := sink.NewMemory()
	p, err := pipeline.New(wiring(fields...), pipeline.DefaultConfig(), src, window.DefaultConfig(), m, mem,
		pipeline.WithRegisterer(reg), pipeline.WithForecastObserver(func(f *wire.Forecast, window, level []float64) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, issued{wire.Clone(*f), append([]float64(nil), window...), append([]float64(nil), level...)})
		}))
	if err != nil {
		t.Fatal(err)
	}
	stop := runUntilStopped(p)
	produce(t, kc, []string{"s"}, fields, 0, lookback+2)
	waitFor(t, func() bool { return mem.Len() >= 3 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	written := mem.Forecasts()
	if len(seen) != len(written) {
		t.Fatalf("observed %d forecasts, the sink got %d", len(seen), len(written))
	}
	C := len(fields)
	for k, o := range seen {
		if d := wiretest.Diff(o.f, written[k]); d != "" {
			t.Errorf("forecast %d observed differs from the one written: %s", k, d)
		}
		if len(o.window) != lookback*C || len(o.level) != C {
			t.Fatalf("forecast %d: window of %d values and level of %d, want %d and %d", k, len(o.window), len(o.level), lookback*C, C)
		}
		// The window ends at the forecast's step k+L-1; produce writes
		// 100·(c+1) + 10·sin(2π·step/24).
		for i := range lookback {
			step := k + i
			for c := range C {
				want := 100*float64(c+1) + 10*math.Sin(2*math.Pi*float64(step)/24)
				if got := o.window[i*C+c]; math.Abs(got-want) > 1e-9 {
					t.Fatalf("forecast %d: window step %d field %d = %g, want the reading %g", k, i, c, got, want)
				}
			}
		}
		for c := range C {
			var mean float64
			for i := range lookback {
				mean += o.window[i*C+c] / lookback
			}
			if math.Abs(o.level[c]-mean) > 1e-6*math.Abs(mean) {
				t.Errorf("forecast %d: level[%d] = %g, want the window mean %g", k, c, o.level[c], mean)
			}
		}
	}
}

// observedPipeline is a pipeline from the broker's readings topic to a
// memory sink (window.max_gap 3) that appends every forecast it issues,
// with its window, to seen under mu.
func observedPipeline(t *testing.T, kc *kafkaconn.Client, m *model.Model, w pipeline.Wiring, mu *sync.Mutex, seen *[]issued) *pipeline.Pipeline {
	t.Helper()
	reg := prometheus.NewRegistry()
	p, err := pipeline.New(w, pipeline.DefaultConfig(), newConsumer(t, kc, reg), windowConfig(func(w *window.Config) { w.MaxGap = 3 }), m, sink.NewMemory(),
		pipeline.WithRegisterer(reg), pipeline.WithForecastObserver(func(f *wire.Forecast, window, _ []float64) {
			mu.Lock()
			defer mu.Unlock()
			*seen = append(*seen, issued{wire.Clone(*f), append([]float64(nil), window...), nil})
		}))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestForecastsReadTheTime: every window is forecast at its own time, also
// after a gap the windows fill: the forecast origin is the time of the
// reading that completed the window, and the forecast is the model's at
// that time (and not at the hour after, which the clock tells apart).
func TestForecastsReadTheTime(t *testing.T) {
	kc := startBroker(t)
	m := testModel(t, model.Independent, 1)
	var mu sync.Mutex
	var seen []issued
	p := observedPipeline(t, kc, m, wiring(), &mu, &seen)
	stop := runUntilStopped(p)
	// Steps 0 … L+2, a gap of two steps, then four more.
	produce(t, kc, []string{"s"}, []string{"value"}, 0, lookback+3)
	produce(t, kc, []string{"s"}, []string{"value"}, lookback+5, lookback+9)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) >= 8 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	ex, err := explain.New(m, 1)
	if err != nil {
		t.Fatal(err)
	}
	var origins []int
	for _, o := range seen {
		step := int(o.f.TS.Sub(t0) / time.Hour)
		origins = append(origins, step)
		want := ex.Forecast(o.window, []int64{o.f.TS.UnixNano()})
		for i, v := range o.f.Values {
			if math.Float64bits(v) != math.Float64bits(want[i]) {
				t.Fatalf("forecast from step %d: value %d = %v, the model at the window's time gives %v", step, i, v, want[i])
			}
		}
		later := ex.Forecast(o.window, []int64{o.f.TS.Add(time.Hour).UnixNano()})
		if slices.Equal(later[:len(o.f.Values)], o.f.Values) {
			t.Fatalf("forecast from step %d: the model gives the same forecast an hour later; the test cannot see the time", step)
		}
	}
	want := []int{lookback - 1, lookback, lookback + 1, lookback + 2, lookback + 5, lookback + 6, lookback + 7, lookback + 8}
	if !slices.Equal(origins, want) {
		t.Errorf("forecast origins at steps %v, want %v (each window at its last reading's time, the gap's steps filled but not forecast)", origins, want)
	}
}

// TestSharesOnly: with Wiring.SharesOnly (attributions: summary) the sink
// gets the same forecasts and shares as without it, bit for bit, but no
// per-step parts, while the observer still sees the parts during its call,
// adding up to the forecast. Mixed and independent models, several series
// and fields, so that the explainer's storage is reused across windows of
// different series.
func TestSharesOnly(t *testing.T) {
	fields := []string{"a", "b"}
	series := []string{"s0", "s1", "s2", "s3"}
	for _, tc := range []struct {
		name string
		m    *model.Model
	}{{"mixed", testModel(t, model.Mixed, 2)}, {"independent", testModel(t, model.Independent, 1)}} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(sharesOnly bool) (observed, written map[string]wire.Forecast) {
				kc := startBroker(t)
				w := wiring(fields...)
				w.SharesOnly = sharesOnly
				var mu sync.Mutex
				observed = map[string]wire.Forecast{}
				reg := prometheus.NewRegistry()
				mem := sink.NewMemory()
				if sharesOnly {
					mem = sink.NewMemoryOf(wire.AttributionsSummary)
				}
				p, err := pipeline.New(w, pipeline.DefaultConfig(), newConsumer(t, kc, reg, fields...), window.DefaultConfig(), tc.m, mem,
					pipeline.WithRegisterer(reg), pipeline.WithForecastObserver(func(f *wire.Forecast, _, _ []float64) {
						mu.Lock()
						defer mu.Unlock()
						observed[f.Series+f.TS.String()] = wire.Clone(*f)
					}))
				if err != nil {
					t.Fatal(err)
				}
				stop := runUntilStopped(p)
				produce(t, kc, series, fields, 0, lookback+5)
				want := 6 * len(series)
				if !eventually(20*time.Second, func() bool { return mem.Len() >= want }) {
					t.Fatalf("shares only %v: the sink got %d forecasts, want %d (Run: %v)", sharesOnly, mem.Len(), want, stop())
				}
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				written = map[string]wire.Forecast{}
				for _, f := range mem.Forecasts() {
					written[f.Series+f.TS.String()] = f
				}
				if len(written) != want || len(observed) != want {
					t.Fatalf("%d forecasts written and %d observed, want %d", len(written), len(observed), want)
				}
				return observed, written
			}
			fullSeen, full := run(false)
			seen, got := run(true)
			for key, f := range full {
				g := got[key]
				if !slices.Equal(g.Values, f.Values) || g.Alpha != f.Alpha {
					t.Fatalf("%s: shares-only forecast %v (alpha %v), full %v (alpha %v)", key, g.Values, g.Alpha, f.Values, f.Alpha)
				}
				if g.Residual != nil {
					t.Errorf("%s: shares-only forecast keeps its residual", key)
				}
				if len(g.Frequencies) != len(f.Frequencies) || len(g.Rhythms) != len(f.Rhythms) || len(f.Rhythms) == 0 {
					t.Fatalf("%s: %d frequencies and %d rhythms, full %d and %d", key, len(g.Frequencies), len(g.Rhythms), len(f.Frequencies), len(f.Rhythms))
				}
				for k, c := range g.Frequencies {
					if c.Values != nil || c.ID != f.Frequencies[k].ID || c.Share != f.Frequencies[k].Share {
						t.Errorf("%s: frequency %d = id %d share %v with %d values, full id %d share %v", key, k, c.ID, c.Share, len(c.Values), f.Frequencies[k].ID, f.Frequencies[k].Share)
					}
				}
				for r, rp := range g.Rhythms {
					if rp.Values != nil || rp.Share != f.Rhythms[r].Share {
						t.Errorf("%s: rhythm %d share %v with %d values, full share %v", key, r, rp.Share, len(rp.Values), f.Rhythms[r].Share)
					}
				}
				// What the observer saw is the full forecast, parts and all.
				if d := wiretest.Diff(seen[key], fullSeen[key]); d != "" {
					t.Errorf("%s: observed shares-only forecast differs from the full one: %s", key, d)
				}
				o := seen[key]
				for j, v := range o.Values {
					sum := o.Residual[j]
					for _, c := range o.Frequencies {
						sum += c.Values[j]
					}
					if math.Abs(sum-v) > 1e-9*max(1, math.Abs(v)) {
						t.Fatalf("%s: observed parts add up to %v at %d, the forecast is %v", key, sum, j, v)
					}
				}
			}
		})
	}
}
