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
// a harmonic of the week within 1/L of a daily harmonic and the day (or
// the week) was found; not when it is off the weekly comb, on the day's own
// comb, farther than 1/L from every daily line, without a found day or
// week, or without a cadence. Cadences, row counts and lines are drawn at
// random.
func TestCalendarSidebands(t *testing.T) {
	const L = 96
	rng := rand.New(rand.NewPCG(5, 6))
	for range 60 {
		cadence := []time.Duration{5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}[rng.IntN(5)]
		day := float64(24*time.Hour) / float64(cadence)
		week := 7 * day
		rows := int(week * (6 + 20*rng.Float64()))
		opts := RhythmOptions{Rows: rows, Cadence: cadence}
		tol := 0.6 / float64(rows)
		j := 1 + rng.IntN(3)
		weekly := func(k int) float64 { return float64(k) / week }
		// Beside the day's line j: a weekly line m away, for m = 1 … 4 (the
		// 4th is 3 from the next daily line).
		peaks := []Peak{{Frequency: 1 / day, Share: 0.5}}
		var want []bool
		for m := 1; m <= 4; m++ {
			sign := []int{-1, 1}[rng.IntN(2)]
			k := 7*j + sign*m
			peaks = append(peaks, Peak{Frequency: weekly(k), Share: 0.01})
			nearest := math.Inf(1) // weekly lines to the nearest daily harmonic
			for d := 1; d <= j+1; d++ {
				nearest = min(nearest, math.Abs(float64(k-7*d)))
			}
			want = append(want, nearest/week < 1.0/L)
		}
		off := weekly(7*j+1) + (1.5+rng.Float64())*tol // off the weekly comb
		peaks = append(peaks, Peak{Frequency: off, Share: 0.01}, Peak{Frequency: float64(j) / day, Share: 0.01})
		want = append([]bool{false}, append(want, false, false)...)
		placed := make([]int, len(peaks))
		for i := range placed {
			placed[i] = -1
		}
		placed[0] = 0
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
