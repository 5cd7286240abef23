package dataset

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// scheduleFeed is a seeded long-format feed: series sensors read every
// cadence on a schedule at offset into the step, each stamp moved by up to
// ±jitter of a step (uniform), a share of the readings missing (never two
// in a row, so that max gap 1 fills every hole) and some sent twice at the
// same time. Each reading's value is its step index, so that a panel shows
// which step every reading went to.
type scheduleFeed struct {
	cadence        time.Duration
	offset, jitter float64 // fractions of a step
	missing        float64 // share of steps without a reading
	resent         float64 // share of readings sent twice
	steps          int
}

// add feeds f's readings to b in a seeded random order and returns the
// missing steps and the readings sent twice.
func (f scheduleFeed) add(b *PanelBuilder, rng *rand.Rand, series int) (missing, resent int) {
	type reading struct {
		series string
		ms     int64
		v      float64
	}
	var rs []reading
	c := f.cadence.Milliseconds()
	k0 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).UnixMilli() / c
	for s := range series {
		name := fmt.Sprintf("s%02d", s)
		skipped := false
		for k := k0; k < k0+int64(f.steps); k++ {
			if !skipped && k > k0 && k < k0+int64(f.steps)-1 && rng.Float64() < f.missing {
				skipped = true
				missing++
				continue
			}
			skipped = false
			ms := k*c + int64((f.offset+(2*rng.Float64()-1)*f.jitter)*float64(c))
			rs = append(rs, reading{name, ms, float64(k)})
			if rng.Float64() < f.resent {
				rs = append(rs, reading{name, ms, float64(k)})
				resent++
			}
		}
	}
	rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
	for _, r := range rs {
		b.Add(r.series, r.ms, []float64{r.v})
	}
	return missing, resent
}

// TestPanelJitteredSchedule: readings of sensors on a schedule whose stamps
// jitter around the step times (up to ±40% of a step, some a moment early)
// go each onto its own step: the cadence is inferred exactly, AlignNearest
// is found, no reading is counted a duplicate but those sent twice, the
// filled steps are the missing ones, and every step holds its own reading.
// Feeds that floor already reads right (exact stamps, a schedule at an
// offset into the step, readings anywhere in their step) keep AlignFloor.
func TestPanelJitteredSchedule(t *testing.T) {
	cadences := []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, time.Hour}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 3))
		f := scheduleFeed{cadence: cadences[rng.IntN(len(cadences))], steps: 150 + rng.IntN(300),
			missing: 0.05 * rng.Float64(), resent: 0.02 * rng.Float64()}
		wantAlign := AlignNearest
		switch kind := seed % 4; kind {
		case 0, 1: // jitter around the step time
			f.jitter = 0.005 + 0.395*rng.Float64()
		case 2: // exact stamps, or a schedule at an offset with little jitter
			f.offset = float64(rng.IntN(4)) * 0.22
			f.jitter = 0.02 * rng.Float64() * f.offset
			wantAlign = AlignFloor
		case 3: // readings anywhere in their step (input.cadence given: no schedule to find it from)
			f.offset, f.jitter = 0.5, 0.499
			wantAlign = AlignFloor
		}
		given := time.Duration(0)
		if f.offset == 0.5 {
			given = f.cadence
		}
		name := fmt.Sprintf("seed %d: %v, offset %.2f, jitter ±%.3f", seed, f.cadence, f.offset, f.jitter)
		t.Run(name, func(t *testing.T) {
			b, err := NewPanelBuilder(PanelConfig{Name: "feed", Fields: []string{"v"}, MaxGap: 1, Cadence: given})
			if err != nil {
				t.Fatal(err)
			}
			series := 1 + rng.IntN(8)
			missing, resent := f.add(b, rng, series)
			p, err := b.Build(50)
			if err != nil {
				t.Fatal(err)
			}
			if p.Cadence != f.cadence || p.Align != wantAlign {
				t.Fatalf("cadence %v, align %s; want %v and %s", p.Cadence, p.Align, f.cadence, wantAlign)
			}
			if wantAlign == AlignFloor && f.offset == 0.5 {
				return // readings anywhere in the step: floor keeps its step, the counts below are the feed's chance
			}
			rep := p.Report
			if rep.Duplicates != resent || rep.Filled != missing || rep.Restarts != 0 || len(p.Segments) != series {
				t.Fatalf("%d duplicates, %d filled, %d restarts, %d segments; want %d (sent twice), %d (missing), 0, %d",
					rep.Duplicates, rep.Filled, rep.Restarts, len(p.Segments), resent, missing, series)
			}
			// A filled step lies halfway between its neighbours, whose
			// values are their step indices: it holds its own index too.
			for _, sg := range p.Segments {
				for r, v := range sg.Values {
					if want := float64(sg.Start + int64(r)); v != want {
						t.Fatalf("series %s: step %v holds the reading of step %v", sg.Series, want, v)
					}
				}
			}
		})
	}
}
