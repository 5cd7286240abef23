// Package readingstest holds test helpers for the input format: rows of a
// decoded batch compared bit for bit, and generated readings. The tests of
// readings and stream use it; it imports readings and Arrow only.
package readingstest

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/freqlens/freqlens/readings"
)

// Row is one row of a decoded batch: the series, the event and ingest times
// in epoch milliseconds and the values. SameRows compares rows bit for bit.
type Row struct {
	Series string
	TS     int64
	Ingest int64
	Values []float64
}

// String renders r for test failures.
func (r Row) String() string {
	return fmt.Sprintf("{%q %s ingest=%d %v}", r.Series, time.UnixMilli(r.TS).UTC().Format(time.RFC3339Nano), r.Ingest, r.Values)
}

// SameRows reports whether a and b hold the same rows in the same order,
// floats compared with math.Float64bits (so NaN equals NaN and -0 differs
// from 0).
func SameRows(a, b []Row) bool {
	return slices.EqualFunc(a, b, func(x, y Row) bool {
		return x.Series == y.Series && x.TS == y.TS && x.Ingest == y.Ingest &&
			slices.EqualFunc(x.Values, y.Values, func(u, v float64) bool { return math.Float64bits(u) == math.Float64bits(v) })
	})
}

// Rows returns every row of rec, a record of readings.Schema, and fails the
// test when a column holds a null (a batch has none).
func Rows(tb testing.TB, rec arrow.Record) []Row {
	tb.Helper()
	if rec.NumCols() < readings.FirstValueColumn {
		tb.Fatalf("record has %d columns, want at least %d", rec.NumCols(), readings.FirstValueColumn)
	}
	series := rec.Column(readings.SeriesColumn).(*array.String)
	ts := rec.Column(readings.TimeColumn).(*array.Timestamp)
	ing := rec.Column(readings.IngestColumn).(*array.Timestamp)
	var rows []Row
	for i := 0; i < int(rec.NumRows()); i++ {
		r := Row{Series: strings.Clone(series.Value(i)), TS: int64(ts.Value(i)), Ingest: int64(ing.Value(i))}
		for c := readings.FirstValueColumn; c < int(rec.NumCols()); c++ {
			r.Values = append(r.Values, rec.Column(c).(*array.Float64).Value(i))
		}
		rows = append(rows, r)
	}
	for c := 0; c < int(rec.NumCols()); c++ {
		if n := rec.Column(c).NullN(); n != 0 {
			tb.Errorf("column %d has %d nulls", c, n)
		}
	}
	return rows
}

// FromReadings returns the rows rs decode to when their messages have
// ingest time ingestMs. The rows share the readings' Values.
func FromReadings(rs []readings.Reading, ingestMs int64) []Row {
	rows := make([]Row, len(rs))
	for i, r := range rs {
		rows[i] = Row{Series: r.Series, TS: r.Time.UnixMilli(), Ingest: ingestMs, Values: r.Values}
	}
	return rows
}

// ToReadings turns rows into readings, as the encoders take them. The
// readings share the rows' Values.
func ToReadings(rows []Row) []readings.Reading {
	rs := make([]readings.Reading, len(rows))
	for i, r := range rows {
		rs[i] = readings.Reading{Series: r.Series, Time: time.UnixMilli(r.TS), Values: r.Values}
	}
	return rs
}

// Sequence returns n readings over the series s-0 … s-(series-1) in turn,
// one a minute per series from start, each with channels distinct finite
// values (fractions included, so a lossy encoding would show).
func Sequence(n, series, channels int, start time.Time) []readings.Reading {
	rs := make([]readings.Reading, n)
	for i := range rs {
		vals := make([]float64, channels)
		for j := range vals {
			vals[j] = float64(i)*1.25 - float64(j) + 1e-9*float64(i%7)
		}
		rs[i] = readings.Reading{Series: fmt.Sprintf("s-%d", i%series), Time: start.Add(time.Duration(i/series) * time.Minute), Values: vals}
	}
	return rs
}

// Sort orders rows by series, then time, keeping the order of equal rows
// (the Kafka order within a series).
func Sort(rows []Row) {
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Series != rows[j].Series {
			return rows[i].Series < rows[j].Series
		}
		return rows[i].TS < rows[j].TS
	})
}
