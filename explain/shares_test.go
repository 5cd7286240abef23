package explain_test

import (
	"math"
	"testing"
	"time"

	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/model"
)

func TestMatchPeriods(t *testing.T) {
	m, _ := model.New(model.Config{Horizon: 8, Channels: 1}, 1)
	if explain.MatchPeriods(m, []time.Duration{24 * time.Hour}, 0.15) != nil {
		t.Error("MatchPeriods without a cadence must return nil")
	}
	m.Meta.Cadence = time.Hour
	pm := explain.MatchPeriods(m, []time.Duration{24 * time.Hour}, 0.15)
	if len(pm) != 1 || !pm[0].Match || math.Abs(pm[0].Nearest.PeriodSteps-24) > 0.15*24 {
		t.Errorf("24h match = %+v, want a match near 24 steps", pm)
	}
}
