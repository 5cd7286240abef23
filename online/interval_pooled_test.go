package online

import (
	"math"
	"testing"
	"time"
)

// TestFarStepsTakeTheLongRunLevel: a band issued while a series' errors
// are four times their long-run size (a burst) is that much wider at its
// first steps and narrows towards the long-run size along the horizon; one
// issued while they are half of it widens towards it; a series without a
// long-run level of its own yet keeps the level of the moment at every
// step. The width is read in units of the horizon shape, so what is left
// is the level the band was issued with.
func TestFarStepsTakeTheLongRunLevel(t *testing.T) {
	const H = 96
	for _, tc := range []struct {
		name      string
		now, long float64
		longW     float64
	}{
		{"burst", 4, 1, longErrors},
		{"quiet", 0.5, 1, longErrors},
		{"no long-run level yet", 4, 1, longErrors - 1},
	} {
		iv := newIntervals([]float64{0.8, 0.95}, 0.01, H, 1, 256, UnitErrorQuantiles(H), time.Hour, time.UTC)
		s := iv.newSeries()
		s.level[0], s.fast[0], s.long[0], s.longW[0] = tc.now, tc.now, tc.long, tc.longW
		s.maxAbs[0] = 1e9 // no cap from the largest error
		if !iv.offsets(s, 0, []float64{1}) {
			t.Fatalf("%s: no offsets", tc.name)
		}
		level := make([]float64, H) // the width in units of the horizon shape and κ
		for h := range H {
			level[h] = (iv.below[h] + iv.above[h]) / (iv.m[h] * (s.lo[0] + s.hi[0]) * iv.gain[0])
		}
		mixed := tc.longW >= longErrors
		for h := range H {
			want := tc.now
			if mixed {
				rho := math.Exp(-float64(h+1) / levelMemory)
				want = rho*tc.now + (1-rho)*tc.long
			}
			if math.Abs(level[h]-want) > 1e-9*want {
				t.Errorf("%s: step %d is issued with level %.6f, want %.6f", tc.name, h, level[h], want)
			}
		}
		first, last := level[0], level[H-1]
		t.Logf("%s: level %.3f at the first step, %.3f at the last", tc.name, first, last)
		switch {
		case mixed && tc.now > tc.long && !(first > 3.5 && last < 2.5):
			t.Errorf("%s: a burst's band is issued with %.2f at the first step and %.2f at step %d; want near 4 and below 2.5", tc.name, first, last, H)
		case mixed && tc.now < tc.long && !(first < 0.6 && last > 0.8):
			t.Errorf("%s: a quiet band is issued with %.2f at the first step and %.2f at step %d; want near 0.5 and above 0.8", tc.name, first, last, H)
		case !mixed && first != last:
			t.Errorf("%s: without a long-run level the band's level moves along the horizon (%.3f to %.3f)", tc.name, first, last)
		}
	}
}
