package feed

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/readings"
)

// ReplayConfig holds the settings of a Replay. NewReplay takes it as given:
// no field is filled in, so start from DefaultReplayConfig and change what
// you mean to. The defaults below are DefaultReplayConfig's.
type ReplayConfig struct {
	// Speed is the pace relative to the data's timestamps: at 60 an hour of
	// rows takes a minute. 0 replays as fast as the broker acknowledges.
	//
	// Default: 0
	Speed float64
	// From is the first data row to replay, 0-based.
	//
	// Default: 0
	From int
	// Limit is how many rows to replay from From; 0 replays to the end.
	//
	// Default: 0
	Limit int
	// SeriesColumn names the column holding the series id: each row is one
	// reading of that series whose values are the row's other columns. A
	// frame loaded with dataset.LoadCSVSeries of this column has the ids as
	// written ("s-17"); in a frame of numbers the id is the number's
	// shortest decimal without an exponent (7, 4.5, 1000000). "" makes
	// every column a series of its own, with one reading per row.
	//
	// Default: ""
	SeriesColumn string
	// ValueField is the name of the value when every column is a series
	// of its own, required then; with SeriesColumn the values are named
	// after their columns.
	//
	// Default: "value"
	ValueField string
	// Format is the messages' format: readings.FormatJSON or
	// readings.FormatCSV (columns series, ts, then the values).
	//
	// Default: readings.FormatJSON
	Format readings.Format
	// Fields, when set, are the field names of a serve configuration's
	// input (input.series_field, input.time_field, input.value_fields and
	// input.csv_columns) that the readings are written with, so that the
	// service reads them: its value fields name a reading's values in
	// order instead of ValueField or the columns' names, and must be as
	// many. Its Format is not used (Format is).
	//
	// Default: nil (series, ts, and the value names above)
	Fields *readings.Config
	// Progress, when set, is called after every write the broker
	// acknowledged with the rows written so far, the rows to write, and
	// the time of the newest row written (a paced replay can run for hours).
	//
	// Default: nil
	Progress func(rows, total int, upTo time.Time)
}

// DefaultReplayConfig returns the defaults of a ReplayConfig: the config
// to start from.
func DefaultReplayConfig() ReplayConfig {
	return ReplayConfig{ValueField: "value", Format: readings.FormatJSON}
}

// Validate reports the first setting that cannot run whatever the data,
// saying what to write instead. Every field is checked as it is: a zero is
// a value, not the default. The rows and columns are NewReplay's to check.
func (cfg ReplayConfig) Validate() error {
	d := DefaultReplayConfig()
	switch {
	case !(cfg.Speed >= 0) || math.IsInf(cfg.Speed, 0):
		return fmt.Errorf("feed: replay speed %v; use a positive factor such as 60 (an hour of rows a minute), or 0 for as fast as possible", cfg.Speed)
	case cfg.Limit < 0:
		return fmt.Errorf("feed: replay limit %d is negative; give the number of rows to replay, or 0 for all", cfg.Limit)
	case cfg.Format != readings.FormatJSON && cfg.Format != readings.FormatCSV:
		return fmt.Errorf("feed: replay format %q cannot be replayed; use %s (the default) or %s", cfg.Format, readings.FormatJSON, readings.FormatCSV)
	case cfg.SeriesColumn == "" && cfg.ValueField == "":
		return fmt.Errorf("feed: replay value field is empty; name the value of the readings when every column is a series (default %q)", d.ValueField)
	}
	return nil
}

// ReplayStats says what a Replay's Run wrote.
type ReplayStats struct {
	// Readings counts the readings the broker acknowledged.
	Readings int
	// Rows counts the data rows whose readings were all acknowledged.
	Rows int
	// Elapsed is Run's duration.
	Elapsed time.Duration
}

// Replay produces the rows of a data frame (a CSV loaded by
// dataset.LoadCSV) as readings to a topic, keyed by series, in time order
// (a file sorted by series, each series' rows in turn, is replayed as the
// readings arrived, one step of every series after another; rows of the
// same time keep the file's order), at the pace of their timestamps times
// Speed. A consumer refuses a reading far behind the newest of its
// partition (input.max_past), which a file's order would otherwise make
// of every series but the first.
//
// Run may be called again after it returns; it replays the rows again.
type Replay struct {
	cfg   ReplayConfig
	kc    *kafkaconn.Client
	topic string
	data  *dataset.Frame
	// The rows [cfg.From, end), the series column (−1: none), the rows'
	// series ids when the frame holds them as text (nil otherwise) and how
	// the readings are encoded.
	end, seriesCol int
	ids            []string
	enc            readings.Config
	// order holds the rows [cfg.From, end) in time order when the file's
	// are not; nil when they are.
	order []int
}

// NewReplay checks cfg, taken as given (start from DefaultReplayConfig),
// against data and returns the Replay of data's rows to topic through kc.
// data must not change while the Replay is in use.
func NewReplay(cfg ReplayConfig, kc *kafkaconn.Client, topic string, data *dataset.Frame) (*Replay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rows := data.Rows()
	switch {
	case topic == "":
		return nil, fmt.Errorf("feed: the replay's topic is empty; name the input topic to write the readings to")
	case cfg.From < 0 || cfg.From >= rows:
		return nil, fmt.Errorf("feed: replay from row %d: %s has %d data rows; start at a row from 0 to %d", cfg.From, data.Name, rows, rows-1)
	}
	r := &Replay{cfg: cfg, kc: kc, topic: topic, data: data, end: rows, seriesCol: -1, enc: readings.DefaultConfig()}
	if cfg.Limit > 0 {
		r.end = min(rows, cfg.From+cfg.Limit)
	}
	r.order = timeOrder(data.Times, cfg.From, r.end)
	r.enc.ValueFields = []string{cfg.ValueField}
	switch {
	case cfg.SeriesColumn != "" && data.SeriesColumn == cfg.SeriesColumn:
		// Text ids beside the channels: every column is a value.
		if len(data.Series) != rows {
			return nil, fmt.Errorf("feed: replay of %s: %d series ids for %d rows", data.Name, len(data.Series), rows)
		}
		r.ids, r.enc.ValueFields = data.Series, slices.Clone(data.Columns)
	case cfg.SeriesColumn != "":
		r.seriesCol = slices.Index(data.Columns, cfg.SeriesColumn)
		if r.seriesCol < 0 {
			return nil, fmt.Errorf("feed: replay series column %q is not a column of %s (columns: %s); name one of them",
				cfg.SeriesColumn, data.Name, strings.Join(data.Columns, ", "))
		}
		if len(data.Columns) < 2 {
			return nil, fmt.Errorf("feed: replay series column %q is the only column of %s; a reading needs a value column beside it",
				cfg.SeriesColumn, data.Name)
		}
		r.enc.ValueFields = slices.Delete(slices.Clone(data.Columns), r.seriesCol, r.seriesCol+1)
	}
	if f := cfg.Fields; f != nil {
		switch {
		case len(f.ValueFields) != len(r.enc.ValueFields) && cfg.SeriesColumn == "":
			return nil, fmt.Errorf("feed: replay of %s: every column is replayed as a series of its own, one value a reading, but input.value_fields names %d (%s); "+
				"for readings of several values, name the column of series ids (SeriesColumn, replay --series-column)",
				data.Name, len(f.ValueFields), strings.Join(f.ValueFields, ", "))
		case len(f.ValueFields) != len(r.enc.ValueFields):
			return nil, fmt.Errorf("feed: replay of %s: a reading has %d value column(s) (%s) but input.value_fields names %d (%s); list one field per value column",
				data.Name, len(r.enc.ValueFields), strings.Join(r.enc.ValueFields, ", "), len(f.ValueFields), strings.Join(f.ValueFields, ", "))
		}
		r.enc.SeriesField, r.enc.TimeField, r.enc.ValueFields, r.enc.CSVColumns = f.SeriesField, f.TimeField, slices.Clone(f.ValueFields), slices.Clone(f.CSVColumns)
	}
	r.enc.Format = cfg.Format // CSV columns: series, ts, then the values, unless Fields orders them
	if err := r.enc.Validate(); err != nil {
		return nil, fmt.Errorf("feed: replay of %s cannot name the readings' fields after its columns: %w", data.Name, err)
	}
	return r, nil
}

// Run writes the rows in order, in writes of up to 5,000 readings, each
// acknowledged by all in-sync replicas before the next. With a Speed it waits until row r
// is due, (time of r − time of From)/Speed after Run started, and writes
// what it holds before each wait. It returns what was acknowledged, and an
// error when the broker refuses a write or ctx ends first (wrapping
// ctx.Err()).
func (r *Replay) Run(ctx context.Context) (ReplayStats, error) {
	w := r.kc.NewWriter(r.topic)
	w.BatchTimeout, w.BatchSize = 2*time.Millisecond, 1000
	defer w.Close()

	var st ReplayStats
	start := time.Now()
	var msgs []kafka.Message
	held := 0 // rows in msgs
	flush := func() error {
		if len(msgs) == 0 {
			return nil
		}
		err := w.WriteMessages(ctx, msgs...)
		if err == nil {
			st.Readings += len(msgs)
			st.Rows += held
			if r.cfg.Progress != nil {
				r.cfg.Progress(st.Rows, r.end-r.cfg.From, r.data.Times[r.row(st.Rows-1)])
			}
		}
		msgs, held = msgs[:0], 0
		return err
	}
	timer := time.NewTimer(time.Hour) // reset before each wait
	defer timer.Stop()
	run := func() error {
		times := r.data.Times
		first := times[r.row(0)]
		for i := range r.end - r.cfg.From {
			row := r.row(i)
			if r.cfg.Speed > 0 && i > 0 {
				due := time.Duration(float64(times[row].Sub(first)) / r.cfg.Speed)
				if wait := time.Until(start.Add(due)); wait > 0 {
					if err := flush(); err != nil {
						return err
					}
					timer.Reset(wait)
					select {
					case <-timer.C:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
			msgs = r.appendRow(msgs, row)
			held++
			if len(msgs) >= 5000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return flush()
	}
	err := run()
	st.Elapsed = time.Since(start)
	switch {
	case err == nil:
		return st, nil
	case ctx.Err() != nil:
		return st, fmt.Errorf("feed: replay to topic %s stopped after %d of %d rows: %w", r.topic, st.Rows, r.end-r.cfg.From, ctx.Err())
	}
	return st, writeError(r.topic, fmt.Sprintf("rows %d to %d of %s", r.cfg.From+st.Rows, r.end-1, r.data.Name), err)
}

// appendRow appends the messages of row to msgs: one reading per column,
// or one reading of the row's series with the other columns (every column,
// with text ids) as values.
func (r *Replay) appendRow(msgs []kafka.Message, row int) []kafka.Message {
	vals, ts := r.data.Row(row), r.data.Times[row]
	if r.ids != nil {
		return append(msgs, message(readings.Reading{Series: r.ids[row], Time: ts, Values: vals}, r.cfg.Format, r.enc))
	}
	if r.seriesCol < 0 {
		for c, name := range r.data.Columns {
			msgs = append(msgs, message(readings.Reading{Series: name, Time: ts, Values: vals[c : c+1]}, r.cfg.Format, r.enc))
		}
		return msgs
	}
	series := strconv.FormatFloat(vals[r.seriesCol], 'f', -1, 64) // the shortest decimal: 7, 4.5, 1000000
	values := slices.Delete(slices.Clone(vals), r.seriesCol, r.seriesCol+1)
	return append(msgs, message(readings.Reading{Series: series, Time: ts, Values: values}, r.cfg.Format, r.enc))
}

// row is the file row replayed i-th.
func (r *Replay) row(i int) int {
	if r.order == nil {
		return r.cfg.From + i
	}
	return r.order[i]
}

// timeOrder returns the rows [from, end) ordered by time, rows of the same
// time in file order, or nil when they are in that order already.
func timeOrder(times []time.Time, from, end int) []int {
	sorted := true
	for i := from + 1; i < end && sorted; i++ {
		sorted = !times[i].Before(times[i-1])
	}
	if sorted {
		return nil
	}
	order := make([]int, end-from)
	for i := range order {
		order[i] = from + i
	}
	slices.SortStableFunc(order, func(a, b int) int { return times[a].Compare(times[b]) })
	return order
}
