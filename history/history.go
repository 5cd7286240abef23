// Package history reads the past into what training takes and what a
// backtest replays: the retained messages of the input topic, a long-format
// file (one row per series, time and values) as CSV with a header, Arrow
// IPC or Parquet, or a wide benchmark CSV. Every reading goes through the
// service's own decoders (package readings) with the service's input
// settings, so a model trains on what it will serve and a reading the
// service would refuse is refused here too, counted by reason, never
// silently.
//
// In three layers: DecodeFile and DecodeTopic decode readings into any
// Readings (package backtest keeps them as they are); StepsFromFile and
// StepsFromTopic put them on steps (a dataset.Panel); and FromFile,
// FromTopic, FromWideCSV and FromFrame split the steps by time into the
// windows training.Fit learns from (Data).
//
// It sits on the input side beside pipeline: it imports readings, dataset,
// model (for the windows' types) and the Kafka connection layer; training,
// backtest, service and cmd import it.
package history

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/readings"
)

// Stats counts what a read did.
type Stats struct {
	// Messages is how many messages (topic) or rows (file) were read.
	Messages int
	// Readings is how many readings were decoded and added to the panel.
	Readings int
	// Refused counts the messages or rows the decoder refused, by reason
	// (readings.Reasons), and Example is one of those errors, whole.
	Refused map[string]int
	Example string
	// Rows is set when Messages counts a file's rows.
	Rows bool
	// ZonelessUTC is set when a file's times carry no zone and were read
	// as UTC.
	ZonelessUTC bool
}

// Refusals returns the refused count, all reasons together.
func (s Stats) Refusals() int {
	n := 0
	for _, c := range s.Refused {
		n += c
	}
	return n
}

// String says what was read and refused, e.g. "12,000 messages, 11,998
// readings; refused 2 (non_finite 2)" ("rows" for a file).
func (s Stats) String() string {
	unit := "messages"
	if s.Rows {
		unit = "rows"
	}
	out := fmt.Sprintf("%d %s, %d readings", s.Messages, unit, s.Readings)
	if n := s.Refusals(); n > 0 {
		var parts []string
		for _, r := range slices.Sorted(maps.Keys(s.Refused)) {
			parts = append(parts, fmt.Sprintf("%s %d", r, s.Refused[r]))
		}
		out += fmt.Sprintf("; refused %d (%s)", n, strings.Join(parts, ", "))
	}
	if s.ZonelessUTC {
		out += "; times without a zone read as UTC (serve refuses them from a topic: a live producer writes the zone, such as Z or +01:00)"
	}
	return out
}

// Readings receives the decoded readings of a read, one at a time, in the
// order of the file or of each partition: a dataset.PanelBuilder (to train)
// or a backtest's collection (to replay). values is reused after Add
// returns.
type Readings interface {
	Add(series string, ms int64, values []float64)
}

// decoder decodes messages with a readings.Decoder into records and hands
// their readings to Readings, a chunk at a time.
type decoder struct {
	dec    readings.Decoder
	rb     *array.RecordBuilder
	panel  Readings
	fields int
	rows   int // rows in rb
	vals   []float64
	stats  *Stats
}

// chunkRows is how many decoded rows are gathered before they go to the
// panel.
const chunkRows = 8192

func newDecoder(cfg readings.Config, b Readings, stats *Stats) (*decoder, error) {
	dec, err := readings.NewDecoder(cfg, nil)
	if err != nil {
		return nil, err
	}
	fields := cfg.ValueFields
	if stats.Refused == nil {
		stats.Refused = map[string]int{}
	}
	return &decoder{
		dec: dec, rb: array.NewRecordBuilder(memory.DefaultAllocator, readings.Schema(fields...)),
		panel: b, fields: len(fields), vals: make([]float64, len(fields)), stats: stats,
	}, nil
}

// decode decodes one message; a refused one is counted.
func (d *decoder) decode(key, value []byte, ingest time.Time) error {
	d.stats.Messages++
	if err := d.dec.Decode(d.rb, key, value, ingest); err != nil {
		d.refuse(err)
		return nil
	}
	if d.rows = d.rb.Field(readings.SeriesColumn).Len(); d.rows >= chunkRows {
		d.flush()
	}
	return nil
}

// refuse counts a decoder's refusal, and returns any other error.
func (d *decoder) refuse(err error) {
	var de *readings.DecodeError
	reason := "unparsable"
	if errors.As(err, &de) {
		reason = de.Reason
	}
	d.stats.Refused[reason]++
	if d.stats.Example == "" {
		d.stats.Example = err.Error()
	}
}

// flush hands the decoded rows to the panel.
func (d *decoder) flush() {
	rec := d.rb.NewRecord()
	defer rec.Release()
	series := rec.Column(readings.SeriesColumn).(*array.String)
	ts := rec.Column(readings.TimeColumn).(*array.Timestamp)
	cols := make([]*array.Float64, d.fields)
	for c := range cols {
		cols[c] = rec.Column(readings.FirstValueColumn + c).(*array.Float64)
	}
	for i := range int(rec.NumRows()) {
		for c, col := range cols {
			d.vals[c] = col.Value(i)
		}
		d.panel.Add(series.Value(i), int64(ts.Value(i)), d.vals)
	}
	d.stats.Readings += int(rec.NumRows())
	d.rows = 0
}

// close flushes what is left and frees the builder.
func (d *decoder) close() {
	d.flush()
	d.rb.Release()
}
