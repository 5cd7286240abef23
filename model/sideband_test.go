package model

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/freqlens/freqlens/cycles"
)

// TestPlaceRhythmsDropsLoneSidebands: the calendar sidebands that join no
// calendar rhythm go back out. Three sidebands of the week beside the day
// make the week; a single one makes none, so it is left out as before
// and no rhythm of its own is named after it.
func TestPlaceRhythmsDropsLoneSidebands(t *testing.T) {
	const day, week, rows = 144.0, 1008.0, 6000 // 10-minute cadence
	opts := cycles.RhythmOptions{Rows: rows, Cadence: 10 * time.Minute}
	dayLines := []cycles.Peak{{Frequency: 1 / day, Share: 0.6}, {Frequency: 2 / day, Share: 0.2}}
	for _, tc := range []struct {
		name     string
		weekly   []int // harmonics of the week, each within 1/L of a daily line
		wantWeek int   // how many frequencies the week gets
	}{
		{"three sidebands", []int{6, 8, 13}, 3},
		{"one sideband", []int{8}, 0},
	} {
		peaks := slices.Clone(dayLines)
		for _, k := range tc.weekly {
			peaks = append(peaks, cycles.Peak{Frequency: float64(k) / week, Share: 0.02})
		}
		m, err := New(Config{Horizon: 24, Channels: 1, Mode: Independent}, 1)
		if err != nil {
			t.Fatal(err)
		}
		m.Meta.Cadence = opts.Cadence
		_, rhythms, _ := m.placeRhythms(peaks, opts)
		gotWeek := 0
		for _, r := range rhythms {
			switch {
			case r.PeriodSteps == week:
				gotWeek = len(r.Frequencies)
			case r.PeriodSteps != day:
				t.Errorf("%s: a rhythm of %.2f steps: %v", tc.name, r.PeriodSteps, fmt.Sprint(rhythms))
			}
		}
		if gotWeek != tc.wantWeek {
			t.Errorf("%s: the week has %d frequencies, want %d: %v", tc.name, gotWeek, tc.wantWeek, fmt.Sprint(rhythms))
		}
		if len(m.Meta.Peaks) != 2+tc.wantWeek {
			t.Errorf("%s: %d peaks placed, want the day's 2 and the week's %d", tc.name, len(m.Meta.Peaks), tc.wantWeek)
		}
	}
}
