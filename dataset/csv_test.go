package dataset

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func utc(y int, m time.Month, d, h, min, s int) time.Time {
	return time.Date(y, m, d, h, min, s, 0, time.UTC)
}

func TestReadCSV(t *testing.T) {
	for _, tc := range []struct {
		name        string
		in          string
		wantCols    []string
		wantTimes   []time.Time
		wantValues  []float64
		wantCadence time.Duration
	}{
		{
			name:        "LF line endings",
			in:          "date,a,b\n2016-07-01 00:00:00,1,2\n2016-07-01 01:00:00,3.5,-4e-3\n",
			wantCols:    []string{"a", "b"},
			wantTimes:   []time.Time{utc(2016, 7, 1, 0, 0, 0), utc(2016, 7, 1, 1, 0, 0)},
			wantValues:  []float64{1, 2, 3.5, -4e-3},
			wantCadence: time.Hour,
		},
		{
			name:        "CRLF line endings",
			in:          "date,a\r\n2020-01-01 00:10:00,1\r\n2020-01-01 00:20:00,2\r\n",
			wantCols:    []string{"a"},
			wantTimes:   []time.Time{utc(2020, 1, 1, 0, 10, 0), utc(2020, 1, 1, 0, 20, 0)},
			wantValues:  []float64{1, 2},
			wantCadence: 10 * time.Minute,
		},
		{
			name:        "byte order mark before a quoted header",
			in:          "\uFEFF\"date\",a\n2020-01-01,1\n2020-01-02,2\n",
			wantCols:    []string{"a"},
			wantTimes:   []time.Time{utc(2020, 1, 1, 0, 0, 0), utc(2020, 1, 2, 0, 0, 0)},
			wantValues:  []float64{1, 2},
			wantCadence: 24 * time.Hour,
		},
		{
			name:        "no newline at the end and a blank line in between",
			in:          "date,a\n2020-01-01 00:00,1\n\n2020-01-01 00:15,2",
			wantCols:    []string{"a"},
			wantTimes:   []time.Time{utc(2020, 1, 1, 0, 0, 0), utc(2020, 1, 1, 0, 15, 0)},
			wantValues:  []float64{1, 2},
			wantCadence: 15 * time.Minute,
		},
		{
			name:     "header names kept as-is, U+FFFD and quoted comma included",
			in:       "timestamp,SWDR (W/m\uFFFD),\"a,b\", spaced \n2020-01-01 00:10:00,1,2,3\n2020-01-01 00:20:00,4,5,6\n",
			wantCols: []string{"SWDR (W/m\uFFFD)", "a,b", " spaced "},
			wantTimes: []time.Time{
				utc(2020, 1, 1, 0, 10, 0), utc(2020, 1, 1, 0, 20, 0),
			},
			wantValues:  []float64{1, 2, 3, 4, 5, 6},
			wantCadence: 10 * time.Minute,
		},
		{
			name: "every date form, RFC 3339 with an offset",
			in: "date,a\n2020-01-01 00:00:00,1\n2020-01-02 00:00,2\n2020-01-03T01:00:00+01:00,3\n" +
				"2020-01-04,4\n2020-01-05T00:00:00.5Z,5\n",
			wantCols: []string{"a"},
			wantTimes: []time.Time{
				utc(2020, 1, 1, 0, 0, 0), utc(2020, 1, 2, 0, 0, 0), utc(2020, 1, 3, 0, 0, 0),
				utc(2020, 1, 4, 0, 0, 0), utc(2020, 1, 5, 0, 0, 0).Add(500 * time.Millisecond),
			},
			wantValues:  []float64{1, 2, 3, 4, 5},
			wantCadence: 24 * time.Hour, // diffs 1d, 1d, 1d, 1d+0.5s: lower median of the sorted four is 1d
		},
		{
			name:        "epoch milliseconds",
			in:          "date,a\n1704067200000,1\n1704070800000,2\n",
			wantCols:    []string{"a"},
			wantTimes:   []time.Time{utc(2024, 1, 1, 0, 0, 0), utc(2024, 1, 1, 1, 0, 0)},
			wantValues:  []float64{1, 2},
			wantCadence: time.Hour,
		},
		{
			name:        "spaces around cells and exotic number forms",
			in:          "date,a,b\n 2020-01-01 00:00:00 , 1.5 ,-0\n2020-01-01 01:00:00,0x1p-2,1E+3\n",
			wantCols:    []string{"a", "b"},
			wantTimes:   []time.Time{utc(2020, 1, 1, 0, 0, 0), utc(2020, 1, 1, 1, 0, 0)},
			wantValues:  []float64{1.5, math.Copysign(0, -1), 0.25, 1000},
			wantCadence: time.Hour,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ReadCSV(strings.NewReader(tc.in), "t.csv")
			if err != nil {
				t.Fatalf("ReadCSV: %v", err)
			}
			if f.Name != "t.csv" {
				t.Errorf("Name = %q, want %q", f.Name, "t.csv")
			}
			if !slices.Equal(f.Columns, tc.wantCols) {
				t.Errorf("Columns = %q, want %q", f.Columns, tc.wantCols)
			}
			if !slices.EqualFunc(f.Times, tc.wantTimes, time.Time.Equal) {
				t.Errorf("Times = %v, want %v", f.Times, tc.wantTimes)
			}
			if !bitsEqual(f.Values, tc.wantValues) {
				t.Errorf("Values = %v, want %v", f.Values, tc.wantValues)
			}
			if f.Cadence != tc.wantCadence {
				t.Errorf("Cadence = %v, want %v", f.Cadence, tc.wantCadence)
			}
			if f.SHA256 != "" {
				t.Errorf("SHA256 = %q, want empty from ReadCSV", f.SHA256)
			}
		})
	}
}

// csvErrorCase is a row of TestReadCSVErrors: a file and the CSVError
// reading it gives.
type csvErrorCase struct {
	name       string
	in         string
	wantLine   int
	wantColumn string
	wantValue  string
	wantMsg    string // the whole message
}

// csvErrorHead is a valid header and line 2.
const csvErrorHead = "date,a,b\n2020-01-01 00:00:00,1,2\n"

func TestReadCSVErrors(t *testing.T) {
	var cases []csvErrorCase
	for _, group := range [][]csvErrorCase{csvShapeErrorCases(), csvDateErrorCases(), csvValueErrorCases()} {
		cases = append(cases, group...)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ReadCSV(strings.NewReader(tc.in), "t.csv")
			if err == nil {
				t.Fatalf("ReadCSV = %d rows, want an error", f.Rows())
			}
			var ce *CSVError
			if !errors.As(err, &ce) {
				t.Fatalf("ReadCSV error %T (%v), want *CSVError", err, err)
			}
			if got := err.Error(); got != tc.wantMsg {
				t.Errorf("error = %q\nwant    %q", got, tc.wantMsg)
			}
			if ce.File != "t.csv" || ce.Line != tc.wantLine || ce.Column != tc.wantColumn || ce.Value != tc.wantValue {
				t.Errorf("CSVError{File %q, Line %d, Column %q, Value %q}, want {%q, %d, %q, %q}",
					ce.File, ce.Line, ce.Column, ce.Value, "t.csv", tc.wantLine, tc.wantColumn, tc.wantValue)
			}
		})
	}
}

// csvShapeErrorCases returns the rows of TestReadCSVErrors on the file's
// shape: too few rows, a bad header, rows of the wrong width.
func csvShapeErrorCases() []csvErrorCase {
	return []csvErrorCase{
		{
			name:    "empty file",
			in:      "",
			wantMsg: `t.csv: file is empty; want a header row "date,<columns>" and at least 2 data rows`,
		},
		{
			name:    "byte order mark only",
			in:      "\uFEFF",
			wantMsg: `t.csv: file is empty; want a header row "date,<columns>" and at least 2 data rows`,
		},
		{
			name:    "header only",
			in:      "date,a,b\n",
			wantMsg: "t.csv: file has 0 data rows after the header, want at least 2 so the cadence can be inferred",
		},
		{
			name:    "one data row",
			in:      csvErrorHead,
			wantMsg: "t.csv: file has 1 data rows after the header, want at least 2 so the cadence can be inferred",
		},
		{
			name:     "header without a numeric column",
			in:       "date\n2020-01-01\n2020-01-02\n",
			wantLine: 1,
			wantMsg:  `t.csv line 1: header has 1 field, want "date,<columns>" with at least one numeric column; is the file comma-separated?`,
		},
		{
			name:       "duplicate column names",
			in:         "date,a,b,a\n",
			wantLine:   1,
			wantColumn: "a",
			wantMsg:    `t.csv line 1: column "a": appears twice in the header (fields 2 and 4); rename one`,
		},
		{
			name:     "too few fields",
			in:       csvErrorHead + "2020-01-01 01:00:00,1\n",
			wantLine: 3,
			wantMsg:  "t.csv line 3: row has 2 fields, want 3 (the date and the 2 columns of the header); fix the row or drop it",
		},
		{
			name:     "too many fields after CRLF lines",
			in:       "date,a,b\r\n2020-01-01 00:00:00,1,2\r\n2020-01-01 01:00:00,1,2\r\n2020-01-01 02:00:00,1,2,3\r\n",
			wantLine: 4,
			wantMsg:  "t.csv line 4: row has 4 fields, want 3 (the date and the 2 columns of the header); fix the row or drop it",
		},
	}
}

// csvDateErrorCases returns the rows of TestReadCSVErrors on the date
// column: unparsable, epoch seconds, missing.
func csvDateErrorCases() []csvErrorCase {
	return []csvErrorCase{
		{
			name:       "unparsable date",
			in:         csvErrorHead + "2020-13-01 00:00:00,1,2\n",
			wantLine:   3,
			wantColumn: "date",
			wantValue:  "2020-13-01 00:00:00",
			wantMsg: `t.csv line 3: column "date": "2020-13-01 00:00:00" is not a date; ` +
				"want 2006-01-02 15:04:05, 2006-01-02 15:04, RFC 3339 (2006-01-02T15:04:05Z07:00), 2006-01-02 or epoch milliseconds (13 digits)",
		},
		{
			name:       "epoch seconds",
			in:         "date,a,b\n1767225600,1,2\n",
			wantLine:   2,
			wantColumn: "date",
			wantValue:  "1767225600",
			wantMsg: `t.csv line 2: column "date": "1767225600" is not a date; ` +
				"want 2006-01-02 15:04:05, 2006-01-02 15:04, RFC 3339 (2006-01-02T15:04:05Z07:00), 2006-01-02 or epoch milliseconds (13 digits); " +
				"if it is epoch seconds (2026-01-01T00:00:00Z), write 1767225600000 or a date such as 2026-01-01 00:00:00 instead",
		},
		{
			name:       "epoch seconds of 9 digits, whose milliseconds are 12",
			in:         "date,a,b\n946684800,1,2\n",
			wantLine:   2,
			wantColumn: "date",
			wantValue:  "946684800",
			wantMsg: `t.csv line 2: column "date": "946684800" is not a date; ` +
				"want 2006-01-02 15:04:05, 2006-01-02 15:04, RFC 3339 (2006-01-02T15:04:05Z07:00), 2006-01-02 or epoch milliseconds (13 digits); " +
				"if it is epoch seconds (2000-01-01T00:00:00Z), write a date such as 2000-01-01 00:00:00 instead",
		},
		{
			name:       "missing date",
			in:         csvErrorHead + ",1,2\n",
			wantLine:   3,
			wantColumn: "date",
			wantMsg:    `t.csv line 3: column "date": missing date; fill it or drop the row`,
		},
	}
}

// csvValueErrorCases returns the rows of TestReadCSVErrors on the value
// cells: not a number, not finite, out of range, empty, badly quoted.
func csvValueErrorCases() []csvErrorCase {
	return []csvErrorCase{
		{
			name:       "not a number",
			in:         csvErrorHead + "2020-01-01 01:00:00,1,2\n2020-01-01 02:00:00,3,abc\n",
			wantLine:   4,
			wantColumn: "b",
			wantValue:  "abc",
			wantMsg:    `t.csv line 4: column "b": "abc" is not a number; write the reading, or drop the row`,
		},
		{
			name:       "NaN text",
			in:         csvErrorHead + "2020-01-01 01:00:00,NaN,2\n",
			wantLine:   3,
			wantColumn: "a",
			wantValue:  "NaN",
			wantMsg:    `t.csv line 3: column "a": "NaN" is not a finite number; fill the missing value or drop the row`,
		},
		{
			name:       "Inf text",
			in:         csvErrorHead + "2020-01-01 01:00:00,1,-inf\n",
			wantLine:   3,
			wantColumn: "b",
			wantValue:  "-inf",
			wantMsg:    `t.csv line 3: column "b": "-inf" is not a finite number; fill the missing value or drop the row`,
		},
		{
			name:       "number out of range",
			in:         csvErrorHead + "2020-01-01 01:00:00,1e999,2\n",
			wantLine:   3,
			wantColumn: "a",
			wantValue:  "1e999",
			wantMsg:    `t.csv line 3: column "a": "1e999" is outside the float64 range`,
		},
		{
			name:       "empty cell",
			in:         csvErrorHead + "2020-01-01 01:00:00,,2\n",
			wantLine:   3,
			wantColumn: "a",
			wantMsg:    `t.csv line 3: column "a": missing value; fill it or drop the row`,
		},
		{
			name:       "blank cell counts as empty",
			in:         csvErrorHead + "2020-01-01 01:00:00,1,  \n",
			wantLine:   3,
			wantColumn: "b",
			wantMsg:    `t.csv line 3: column "b": missing value; fill it or drop the row`,
		},
		{
			name:     "bare quote",
			in:       csvErrorHead + "2020-01-01 01:00:00,1,2\"\n",
			wantLine: 3,
			wantMsg: `t.csv line 3: bare " in non-quoted-field; ` +
				"quote fields that contain commas or quotes, and double quotes inside them",
		},
	}
}

// failingReader returns some bytes and then an I/O error.
type failingReader struct{ data io.Reader }

var errDisk = errors.New("disk on fire")

func (r *failingReader) Read(p []byte) (int, error) {
	n, err := r.data.Read(p)
	if err == io.EOF {
		return n, errDisk
	}
	return n, err
}

func TestReadCSVWrapsReaderErrors(t *testing.T) {
	_, err := ReadCSV(&failingReader{strings.NewReader("date,a\n2020-01-01,1\n")}, "t.csv")
	if !errors.Is(err, errDisk) {
		t.Fatalf("ReadCSV error = %v, want it to wrap %v", err, errDisk)
	}
	var ce *CSVError
	if errors.As(err, &ce) {
		t.Errorf("ReadCSV error is a *CSVError (%v), want a plain wrapped I/O error", ce)
	}
}

func TestLoadCSVMissingFile(t *testing.T) {
	_, err := LoadCSV("testdata/no-such-file.csv")
	if err == nil || !strings.Contains(err.Error(), "no-such-file.csv") {
		t.Fatalf("LoadCSV error = %v, want one naming the file", err)
	}
}

func TestLoadCSVErrorNamesBaseName(t *testing.T) {
	path := t.TempDir() + "/bad.csv"
	if err := writeFile(path, "date,OT\n2020-01-01,1\n2020-01-02,x\n"); err != nil {
		t.Fatal(err)
	}
	_, err := LoadCSV(path)
	want := `bad.csv line 3: column "OT": "x" is not a number; write the reading, or drop the row`
	if err == nil || err.Error() != want {
		t.Fatalf("LoadCSV error = %v, want %q", err, want)
	}
}

func TestLoadCSVHashAndName(t *testing.T) {
	path := t.TempDir() + "/small.csv"
	const text = "date,a\n2020-01-01,1\n2020-01-02,2\n"
	if err := writeFile(path, text); err != nil {
		t.Fatal(err)
	}
	f, err := LoadCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	// From `printf 'date,a\n2020-01-01,1\n2020-01-02,2\n' | sha256sum`.
	const want = "0b83d78911d65e6c799e3fb5c8fbbe99718a7726b00b3920b1decf31e63c8f74"
	if f.Name != "small.csv" {
		t.Errorf("Name = %q, want %q", f.Name, "small.csv")
	}
	if f.SHA256 != want {
		t.Errorf("SHA256 = %s, want %s", f.SHA256, want)
	}
}

// roundTripFrame has values that are hard to print exactly.
func roundTripFrame() *Frame {
	rng := rand.New(rand.NewPCG(1, 1))
	vals := []float64{
		0, math.Copysign(0, -1), 0.1, 1.0 / 3, math.Pi, -math.E, math.MaxFloat64, -math.SmallestNonzeroFloat64,
		math.Nextafter(1, 2), 1e-300, 123456789.123456789, 5e-324,
	}
	for len(vals) < 60 {
		if v := math.Float64frombits(rng.Uint64()); !math.IsNaN(v) && !math.IsInf(v, 0) {
			vals = append(vals, v)
		}
	}
	const chans = 3
	rows := len(vals) / chans
	times := make([]time.Time, rows)
	cet := time.FixedZone("CET", 3600)
	for r := range times {
		times[r] = time.Date(2016, 7, 1, 0, 0, 0, 0, cet).Add(time.Duration(r) * 15 * time.Minute)
	}
	times[3] = times[3].Add(250 * time.Millisecond) // a fractional second must survive too
	return &Frame{Name: "rt.csv", Columns: []string{"HUFL", "a,b", `say "hi"`}, Times: times, Values: vals}
}

func TestWriteCSVRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame *Frame
	}{
		{name: "awkward floats, quoted names, fixed zone and a fractional second", frame: roundTripFrame()},
		{name: "synthetic traffic without missing readings", frame: mustSynthetic(t, SyntheticConfig{
			Series: 4, Steps: 200, Cycles: []Cycle{{PeriodSteps: 24, Amplitude: 3}}, NoiseStd: 1, Seed: 3,
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.frame.WriteCSV(&buf); err != nil {
				t.Fatalf("WriteCSV: %v", err)
			}
			got, err := ReadCSV(&buf, tc.frame.Name)
			if err != nil {
				t.Fatalf("ReadCSV(WriteCSV(f)): %v", err)
			}
			if !slices.Equal(got.Columns, tc.frame.Columns) {
				t.Errorf("Columns = %q, want %q", got.Columns, tc.frame.Columns)
			}
			if !slices.EqualFunc(got.Times, tc.frame.Times, time.Time.Equal) {
				t.Errorf("Times = %v, want %v", got.Times, tc.frame.Times)
			}
			if !bitsEqual(got.Values, tc.frame.Values) {
				t.Errorf("Values differ bitwise:\n got %v\nwant %v", got.Values, tc.frame.Values)
			}
		})
	}
}

func TestWriteCSVFormat(t *testing.T) {
	f := &Frame{
		Columns: []string{"a", "b"},
		Times:   []time.Time{utc(2020, 1, 1, 0, 0, 0), utc(2020, 1, 1, 1, 0, 0)},
		Values:  []float64{1.5, math.NaN(), math.Inf(1), -2},
	}
	var buf bytes.Buffer
	if err := f.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	want := "date,a,b\n2020-01-01 00:00:00,1.5,\n2020-01-01 01:00:00,+Inf,-2\n"
	if got := buf.String(); got != want {
		t.Errorf("WriteCSV =\n%s\nwant\n%s", got, want)
	}
}

func TestWriteCSVErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame *Frame
		want  string
	}{
		{
			name:  "values do not match the shape",
			frame: &Frame{Name: "x", Columns: []string{"a"}, Times: make([]time.Time, 2), Values: []float64{1}},
			want:  "write csv x: frame has 1 values, want rows×channels = 2×1 = 2",
		},
		{
			name: "year outside the date format",
			frame: &Frame{Name: "x", Columns: []string{"a"}, Values: []float64{1},
				Times: []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
			want: "write csv x: row 0: date 10000-01-01 00:00:00 +0000 UTC falls in the year 10000 in UTC, " +
				"outside the years 0000 to 9999 that the date format holds",
		},
		{
			name: "year 0000 east of UTC is year -1 in UTC",
			frame: &Frame{Name: "x", Columns: []string{"a"}, Values: []float64{1},
				Times: []time.Time{time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600))}},
			want: "write csv x: row 0: date 0000-01-01 00:00:00 +0100 +0100 falls in the year -1 in UTC, " +
				"outside the years 0000 to 9999 that the date format holds",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.frame.WriteCSV(io.Discard)
			if err == nil || err.Error() != tc.want {
				t.Errorf("WriteCSV error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadCSVBenchmarkFiles(t *testing.T) {
	sums := sha256Sums(t)
	ettCols := []string{"HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"}
	for _, tc := range []struct {
		file        string
		rows        int
		cols        int
		firstCol    string
		lastCol     string
		first, last time.Time
		cadence     time.Duration
	}{
		{"ETTh1.csv", 17420, 7, "HUFL", "OT", utc(2016, 7, 1, 0, 0, 0), utc(2018, 6, 26, 19, 0, 0), time.Hour},
		{"ETTh2.csv", 17420, 7, "HUFL", "OT", utc(2016, 7, 1, 0, 0, 0), utc(2018, 6, 26, 19, 0, 0), time.Hour},
		{"ETTm1.csv", 69680, 7, "HUFL", "OT", utc(2016, 7, 1, 0, 0, 0), utc(2018, 6, 26, 19, 45, 0), 15 * time.Minute},
		{"ETTm2.csv", 69680, 7, "HUFL", "OT", utc(2016, 7, 1, 0, 0, 0), utc(2018, 6, 26, 19, 45, 0), 15 * time.Minute},
		{"weather.csv", 52696, 21, "p (mbar)", "OT", utc(2020, 1, 1, 0, 10, 0), utc(2021, 1, 1, 0, 0, 0), 10 * time.Minute},
	} {
		t.Run(tc.file, func(t *testing.T) {
			start := time.Now()
			f := loadData(t, tc.file)
			t.Logf("LoadCSV(%s) took %v", tc.file, time.Since(start))
			if f.Name != tc.file {
				t.Errorf("Name = %q, want %q", f.Name, tc.file)
			}
			if f.Rows() != tc.rows || f.Channels() != tc.cols {
				t.Errorf("shape = %d×%d, want %d×%d", f.Rows(), f.Channels(), tc.rows, tc.cols)
			}
			if len(f.Values) != tc.rows*tc.cols {
				t.Errorf("len(Values) = %d, want %d", len(f.Values), tc.rows*tc.cols)
			}
			if got := f.Columns[0]; got != tc.firstCol {
				t.Errorf("Columns[0] = %q, want %q", got, tc.firstCol)
			}
			if got := f.Columns[len(f.Columns)-1]; got != tc.lastCol {
				t.Errorf("last column = %q, want %q", got, tc.lastCol)
			}
			if !f.Times[0].Equal(tc.first) || !f.Times[f.Rows()-1].Equal(tc.last) {
				t.Errorf("time span = %v .. %v, want %v .. %v", f.Times[0], f.Times[f.Rows()-1], tc.first, tc.last)
			}
			if f.Cadence != tc.cadence {
				t.Errorf("Cadence = %v, want %v", f.Cadence, tc.cadence)
			}
			if want := sums[tc.file]; f.SHA256 != want {
				t.Errorf("SHA256 = %s, want %s from SHA256SUMS", f.SHA256, want)
			}
			if tc.cols == 7 && !slices.Equal(f.Columns, ettCols) {
				t.Errorf("Columns = %q, want %q", f.Columns, ettCols)
			}
		})
	}
}

func TestLoadCSVWeatherQuirks(t *testing.T) {
	f := loadData(t, "weather.csv")
	for _, want := range []string{"SWDR (W/m\uFFFD)", "PAR (\uFFFDmol/m\uFFFD/s)", "max. PAR (\uFFFDmol/m\uFFFD/s)"} {
		if !slices.Contains(f.Columns, want) {
			t.Errorf("Columns = %q, want them to contain %q as in the file", f.Columns, want)
		}
	}
	var dups, gaps int
	for i := 1; i < f.Rows(); i++ {
		switch d := f.Times[i].Sub(f.Times[i-1]); {
		case d == 0:
			dups++
			if want := utc(2020, 5, 12, 6, 0, 0); !f.Times[i].Equal(want) {
				t.Errorf("duplicate timestamp %v, want %v", f.Times[i], want)
			}
		case d != 10*time.Minute:
			gaps++
			if d != 100*time.Minute {
				t.Errorf("gap of %v at %v, want 100m", d, f.Times[i])
			}
		}
	}
	if dups != 1 || gaps != 1 {
		t.Errorf("found %d duplicate timestamps and %d gaps, want 1 and 1", dups, gaps)
	}
}

// FuzzReadCSV checks the invariants of ReadCSV on arbitrary bytes: it never
// panics; every error is a *CSVError; a Frame it returns is consistent
// (at least 2 rows, at least one channel, rows×channels finite values, the
// cadence inferred from its times); and WriteCSV followed by ReadCSV gives
// back the same columns, times and values, bit for bit.
func FuzzReadCSV(f *testing.F) {
	const valid = "date,a,b\n2016-07-01 00:00:00,1.5,2\n2016-07-01 01:00:00,-3,4e10\n"
	f.Add([]byte(""))
	f.Add([]byte(valid[:30])) // truncated in the first data row
	f.Add([]byte(valid))
	f.Add([]byte(valid + "\x00garbage,\"\n,,"))
	f.Add([]byte("\uFEFFdate,\"x,y\"\r\n2020-01-01T00:00:00Z,1\r\n2020-01-01T00:10:00+02:00,2\r\n"))
	f.Add([]byte("date,a\n2020-01-01,1\n2020-01-01,1\n2020-01-03 04:05,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// With column "a" as the series ids (LoadCSVSeries): every row keeps
		// a non-empty id, and the rest stays a consistent frame.
		if fr, err := readCSV(bytes.NewReader(data), "fuzz.csv", 0, 0, "a", false); err == nil {
			if len(fr.Series) != fr.Rows() || fr.Channels() < 1 || len(fr.Values) != fr.Rows()*fr.Channels() || slices.Contains(fr.Columns, "a") {
				t.Fatalf("series frame: %d ids for %d rows, columns %q, %d values", len(fr.Series), fr.Rows(), fr.Columns, len(fr.Values))
			}
			if slices.Contains(fr.Series, "") {
				t.Fatal("an empty series id was accepted")
			}
		} else if ce := (*CSVError)(nil); !errors.As(err, &ce) {
			t.Fatalf("series error %T (%v), want *CSVError", err, err)
		}
		fr, err := ReadCSV(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			var ce *CSVError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T (%v), want *CSVError", err, err)
			}
			return
		}
		rows, chans := fr.Rows(), fr.Channels()
		if rows < 2 || chans < 1 || len(fr.Values) != rows*chans {
			t.Fatalf("inconsistent frame: %d rows, %d channels, %d values", rows, chans, len(fr.Values))
		}
		for i, v := range fr.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("Values[%d] = %v, want finite", i, v)
			}
		}
		if got, want := fr.Cadence, inferCadence(fr.Times); got != want && (!slices.Contains(roundCadences, got) || !SameCadence(got, want)) || got < 0 {
			t.Fatalf("Cadence = %v, want %v or a round cadence near it", got, want)
		}
		var buf bytes.Buffer
		if err := fr.WriteCSV(&buf); err != nil {
			// Only dates that leave the years 0000-9999 in UTC cannot be written.
			for _, tm := range fr.Times {
				if y := tm.UTC().Year(); y < 0 || y > 9999 {
					return
				}
			}
			t.Fatalf("WriteCSV: %v", err)
		}
		back, err := ReadCSV(&buf, "fuzz.csv")
		if err != nil {
			t.Fatalf("ReadCSV(WriteCSV(f)): %v\n%q", err, buf.String())
		}
		if !slices.Equal(back.Columns, fr.Columns) {
			t.Fatalf("round trip Columns = %q, want %q", back.Columns, fr.Columns)
		}
		if !slices.EqualFunc(back.Times, fr.Times, time.Time.Equal) {
			t.Fatalf("round trip Times = %v, want %v", back.Times, fr.Times)
		}
		if !bitsEqual(back.Values, fr.Values) {
			t.Fatalf("round trip Values = %v, want %v", back.Values, fr.Values)
		}
	})
}

// TestShippedETTh1 checks the repository's copy of ETTh1 is the original
// file, byte for byte (testdata/README.md), and the shared folder's when it
// is there.
func TestShippedETTh1(t *testing.T) {
	const want = "f18de3ad269cef59bb07b5438d79bb3042d3be49bdeecf01c1cd6d29695ee066"
	f, err := LoadCSV(shippedETTh1)
	if err != nil {
		t.Fatal(err)
	}
	if f.SHA256 != want {
		t.Errorf("testdata/ETTh1.csv has SHA-256 %s, want the original's %s", f.SHA256, want)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "SHA256SUMS")); err == nil {
		if got := sha256Sums(t)["ETTh1.csv"]; got != want {
			t.Errorf("the shared folder's ETTh1.csv has SHA-256 %s, the shipped copy %s", got, want)
		}
	}
	if f.Rows() != 17420 || f.Channels() != 7 {
		t.Errorf("testdata/ETTh1.csv has %d rows of %d channels, want 17420 of 7", f.Rows(), f.Channels())
	}
}

// TestLoadCSVSeries: a long-format file's series column is read as text ids,
// kept as written, and left out of the channels; a missing column or id is
// refused naming it.
func TestLoadCSVSeries(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := write("long.csv", "date,temp,sensor,hum\n"+
		"2024-01-01 00:00,1.5,s-17,80\n2024-01-01 00:00,2.5,007,81\n2024-01-01 01:00,3.5,s-17,82\n2024-01-01 01:00,4.5,007,83\n")
	f, err := LoadCSVSeries(long, "sensor")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Columns, []string{"temp", "hum"}) || !slices.Equal(f.Series, []string{"s-17", "007", "s-17", "007"}) ||
		f.SeriesColumn != "sensor" || !slices.Equal(f.Values, []float64{1.5, 80, 2.5, 81, 3.5, 82, 4.5, 83}) || f.Cadence != time.Hour {
		t.Errorf("LoadCSVSeries = columns %v, series %v (%q), values %v, cadence %v", f.Columns, f.Series, f.SeriesColumn, f.Values, f.Cadence)
	}
	// The series column first, as long files (and train's readers) have
	// it: the date is the column after it.
	first := write("first.csv", "sensor,time,temp\ns-17,2024-01-01 00:00,1.5\n007,2024-01-01 00:00,2.5\ns-17,2024-01-01 01:00,3.5\n")
	if f, err := LoadCSVSeries(first, "sensor"); err != nil || !slices.Equal(f.Columns, []string{"temp"}) ||
		!slices.Equal(f.Series, []string{"s-17", "007", "s-17"}) || !slices.Equal(f.Values, []float64{1.5, 2.5, 3.5}) || f.Cadence != time.Hour {
		t.Errorf("LoadCSVSeries with the series column first = %+v, %v", f, err)
	}
	for _, tc := range []struct {
		name, text, column, want string
	}{
		{"no such column", "date,a,b\n2024-01-01,1,2\n2024-01-02,3,4\n", "sensor", `column "sensor": is not a column of the header (columns: date, a, b)`},
		{"only the series column", "date,sensor\n2024-01-01,x\n2024-01-02,y\n", "sensor", "is the only column beside the date"},
		{"the series column first, then only the date", "sensor,date\nx,2024-01-01\ny,2024-01-02\n", "sensor", "is the only column beside the date"},
		{"an empty id", "date,sensor,v\n2024-01-01,x,1\n2024-01-02, ,2\n", "sensor", "line 3: column \"sensor\": missing series id"},
		{"a short row", "date,sensor,v\n2024-01-01,x,1\n2024-01-02,y\n", "sensor", "row has 2 fields, want 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCSVSeries(write(tc.name+".csv", tc.text), tc.column)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
