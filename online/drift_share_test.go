package online

import (
	"math"
	"testing"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/model"
)

// TestDriftCountsARhythmByItsSummedPart: a rhythm's share, which decides
// whether it is dominant (and so whether its drift pages anyone), is the
// forecasts' share of the rhythm's summed part, not the sum of its lines'
// shares, which overstates a rhythm whose lines partly cancel. Without
// rhythm parts (a caller that passes none) it falls back to the lines' sum.
func TestDriftCountsARhythmByItsSummedPart(t *testing.T) {
	m, err := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 8, Frequencies: 6, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	m.SetRhythms([]cycles.Rhythm{{PeriodSteps: 24, Frequencies: []int{0, 1}, Harmonics: []int{1, 2}}})
	cs := []model.Contribution{
		{Frequency: model.Frequency{ID: 0}, Share: 0.30},
		{Frequency: model.Frequency{ID: 1}, Share: 0.20},
		{Frequency: model.Frequency{ID: 4}, Share: 0.10},
	}
	for _, tc := range []struct {
		name   string
		rhythm []explain.RhythmPart
		want   float64
	}{
		{"the rhythm's summed part", []explain.RhythmPart{{Index: 0, Share: 0.35}}, 0.35},
		{"no rhythm parts: its lines' sum", nil, 0.50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDrift(DefaultConfig(), m)
			for range 3 {
				d.observeShares(cs, tc.rhythm)
			}
			if tc.rhythm != nil {
				d.observeShares(cs, nil) // one forecast without rhythm parts: its lines' sum
				tc.want = (3*tc.want + 0.50) / 4
			}
			d.evaluate(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), m, 1)
			rs := d.rhythms()
			if len(rs) != 1 {
				t.Fatalf("%d rhythms, want 1", len(rs))
			}
			if math.Abs(rs[0].Share-tc.want) > 1e-12 {
				t.Errorf("rhythm share %v, want %v", rs[0].Share, tc.want)
			}
			for _, f := range d.frequencies() {
				if f.ID == 4 && math.Abs(f.Share-0.10) > 1e-12 {
					t.Errorf("free frequency 4 share %v, want 0.10", f.Share)
				}
			}
		})
	}
}
