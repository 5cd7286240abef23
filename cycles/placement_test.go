package cycles

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
		name := fmt.Sprintf("cadence %v, rows %d, beside daily harmonic %d", cadence, rows, j)
		marked := func(got []bool) []bool {
			if got == nil {
				return make([]bool, len(peaks))
			}
			return got
		}

		for _, found := range []Rhythm{{PeriodSteps: day}, {PeriodSteps: week}} {
			if got := marked(CalendarSidebands(peaks, placed, []Rhythm{found}, opts, L)); !slices.Equal(got, want) {
				t.Errorf("%s, found %.0f steps: marked %v, want %v", name, found.PeriodSteps, got, want)
			}
		}
		if got := CalendarSidebands(peaks, placed, []Rhythm{{PeriodSteps: math.Pi * 10}}, opts, L); got != nil {
			t.Errorf("%s, neither day nor week found: marked %v", name, got)
		}
		if got := CalendarSidebands(peaks, placed, []Rhythm{{PeriodSteps: day}}, RhythmOptions{Rows: rows}, L); got != nil {
			t.Errorf("%s, no cadence: marked %v", name, got)
		}
	}
}
