package window

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// jittered returns n steps of readings of series "a", one a step, each
// stamped at its step time moved by up to ±frac of a step (uniform), with
// the value k so that a window shows which readings it holds.
func jittered(rng *rand.Rand, n int64, frac float64) []rd {
	rs := make([]rd, 0, n)
	for k := int64(0); k < n; k++ {
		ts := k*hour + int64((2*rng.Float64()-1)*frac*float64(hour))
		rs = append(rs, rd{series: "a", ts: ts, ingest: ts + 1000, values: []float64{float64(k)}})
	}
	return rs
}

// TestAlignNearest: readings of a schedule whose stamps jitter around the
// step times, up to 45% of a step either way, land each on its own step
// with AlignNearest: every window holds exactly the readings of its steps,
// with no duplicate, no filled gap and no restart. The same feed with
// AlignFloor puts the early ones a step early (the failure AlignNearest
// exists for), which the test checks too so that it cannot pass vacuously.
func TestAlignNearest(t *testing.T) {
	const l = 8
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 11))
		frac := 0.01 + 0.44*rng.Float64()
		rs := jittered(rng, 200, frac)
		t.Run(fmt.Sprintf("seed %d jitter %.0f%%", seed, 100*frac), func(t *testing.T) {
			cfg := configWith(func(c *Config) { c.MaxGap = 3 })
			s := mustNew(t, Shape{Lookback: l, Fields: one, Cadence: time.Hour, Align: AlignNearest}, cfg)
			got := feed(t, s, one, rs)
			if st := s.Stats(); st.Duplicates != 0 || st.GapFilled != 0 || st.Restarts != 0 {
				t.Fatalf("nearest: %d duplicates, %d filled steps, %d restarts; want none", st.Duplicates, st.GapFilled, st.Restarts)
			}
			if len(got) != 200-l+1 {
				t.Fatalf("nearest: %d windows, want %d", len(got), 200-l+1)
			}
			for _, w := range got {
				for j, v := range w.values {
					if want := float64(w.end - l + 1 + int64(j)); v != want {
						t.Fatalf("nearest: window ending at step %d holds %v, want the readings of steps %d to %d", w.end, w.values, w.end-l+1, w.end)
					}
				}
			}

			floor := mustNew(t, Shape{Lookback: l, Fields: one, Cadence: time.Hour, Align: AlignFloor}, cfg)
			feed(t, floor, one, rs)
			if st := floor.Stats(); st.Duplicates == 0 {
				t.Fatalf("floor: no duplicates from stamps jittered by %.0f%% of a step; the feed does not test the alignment", 100*frac)
			}
		})
	}
}

// TestAlignOffset pins where the steps' edges fall.
func TestAlignOffset(t *testing.T) {
	for _, tc := range []struct {
		align   Align
		cadence time.Duration
		ms      int64
		step    int64
	}{
		{"", time.Hour, hour - 1, 0},
		{AlignFloor, time.Hour, hour, 1},
		{AlignFloor, time.Hour, -1, -1},
		{AlignNearest, time.Hour, hour/2 - 1, 0},
		{AlignNearest, time.Hour, hour / 2, 1},
		{AlignNearest, time.Hour, -hour / 2, 0},
		{AlignNearest, time.Hour, -hour/2 - 1, -1},
		{AlignNearest, 3 * time.Millisecond, 1, 0}, // half of 3 ms is 1 ms
		{AlignNearest, 3 * time.Millisecond, 2, 1},
	} {
		s := mustNew(t, Shape{Lookback: 2, Fields: one, Cadence: tc.cadence, Align: tc.align}, DefaultConfig())
		if got := s.step(tc.ms); got != tc.step {
			t.Errorf("%q, cadence %v: time %d ms is in step %d, want %d", tc.align, tc.cadence, tc.ms, got, tc.step)
		}
	}
}
