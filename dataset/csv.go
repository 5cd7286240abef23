package dataset

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CSVError reports a CSV file that ReadCSV or LoadCSV cannot turn into a
// Frame. Its message names the file, the 1-based line, the column and the
// offending value when they apply, and says how to fix the file:
//
//	ETTh1.csv line 17: column "OT": "abc" is not a number; write the reading, or drop the row
type CSVError struct {
	// File is the name passed to ReadCSV, or the base name of the path
	// passed to LoadCSV.
	File string
	// Line is the 1-based line of the offending row, or 0 when the error
	// concerns the whole file (such as an empty file).
	Line int
	// Column is the header name of the offending cell, or "" when the
	// error concerns the whole row or file.
	Column string
	// Value is the offending cell as read, or "" when there is none.
	Value string
	// Msg says what is wrong and, where it can, how to fix it.
	Msg string
	// Err is the underlying error, such as a *csv.ParseError, or nil.
	Err error
}

// Error formats the error as "FILE line N: column "C": MSG", leaving out the
// parts that do not apply.
func (e *CSVError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(" line ")
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Column != "" {
		b.WriteString(": column ")
		b.WriteString(strconv.Quote(e.Column))
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying error, if any.
func (e *CSVError) Unwrap() error { return e.Err }

// dateLayouts are the accepted date formats, tried in order. Dates without a
// zone are read as UTC. Go's parser also accepts a fractional second after
// the seconds field in every layout that has one.
var dateLayouts = [...]string{
	"2006-01-02 15:04:05",
	"2006-01-02 15:04",
	time.RFC3339,
	"2006-01-02",
}

// writeLayout formats dates in WriteCSV: "2006-01-02 15:04:05", with a
// fractional second only when the time has one. ReadCSV reads both back.
const writeLayout = "2006-01-02 15:04:05.999999999"

// LoadCSV reads the CSV file at path into a Frame and records the SHA-256 of
// its bytes in Frame.SHA256. Frame.Name is the base name of path, which is
// what ProtocolFor looks at. See ReadCSV for the accepted format; parse
// errors are *CSVError values naming the base name of the file.
func LoadCSV(path string) (*Frame, error) {
	return loadCSV(path, "", false)
}

// LoadCSVRows is LoadCSV with the rows as the file writes them: no check
// of their order and no filled steps (Frame.Irregular stays empty). It is
// for sending a file's readings on as they are (replay), not for windows.
func LoadCSVRows(path string) (*Frame, error) {
	return loadCSV(path, "", true)
}

// LoadCSVSeries is LoadCSV for long-format files, whose rows are readings of
// several series: the column named series holds each row's series id as
// text ("s-17", "t1", "7"), kept as written in Frame.Series and left out
// of the channels; the date is the first column, or the second when the
// series column is the first. An empty id is an error.
func LoadCSVSeries(path, series string) (*Frame, error) {
	return loadCSV(path, series, false)
}

func loadCSV(path, series string, asWritten bool) (*Frame, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load csv: %w", err)
	}
	// A line count bounds the rows from above, so the buffers are allocated once.
	f, err := readCSV(bytes.NewReader(data), filepath.Base(path), bytes.Count(data, []byte{'\n'})+1, len(data), series, asWritten)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	f.SHA256 = hex.EncodeToString(sum[:])
	return f, nil
}

// ReadCSV reads CSV text from r into a Frame named name; name also prefixes
// every error message, so pass the file's base name.
//
// The first row is a header, kept as-is: the first column holds dates (its
// name is not checked) and every other column a numeric channel; column
// names must be distinct. Each later row holds a date and one number per
// channel. Dates take one of the forms
//
//	2006-01-02 15:04:05
//	2006-01-02 15:04
//	2006-01-02T15:04:05Z07:00 (RFC 3339)
//	2006-01-02
//	1704067200000 (epoch milliseconds: 13 digits)
//
// and are read as UTC when they carry no zone. Numbers are anything
// strconv.ParseFloat accepts, except NaN and ±Inf; surrounding spaces are
// ignored. CRLF line endings, a leading UTF-8 byte order mark, blank lines and
// quoted fields are tolerated.
//
// Rows are steps in time order. Irregular steps (a date that repeats the one
// before or is before it, or missing steps: two or more cadences between
// neighbouring dates) are read as they are, each row a step, as the
// benchmarks' protocol reads them (weather.csv has one repeated date and one
// gap of 9 steps in 52,696 rows), while they are at most 1% of the rows.
// Beyond that repeated dates and dates out of order are errors, and missing
// steps up to 10% of the rows are filled by linear interpolation, so that a
// window never joins readings further apart than its steps say (and the
// spectrum sees no phase jump). More missing steps than that are the data's
// own spacing (business days) and are read as they are. Frame.Irregular
// says which and Frame.GapNote says it to the user.
//
// ReadCSV fails with a *CSVError on the first malformed row (wrong number of
// fields, bad date, bad or non-finite number, or an empty cell, which it
// reports as a missing value rather than guessing a fill), on an empty file,
// on a header without a numeric column, and on fewer than 2 data rows (the
// cadence needs two). Errors from r itself are wrapped, not converted.
func ReadCSV(r io.Reader, name string) (*Frame, error) {
	return readCSV(r, name, 0, 0, "", false)
}

// readCSV is ReadCSV with optional upper bounds on the number of lines and
// bytes of the input, used to preallocate (0 means unknown), and the name
// of a column of text series ids ("" for none; see LoadCSVSeries).
func readCSV(r io.Reader, name string, lineHint, sizeHint int, series string, asWritten bool) (*Frame, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if b, err := br.Peek(3); err == nil && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1 // checked below, with a better message
	cr.ReuseRecord = true

	cf := csvFile{name}
	hd, err := cf.readHeader(cr, series)
	if err != nil {
		return nil, err
	}
	header, dateCol, cols, seriesAt := hd.fields, hd.dateCol, hd.cols, hd.seriesAt
	chans := len(cols)
	var ids []string

	// Minus the header; and a row takes at least 2·chans+1 bytes, which keeps
	// a wide header over many blank lines from allocating more than the file.
	estRows := max(min(lineHint-1, sizeHint/(2*chans+1)), 0)
	times := make([]time.Time, 0, estRows)
	values := make([]float64, 0, estRows*chans)
	layout := 0 // the layout that parsed the previous date; tried first
	// The first rows of a wide file whose date repeats the row before's,
	// and that is before it.
	repeatLine, repeatCell, backLine, backCell := 0, "", 0, ""
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, cf.readErr(err)
		}
		line, _ := cr.FieldPos(0)
		if want := len(header); len(rec) != want {
			return nil, cf.fail(line, "", "",
				fmt.Sprintf("row has %d fields, want %d (the date and the %d columns of the header); fix the row or drop it",
					len(rec), want, want-1), nil)
		}
		if seriesAt >= 0 {
			id := strings.TrimSpace(rec[seriesAt])
			if id == "" {
				return nil, cf.fail(line, series, "", "missing series id; fill it or drop the row", nil)
			}
			ids = append(ids, id)
			rec = slices.Delete(rec, seriesAt, seriesAt+1)
		}
		ds := strings.TrimSpace(rec[0])
		if ds == "" {
			return nil, cf.fail(line, dateCol, "", "missing date; fill it or drop the row", nil)
		}
		t, ok := parseDate(ds, &layout)
		if !ok {
			return nil, cf.fail(line, dateCol, rec[0], notADate(ds), nil)
		}
		if n := len(times); seriesAt < 0 && n > 0 {
			switch {
			case t.Before(times[n-1]) && backLine == 0:
				backLine, backCell = line, rec[0]
			case t.Equal(times[n-1]) && repeatLine == 0:
				repeatLine, repeatCell = line, rec[0]
			}
		}
		times = append(times, t)
		if values, err = cf.appendValues(values, rec[1:], cols, line); err != nil {
			return nil, err
		}
	}
	if n := len(times); n < 2 {
		return nil, cf.fail(0, "", "", fmt.Sprintf("file has %d data rows after the header, want at least 2 so the cadence can be inferred", n), nil)
	}
	f := &Frame{
		Name:    name,
		Columns: cols,
		Times:   times,
		Values:  values,
		Cadence: inferCadence(times),
	}
	if seriesAt >= 0 {
		f.SeriesColumn, f.Series = series, ids
		return f, nil
	}
	if asWritten {
		return f, nil
	}
	if err := f.regularise(); err != nil {
		line, cell := 0, ""
		switch {
		case errors.Is(err, errRepeated):
			line, cell = repeatLine, repeatCell
		case errors.Is(err, errBackward):
			line, cell = backLine, backCell
		}
		return nil, cf.fail(line, dateCol, cell, err.Error(), nil)
	}
	return f, nil
}

// csvFile names the file read, for its errors.
type csvFile struct{ name string }

// fail is the CSVError at line (1-based; 0 for the file) of column and
// value.
func (cf csvFile) fail(line int, column, value, msg string, err error) error {
	return &CSVError{File: cf.name, Line: line, Column: column, Value: value, Msg: msg, Err: err}
}

// readErr is the error of the CSV reader's err: a CSVError at its line for
// a malformed row.
func (cf csvFile) readErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return cf.fail(pe.Line, "", "", pe.Err.Error()+"; quote fields that contain commas or quotes, and double quotes inside them", err)
	}
	return fmt.Errorf("read csv %s: %w", cf.name, err)
}

// csvHeader is a CSV file's header: its fields, its line, the date column,
// the value columns and the series column's index in a record (−1 without).
type csvHeader struct {
	fields   []string
	line     int
	dateCol  string
	cols     []string
	seriesAt int
}

// readHeader reads and checks the header row: a date column and value
// columns, unique names without line breaks, and the series column when
// series names one.
func (cf csvFile) readHeader(cr *csv.Reader, series string) (h csvHeader, err error) {
	header, err := cr.Read()
	if err == io.EOF {
		return h, cf.fail(0, "", "", `file is empty; want a header row "date,<columns>" and at least 2 data rows`, nil)
	}
	if err != nil {
		return h, cf.readErr(err)
	}
	headerLine, _ := cr.FieldPos(0)
	if len(header) < 2 {
		return h, cf.fail(headerLine, "", "",
			fmt.Sprintf(`header has %d field, want "date,<columns>" with at least one numeric column; is the file comma-separated?`, len(header)), nil)
	}
	dateCol := header[0]
	cols := slices.Clone(header[1:]) // the reader reuses its record slice
	// A file without a header would name its columns after its first
	// readings and lose them.
	firstLayout := 0
	if _, isDate := parseDate(dateCol, &firstLayout); isDate && !slices.ContainsFunc(cols, func(c string) bool {
		_, err := strconv.ParseFloat(strings.TrimSpace(c), 64)
		return err != nil
	}) {
		names := make([]string, len(cols))
		for i := range names {
			names[i] = fmt.Sprintf("column%d", i+1)
		}
		return h, cf.fail(headerLine, "", "", fmt.Sprintf("the first row (%s) is a reading, not a header; add a header row naming the date column and each value column, such as \"date,%s\"",
			strings.Join(header, ","), strings.Join(names, ",")), nil)
	}
	seen := make(map[string]int, len(cols))
	for i, c := range cols {
		if strings.ContainsAny(c, "\r\n") {
			// encoding/csv drops a carriage return before a line feed even
			// inside quotes, so such a name would not survive a round trip.
			return h, cf.fail(headerLine, c, "", fmt.Sprintf("column %d's name holds a line break; rename it", i+2), nil)
		}
		if j, ok := seen[c]; ok {
			return h, cf.fail(headerLine, c, "",
				fmt.Sprintf("appears twice in the header (fields %d and %d); rename one", j+2, i+2), nil)
		}
		seen[c] = i
	}
	seriesAt := -1 // the series column's index in a record, −1 without
	if series != "" {
		i := slices.Index(header, series)
		if i < 0 {
			return h, cf.fail(headerLine, series, "", fmt.Sprintf("is not a column of the header (columns: %s); name the column of series ids", strings.Join(header, ", ")), nil)
		}
		if len(header) < 3 {
			return h, cf.fail(headerLine, series, "", "is the only column beside the date; a reading needs a value column too", nil)
		}
		seriesAt = i
		if i == 0 {
			// The series first: the date is the column after it.
			dateCol, cols = header[1], slices.Clone(header[2:])
		} else {
			cols = slices.Delete(cols, i-1, i)
		}
	}
	header = slices.Clone(header) // the reader reuses its record slice
	return csvHeader{fields: header, line: headerLine, dateCol: dateCol, cols: cols, seriesAt: seriesAt}, nil
}

// appendValues parses a row's value cells (of cols, at line) onto values.
func (cf csvFile) appendValues(values []float64, cells, cols []string, line int) ([]float64, error) {
	for c, cell := range cells {
		s := strings.TrimSpace(cell)
		if s == "" {
			return nil, cf.fail(line, cols[c], "", "missing value; fill it or drop the row", nil)
		}
		v, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil && errors.Is(err, strconv.ErrRange):
			return nil, cf.fail(line, cols[c], cell, fmt.Sprintf("%q is outside the float64 range", cell), err)
		case err != nil:
			return nil, cf.fail(line, cols[c], cell, fmt.Sprintf("%q is not a number; write the reading, or drop the row", cell), err)
		case math.IsNaN(v) || math.IsInf(v, 0):
			return nil, cf.fail(line, cols[c], cell,
				fmt.Sprintf("%q is not a finite number; fill the missing value or drop the row", cell), nil)
		}
		values = append(values, v)
	}
	return values, nil
}

// parseDate parses s with the accepted layouts, trying *last first and
// recording the layout that worked in *last.
func parseDate(s string, last *int) (time.Time, bool) {
	if t, err := time.Parse(dateLayouts[*last], s); err == nil {
		return t, true
	}
	// Epoch milliseconds, as readings carry them: 13 digits (2001 to
	// 2286), so that neither a number of seconds nor a compact date
	// (202001010000) is read as milliseconds.
	if len(s) == 13 {
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms > 0 {
			return time.UnixMilli(ms).UTC(), true
		}
	}
	for i, l := range dateLayouts {
		if i == *last {
			continue
		}
		if t, err := time.Parse(l, s); err == nil {
			*last = i
			return t, true
		}
	}
	return time.Time{}, false
}

// WriteCSV writes the Frame as CSV text that ReadCSV reads back: a header
// "date,<columns>" (names quoted only where CSV needs it), then one line per
// row. Dates are written in UTC as "2006-01-02 15:04:05", followed by a
// fractional second only when the time has one. Values are formatted with
// strconv.FormatFloat(v, 'g', -1, 64), which round-trips every float64
// exactly; NaN is written as an empty cell (which ReadCSV reports as a
// missing value, so call FillMissing first if the output must be read back)
// and ±Inf as "+Inf" and "-Inf".
//
// WriteCSV returns an error if the Frame's shape is inconsistent, if a date
// falls outside the years 0000 to 9999 in UTC, or if writing to w fails.
func (f *Frame) WriteCSV(w io.Writer) error {
	rows, chans := f.Rows(), f.Channels()
	if len(f.Values) != rows*chans {
		return fmt.Errorf("write csv %s: frame has %d values, want rows×channels = %d×%d = %d",
			f.Name, len(f.Values), rows, chans, rows*chans)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	cw := csv.NewWriter(bw)
	if err := cw.Write(append([]string{"date"}, f.Columns...)); err != nil {
		return fmt.Errorf("write csv %s: header: %w", f.Name, err)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv %s: header: %w", f.Name, err)
	}
	buf := make([]byte, 0, 64+24*chans)
	for r := range rows {
		t := f.Times[r].UTC()
		if y := t.Year(); y < 0 || y > 9999 {
			return fmt.Errorf("write csv %s: row %d: date %s falls in the year %d in UTC, outside the years 0000 to 9999 "+
				"that the date format holds", f.Name, r, f.Times[r], y)
		}
		buf = t.AppendFormat(buf[:0], writeLayout)
		for _, v := range f.Values[r*chans : (r+1)*chans] {
			buf = append(buf, ',')
			if !math.IsNaN(v) {
				buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
			}
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("write csv %s: row %d: %w", f.Name, r, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write csv %s: %w", f.Name, err)
	}
	return nil
}

// notADate says why a date cell was refused. A whole number of 9 or 10
// digits may be epoch seconds (1973 to 2286), which the reader does not
// take for milliseconds (it would put the rows a thousand times too close
// together): that case also says what to write if it is, milliseconds of
// 13 digits or a date.
func notADate(cell string) string {
	msg := fmt.Sprintf("%q is not a date; want 2006-01-02 15:04:05, 2006-01-02 15:04, RFC 3339 (2006-01-02T15:04:05Z07:00), 2006-01-02 or epoch milliseconds (13 digits)", cell)
	if sec, err := strconv.ParseInt(cell, 10, 64); err == nil && sec >= 1e8 && sec < 1e10 {
		t := time.Unix(sec, 0).UTC()
		write := "a date such as " + t.Format("2006-01-02 15:04:05")
		if sec*1000 >= 1e12 { // 13 digits
			write = fmt.Sprintf("%d or %s", sec*1000, write)
		}
		msg += fmt.Sprintf("; if it is epoch seconds (%s), write %s instead", t.Format(time.RFC3339), write)
	}
	return msg
}
