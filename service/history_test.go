package service_test

import (
	"testing"

	"github.com/freqlens/freqlens/service"
	"github.com/freqlens/freqlens/window"
)

// TestHistoryPanel: a model trains on the steps it will serve, so the
// history is put on steps with window.max_gap and window.fill as they are
// set: max_gap 0 fills no missing step.
func TestHistoryPanel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(*window.Config)
		wantGap  int
		wantHold bool
	}{
		{"the defaults", func(*window.Config) {}, 3, false},
		{"max_gap 0", func(w *window.Config) { w.MaxGap = 0 }, 0, false},
		{"max_gap 7, hold", func(w *window.Config) { w.MaxGap, w.Fill = 7, window.FillHold }, 7, true},
	} {
		cfg := service.DefaultConfig()
		tc.edit(&cfg.Window)
		pc := cfg.HistoryPanel("h")
		if pc.MaxGap != tc.wantGap || pc.Hold != tc.wantHold || len(pc.Fields) != 1 || pc.Fields[0] != "value" {
			t.Errorf("%s: HistoryPanel = %+v, want MaxGap %d, Hold %v, Fields [value]", tc.name, pc, tc.wantGap, tc.wantHold)
		}
	}
}
