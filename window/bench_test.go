package window

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// stepRecord is a readings record with one row per (series, offset): the
// row of series i with offset d is at step k0+d. shift moves every reading
// by a number of steps in place, so one record can be fed again and again
// as new steps.
type stepRecord struct {
	rec    arrow.Record
	ts     []arrow.Timestamp
	ingest []arrow.Timestamp
}

func newStepRecord(tb testing.TB, mem memory.Allocator, nSeries, channels int, offsets ...int64) *stepRecord {
	tb.Helper()
	fields := make([]string, channels)
	for c := range fields {
		fields[c] = fmt.Sprintf("v%d", c)
	}
	if len(offsets) == 0 {
		offsets = []int64{0}
	}
	rs := make([]rd, 0, nSeries*len(offsets))
	for _, d := range offsets {
		for i := range nSeries {
			vals := make([]float64, channels)
			for c := range vals {
				vals[c] = float64(i*channels + c)
			}
			rs = append(rs, at(fmt.Sprintf("sensor-%06d", i), 1000+d, vals...))
		}
	}
	rec := newRecord(tb, mem, readingsSchema(fields...), rs)
	return &stepRecord{
		rec:    rec,
		ts:     rec.Column(1).(*array.Timestamp).TimestampValues(),
		ingest: rec.Column(2).(*array.Timestamp).TimestampValues(),
	}
}

func (r *stepRecord) shift(steps int64) {
	for j := range r.ts {
		r.ts[j] += arrow.Timestamp(steps * hour)
		r.ingest[j] += arrow.Timestamp(steps * hour)
	}
}

func fieldNames(c int) []string {
	fs := make([]string, c)
	for i := range fs {
		fs[i] = fmt.Sprintf("v%d", i)
	}
	return fs
}

func TestAppendAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		l        int           // the Lookback
		edit     func(*Config) // of DefaultConfig
		channels int
		offsets  []int64 // steps of each series' rows within the record
		shift    int64   // steps added to every reading before each run
		rows     func(n int) []int
		check    func(t *testing.T, st Stats, runs uint64)
	}{
		{
			name: "new step with a window", l: 96, channels: 1, shift: 1,
			check: func(t *testing.T, st Stats, runs uint64) { want(t, "Ready", st.Ready, 100*runs) },
		},
		{
			name: "three channels, stride 4", l: 24, edit: func(c *Config) { c.Stride = 4 }, channels: 3, shift: 1,
			check: func(t *testing.T, st Stats, runs uint64) { want(t, "Ready", st.Ready, 100*runs/4) },
		},
		{
			name: "gap filled", l: 8, channels: 2, shift: 3,
			check: func(t *testing.T, st Stats, runs uint64) { want(t, "GapFilled", st.GapFilled, 2*100*runs) },
		},
		{
			name: "gap held", l: 8, edit: func(c *Config) { c.Fill = FillHold }, channels: 2, shift: 3,
			check: func(t *testing.T, st Stats, runs uint64) { want(t, "GapFilled", st.GapFilled, 2*100*runs) },
		},
		{
			name: "restart", l: 1, channels: 1, shift: 10,
			check: func(t *testing.T, st Stats, runs uint64) { want(t, "Restarts", st.Restarts, 100*runs) },
		},
		{
			name: "duplicate", l: 4, channels: 1, shift: 0,
			check: func(t *testing.T, st Stats, runs uint64) { want(t, "Duplicates", st.Duplicates, 100*runs) },
		},
		{
			name: "late update", l: 4, edit: func(c *Config) { c.AllowedLateness = time.Hour }, channels: 1, offsets: []int64{0, -1}, shift: 1,
			check: func(t *testing.T, st Stats, runs uint64) { want(t, "LateUpdated", st.LateUpdated, 100*runs) },
		},
		{
			name: "late drop", l: 4, channels: 1, offsets: []int64{0, -1}, shift: 1,
			check: func(t *testing.T, st Stats, runs uint64) { want(t, "LateDropped", st.LateDropped, 100*runs) },
		},
		{
			name: "rows subset", l: 4, channels: 1, shift: 1,
			rows: func(n int) []int {
				var rows []int
				for i := n - 1; i >= 0; i -= 2 {
					rows = append(rows, i)
				}
				return rows
			},
			check: func(t *testing.T, st Stats, runs uint64) { want(t, "Ready", st.Ready, 50*runs) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := newStepRecord(t, mem, 100, tc.channels, tc.offsets...)
			defer r.rec.Release()
			s := mustNew(t, Shape{Lookback: tc.l, Fields: fieldNames(tc.channels), Cadence: time.Hour}, configWith(tc.edit))
			var rows []int
			if tc.rows != nil {
				rows = tc.rows(int(r.rec.NumRows()))
			}
			var out Batch
			run := func() {
				r.shift(tc.shift)
				out.Reset()
				if err := s.Append(r.rec, rows, &out); err != nil {
					t.Fatal(err)
				}
			}
			// Create the series and fill the windows; then measure.
			for range 2 * tc.l {
				run()
			}
			before := s.Stats()
			const runs = 199 // + 1 warm-up run = 200, a multiple of the stride
			if got := testing.AllocsPerRun(runs, run); got != 0 {
				t.Errorf("AllocsPerRun = %v, want 0", got)
			}
			after := s.Stats()
			// AllocsPerRun calls run once more to warm up.
			delta := Stats{
				Ready: after.Ready - before.Ready, GapFilled: after.GapFilled - before.GapFilled,
				Restarts: after.Restarts - before.Restarts, Duplicates: after.Duplicates - before.Duplicates,
				LateUpdated: after.LateUpdated - before.LateUpdated, LateDropped: after.LateDropped - before.LateDropped,
			}
			tc.check(t, delta, runs+1)
		})
	}
}

func want(t *testing.T, name string, got, want uint64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d during the measured runs, want %d (the path under test did not run)", name, got, want)
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// bytesPerSeries creates n series (L=96, one channel) in a new Set and
// returns the growth of the live heap divided by n.
func bytesPerSeries(tb testing.TB, n int) float64 {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(tb, 0)
	r := newStepRecord(tb, mem, n, 1)
	defer r.rec.Release()
	before := liveHeap()
	s := mustNew(tb, Shape{Lookback: 96, Fields: fieldNames(1), Cadence: time.Hour}, DefaultConfig())
	var out Batch
	if err := s.Append(r.rec, nil, &out); err != nil {
		tb.Fatal(err)
	}
	after := liveHeap()
	if got := s.Stats().Active; got != n {
		tb.Fatalf("Active = %d, want %d", got, n)
	}
	runtime.KeepAlive(s)
	runtime.KeepAlive(&out)
	return float64(int64(after)-int64(before)) / float64(n)
}

func TestMemoryPerSeries(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	got := bytesPerSeries(t, n)
	t.Logf("%.0f bytes per series (L=96, C=1, %d series)", got, n)
	if got > 4096 {
		t.Errorf("window state = %.0f bytes per series, want ≤ 4096", got)
	}
}

func BenchmarkMemoryPerSeries(b *testing.B) {
	var sum float64
	var runs int
	for b.Loop() {
		sum += bytesPerSeries(b, 100_000)
		runs++
	}
	b.ReportMetric(sum/float64(runs), "bytes/series")
}

// BenchmarkAppend feeds one reading per series per Append, every reading a
// new step that completes a window (L=96, stride 1).
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct{ series, channels int }{{1000, 1}, {1000, 3}, {100_000, 1}} {
		b.Run(fmt.Sprintf("series=%d/channels=%d", bc.series, bc.channels), func(b *testing.B) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(b, 0)
			r := newStepRecord(b, mem, bc.series, bc.channels)
			defer r.rec.Release()
			s := mustNew(b, Shape{Lookback: 96, Fields: fieldNames(bc.channels), Cadence: time.Hour}, DefaultConfig())
			var out Batch
			for range 96 {
				r.shift(1)
				out.Reset()
				if err := s.Append(r.rec, nil, &out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				r.shift(1)
				out.Reset()
				if err := s.Append(r.rec, nil, &out); err != nil {
					b.Fatal(err)
				}
			}
			if out.Len() != bc.series {
				b.Fatalf("%d windows per Append, want %d", out.Len(), bc.series)
			}
			b.ReportMetric(float64(b.N)*float64(bc.series)/b.Elapsed().Seconds(), "readings/s")
		})
	}
}
