package wire

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestStepClock: the step times written one from the other are the bytes
// appendTime writes for each step, over seeded random starts (midnights,
// month and year ends, leap days, fractions of a second, years at the ends
// of RFC 3339's range) and cadences (whole seconds or not, a day or more).
func TestStepClock(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	starts := []time.Time{
		time.Date(2024, 2, 28, 23, 0, 0, 0, time.UTC),
		time.Date(2023, 12, 31, 22, 45, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 20, 0, 0, 0, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 29, 0, 30, 0, 0, time.FixedZone("CEST", 2*3600)),
		time.Date(2026, 11, 27, 23, 59, 59, 500_000_000, time.UTC),
	}
	for range 300 {
		starts = append(starts, time.Unix(r.Int64N(400*365*86400)-100*365*86400, 0).UTC())
	}
	cadences := []time.Duration{time.Second, 7 * time.Second, time.Minute, 15 * time.Minute, time.Hour,
		23*time.Hour + 59*time.Minute + 59*time.Second, 24 * time.Hour, 36 * time.Hour, 1500 * time.Millisecond}
	for range 20 {
		cadences = append(cadences, time.Duration(1+r.IntN(86400*2))*time.Second)
	}
	var got, want []byte
	for _, ts := range starts {
		for _, cad := range cadences {
			f := &Forecast{TS: ts, Cadence: cad, Horizon: 200}
			var c stepClock
			c.start(f)
			for h := range f.Horizon {
				got = c.append(got[:0], f, h)
				want = appendTime(want[:0], f.StepTime(h))
				if string(got) != string(want) {
					t.Fatalf("start %v, cadence %v, step %d: wrote %s, want %s", ts, cad, h, got, want)
				}
			}
		}
	}
}
