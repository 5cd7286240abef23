package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
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

// TestSpectrumBridgesShortGaps: a series cut into segments by gaps longer
// than max_gap but short beside the rows around them (seeded: 2 to 4 gaps
// of 4 to 12 steps in 1,500 hourly steps) gives the spectrum one run of its
// whole training span, each segment's rows as they are and each gap on the
// line between its ends; a gap of a third of the span cuts the series.
func TestSpectrumBridgesShortGaps(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 21))
		b, err := NewPanelBuilder(PanelConfig{Name: "gaps", Fields: []string{"v"}, Cadence: time.Hour, MaxGap: 3})
		if err != nil {
			t.Fatal(err)
		}
		const steps = 1500
		missing := map[int]bool{}
		long := seed%4 == 3 // one gap of a third of the span instead
		if long {
			for k := 300; k < 800; k++ {
				missing[k] = true
			}
		} else {
			for range 2 + rng.IntN(3) {
				at, n := 100+rng.IntN(steps-300), 4+rng.IntN(9)
				for k := at; k < at+n; k++ {
					missing[k] = true
				}
			}
		}
		value := func(k int) float64 { return math.Sin(2*math.Pi*float64(k)/168) + 0.1*float64(k%24) }
		for k := range steps {
			if !missing[k] {
				b.Add("only", int64(k)*int64(time.Hour/time.Millisecond), []float64{value(k)})
			}
		}
		p, err := b.Build(48)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Segments) < 2 {
			t.Fatalf("seed %d: %d segments; the gaps do not cut the series", seed, len(p.Segments))
		}
		pb, err := p.Split(24, 24, true)
		if err != nil {
			t.Fatal(err)
		}
		rows, width := pb.Train.SpectrumRows()
		span := int(pb.TrainEnd)
		if long {
			if width != 2 || len(rows) != 2*250 {
				t.Fatalf("seed %d: %d rows in %d columns, want the two sides of a gap of 500 steps side by side, 250 rows each", seed, len(rows), width)
			}
			continue
		}
		if width != 1 || len(rows) != span {
			t.Fatalf("seed %d: the spectrum reads %d rows in %d columns, want the %d training steps in one", seed, len(rows), width, span)
		}
		sc := pb.Scaler
		if pb.PerSeries {
			sc = fitScalerOf(t, p, pb)
		}
		for k := range span {
			if missing[k] {
				lo, hi := k, k
				for missing[lo] {
					lo--
				}
				for missing[hi] {
					hi++
				}
				a, z := rows[lo], rows[hi]
				if want := a + (z-a)*float64(k-lo)/float64(hi-lo); math.Abs(rows[k]-want) > 1e-12 {
					t.Fatalf("seed %d: filled step %d = %v, want %v on the line across the gap", seed, k, rows[k], want)
				}
				continue
			}
			if want := sc.Transform(nil, []float64{value(k)})[0]; math.Abs(rows[k]-want) > 1e-12 {
				t.Fatalf("seed %d: step %d = %v, want the reading %v", seed, k, rows[k], want)
			}
		}
	}
}

// fitScalerOf is the scaler Split fits to the panel's one series.
func fitScalerOf(t *testing.T, p *Panel, pb *PanelBenchmark) Scaler {
	t.Helper()
	var rows []float64
	for _, s := range p.Segments {
		n := min(max(pb.TrainEnd-s.Start, 0), int64(s.Rows(1)))
		rows = append(rows, s.Values[:n]...)
	}
	return fitScaler(rows, 1, Range{0, len(rows)})
}

// TestAlignIgnoresResends: readings sent twice at the same time share a
// step under either alignment and do not hide a schedule's jitter: with
// up to 30% of them sent again, the panel still finds AlignNearest.
func TestAlignIgnoresResends(t *testing.T) {
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 31))
		f := scheduleFeed{cadence: time.Hour, jitter: 0.2, resent: 0.05 + 0.25*rng.Float64(), steps: 500}
		b, err := NewPanelBuilder(PanelConfig{Name: "resent", Fields: []string{"v"}, MaxGap: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, resent := f.add(b, rng, 4)
		p, err := b.Build(50)
		if err != nil {
			t.Fatal(err)
		}
		if p.Align != AlignNearest || p.Report.Duplicates != resent || p.Report.Collisions != 0 {
			t.Errorf("seed %d (%.0f%% sent twice): align %s, %d duplicates, %d collisions; want nearest, %d (the resent), 0",
				seed, 100*f.resent, p.Align, p.Report.Duplicates, p.Report.Collisions, resent)
		}
	}
}

// TestWideScheduleOnServeSteps: a wide file whose dates straddle the step
// times is read on the nearest step and dated on the step times serve
// uses, multiples of the cadence since the Unix epoch: weekly readings due
// Thursdays 00:00 UTC (the epoch's weekday) stamped up to 5% of a week
// off, and hourly readings on the hour but a third of them 2 s early,
// whose intervals are mostly exactly an hour.
func TestWideScheduleOnServeSteps(t *testing.T) {
	start := time.Date(2024, 1, 4, 0, 0, 0, 0, time.UTC) // a Thursday
	for _, tc := range []struct {
		name    string
		cadence time.Duration
		off     func(rng *rand.Rand) time.Duration
	}{
		{"weekly, ±5%", 7 * 24 * time.Hour, func(rng *rand.Rand) time.Duration {
			return time.Duration((0.1*rng.Float64() - 0.05) * float64(7*24*time.Hour)).Truncate(time.Second)
		}},
		{"hourly, a third 2 s early", time.Hour, func(rng *rand.Rand) time.Duration {
			if rng.IntN(3) == 0 {
				return -2 * time.Second
			}
			return 0
		}},
	} {
		rng := rand.New(rand.NewPCG(4, 4))
		var b strings.Builder
		b.WriteString("date,v\n")
		const rows = 200
		for r := range rows {
			at := start.Add(time.Duration(r)*tc.cadence + tc.off(rng))
			fmt.Fprintf(&b, "%s,%d\n", at.Format("2006-01-02 15:04:05"), r)
		}
		f, err := ReadCSV(strings.NewReader(b.String()), "schedule.csv")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if f.Cadence != tc.cadence || f.Align != AlignNearest || f.Rows() != rows {
			t.Fatalf("%s: cadence %v, align %q, %d rows; want %v, nearest, %d", tc.name, f.Cadence, f.Align, f.Rows(), tc.cadence, rows)
		}
		for r, at := range f.Times {
			if want := start.Add(time.Duration(r) * tc.cadence); !at.Equal(want) || at.UnixMilli()%tc.cadence.Milliseconds() != 0 {
				t.Fatalf("%s: row %d is dated %v, want %v", tc.name, r, at, want)
			}
		}
	}
}

// TestLateInStep: readings all stamped a moment before the next step put
// floor on every step consistently, so floor is kept, but the report
// counts them for the user to decide; on-time and mid-step stamps count
// none.
func TestLateInStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset float64 // of a step, every reading
		late   bool
	}{{"2 s early", -2.0 / 3600, true}, {"on time", 0, false}, {"mid-step", 0.5, false}} {
		b, err := NewPanelBuilder(PanelConfig{Name: "late", Fields: []string{"v"}})
		if err != nil {
			t.Fatal(err)
		}
		f := scheduleFeed{cadence: time.Hour, offset: tc.offset, steps: 200}
		f.add(b, rand.New(rand.NewPCG(1, 1)), 3)
		p, err := b.Build(50)
		if err != nil {
			t.Fatal(err)
		}
		if p.Align != AlignFloor || (p.Report.LateInStep > 0) != tc.late || tc.late && p.Report.LateInStep != 600 {
			t.Errorf("%s: align %s, %d late in their step; want floor and %v", tc.name, p.Align, p.Report.LateInStep, tc.late)
		}
	}
}
