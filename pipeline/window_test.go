package pipeline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/window"
)

// TestNewTakesTheSettingsAsGiven: New checks the wiring, the service.*
// settings and the window.* settings as they are (a zero Config is not the
// defaults) and the Shape it builds from the model and the wiring; a
// sub-millisecond cadence is refused before. Each zero service.* setting
// is refused naming its key and the default.
func TestNewTakesTheSettingsAsGiven(t *testing.T) {
	m := testModel(t, model.Independent, 1)
	ok, def := wiring(), pipeline.DefaultConfig()
	for _, tc := range []struct {
		name string
		w    pipeline.Wiring
		cfg  pipeline.Config
		win  window.Config
		want string // "" = valid
	}{
		{"the defaults", ok, def, window.DefaultConfig(), ""},
		{"max_gap 0", ok, def, windowConfig(func(w *window.Config) { w.MaxGap = 0 }), ""},
		{"a zero window Config", ok, def, window.Config{}, "window.stride = 0"},
		{"a negative max_gap", ok, def, windowConfig(func(w *window.Config) { w.MaxGap = -1 }), "window.max_gap = -1"},
		{"a reserved field", wiring("ts"), def, window.DefaultConfig(), "reserved column name"},
		{"a cadence under a millisecond", pipeline.Wiring{Fields: []string{"value"}, Cadence: 1500 * time.Microsecond, ModelVersion: 1}, def,
			window.DefaultConfig(), "input.cadence = 1.5ms is not a whole number of milliseconds"},
		{"a zero Wiring", pipeline.Wiring{}, def, window.DefaultConfig(), "input.value_fields is empty"},
		{"no cadence", pipeline.Wiring{Fields: []string{"value"}, ModelVersion: 1}, def, window.DefaultConfig(), "input.cadence = 0s; it is required"},
		{"a zero Config", ok, pipeline.Config{}, window.DefaultConfig(), "service.workers = 0; use at least 1 (default 2)"},
		{"zero workers", ok, pipelineConfig(func(c *pipeline.Config) { c.Workers = 0 }), window.DefaultConfig(), "service.workers = 0; use at least 1 (default 2)"},
		{"zero max batch", ok, pipelineConfig(func(c *pipeline.Config) { c.MaxBatch = 0 }), window.DefaultConfig(),
			"service.max_batch = 0; use at least 1 window per forward pass (default 256)"},
		{"zero shutdown timeout", ok, pipelineConfig(func(c *pipeline.Config) { c.ShutdownTimeout = 0 }), window.DefaultConfig(),
			"service.shutdown_timeout = 0s; use a positive duration (default 10s)"},
		{"zero expire every", ok, pipelineConfig(func(c *pipeline.Config) { c.ExpireEvery = 0 }), window.DefaultConfig(),
			"service.expire_every = 0s; use a positive duration (default 1m0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.New(tc.w, tc.cfg, nil, tc.win, m, sink.NewMemory())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New error %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	want := pipeline.Config{Workers: 2, MaxBatch: 256, ShutdownTimeout: 10 * time.Second, ExpireEvery: time.Minute}
	if got := pipeline.DefaultConfig(); got != want {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
}

// TestRebuildSpan: L steps, max_gap steps a fill may interpolate from, one
// step of rounding and the allowed lateness; max_gap 0 reads back no step
// for a fill.
func TestRebuildSpan(t *testing.T) {
	for _, tc := range []struct {
		maxGap   int
		lateness time.Duration
		want     time.Duration
	}{
		{3, 0, (24 + 3 + 1) * time.Hour},
		{0, 0, (24 + 0 + 1) * time.Hour},
		{0, 2 * time.Hour, (24+0+1)*time.Hour + 2*time.Hour},
	} {
		win := windowConfig(func(w *window.Config) { w.MaxGap, w.AllowedLateness = tc.maxGap, tc.lateness })
		if got := pipeline.RebuildSpan(24, win, time.Hour); got != tc.want {
			t.Errorf("RebuildSpan(24, max_gap %d, lateness %v, 1h) = %v, want %v", tc.maxGap, tc.lateness, got, tc.want)
		}
	}
}
