package readings

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// The fixed columns of a batch's record; value columns follow from
// FirstValueColumn on, one per value field, in field order.
const (
	SeriesColumn     = 0 // "series", utf8: the series id
	TimeColumn       = 1 // "ts", timestamp[ms, UTC]: the event time
	IngestColumn     = 2 // "ingest_ts", timestamp[ms, UTC]: the Kafka message time
	FirstValueColumn = 3 // the first value field, float64
)

var fixedColumns = [...]string{SeriesColumn: "series", TimeColumn: "ts", IngestColumn: "ingest_ts"}

// TimestampType is the Arrow type of the ts and ingest_ts columns.
var TimestampType = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

// Schema returns the schema of a batch's record for these value fields
// (none means the default, "value"):
//
//	series utf8 · ts timestamp[ms, UTC] · ingest_ts timestamp[ms, UTC] · <field> float64 …
//
// No column is nullable. Build the RecordBuilder handed to a Decoder from
// it.
func Schema(valueFields ...string) *arrow.Schema {
	if len(valueFields) == 0 {
		valueFields = defaultValueFields
	}
	fields := make([]arrow.Field, 0, FirstValueColumn+len(valueFields))
	fields = append(fields,
		arrow.Field{Name: fixedColumns[SeriesColumn], Type: arrow.BinaryTypes.String},
		arrow.Field{Name: fixedColumns[TimeColumn], Type: TimestampType},
		arrow.Field{Name: fixedColumns[IngestColumn], Type: TimestampType},
	)
	for _, f := range valueFields {
		fields = append(fields, arrow.Field{Name: f, Type: arrow.PrimitiveTypes.Float64})
	}
	return arrow.NewSchema(fields, nil)
}

// Reading is one reading of one series: what the encoders write and what
// AppendReadings reads back from a batch.
type Reading struct {
	// Series is the series id.
	Series string
	// Time is the event time; encoders keep it to the millisecond,
	// rounding down.
	Time time.Time
	// Values holds one value per value field, in field order.
	Values []float64
}

// AppendReadings appends the rows of rec, a record with the schema of
// Schema, to dst as readings (in UTC, without the ingest time) and returns
// the extended slice; a nil dst allocates. It is meant for tests, tools
// and examples, not for the hot path.
func AppendReadings(dst []Reading, rec arrow.Record) ([]Reading, error) {
	if int(rec.NumCols()) < FirstValueColumn {
		return dst, fmt.Errorf("readings: record has %d columns, want at least %d (series, ts, ingest_ts, values…)", rec.NumCols(), FirstValueColumn)
	}
	series, ok := rec.Column(SeriesColumn).(*array.String)
	if !ok {
		return dst, fmt.Errorf("readings: record column %d is %s, want utf8", SeriesColumn, rec.Column(SeriesColumn).DataType())
	}
	ts, ok := rec.Column(TimeColumn).(*array.Timestamp)
	if !ok {
		return dst, fmt.Errorf("readings: record column %d is %s, want timestamp[ms]", TimeColumn, rec.Column(TimeColumn).DataType())
	}
	nv := int(rec.NumCols()) - FirstValueColumn
	vals := make([]*array.Float64, nv)
	for j := range vals {
		c, ok := rec.Column(FirstValueColumn + j).(*array.Float64)
		if !ok {
			return dst, fmt.Errorf("readings: record column %d is %s, want float64", FirstValueColumn+j, rec.Column(FirstValueColumn+j).DataType())
		}
		vals[j] = c
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		r := Reading{
			Series: strings.Clone(series.Value(i)), // Value aliases the record's buffer
			Time:   time.UnixMilli(int64(ts.Value(i))).UTC(),
			Values: make([]float64, nv),
		}
		for j, c := range vals {
			r.Values[j] = c.Value(i)
		}
		dst = append(dst, r)
	}
	return dst, nil
}
