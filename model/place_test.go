package model

import (
	"math"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/cycles"
)

// TestPlaceFrequencies checks the placement rules: each kept peak gets one
// frequency exactly, free frequencies keep ±1/L away from every placed one,
// ids run in order of frequency, and the rules for peaks out of range,
// sidebands and too many peaks.
func TestPlaceFrequencies(t *testing.T) {
	const L = 96
	for _, tc := range []struct {
		name   string
		peaks  []cycles.Peak
		placed []float64 // periods that must hold a placed frequency
		absent []float64 // periods that must not
	}{
		{"two cycles", []cycles.Peak{{Frequency: 1 / 24.0, Share: 0.3}, {Frequency: 1 / 7.3, Share: 0.1}}, []float64{24, 7.3}, nil},
		{"longer than the lookback", []cycles.Peak{{Frequency: 1 / 168.0, Share: 0.2}}, []float64{168}, nil},
		{"beyond the lowest frequency", []cycles.Peak{{Frequency: 1 / 2000.0, Share: 0.5}, {Frequency: 1 / 24.0, Share: 0.1}}, []float64{24}, []float64{2000}},
		{"a weak sideband within 1/L is left out", []cycles.Peak{{Frequency: 1 / 24.0, Share: 0.25}, {Frequency: 1 / 24.3, Share: 0.017}}, []float64{24}, []float64{24.3}},
		{"a strong neighbour within 1/L is a cycle", []cycles.Peak{{Frequency: 1 / 60.0, Share: 0.3}, {Frequency: 1 / 80.0, Share: 0.2}}, []float64{60, 80}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{Horizon: 24, Channels: 1, Mode: Independent}, 1)
			if err != nil {
				t.Fatal(err)
			}
			pl := m.PlaceFrequencies(tc.peaks)
			fs := m.Frequencies()
			var placed []float64
			for id, f := range fs {
				if id > 0 && f.Frequency <= fs[id-1].Frequency {
					t.Errorf("id %d at %.5f is not above id %d at %.5f", id, f.Frequency, id-1, fs[id-1].Frequency)
				}
				if pl.Placed[id] >= 0 {
					placed = append(placed, f.Frequency)
					if want := tc.peaks[pl.Placed[id]].Frequency; math.Abs(f.Frequency/want-1) > 1e-9 {
						t.Errorf("id %d placed at %.6f, its peak is at %.6f", id, f.Frequency, want)
					}
				}
			}
			for id, f := range fs {
				if pl.Placed[id] >= 0 {
					continue
				}
				for _, p := range placed {
					if math.Abs(f.Frequency-p) < 1.0/L-1e-9 {
						t.Errorf("free id %d at %.2f steps is within 1/L of the placed %.2f steps", id, f.PeriodSteps, 1/p)
					}
				}
			}
			has := func(period float64) bool {
				return slices.ContainsFunc(placed, func(f float64) bool { return math.Abs(1/f/period-1) < 1e-6 })
			}
			for _, p := range tc.placed {
				if !has(p) {
					t.Errorf("no frequency placed at %.1f steps; placed %v", p, placed)
				}
			}
			for _, p := range tc.absent {
				if has(p) {
					t.Errorf("a frequency placed at %.1f steps", p)
				}
			}
		})
	}

	t.Run("at most half the frequencies", func(t *testing.T) {
		m, _ := New(Config{Horizon: 24, Channels: 1, Mode: Independent, Frequencies: 8, TopK: 2}, 1)
		var peaks []cycles.Peak
		for i := range 10 {
			peaks = append(peaks, cycles.Peak{Frequency: 0.04 + 0.04*float64(i), Share: 0.1})
		}
		n := 0
		for _, p := range m.PlaceFrequencies(peaks).Placed {
			if p >= 0 {
				n++
			}
		}
		if n != 4 {
			t.Errorf("placed %d of 8 frequencies for 10 peaks, want 4", n)
		}
	})
}

// TestTrackCycles: a frequency placed on a cycle moves to the strongest
// recent peak within 1/L of it; farther peaks, and free frequencies, stay
// as they are; one peak moves one frequency.
func TestTrackCycles(t *testing.T) {
	m, err := New(Config{Horizon: 24, Channels: 1, Mode: Independent}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.PlaceFrequencies([]cycles.Peak{{Frequency: 1 / 24.0, Share: 0.4}, {Frequency: 1 / 12.0, Share: 0.1}})
	ids := map[float64]int{}
	for _, pk := range m.Meta.Peaks {
		ids[math.Round(pk.PeriodSteps)] = pk.ID
	}
	before := m.Frequencies()
	moves := m.TrackCycles([]cycles.Peak{
		{Frequency: 1 / 28.0, Share: 0.3}, // 0.57/L from 24: the 24-step cycle moved
		{Frequency: 1 / 27.0, Share: 0.1}, // weaker, same neighbourhood: claimed already
		{Frequency: 1 / 6.0, Share: 0.2},  // far from every cycle: nobody moves there
	})
	after := m.Frequencies()
	if len(moves) != 1 || moves[0].ID != ids[24] || math.Abs(moves[0].ToPeriod-28) > 1e-9 {
		t.Fatalf("moves = %+v, want frequency %d from 24 to 28 steps only", moves, ids[24])
	}
	for id := range after {
		if id == ids[24] {
			if math.Abs(after[id].PeriodSteps-28) > 1e-9 {
				t.Errorf("the 24-step cycle's frequency is at %.4f steps, want 28", after[id].PeriodSteps)
			}
			continue
		}
		if after[id].Frequency != before[id].Frequency {
			t.Errorf("frequency %d moved from %.4f to %.4f steps", id, before[id].PeriodSteps, after[id].PeriodSteps)
		}
	}
}
