package feed_test

import (
	"context"
	"encoding/csv"
	"errors"
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

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/feed"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/readings/readingstest"
)

// testCSV is a CSV file written by randomCSV: its header and the text of
// every cell, from which the test derives what a replay must produce,
// independently of the loader.
type testCSV struct {
	path   string
	header []string   // the date column, then the value columns
	cells  [][]string // one row per data row, the date first
}

// randomCSV writes a CSV of rows data rows to dir: a date column with
// timestamps (to the millisecond) step apart, plus a random jitter of up to
// jitter, and cols numeric columns of random values spanning many
// magnitudes and signs. With ids, the first value column, "sensor", holds
// one of ids per row. One column name needs CSV quoting. It returns the
// file and the frame dataset.LoadCSV reads from it, or with textIDs
// dataset.LoadCSVSeries with the ids as text.
func randomCSV(t *testing.T, rng *rand.Rand, rows, cols int, step, jitter time.Duration, ids []string, textIDs bool) (testCSV, *dataset.Frame) {
	t.Helper()
	c := testCSV{path: filepath.Join(t.TempDir(), fmt.Sprintf("random-%d.csv", rng.Uint32()))}
	c.header = []string{"date"}
	if ids != nil {
		c.header = append(c.header, "sensor")
	}
	for j := len(c.header) - 1; j < cols; j++ {
		name := fmt.Sprintf("c%d", j)
		if j == 1 {
			name = "flow, east" // quoted in the file and in CSV messages
		}
		c.header = append(c.header, name)
	}
	ts := time.Date(2015+rng.IntN(10), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), 0, 0, time.UTC).
		Add(time.Duration(rng.IntN(60_000)) * time.Millisecond)
	for range rows {
		row := []string{ts.Format("2006-01-02 15:04:05.000")}
		if ids != nil {
			row = append(row, ids[rng.IntN(len(ids))])
		}
		for len(row) < len(c.header) {
			v := rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4))
			if rng.IntN(5) == 0 {
				v = math.Round(v)
			}
			row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
		}
		c.cells = append(c.cells, row)
		ts = ts.Add(step + time.Duration(rng.Int64N(int64(jitter)+1)).Truncate(time.Millisecond))
	}
	f, err := os.Create(c.path)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	w.Write(c.header)
	w.WriteAll(c.cells)
	if err := f.Close(); err != nil || w.Error() != nil {
		t.Fatal(err, w.Error())
	}
	load := dataset.LoadCSV
	if textIDs {
		load = func(path string) (*dataset.Frame, error) { return dataset.LoadCSVSeries(path, "sensor") }
	}
	data, err := load(c.path)
	if err != nil {
		t.Fatal(err)
	}
	return c, data
}

// want returns the readings replaying rows [from, end) must produce, by
// series in row order: one per column, or with a series column, one per row
// whose values are the other columns.
func (c testCSV) want(t *testing.T, from, end int, seriesColumn string) map[string][]readingstest.Row {
	t.Helper()
	out := map[string][]readingstest.Row{}
	for _, row := range c.cells[from:end] {
		ts, err := time.Parse("2006-01-02 15:04:05.000", row[0])
		if err != nil {
			t.Fatal(err)
		}
		var series string
		var values []float64
		for j, cell := range row[1:] {
			name := c.header[j+1]
			if name == seriesColumn {
				series = cell
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case seriesColumn == "":
				out[name] = append(out[name], readingstest.Row{Series: name, TS: ts.UnixMilli(), Values: []float64{v}})
			default:
				values = append(values, v)
			}
		}
		if seriesColumn != "" {
			out[series] = append(out[series], readingstest.Row{Series: series, TS: ts.UnixMilli(), Values: values})
		}
	}
	return out
}

// TestReplayWritesEveryRowOnce: a replay of a random CSV (each column a
// series, or a series column naming the series of each row; JSON and CSV
// messages; all rows or a stretch) writes every reading once, each series'
// readings in row order, with the file's timestamps to the millisecond and
// its values bit for bit, as the consumer's decoder reads them.
func TestReplayWritesEveryRowOnce(t *testing.T) {
	cases := []struct {
		name        string
		seed        uint64
		format      readings.Format
		ids         []string // the series column's values; nil: every column a series
		text        bool     // the series column read as text (dataset.LoadCSVSeries)
		from, limit int
		fields      bool // written with a serve configuration's field names (ReplayConfig.Fields)
	}{
		{name: "series column of text ids, json", seed: 7, format: readings.FormatJSON, ids: []string{"s-17", "t1", "007", "Main St"}, text: true},
		{name: "series column of text ids, csv", seed: 8, format: readings.FormatCSV, ids: []string{"a,b", "x"}, text: true, from: 2, limit: 30},
		{name: "every column a series, json", seed: 1, format: readings.FormatJSON},
		{name: "every column a series, csv", seed: 2, format: readings.FormatCSV},
		{name: "series column, json", seed: 3, format: readings.FormatJSON, ids: []string{"3", "17", "250", "4.5"}},
		{name: "series column, csv", seed: 4, format: readings.FormatCSV, ids: []string{"7", "0.25", "1000000"}},
		{name: "from and limit", seed: 5, format: readings.FormatJSON, from: 11, limit: 23},
		{name: "limit beyond the end", seed: 6, format: readings.FormatCSV, ids: []string{"1", "2"}, from: 3, limit: 1 << 20},
		{name: "a configuration's field names, json", seed: 9, format: readings.FormatJSON, ids: []string{"s-1", "s-2"}, text: true, fields: true},
		{name: "a configuration's field names and columns, csv", seed: 10, format: readings.FormatCSV, fields: true},
	}
	var topics []string
	for i := range cases {
		topics = append(topics, fmt.Sprintf("readings-%d", i))
	}
	kc := newBroker(t, topics...)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 18))
			rows, cols := 40+rng.IntN(80), 1+rng.IntN(4)
			if tc.ids != nil {
				cols++ // the series column
			}
			c, data := randomCSV(t, rng, rows, cols, time.Duration(1+rng.IntN(7200))*time.Second, time.Minute, tc.ids, tc.text)
			t.Logf("%d rows, columns %q", rows, c.header)
			cfg := replayConfig(func(c *feed.ReplayConfig) { c.From, c.Limit, c.Format = tc.from, tc.limit, tc.format })
			in := readings.DefaultConfig()
			in.Format = tc.format
			if tc.ids != nil {
				cfg.SeriesColumn = "sensor"
				in.ValueFields = c.header[2:]
			}
			if tc.fields {
				// The service's names, which are not the file's: the
				// messages must carry these to be read.
				in.SeriesField, in.TimeField, in.ValueFields = "sensor_id", "at", []string{"reading"}
				if cfg.SeriesColumn != "" {
					in.ValueFields = nil
					for v := range len(c.header) - 2 { // but the date and the series
						in.ValueFields = append(in.ValueFields, fmt.Sprintf("reading_%d", v))
					}
				}
				if tc.format == readings.FormatCSV {
					in.CSVColumns = append([]string{"at", "sensor_id"}, in.ValueFields...)
				}
				cfg.Fields = &in
			}
			r, err := feed.NewReplay(cfg, kc, topics[i], data)
			if err != nil {
				t.Fatal(err)
			}
			st, err := r.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			end := rows
			if tc.limit > 0 {
				end = min(rows, tc.from+tc.limit)
			}
			want := c.want(t, tc.from, end, cfg.SeriesColumn)
			wantReadings := count(want)
			if st.Rows != end-tc.from || st.Readings != wantReadings {
				t.Errorf("Run = %d rows, %d readings; want %d rows, %d readings", st.Rows, st.Readings, end-tc.from, wantReadings)
			}
			msgs := kafkatest.ReadAll(t, kc, topics[i])
			got := decode(t, msgs, in, time.Now)
			if len(got) != len(want) || count(got) != wantReadings {
				t.Errorf("topic holds %d readings of %d series, want %d of %d", count(got), len(got), wantReadings, len(want))
			}
			for series, w := range want {
				if g := got[series]; !readingstest.SameRows(g, w) {
					t.Errorf("series %q:\n got %v\nwant %v", series, g, w)
				}
			}
		})
	}
}

// TestReplayPaces: at a speed, row r is not written before (time of r −
// time of From)/speed has passed, so the replay of 5 h of rows at 18,000×
// takes at least a second; only that lower bound is checked, which a loaded
// machine cannot break.
func TestReplayPaces(t *testing.T) {
	kc := newBroker(t, "readings")
	rng := rand.New(rand.NewPCG(7, 18))
	_, data := randomCSV(t, rng, 8, 2, time.Hour, 0, nil, false)
	// Progress hears of every row as it is written, in order, up to the
	// last row's time.
	var said []int
	var upTo time.Time
	progress := func(rows, total int, at time.Time) {
		if total != 6 {
			t.Errorf("progress: %d rows to write, want 6", total)
		}
		said, upTo = append(said, rows), at
	}
	r, err := feed.NewReplay(replayConfig(func(c *feed.ReplayConfig) { c.Speed, c.From, c.Progress = 18000, 2, progress }), kc, "readings", data)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, err := r.Run(context.Background())
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if min(took, st.Elapsed) < time.Second {
		t.Errorf("replaying rows 2 to 7 (5 h) at 18000× took %v (Elapsed %v), want at least 1s", took, st.Elapsed)
	}
	if n := len(kafkatest.ReadAll(t, kc, "readings")); st.Readings != 12 || n != 12 {
		t.Errorf("wrote %d readings, topic holds %d; want 12 (6 rows × 2 columns)", st.Readings, n)
	}
	if len(said) == 0 || said[len(said)-1] != 6 || !slices.IsSorted(said) || !upTo.Equal(data.Times[7]) {
		t.Errorf("progress said rows %v up to %v; want a rising count to 6, up to the last row's time %v", said, upTo, data.Times[7])
	}
}

// TestReplayStopsOnCancel: a replay waiting for its next row writes the
// rows due before it waits, and returns promptly when its context is
// cancelled, with an error wrapping context.Canceled and the rows written.
func TestReplayStopsOnCancel(t *testing.T) {
	kc := newBroker(t, "readings")
	rng := rand.New(rand.NewPCG(8, 18))
	_, data := randomCSV(t, rng, 5, 3, time.Hour, 0, nil, false)
	r, err := feed.NewReplay(replayConfig(func(c *feed.ReplayConfig) { c.Speed = 1 }), kc, "readings", data) // the second row is due in an hour
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		st  feed.ReplayStats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := r.Run(ctx)
		done <- result{st, err}
	}()
	kafkatest.ReadN(t, kc, "readings", 3, 30*time.Second) // the first row, written before the wait
	cancel()
	select {
	case res := <-done:
		if !errors.Is(res.err, context.Canceled) {
			t.Errorf("Run after cancel = %v, want an error wrapping context.Canceled", res.err)
		}
		if res.st.Rows != 1 || res.st.Readings != 3 {
			t.Errorf("Run wrote %d rows, %d readings; want 1 row, 3 readings", res.st.Rows, res.st.Readings)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run still runs 5 s after its context was cancelled")
	}
}

// TestNewReplayRejects: settings that cannot work are refused with a
// message naming the setting and what to do.
func TestNewReplayRejects(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 18))
	c, data := randomCSV(t, rng, 10, 2, time.Hour, 0, nil, false)
	kc := newBroker(t)
	for _, tc := range []struct {
		name  string
		cfg   feed.ReplayConfig
		topic string
		want  string
	}{
		{name: "no topic", cfg: feed.DefaultReplayConfig(), topic: "", want: "topic is empty"},
		{name: "negative speed", cfg: replayConfig(func(c *feed.ReplayConfig) { c.Speed = -2 }), topic: "r", want: "speed -2"},
		{name: "infinite speed", cfg: replayConfig(func(c *feed.ReplayConfig) { c.Speed = math.Inf(1) }), topic: "r", want: "or 0 for as fast as possible"},
		{name: "from past the end", cfg: replayConfig(func(c *feed.ReplayConfig) { c.From = 10 }), topic: "r",
			want: "from row 10: " + filepath.Base(c.path) + " has 10 data rows; start at a row from 0 to 9"},
		{name: "negative from", cfg: replayConfig(func(c *feed.ReplayConfig) { c.From = -1 }), topic: "r", want: "from row -1"},
		{name: "negative limit", cfg: replayConfig(func(c *feed.ReplayConfig) { c.Limit = -1 }), topic: "r", want: "limit -1 is negative"},
		{name: "arrow", cfg: replayConfig(func(c *feed.ReplayConfig) { c.Format = readings.FormatArrow }), topic: "r", want: `format "arrow" cannot be replayed; use json (the default) or csv`},
		// A zero is a value, not the default: the zeros that cannot run are
		// refused, saying the default.
		{name: "no format", cfg: replayConfig(func(c *feed.ReplayConfig) { c.Format = "" }), topic: "r", want: `format "" cannot be replayed; use json (the default) or csv`},
		{name: "no value field", cfg: replayConfig(func(c *feed.ReplayConfig) { c.ValueField = "" }), topic: "r", want: `value field is empty; name the value of the readings when every column is a series (default "value")`},
		{name: "a zero config", topic: "r", want: `format ""`},
		{name: "unknown series column", cfg: replayConfig(func(c *feed.ReplayConfig) { c.SeriesColumn = "nope" }), topic: "r", want: `series column "nope" is not a column`},
		{name: "value field named ts", cfg: replayConfig(func(c *feed.ReplayConfig) { c.ValueField = "ts" }), topic: "r", want: "cannot name the readings' fields"},
		{name: "a configuration naming two values", cfg: replayConfig(func(c *feed.ReplayConfig) {
			in := readings.DefaultConfig()
			in.ValueFields = []string{"temp", "rh"}
			c.Fields = &in
		}), topic: "r", want: "every column is replayed as a series of its own, one value a reading, but input.value_fields names 2 (temp, rh); for readings of several values, name the column of series ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := feed.NewReplay(tc.cfg, kc, tc.topic, data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewReplay = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// The zeros that mean something: as fast as possible, from row 0, to
	// the end; and with a series column the values are named after their
	// columns, so the value field is not needed.
	if err := replayConfig(func(c *feed.ReplayConfig) { c.Speed, c.From, c.Limit = 0, 0, 0 }).Validate(); err != nil {
		t.Errorf("Validate() with speed, from and limit 0 = %v, want nil", err)
	}
	if err := replayConfig(func(c *feed.ReplayConfig) { c.SeriesColumn, c.ValueField = "sensor", "" }).Validate(); err != nil {
		t.Errorf("Validate() with a series column and no value field = %v, want nil", err)
	}
}

// TestReplayOfAFileSortedBySeries: a long file holding each series' rows
// in turn (a week and more of each) is replayed in time order, every
// series' first step before any's second, so that no partition sees a
// reading far behind its newest (which input.max_past refuses as
// too_old); each series keeps its readings, bit for bit, and its order.
func TestReplayOfAFileSortedBySeries(t *testing.T) {
	const series, steps = 4, 300 // 300 hourly steps: beyond max_past's 168h
	path := filepath.Join(t.TempDir(), "by-series.csv")
	var b strings.Builder
	b.WriteString("date,sensor,flow\n")
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	want := map[string][]readingstest.Row{}
	for s := range series {
		id := fmt.Sprintf("s-%d", s)
		for k := range steps {
			ts, v := t0.Add(time.Duration(k)*time.Hour), float64(100*s+k)+0.25
			fmt.Fprintf(&b, "%s,%s,%g\n", ts.Format("2006-01-02 15:04:05"), id, v)
			want[id] = append(want[id], readingstest.Row{Series: id, TS: ts.UnixMilli(), Values: []float64{v}})
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := dataset.LoadCSVSeries(path, "sensor")
	if err != nil {
		t.Fatal(err)
	}
	kc := newBroker(t, "readings")
	cfg := replayConfig(func(c *feed.ReplayConfig) { c.SeriesColumn = "sensor" })
	r, err := feed.NewReplay(cfg, kc, "readings", data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	in := readings.DefaultConfig()
	in.ValueFields = []string{"flow"}
	msgs := kafkatest.ReadAll(t, kc, "readings")
	newest := map[int]int64{}
	for _, m := range msgs {
		got := decode(t, []kafka.Message{m}, in, time.Now)
		for _, rows := range got {
			for _, row := range rows {
				if row.TS < newest[m.Partition] {
					t.Fatalf("partition %d: a reading of %v after one of %v: the replay went back in time", m.Partition,
						time.UnixMilli(row.TS).UTC(), time.UnixMilli(newest[m.Partition]).UTC())
				}
				newest[m.Partition] = row.TS
			}
		}
	}
	got := decode(t, msgs, in, time.Now)
	for id, w := range want {
		if !readingstest.SameRows(got[id], w) {
			t.Errorf("series %s: %d readings, want its %d in order", id, len(got[id]), len(w))
		}
	}
}
