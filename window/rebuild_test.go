package window

import (
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// replay appends rs to s with a nil Batch: state only.
func replay(tb testing.TB, s *Set, rs []rd) {
	tb.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(tb, 0)
	rec := newRecord(tb, mem, readingsSchema("value"), rs)
	defer rec.Release()
	if err := s.Append(rec, nil, nil); err != nil {
		tb.Fatal(err)
	}
}

// TestRebuildFromPartOfTheHistory: a Set that replays only the readings of
// the last L + max_gap + lateness steps before a cut (with a nil Batch, as
// the pipeline does when a partition is assigned) and then takes the
// readings after the cut emits exactly the windows, bit for bit, that a Set
// which saw the whole history emits after the cut: gaps, restarts, late
// and duplicate readings and a stride included.
func TestRebuildFromPartOfTheHistory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		l     int           // the Lookback
		edit  func(*Config) // of DefaultConfig
		align Align         // with AlignNearest, stamps jitter by up to 45% of a step
	}{
		{"stride 1, lateness 2 steps", 8, func(c *Config) { c.MaxGap, c.AllowedLateness = 2, 2*time.Hour }, AlignFloor},
		{"stride 3, hold fill", 6, func(c *Config) { c.MaxGap, c.Stride, c.Fill, c.AllowedLateness = 3, 3, FillHold, time.Hour }, AlignFloor},
		{"restart on any gap", 5, func(c *Config) { c.MaxGap = 0 }, AlignFloor},
		{"nearest step, jittered stamps", 8, func(c *Config) { c.MaxGap, c.AllowedLateness = 2, 2*time.Hour }, AlignNearest},
		{"nearest step, stride 3, restart on any gap", 6, func(c *Config) { c.MaxGap, c.Stride = 0, 3 }, AlignNearest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shape, cfg := Shape{Lookback: tc.l, Fields: one, Cadence: time.Hour, Align: tc.align}, configWith(tc.edit)
			rng := rand.New(rand.NewPCG(7, 7))
			at := at
			if tc.align == AlignNearest {
				at = func(series string, k int64, values ...float64) rd {
					r := rd{series: series, ts: k*hour + int64((0.9*rng.Float64()-0.45)*float64(hour)), values: values}
					r.ingest = r.ts + 1000
					return r
				}
			}
			// A history of 6 series over 300 steps: mostly in order, with
			// gaps of 1-6 steps, duplicates and late readings.
			var hist []rd
			for k := int64(0); k < 300; k++ {
				for s := range 6 {
					name := string(rune('a' + s))
					switch r := rng.Float64(); {
					case r < 0.1:
						continue // a missing step
					case r < 0.13:
						hist = append(hist, at(name, k, rng.NormFloat64()), at(name, k, rng.NormFloat64())) // duplicate
					case r < 0.17 && k > 2:
						hist = append(hist, at(name, k, rng.NormFloat64()), at(name, k-1-rng.Int64N(3), rng.NormFloat64())) // late
					default:
						hist = append(hist, at(name, k, rng.NormFloat64()))
					}
				}
			}
			lateSteps := int64(cfg.AllowedLateness / time.Hour)
			span := int64(tc.l) + int64(cfg.MaxGap) + lateSteps + 1
			for _, cut := range []int{len(hist) / 3, len(hist) / 2, len(hist) - 40} {
				full := mustNew(t, shape, cfg)
				replay(t, full, hist[:cut])
				want := feed(t, full, one, hist[cut:])

				// The rebuilt Set reads back from the first reading whose
				// step is at least span steps before the newest step at the
				// cut. With AlignNearest it reads back span steps of time
				// before the newest time, as the consumer does: that holds
				// every step from the newest but span − 1 on, as with
				// AlignFloor, though a step's readings may be stamped half
				// a step before its time (the newest one may be too).
				from := 0
				if tc.align == AlignNearest {
					newestMs := int64(math.MinInt64)
					for _, r := range hist[:cut] {
						newestMs = max(newestMs, r.ts)
					}
					for from < cut && hist[from].ts < newestMs-span*hour {
						from++
					}
				} else {
					newest := int64(math.MinInt64)
					for _, r := range hist[:cut] {
						newest = max(newest, r.ts/hour)
					}
					for from < cut && hist[from].ts/hour < newest-span {
						from++
					}
				}
				rebuilt := mustNew(t, shape, cfg)
				replay(t, rebuilt, hist[from:cut])
				got := feed(t, rebuilt, one, hist[cut:])
				if !equalWins(got, want) {
					t.Fatalf("cut at %d, rebuilt from %d: %d windows after the cut, want %d; first difference:\n%s",
						cut, from, len(got), len(want), firstDiff(got, want))
				}
				if len(want) == 0 {
					t.Fatal("no windows after the cut: the test tests nothing")
				}
			}
		})
	}
}

func firstDiff(got, want []win) string {
	for i := range min(len(got), len(want)) {
		if !equalWins(got[i:i+1], want[i:i+1]) {
			return "got  " + got[i].String() + "\nwant " + want[i].String()
		}
	}
	return "one is a prefix of the other"
}

// TestBudgetIsShared: Sets that share a Budget share its cap, expiry and
// Reset give room back, and a Set without one has its own cap.
func TestBudgetIsShared(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)}
	b := NewBudget(3)
	shape := Shape{Lookback: 2, Fields: one, Cadence: time.Hour}
	cfg := configWith(func(c *Config) { c.MaxSeries, c.SeriesTTL = 1000, time.Hour })
	s1 := mustNew(t, shape, cfg, WithBudget(b), WithClock(clk.now), WithLogger(slog.New(slog.DiscardHandler)))
	s2 := mustNew(t, shape, cfg, WithBudget(b), WithClock(clk.now), WithLogger(slog.New(slog.DiscardHandler)))
	feed(t, s1, one, []rd{at("a", 0, 1), at("b", 0, 1)})
	feed(t, s2, one, []rd{at("c", 0, 1), at("d", 0, 1)})
	if a1, a2, used := s1.Stats().Active, s2.Stats().Active, b.Used(); a1 != 2 || a2 != 1 || used != 3 {
		t.Fatalf("Active %d + %d, budget used %d; want 2 + 1 = 3 (the fourth series over the shared cap of 3)", a1, a2, used)
	}
	if got := s2.Stats().Rejected; got != 1 {
		t.Errorf("s2 rejected %d readings, want 1", got)
	}
	s1.Reset()
	if got := b.Used(); got != 1 {
		t.Errorf("after Reset the budget holds %d series, want 1", got)
	}
	feed(t, s2, one, []rd{at("d", 1, 1), at("e", 1, 1)})
	clk.advance(2 * time.Hour)
	if n := s2.Expire(clk.now()); n != 3 || b.Used() != 0 {
		t.Errorf("Expire() = %d, budget used %d after; want 3 and 0", n, b.Used())
	}
}

// TestOutOfRange: a value far outside the range of its series' window is
// refused and reported by row, and changes nothing; big but plausible
// changes are accepted; a series of zeros has no scale and accepts all.
func TestOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []rd
		wantOOR []int
		wantWin int
	}{
		{"1e300 among values near 20", []rd{at("a", 0, 20), at("a", 1, 21), at("a", 2, 1e300), at("a", 3, 22)}, []int{2}, 2},
		{"-1e300 too", []rd{at("a", 0, 20), at("a", 1, 21), at("a", 2, -1e300)}, []int{2}, 1},
		{"a duplicate is checked", []rd{at("a", 0, 20), at("a", 1, 21), at("a", 1, 1e9)}, []int{2}, 1},
		{"a tenfold step is accepted", []rd{at("a", 0, 20), at("a", 1, 21), at("a", 2, 210)}, nil, 2},
		{"rain: 0.001 then 5 is accepted", []rd{at("a", 0, 0.001), at("a", 1, 0), at("a", 2, 5)}, nil, 2},
		{"zeros have no scale", []rd{at("a", 0, 0), at("a", 1, 0), at("a", 2, 1e12)}, nil, 2},
		{"the first reading of a series is not judged", []rd{at("a", 0, 1e300), at("a", 1, 1e300)}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, Shape{Lookback: 2, Fields: one, Cadence: time.Hour}, DefaultConfig())
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec := newRecord(t, mem, readingsSchema("value"), tc.in)
			defer rec.Release()
			var out Batch
			if err := s.Append(rec, nil, &out); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out.OutOfRange, tc.wantOOR) {
				t.Errorf("OutOfRange = %v, want %v", out.OutOfRange, tc.wantOOR)
			}
			if out.Len() != tc.wantWin {
				t.Errorf("%d windows, want %d", out.Len(), tc.wantWin)
			}
			for i := range out.Len() {
				for _, v := range out.Window(i) {
					if math.Abs(v) > 1e12 && len(tc.wantOOR) > 0 {
						t.Errorf("window %d holds %v: the refused reading reached it", i, v)
					}
				}
			}
			if got := s.Stats().OutOfRange; got != uint64(len(tc.wantOOR)) {
				t.Errorf("Stats().OutOfRange = %d, want %d", got, len(tc.wantOOR))
			}
		})
	}
}

// TestTooLate: a reading too late to update its step is listed by row in
// Batch.TooLate (window.late: dead_letter, the default) or only counted
// (drop), and a rebuild (no Batch) lists nothing; a late reading within
// the allowed lateness is neither.
func TestTooLate(t *testing.T) {
	in := []rd{at("a", 0, 0), at("a", 1, 1), at("a", 2, 2), at("a", 3, 3),
		at("a", 2, 20),               // within the hour of lateness: updates step 2
		at("a", 0, 10),               // three steps late: too late
		at("b", 5, 5), at("b", 4, 4), // before b's first step: too late
		at("a", 4, 4)}
	for _, tc := range []struct {
		name    string
		late    Late
		rebuild bool
		want    []int
	}{
		{"dead_letter lists the rows", LateDeadLetter, false, []int{5, 7}},
		{"the default is dead_letter", DefaultConfig().Late, false, []int{5, 7}},
		{"drop lists none", LateDrop, false, nil},
		{"a rebuild lists none", LateDeadLetter, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configWith(func(c *Config) { c.AllowedLateness, c.Late = time.Hour, tc.late })
			s := mustNew(t, Shape{Lookback: 2, Fields: one, Cadence: time.Hour}, cfg)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec := newRecord(t, mem, readingsSchema("value"), in)
			defer rec.Release()
			var out *Batch
			if !tc.rebuild {
				out = &Batch{}
			}
			if err := s.Append(rec, nil, out); err != nil {
				t.Fatal(err)
			}
			var got []int
			if out != nil {
				got = out.TooLate
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("TooLate = %v, want %v", got, tc.want)
			}
			// How late each was: a's step 0 three steps behind its step 3,
			// b's step 4 one behind its 5 (within the hour, but before b's
			// window).
			if tc.want != nil && !slices.Equal(out.TooLateBy, []int64{3, 1}) {
				t.Errorf("TooLateBy = %v, want [3 1]", out.TooLateBy)
			}
			if st := s.Stats(); st.LateDropped != 2 || st.LateUpdated != 1 {
				t.Errorf("LateDropped %d, LateUpdated %d; want 2 and 1", st.LateDropped, st.LateUpdated)
			}
		})
	}
}
