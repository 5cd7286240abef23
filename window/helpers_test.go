package window

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// hour is the cadence of most tests, in ms.
const hour = int64(time.Hour / time.Millisecond)

var tsType = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

// readingsSchema is the schema of contract §1 with the given value fields.
func readingsSchema(fields ...string) *arrow.Schema {
	fs := []arrow.Field{
		{Name: "series", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: tsType},
		{Name: "ingest_ts", Type: tsType},
	}
	for _, f := range fields {
		fs = append(fs, arrow.Field{Name: f, Type: arrow.PrimitiveTypes.Float64})
	}
	return arrow.NewSchema(fs, nil)
}

// rd is one reading: ts and ingest in ms since the epoch.
type rd struct {
	series string
	ts     int64
	ingest int64
	values []float64
}

// at is a reading of series at the start of step k (cadence 1h) with the
// given values; its ingest time is one second after ts.
func at(series string, k int64, values ...float64) rd {
	return rd{series: series, ts: k * hour, ingest: k*hour + 1000, values: values}
}

// newRecord builds a readings record with mem; the caller releases it.
func newRecord(tb testing.TB, mem memory.Allocator, sc *arrow.Schema, rs []rd) arrow.Record {
	tb.Helper()
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for _, r := range rs {
		b.Field(0).(*array.StringBuilder).Append(r.series)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ingest))
		if len(r.values) != sc.NumFields()-3 {
			tb.Fatalf("reading %+v has %d values, schema has %d value columns", r, len(r.values), sc.NumFields()-3)
		}
		for c, v := range r.values {
			b.Field(3 + c).(*array.Float64Builder).Append(v)
		}
	}
	return b.NewRecord()
}

// win is one window as the tests expect it: End as a step index (cadence
// 1h) and Ingest in ms.
type win struct {
	series string
	end    int64
	values []float64
	ingest int64
}

func (w win) String() string {
	return fmt.Sprintf("{%s end=%d ingest=%d %v}", w.series, w.end, w.ingest, w.values)
}

// wins converts a Batch for comparison, checking its invariants.
func wins(tb testing.TB, b *Batch) []win {
	tb.Helper()
	n := b.Len()
	if len(b.End) != n || len(b.Ingest) != n {
		tb.Fatalf("Batch has %d series, %d ends, %d ingests", n, len(b.End), len(b.Ingest))
	}
	var out []win
	for i := range n {
		if b.End[i].Location() != time.UTC || b.Ingest[i].Location() != time.UTC {
			tb.Errorf("window %d: End %v / Ingest %v not in UTC", i, b.End[i], b.Ingest[i])
		}
		ms := b.End[i].UnixMilli()
		if ms%hour != 0 {
			tb.Errorf("window %d: End %v is not on a step boundary", i, b.End[i])
		}
		out = append(out, win{
			series: b.Series[i],
			end:    ms / hour,
			values: slices.Clone(b.Window(i)),
			ingest: b.Ingest[i].UnixMilli(),
		})
	}
	return out
}

func equalWins(a, b []win) bool {
	return slices.EqualFunc(a, b, func(x, y win) bool {
		return x.series == y.series && x.end == y.end && x.ingest == y.ingest && bitsEqual(x.values, y.values)
	})
}

// bitsEqual compares floats bit for bit.
func bitsEqual(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// feed appends each batch of readings as one record and returns the windows.
func feed(tb testing.TB, s *Set, fields []string, batches ...[]rd) []win {
	tb.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(tb, 0)
	sc := readingsSchema(fields...)
	var out Batch
	for _, rs := range batches {
		rec := newRecord(tb, mem, sc, rs)
		err := s.Append(rec, nil, &out)
		rec.Release()
		if err != nil {
			tb.Fatalf("Append: %v", err)
		}
	}
	return wins(tb, &out)
}

// mustNew is New for shapes and configurations that are valid.
func mustNew(tb testing.TB, shape Shape, cfg Config, opts ...Option) *Set {
	tb.Helper()
	s, err := New(shape, cfg, opts...)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return s
}

// configWith returns DefaultConfig changed by edit (none when nil).
func configWith(edit func(*Config)) Config {
	cfg := DefaultConfig()
	if edit != nil {
		edit(&cfg)
	}
	return cfg
}

// fakeClock is an injectable wall clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
