package history

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.yaml.in/yaml/v3"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history/historytest"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/readings"
)

// fields are the value fields of the test history, under names that are
// not the defaults, as a --config would give them (cfg is
// readings.DefaultConfig with these names).
var (
	fields = []string{"flow", "speed"}
	cfg    = func() readings.Config {
		c := readings.DefaultConfig()
		c.SeriesField, c.TimeField, c.ValueFields = "sensor", "at", fields
		return c
	}()
)

// layout names the test history's columns as cfg does.
var layout = historytest.Layout{Series: "sensor", Time: "at", Values: fields}

// randomHistory returns seeded random readings of a few series with their
// own starts, lengths, gaps, duplicates and jittered times, in a shuffled
// order, and one reading with a NaN that every source must refuse.
func randomHistory(seed uint64) []historytest.Row {
	rng := rand.New(rand.NewPCG(seed, 7))
	var rows []historytest.Row
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for s := range 3 + rng.IntN(4) {
		name := fmt.Sprintf("sensor-%d", s)
		k := int64(rng.IntN(50))
		for range 150 + rng.IntN(150) {
			if rng.Float64() < 0.05 {
				k += int64(1 + rng.IntN(5))
			}
			ms := t0 + k*3_600_000 + int64(rng.IntN(3_600_000))
			rows = append(rows, historytest.Row{Series: name, Ms: ms, Values: []float64{100 + 20*math.Sin(float64(k)/4) + rng.NormFloat64(), rng.Float64() * 80}})
			k++
		}
	}
	rows = append(rows, historytest.Row{Series: "sensor-0", Ms: t0, Values: []float64{math.NaN(), 1}})
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	return rows
}

// reference builds the panel straight from the rows, leaving out the
// refused one.
func reference(t *testing.T, rows []historytest.Row) *dataset.Panel {
	t.Helper()
	b := newBuilder(t)
	for _, r := range rows {
		if !math.IsNaN(r.Values[0]) {
			b.Add(r.Series, r.Ms, r.Values)
		}
	}
	p, err := b.Build(24)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newBuilder(t *testing.T) *dataset.PanelBuilder {
	t.Helper()
	b, err := dataset.NewPanelBuilder(dataset.PanelConfig{Name: "test", Fields: fields, Cadence: time.Hour, MaxGap: 3})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// samePanel fails unless got holds exactly want's segments.
func samePanel(t *testing.T, what string, got, want *dataset.Panel) {
	t.Helper()
	if len(got.Segments) != len(want.Segments) {
		t.Fatalf("%s: %d segments, want %d", what, len(got.Segments), len(want.Segments))
	}
	for i, w := range want.Segments {
		g := got.Segments[i]
		if g.Series != w.Series || g.Start != w.Start || !slices.Equal(g.Values, w.Values) {
			t.Fatalf("%s: segment %d is %s from step %d (%d values), want %s from %d (%d values)",
				what, i, g.Series, g.Start, len(g.Values), w.Series, w.Start, len(w.Values))
		}
	}
	if got.Report.Duplicates != want.Report.Duplicates || got.Report.Filled != want.Report.Filled {
		t.Fatalf("%s: report %+v, want %+v", what, got.Report, want.Report)
	}
}

// TestFilesGiveTheSamePanel: the same seeded random history written as long
// CSV, an Arrow IPC file, an Arrow IPC stream and Parquet is detected as
// such, and each reads into exactly the panel the readings make, with the
// NaN reading refused and counted.
func TestFilesGiveTheSamePanel(t *testing.T) {
	for seed := range uint64(3) {
		rows := randomHistory(seed)
		want := reference(t, rows)
		dir := t.TempDir()
		for _, tc := range []struct {
			name   string
			format FileFormat
			write  func(testing.TB, string, historytest.Layout, []historytest.Row)
		}{
			{"history.csv", FileCSV, historytest.WriteCSV},
			{"history.arrow", FileArrow, historytest.WriteArrowFile},
			{"history.arrows", FileArrow, historytest.WriteArrowStream},
			{"history.parquet", FileParquet, historytest.WriteParquet},
		} {
			path := filepath.Join(dir, tc.name)
			tc.write(t, path, layout, rows)
			format, err := Detect(path, cfg)
			if err != nil || format != tc.format {
				t.Fatalf("Detect(%s) = %q, %v; want %q", tc.name, format, err, tc.format)
			}
			b := newBuilder(t)
			stats, err := DecodeFile(context.Background(), path, format, cfg, b)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if stats.Messages != len(rows) || stats.Readings != len(rows)-1 || stats.Refused[readings.ReasonNonFinite] != 1 || stats.Refusals() != 1 {
				t.Fatalf("seed %d %s: %v, %v; want %d rows, the NaN one refused as non_finite", seed, tc.name, stats, stats.Refused, len(rows))
			}
			if want := fmt.Sprintf("%d rows, %d readings", len(rows), len(rows)-1); !strings.HasPrefix(stats.String(), want) {
				t.Errorf("seed %d %s: the read is said as %q, want %q: a file has rows", seed, tc.name, stats, want)
			}
			nan := slices.IndexFunc(rows, func(r historytest.Row) bool { return math.IsNaN(r.Values[0]) })
			if tc.format == FileCSV {
				if want := fmt.Sprintf("line %d: ", nan+2); !strings.HasPrefix(stats.Example, want) {
					t.Errorf("seed %d %s: the refused reading is %q, want it to start with %q (its line)", seed, tc.name, stats.Example, want)
				}
			} else if want := fmt.Sprintf("row %d of the file (from 0): ", nan); !strings.Contains(stats.Example, want) || strings.Contains(stats.Example, "row 0:") {
				t.Errorf("seed %d %s: the refused reading is %q, want it named as %q (its row)", seed, tc.name, stats.Example, want)
			}
			got, err := b.Build(24)
			if err != nil {
				t.Fatal(err)
			}
			samePanel(t, fmt.Sprintf("seed %d %s", seed, tc.name), got, want)
		}
	}
}

// TestWideCSVIsNotLong: a benchmark CSV (a date column, one column per
// channel) is not taken for long-format history.
func TestWideCSVIsNotLong(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wide.csv")
	if err := os.WriteFile(path, []byte("date,HUFL,OT\n2016-07-01 00:00:00,5.8,30.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if format, err := Detect(path, readings.DefaultConfig()); err != nil || format != "" {
		t.Fatalf("Detect = %q, %v; want the wide format (\"\")", format, err)
	}
	// The readings' Config is taken as given: a zero one names no fields.
	if _, err := Detect(path, readings.Config{}); err == nil || !strings.Contains(err.Error(), "input.format") {
		t.Errorf("Detect with a zero readings.Config: error %v, want one naming input.format", err)
	}
}

// TestLongCSVWithAnotherTimeName: a CSV whose header names the series
// field but not the time field is a long file whose time column has
// another name, not a wide file whose first column is not a date: Detect
// says which field is missing and where to name it. One with a "ts"
// column and no series column (a wide file's date may be called ts) stays
// wide.
func TestLongCSVWithAnotherTimeName(t *testing.T) {
	dir := t.TempDir()
	long, wide := filepath.Join(dir, "long.csv"), filepath.Join(dir, "wide.csv")
	if err := os.WriteFile(long, []byte("series,time,value\ns-1,2026-01-05T00:00:00Z,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wide, []byte("ts,temp,rh\n2026-01-05 00:00:00,1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Detect(long, readings.DefaultConfig()); err == nil || !strings.Contains(err.Error(), `not the time field "ts"`) ||
		!strings.Contains(err.Error(), "input.time_field") {
		t.Errorf("Detect(long.csv with a time column) = %v; want an error naming the time field and input.time_field", err)
	}
	if format, err := Detect(wide, readings.DefaultConfig()); err != nil || format != "" {
		t.Errorf("Detect(wide.csv with a ts date column) = %q, %v; want the wide format", format, err)
	}
}

// TestTopicGivesTheSamePanel: the same history produced to a topic as JSON
// messages (with one that is not JSON) reads into the same panel, through
// every partition, with the bad messages counted by reason.
func TestTopicGivesTheSamePanel(t *testing.T) {
	rows := randomHistory(11)
	want := reference(t, rows)
	c := kafkatest.NewCluster(t, []string{"readings"})
	kc := kafkatest.Client(t, c.ListenAddrs())
	msgs := make([]kafka.Message, 0, len(rows)+1)
	for _, r := range rows {
		v := readings.AppendJSON(nil, readings.Reading{Series: r.Series, Time: time.UnixMilli(r.Ms), Values: r.Values}, cfg)
		msgs = append(msgs, kafka.Message{Key: []byte(r.Series), Value: v})
	}
	msgs = append(msgs, kafka.Message{Key: []byte("x"), Value: []byte("not json")})
	kafkatest.Produce(t, kc, "readings", msgs...)
	b := newBuilder(t)
	var progressed int64
	stats, err := DecodeTopic(context.Background(), kc, "readings", cfg, b, TopicOptions{Progress: func(read, total int64) { progressed = read }})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Messages != len(msgs) || stats.Readings != len(rows)-1 || stats.Refusals() != 2 || stats.Refused[readings.ReasonUnparsable] != 1 || progressed != int64(len(msgs)) {
		t.Fatalf("%v, progress %d; want %d messages, the NaN and the non-JSON one refused", stats, progressed, len(msgs))
	}
	got, err := b.Build(24)
	if err != nil {
		t.Fatal(err)
	}
	samePanel(t, "topic", got, want)

	// Since after every message's timestamp: nothing is read.
	b = newBuilder(t)
	stats, err = DecodeTopic(context.Background(), kc, "readings", cfg, b, TopicOptions{Since: time.Now().Add(time.Hour)})
	if err != nil || stats.Messages != 0 {
		t.Fatalf("with Since in the future: %v, %v; want nothing read", stats, err)
	}
}

// TestMissingColumn: a file without one of the configured fields is
// refused at once, naming the column, in every format.
func TestMissingColumn(t *testing.T) {
	rows := randomHistory(1)
	dir := t.TempDir()
	other := historytest.Layout{Series: "sensor", Time: "at", Values: []string{"flow", "occupancy"}}
	for _, tc := range []struct {
		name   string
		format FileFormat
		write  func(testing.TB, string, historytest.Layout, []historytest.Row)
	}{
		{"h.csv", FileCSV, historytest.WriteCSV},
		{"h.arrow", FileArrow, historytest.WriteArrowFile},
		{"h.parquet", FileParquet, historytest.WriteParquet},
	} {
		path := filepath.Join(dir, tc.name)
		tc.write(t, path, other, rows)
		_, err := DecodeFile(context.Background(), path, tc.format, cfg, newBuilder(t))
		if err == nil || !strings.Contains(err.Error(), `no "speed"`) {
			t.Errorf("%s: %v; want an error naming the missing column speed", tc.name, err)
		}
	}
}

// TestLongHint: a CSV with a text column (a series column under another
// name) beside a column of dates is said to look like long-format data,
// with the --config settings that read it, in the file's own names; a wide
// file (a date, then numbers, NaN included) is not.
func TestLongHint(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text, want string
	}{
		{"series first", "sensor,ts,value\ns-00,2026-01-05T00:00:00Z,1\n", `it looks like long-format data (a reading a row): column "sensor" holds series ids ("s-00") and "ts" the times; read it with a --config file holding ` + "`input: {series_field: sensor, time_field: ts, value_fields: [value]}`" + `, or name the columns series, ts and value`},
		{"series second", "time,sensor,flow,speed\n2026-01-05 00:00:00,s-00,1,NA\n", `input: {series_field: sensor, time_field: time, value_fields: [flow, speed]}`},
		// A note column of free text before the ids: the ids repeat.
		{"note first", "flow,note,at,station\n1,first,2026-01-05 00:00,north\n2,second,2026-01-05 00:00,south\n3,third,2026-01-05 01:00,north\n",
			`column "station" holds series ids ("north") and "at" the times`},
		// A column of units, one value throughout, beside the ids.
		{"units beside the ids", "station,when,pressure,unit\nnorth,2026-01-05,1013,mbar\nsouth,2026-01-05,1009,mbar\nnorth,2026-01-06,1011,mbar\nsouth,2026-01-06,1010,mbar\n",
			`column "station" holds series ids ("north") and "when" the times`},
		{"names to quote", "speed km/h,2m temp,when,id\n1,2,2026-01-05,a\n", `input: {series_field: id, time_field: when, value_fields: ["speed km/h", "2m temp"]}`},
		{"wide", "date,HUFL,OT\n2016-07-01 00:00:00,5.8,NaN\n", ""},
		{"wide, epoch milliseconds", "date,OT\n1767600000000,5.8\n", ""},
		{"wide with NA", "date,HUFL,OT\n2016-07-01 00:00:00,5.8,NA\n", ""},
		{"wide with dates of another layout", "date,OT\n07/01/2016 00:00,5.8\n", ""},
	} {
		path := filepath.Join(dir, tc.name+".csv")
		if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		got := LongHint(path, readings.DefaultConfig())
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: LongHint = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestLongHintReads: the settings a hint gives read the file it was given
// for, whatever its column names (seeded random names, some YAML would
// misread unquoted).
func TestLongHintReads(t *testing.T) {
	names := []string{"sensor", "id", "2m temp", "true", "speed (km/h)", "a:b", "null", "#tag", "flow", "x.y", "-z", "ünit"}
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 11))
		perm := r.Perm(len(names))
		series, ts, v1, v2 := names[perm[0]], names[perm[1]], names[perm[2]], names[perm[3]]
		var sb strings.Builder
		w := csv.NewWriter(&sb)
		_ = w.Write([]string{v1, ts, series, v2})
		for k := range 40 {
			_ = w.Write([]string{strconv.Itoa(k), fmt.Sprintf("2026-01-05 %02d:00:00", k/2), fmt.Sprintf("s-%d", k%2), "1.5"})
		}
		w.Flush()
		path := filepath.Join(t.TempDir(), "long.csv")
		if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		hint := LongHint(path, readings.DefaultConfig())
		line := hint[strings.Index(hint, "`input: {")+1:]
		line = line[:strings.IndexByte(line, '`')]
		var doc struct {
			Input struct {
				SeriesField string   `yaml:"series_field"`
				TimeField   string   `yaml:"time_field"`
				ValueFields []string `yaml:"value_fields"`
			} `yaml:"input"`
		}
		if err := yaml.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("seed %d: the hint's settings %q are not YAML: %v", seed, line, err)
		}
		in := doc.Input
		if in.SeriesField != series || in.TimeField != ts || !slices.Equal(in.ValueFields, []string{v1, v2}) {
			t.Errorf("seed %d: the hint %q reads as %+v; want series %q, time %q, values %q, %q", seed, line, in, series, ts, v1, v2)
		}
	}
}

// TestZonelessTimesInFilesAreUTC: a long CSV's times without a zone are
// read as UTC, as a wide file's dates are: the same panel as with "Z", and
// the read says so.
func TestZonelessTimesInFilesAreUTC(t *testing.T) {
	dir := t.TempDir()
	var withZ, without strings.Builder
	withZ.WriteString("series,ts,value\n")
	without.WriteString("series,ts,value\n")
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for k := range 60 {
		at := t0.Add(time.Duration(k) * time.Hour)
		fmt.Fprintf(&withZ, "a,%s,%d\n", at.Format(time.RFC3339), k)
		fmt.Fprintf(&without, "a,%s,%d\n", at.Format("2006-01-02 15:04:05"), k)
	}
	var panels []*dataset.Panel
	for name, text := range map[string]string{"z.csv": withZ.String(), "naive.csv": without.String()} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := dataset.NewPanelBuilder(dataset.PanelConfig{Name: name, Fields: []string{"value"}})
		if err != nil {
			t.Fatal(err)
		}
		stats, err := DecodeFile(context.Background(), path, FileCSV, readings.DefaultConfig(), b)
		if err != nil || stats.Readings != 60 {
			t.Fatalf("%s: %v, %v; want 60 readings", name, stats, err)
		}
		// The zone-less file says it was read as UTC: a live producer of
		// the same stamps would be refused.
		if said := strings.Contains(stats.String(), "times without a zone read as UTC"); said != (name == "naive.csv") {
			t.Errorf("%s: %q says the times were read as UTC: %v", name, stats, said)
		}
		p, err := b.Build(24)
		if err != nil {
			t.Fatal(err)
		}
		panels = append(panels, p)
	}
	samePanel(t, "zoneless", panels[0], panels[1])
}
