package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestCalendarSidebands: a peak that placement left out is kept when it is
// a harmonic of the week within 1/L of a daily harmonic (the week's own
// line too, measured a little longer or shorter than the week) and the day
// (or the week) was found; not when it is off the weekly comb, on the day's own
// comb, farther than 1/L from every daily line, already placed, when the
// rows hold the week fewer than four times, without a found day or week,
// or without a cadence. Cadences, row counts and lines are drawn at random.
func TestCalendarSidebands(t *testing.T) {
	const L = 96
	rng := rand.New(rand.NewPCG(5, 6))
	for range 60 {
		cadence := []time.Duration{5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}[rng.IntN(5)]
		day := float64(24*time.Hour) / float64(cadence)
		week := 7 * day
		rows := int(week * (2 + 24*rng.Float64()))
		opts := RhythmOptions{Rows: rows, Cadence: cadence}
		tol := 0.6 / float64(rows)
		j := 1 + rng.IntN(3)
		weekly := func(k int) float64 { return float64(k) / week }
		// A measured line misses its harmonic by up to half the tolerance,
		// either way: the week's own line may lie a little longer than the
		// week.
		measured := func(k int) float64 { return weekly(k) + 0.5*tol*(2*rng.Float64()-1) }
		// Beside the day's line j: a weekly line m away, for m = 1 … 4 (the
		// 4th is 3 from the next daily line); and the week's own line, 6
		// from the day's (within 1/L of it from a 15-minute cadence).
		peaks := []Peak{{Frequency: 1 / day, Share: 0.5}}
		var want []bool
		for m := 1; m <= 5; m++ {
			sign := []int{-1, 1}[rng.IntN(2)]
			k := 7*j + sign*m
			if m == 5 {
				k = 1
			}
			peaks = append(peaks, Peak{Frequency: measured(k), Share: 0.01})
			nearest := math.Inf(1) // weekly lines to the nearest daily harmonic
			for d := 1; d <= j+1; d++ {
				nearest = min(nearest, math.Abs(float64(k-7*d)))
			}
			want = append(want, nearest/week < 1.0/L && week <= float64(rows)/4)
		}
		off := weekly(7*j+1) + (1.5+rng.Float64())*tol // off the weekly comb
		peaks = append(peaks, Peak{Frequency: off, Share: 0.01}, Peak{Frequency: float64(j) / day, Share: 0.01})
		want = append([]bool{false}, append(want, false, false)...)
		placed := make([]int, len(peaks))
		for i := range placed {
			placed[i] = -1
		}
		placed[0] = 0
		// One more sideband, placed already.
		peaks = append(peaks, Peak{Frequency: weekly(7*j + 1), Share: 0.02})
		placed = append(placed, len(peaks)-1)
		want = append(want, false)
		pl := Placement{Peaks: peaks, Placed: placed}
		name := fmt.Sprintf("cadence %v, rows %d, beside daily harmonic %d", cadence, rows, j)
		marked := func(got []bool) []bool {
			if got == nil {
				return make([]bool, len(peaks))
			}
			return got
		}

		for _, found := range []Rhythm{{PeriodSteps: day}, {PeriodSteps: week}} {
			if got := marked(calendarSidebands(peaks, pl, []Rhythm{found}, opts, L)); !slices.Equal(got, want) {
				t.Errorf("%s, found %.0f steps: marked %v, want %v", name, found.PeriodSteps, got, want)
			}
		}
		if got := calendarSidebands(peaks, pl, []Rhythm{{PeriodSteps: math.Pi * 10}}, opts, L); got != nil {
			t.Errorf("%s, neither day nor week found: marked %v", name, got)
		}
		if got := calendarSidebands(peaks, pl, []Rhythm{{PeriodSteps: day}}, RhythmOptions{Rows: rows}, L); got != nil {
			t.Errorf("%s, no cadence: marked %v", name, got)
		}
	}
}

// TestPlaceRhythmsDropsLoneSidebands: the calendar sidebands that join no
// calendar rhythm go back out. Three sidebands of the week beside the day
// make the week; a single one makes none, so it is left out as before
// and no rhythm of its own is named after it.
func TestPlaceRhythmsDropsLoneSidebands(t *testing.T) {
	const day, week, rows = 144.0, 1008.0, 6000 // 10-minute cadence
	opts := RhythmOptions{Rows: rows, Cadence: 10 * time.Minute}
	dayLines := []Peak{{Frequency: 1 / day, Share: 0.6}, {Frequency: 2 / day, Share: 0.2}}
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
			peaks = append(peaks, Peak{Frequency: float64(k) / week, Share: 0.02})
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
				t.Errorf("%s: a rhythm of %.2f steps: %v", tc.name, r.PeriodSteps, describeRhythms(rhythms))
			}
		}
		if gotWeek != tc.wantWeek {
			t.Errorf("%s: the week has %d frequencies, want %d: %v", tc.name, gotWeek, tc.wantWeek, describeRhythms(rhythms))
		}
		if len(m.Meta.Peaks) != 2+tc.wantWeek {
			t.Errorf("%s: %d peaks placed, want the day's 2 and the week's %d", tc.name, len(m.Meta.Peaks), tc.wantWeek)
		}
	}
}
