package backtest

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/readings"
)

// History is the readings a backtest replays, in time order: what the
// service would have consumed, decoded by the service's own decoders.
type History struct {
	// Name says where the readings come from (a file's base name, a topic).
	Name string
	// Fields are the value fields of every reading, in order.
	Fields []string
	// Series are the series' names, in order of their first reading.
	Series []string
	// Stats counts what was read and refused (history.Stats).
	Stats history.Stats

	index  map[string]int32
	rows   []row
	values []float64 // len(rows) × len(Fields)
	sorted bool
}

// row is one reading: its series, its time and where its values start.
type row struct {
	series int32
	ms     int64
	at     int // index into values / len(Fields)
}

// NewHistory returns an empty history of readings with these value
// fields, to fill with Add (or through history.DecodeFile and ReadTopic,
// whose Readings it is).
func NewHistory(name string, fields []string) *History {
	return &History{Name: name, Fields: slices.Clone(fields), index: map[string]int32{}}
}

// Add adds one reading of series at ms (epoch milliseconds). A reading
// with a non-finite value is left out, as the panel of training leaves it.
func (h *History) Add(series string, ms int64, values []float64) {
	if len(values) != len(h.Fields) {
		panic(fmt.Sprintf("backtest: a reading with %d values for %d fields", len(values), len(h.Fields)))
	}
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
	}
	i, ok := h.index[series]
	if !ok {
		i = int32(len(h.Series))
		h.index[series] = i
		h.Series = append(h.Series, series)
	}
	h.rows = append(h.rows, row{series: i, ms: ms, at: len(h.rows)})
	h.values = append(h.values, values...)
	h.sorted = false
}

// Len returns the number of readings.
func (h *History) Len() int { return len(h.rows) }

// sort puts the readings in time order, keeping each series' own order
// (a correction after its first reading stays after it).
func (h *History) sort() {
	if h.sorted {
		return
	}
	slices.SortStableFunc(h.rows, func(a, b row) int { return cmp.Compare(a.ms, b.ms) })
	h.sorted = true
}

// span returns the times of the first and the last reading.
func (h *History) span() (first, last time.Time) {
	h.sort()
	if len(h.rows) == 0 {
		return time.Time{}, time.Time{}
	}
	return time.UnixMilli(h.rows[0].ms).UTC(), time.UnixMilli(h.rows[len(h.rows)-1].ms).UTC()
}

// valuesOf returns the values of row r.
func (h *History) valuesOf(r row) []float64 {
	F := len(h.Fields)
	return h.values[r.at*F : (r.at+1)*F]
}

// FromFrame returns the rows of a wide frame (a benchmark CSV: a date
// column and one column per channel) as the readings of one series named
// series, whose value fields are the frame's columns: what a mixed model
// trained on the file serves.
func FromFrame(f *dataset.Frame, series string) *History {
	h := NewHistory(f.Name, f.Columns)
	C := len(f.Columns)
	for t, ts := range f.Times {
		h.Add(series, ts.UnixMilli(), f.Values[t*C:(t+1)*C])
	}
	h.Stats = history.Stats{Messages: len(f.Times), Readings: h.Len(), Rows: true, Refused: map[string]int{}}
	return h
}

// ReadFile reads a long-format history file (CSV with a header, Arrow IPC
// or Parquet; history.Detect) as the service decodes messages, with rc's
// field names and checks.
func ReadFile(ctx context.Context, path string, format history.FileFormat, rc readings.Config) (*History, error) {
	h := NewHistory(path, rc.ValueFields)
	stats, err := history.DecodeFile(ctx, path, format, rc, h)
	h.Stats = stats
	if err != nil {
		return nil, err
	}
	return h, nil
}

// ReadTopic reads the retained messages of topic as history.DecodeTopic
// does.
func ReadTopic(ctx context.Context, kc *kafkaconn.Client, topic string, rc readings.Config, opts history.TopicOptions) (*History, error) {
	h := NewHistory("topic "+topic, rc.ValueFields)
	stats, err := history.DecodeTopic(ctx, kc, topic, rc, h, opts)
	h.Stats = stats
	if err != nil {
		return nil, err
	}
	return h, nil
}
