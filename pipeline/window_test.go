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

// TestNewTakesTheWindowSettingsAsGiven: New checks the window.* settings
// as they are (a zero Config is not the defaults) and the Shape it builds
// from the model and cfg; a sub-millisecond cadence is refused before.
func TestNewTakesTheWindowSettingsAsGiven(t *testing.T) {
	m := testModel(t, model.Independent, 1)
	ok := pipeline.Config{Fields: []string{"value"}, Cadence: time.Hour}
	for _, tc := range []struct {
		name string
		cfg  pipeline.Config
		win  window.Config
		want string // "" = valid
	}{
		{"the defaults", ok, window.DefaultConfig(), ""},
		{"max_gap 0", ok, windowConfig(func(w *window.Config) { w.MaxGap = 0 }), ""},
		{"a zero Config", ok, window.Config{}, "window.stride = 0"},
		{"a negative max_gap", ok, windowConfig(func(w *window.Config) { w.MaxGap = -1 }), "window.max_gap = -1"},
		{"a reserved field", pipeline.Config{Fields: []string{"ts"}, Cadence: time.Hour}, window.DefaultConfig(), "reserved column name"},
		{"a cadence under a millisecond", pipeline.Config{Fields: []string{"value"}, Cadence: 1500 * time.Microsecond}, window.DefaultConfig(),
			"input.cadence = 1.5ms is not a whole number of milliseconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.New(tc.cfg, nil, tc.win, m, sink.NewMemory())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New error %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New error %v, want one containing %q", err, tc.want)
			}
		})
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
