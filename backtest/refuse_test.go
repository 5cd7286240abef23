package backtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/service"
)

// TestRunRefusesNothingToScore: a scoring start after the history's last
// reading, and a history too short for any scored forecast, are errors
// that say why, not a report of zeros.
func TestRunRefusesNothingToScore(t *testing.T) {
	m, err := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 8, Frequencies: 6, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	history := func(steps int) *History {
		h := NewHistory("short", []string{"value"})
		for k := range steps {
			h.Add("s", t0.Add(time.Duration(k)*time.Hour).UnixMilli(), []float64{float64(k % 24)})
		}
		return h
	}
	cfg := service.DefaultConfig()
	cfg.Online.Intervals = []float64{0.8}
	for _, tc := range []struct {
		name string
		h    *History
		from time.Time
		want string
	}{
		{"from after the last reading", history(200), t0.Add(1000 * time.Hour), "after the history's last reading"},
		{"too short to score", history(26), time.Time{}, "nothing was scored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), m, tc.h, Options{Config: cfg, From: tc.from})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
