// Package historytest writes long-format history files (CSV with a header,
// Arrow IPC file and stream, Parquet) for the tests of the packages that
// read them.
package historytest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// Row is one long-format reading.
type Row struct {
	Series string
	Ms     int64 // epoch milliseconds
	Values []float64
}

// Layout names the columns: the series, the time and the value fields.
type Layout struct {
	Series, Time string
	Values       []string
}

// WriteCSV writes the rows as long CSV with a header that puts the value
// columns first, then an ignored "note" column, the time and the series;
// lines end in CRLF and times alternate between RFC 3339 and epoch
// milliseconds, as files from different exporters do.
func WriteCSV(t testing.TB, path string, l Layout, rows []Row) {
	t.Helper()
	var sb strings.Builder
	sb.WriteString(strings.Join(l.Values, ",") + ",note," + l.Time + "," + l.Series + "\r\n")
	for i, r := range rows {
		for _, v := range r.Values {
			sb.WriteString(strconv.FormatFloat(v, 'g', -1, 64) + ",")
		}
		ts := strconv.FormatInt(r.Ms, 10)
		if i%2 == 0 {
			ts = time.UnixMilli(r.Ms).UTC().Format(time.RFC3339Nano)
		}
		fmt.Fprintf(&sb, "\"a, b\",%s,%s\r\n", ts, r.Series)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Record returns the rows as one Arrow record: the series utf8, the time
// timestamp[us, UTC], the values float64.
func Record(l Layout, rows []Row) arrow.Record {
	fields := []arrow.Field{
		{Name: l.Series, Type: arrow.BinaryTypes.String},
		{Name: l.Time, Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}
	for _, v := range l.Values {
		fields = append(fields, arrow.Field{Name: v, Type: arrow.PrimitiveTypes.Float64})
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.Series)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.Ms * 1000))
		for c, v := range r.Values {
			b.Field(2 + c).(*array.Float64Builder).Append(v)
		}
	}
	return b.NewRecord()
}

// WriteArrowFile writes the rows as an Arrow IPC file of two record
// batches.
func WriteArrowFile(t testing.TB, path string, l Layout, rows []Row) {
	t.Helper()
	rec, f := create(t, path, l, rows)
	defer rec.Release()
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(rec.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range [][2]int64{{0, rec.NumRows() / 3}, {rec.NumRows() / 3, rec.NumRows()}} {
		s := rec.NewSlice(part[0], part[1])
		err := w.Write(s)
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// WriteArrowStream writes the rows as an Arrow IPC stream.
func WriteArrowStream(t testing.TB, path string, l Layout, rows []Row) {
	t.Helper()
	rec, f := create(t, path, l, rows)
	defer rec.Release()
	defer f.Close()
	w := ipc.NewWriter(f, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// WriteParquet writes the rows as Parquet in row groups of 100 rows.
func WriteParquet(t testing.TB, path string, l Layout, rows []Row) {
	t.Helper()
	rec, f := create(t, path, l, rows)
	defer rec.Release()
	defer f.Close()
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.Record{rec})
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, f, 100, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
}

// create returns the rows as a record and the file at path, created.
func create(t testing.TB, path string, l Layout, rows []Row) (arrow.Record, *os.File) {
	t.Helper()
	rec := Record(l, rows)
	f, err := os.Create(path)
	if err != nil {
		rec.Release()
		t.Fatal(err)
	}
	return rec, f
}
