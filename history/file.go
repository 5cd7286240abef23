package history

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/freqlens/freqlens/readings"
)

// FileFormat is how a long-format history file is encoded.
type FileFormat string

// The long-format file formats.
const (
	// FileCSV is CSV whose header names the columns: the series field, the
	// time field (RFC 3339 or epoch milliseconds) and the value fields,
	// in any order; other columns are ignored.
	FileCSV FileFormat = "csv"
	// FileArrow is an Arrow IPC file or stream with a utf8 series column,
	// a timestamp or int64 epoch-millisecond time column and float64 value
	// columns.
	FileArrow FileFormat = "arrow"
	// FileParquet is a Parquet file with the same columns as FileArrow
	// (a string series column, a timestamp or int64 time column, double
	// values).
	FileParquet FileFormat = "parquet"
)

// Detect says whether the file at path holds long-format readings for cfg
// and in which format: Parquet and Arrow files by their magic bytes, CSV
// when its header names both cfg's series field and its time field. A CSV
// without them is the wide format (a date column, one column per channel):
// Detect returns "" and no error; one that names the series field and not
// the time field is an error that says which is missing. cfg is taken as given (start from
// readings.DefaultConfig), and checked.
func Detect(path string, cfg readings.Config) (FileFormat, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")):
		return FileParquet, nil
	case bytes.HasPrefix(head, []byte("ARROW1")), len(head) >= 4 && bytes.Equal(head[:4], []byte{0xff, 0xff, 0xff, 0xff}):
		return FileArrow, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	cr := csv.NewReader(bufio.NewReader(f))
	header, err := cr.Read()
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	hasSeries, hasTime := slices.Contains(header, cfg.SeriesField), slices.Contains(header, cfg.TimeField)
	switch {
	case hasSeries && hasTime:
		return FileCSV, nil
	case hasSeries:
		// A wide file's columns are its date and numbers: one named as the
		// series field is a long file whose time column has another name.
		return "", fmt.Errorf("%s: the header names the series field %q but not the time field %q (columns %q): "+
			"a long-format file needs both; name its time column %[3]q, or set input.time_field (and input.value_fields) in a --config file",
			path, cfg.SeriesField, cfg.TimeField, header)
	}
	return "", nil
}

// isTime reports whether s is a time ParseTime reads.
func isTime(s string) bool { _, ok := ParseTime(s); return ok }

// ParseTime parses a time as a file or a user writes one: RFC 3339, or a
// date and time (to the second or the minute) or a date alone, in UTC.
func ParseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// zoneless reports whether line, a CSV row under header, writes its time
// field as a date without a zone, which a file reads as UTC.
func zoneless(line []byte, header []string, timeField string) bool {
	i := slices.Index(header, timeField)
	rec, err := csv.NewReader(bytes.NewReader(line)).Read()
	if i < 0 || err != nil || i >= len(rec) {
		return false
	}
	v := strings.TrimSpace(rec[i])
	if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return false
	}
	_, ok := ParseTime(v)
	return ok
}

// hasColumns reports the first of cfg's series, time and value fields
// that the file's columns do not name.
func hasColumns(columns []string, cfg readings.Config) error {
	for _, want := range append([]string{cfg.SeriesField, cfg.TimeField}, cfg.ValueFields...) {
		if !slices.Contains(columns, want) {
			return fmt.Errorf("the columns %q hold no %q; name the file's columns in --config (input.series_field, input.time_field, input.value_fields) or rename the column",
				columns, want)
		}
	}
	return nil
}

// DecodeFile reads a long-format history file of the given format (see
// Detect) and adds its readings to b, decoding every row as the service
// decodes a message with cfg's field names. A row the decoder refuses is
// counted in the Stats, not an error.
func DecodeFile(ctx context.Context, path string, format FileFormat, cfg readings.Config, b Readings) (Stats, error) {
	stats := Stats{Rows: true}
	f, err := os.Open(path)
	if err != nil {
		return stats, err
	}
	defer f.Close()
	name := filepath.Base(path)
	switch format {
	case FileCSV:
		err = readCSV(ctx, f, cfg, b, &stats)
	case FileArrow:
		err = readArrow(ctx, f, cfg, b, &stats)
	case FileParquet:
		err = readParquet(ctx, f, cfg, b, &stats)
	default:
		err = fmt.Errorf("unknown format %q; use csv, arrow or parquet", format)
	}
	if err != nil {
		return stats, fmt.Errorf("%s: %w", name, err)
	}
	return stats, nil
}

// readCSV decodes each line after the header as one CSV message whose
// columns the header names.
func readCSV(ctx context.Context, r io.Reader, cfg readings.Config, b Readings, stats *Stats) error {
	br := bufio.NewReaderSize(r, 1<<20)
	line, err := br.ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	header, err := csv.NewReader(bytes.NewReader(line)).Read()
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if err := hasColumns(header, cfg); err != nil {
		return err
	}
	cfg.Format = readings.FormatCSV
	cfg.CSVColumns = header
	cfg.ZonelessUTC = true // a file's dates, as a wide file's: UTC unless they say otherwise
	d, err := newDecoder(cfg, b, stats)
	if err != nil {
		return err
	}
	defer d.close()
	for n := 0; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			if len(line) > 0 {
				if n == 0 {
					d.stats.ZonelessUTC = zoneless(line, header, cfg.TimeField)
				}
				first := d.stats.Example == ""
				if err := d.decode(nil, line, time.Time{}); err != nil {
					return err
				}
				if first && d.stats.Example != "" {
					d.stats.Example = fmt.Sprintf("line %d: %s", n+2, d.stats.Example) // the header is line 1
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if n%chunkRows == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
}

// readArrow reads an Arrow IPC file or stream record by record.
func readArrow(ctx context.Context, f *os.File, cfg readings.Config, b Readings, stats *Stats) error {
	head := make([]byte, 6)
	if _, err := io.ReadFull(f, head); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if string(head) == "ARROW1" {
		fr, err := ipc.NewFileReader(f)
		if err != nil {
			return fmt.Errorf("not an Arrow IPC file: %w", err)
		}
		defer fr.Close()
		return readRecords(ctx, cfg, b, stats, func() (arrow.Record, error) {
			rec, err := fr.Read()
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			return rec, err
		})
	}
	sr, err := ipc.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return fmt.Errorf("not an Arrow IPC stream: %w", err)
	}
	defer sr.Release()
	return readRecords(ctx, cfg, b, stats, func() (arrow.Record, error) {
		if !sr.Next() {
			return nil, sr.Err()
		}
		return sr.Record(), nil
	})
}

// readParquet reads a Parquet file's row groups as Arrow records.
func readParquet(ctx context.Context, f *os.File, cfg readings.Config, b Readings, stats *Stats) error {
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return fmt.Errorf("not a Parquet file: %w", err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: chunkRows}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	return readRecords(ctx, cfg, b, stats, func() (arrow.Record, error) {
		if !rr.Next() {
			if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, nil
		}
		return rr.Record(), nil
	})
}

// readRecords decodes the records next returns (nil at the end; the
// reader owns them) with the service's Arrow decoder, chunkRows rows at a
// time. A chunk the decoder refuses is halved until the refused rows are
// found, so that one bad row costs one row.
func readRecords(ctx context.Context, cfg readings.Config, b Readings, stats *Stats, next func() (arrow.Record, error)) error {
	cfg.Format = readings.FormatArrow
	d, err := newDecoder(cfg, b, stats)
	if err != nil {
		return err
	}
	defer d.close()
	var buf bytes.Buffer
	var decode func(rec arrow.Record, base int64) error
	// decode decodes rec, whose first row is row base of the file.
	decode = func(rec arrow.Record, base int64) error {
		buf.Reset()
		w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
		if err := w.Write(rec); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		n := rec.NumRows()
		if err := d.dec.Decode(d.rb, nil, buf.Bytes(), time.Time{}); err != nil {
			if n == 1 {
				stats.Messages++
				d.refuse(fileRow(err, base))
				return nil
			}
			for _, half := range [][2]int64{{0, n / 2}, {n / 2, n}} {
				part := rec.NewSlice(half[0], half[1])
				err := decode(part, base+half[0])
				part.Release()
				if err != nil {
					return err
				}
			}
			return nil
		}
		stats.Messages += int(n)
		if d.rb.Field(0).Len() >= chunkRows {
			d.flush()
		}
		return nil
	}
	checked := false // the columns of the first record
	var rows int64   // the file's rows before rec
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := next()
		if err != nil {
			return err
		}
		if rec == nil {
			return nil
		}
		if !checked {
			names := make([]string, rec.Schema().NumFields())
			for i, f := range rec.Schema().Fields() {
				names[i] = f.Name
			}
			if err := hasColumns(names, cfg); err != nil {
				return err
			}
			checked = true
		}
		for lo := int64(0); lo < rec.NumRows(); lo += chunkRows {
			part := rec.NewSlice(lo, min(lo+chunkRows, rec.NumRows()))
			err := decode(part, rows+lo)
			part.Release()
			if err != nil {
				return err
			}
		}
		rows += rec.NumRows()
	}
}

// fileRow puts the file's row in the error of a refused one-row slice,
// which the decoder calls row 0 of its message.
func fileRow(err error, row int64) error {
	var de *readings.DecodeError
	if !errors.As(err, &de) {
		return fmt.Errorf("row %d: %w", row, err)
	}
	c := *de
	msg := strings.TrimPrefix(de.Err.Error(), "row 0: ")
	c.Err = fmt.Errorf("row %d of the file (from 0): %s", row, msg)
	return &c
}

// describe names a format for messages.
func (f FileFormat) String() string { return strings.ToUpper(string(f)) }
