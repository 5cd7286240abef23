package readings

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/internal/arrowipc"
)

// ArrowDecoder decodes one Arrow IPC stream per message: a schema and zero
// or more record batches, many readings per message. Columns are found by
// name:
//
//   - SeriesField: utf8 or large_utf8 (when absent, the message key is
//     the series id of every row);
//   - TimeField: a timestamp of any unit and time zone (kept to the
//     millisecond, rounding down), or int64 epoch milliseconds;
//   - each value field: float64.
//
// Other columns are ignored. A missing or wrongly typed column is
// ReasonBadSchema; a null anywhere in those columns ReasonMissingField.
// One bad row rejects the whole message with that row's reason. Bytes after
// the end-of-stream marker are ReasonUnparsable.
//
// Messages are read with internal/arrowipc, the project's hardened IPC
// reader: the framing and metadata are checked before Arrow reads them, and
// reading one message may allocate at most arrowipc.MaxAlloc(len(value))
// bytes (decompressed buffers included), so a hostile message can neither
// claim gigabytes nor crash the process. The temporary buffers come from the
// default allocator; only the rows appended to the batch use the batch's
// allocator.
type ArrowDecoder struct {
	f    fields
	recs []arrow.Record
	cols arrowColumns
	vals []float64
}

// NewArrowDecoder returns an Arrow IPC decoder for cfg (see NewDecoder);
// cfg.Format is ignored.
func NewArrowDecoder(cfg Config, now func() time.Time) (*ArrowDecoder, error) {
	f, err := newFields(cfg, FormatArrow, now)
	if err != nil {
		return nil, err
	}
	return &ArrowDecoder{f: f, vals: make([]float64, len(f.values))}, nil
}

// arrowColumns are the column indexes of the reading fields in a message's
// schema; series is -1 when the key names the series.
type arrowColumns struct {
	series int
	ts     int
	tsUnit arrow.TimeUnit
	tsInt  bool // int64 epoch milliseconds rather than a timestamp
	values []int
}

// Decode implements Decoder.
func (d *ArrowDecoder) Decode(rb *array.RecordBuilder, key, value []byte, ingest time.Time) error {
	defer func() {
		for i, r := range d.recs {
			r.Release()
			d.recs[i] = nil
		}
		d.recs = d.recs[:0]
	}()
	now := d.f.nowMs()
	d.f.begin()
	if perr := d.read(key, value, now); perr != nil {
		return perr
	}
	ing := d.f.ingestMs(ingest, now)
	for _, rec := range d.recs {
		d.appendRows(rb, rec, key, ing)
	}
	return nil
}

// read reads and validates the records of one message into d.recs, through
// the project's hardened IPC reader.
func (d *ArrowDecoder) read(key, value []byte, now int64) *DecodeError {
	err := arrowipc.Read(value, nil, func(s *arrow.Schema) error {
		if perr := d.resolve(s); perr != nil {
			return perr
		}
		return nil
	}, func(rec arrow.Record) error {
		if perr := d.validate(rec, key, now); perr != nil {
			return perr
		}
		rec.Retain()
		d.recs = append(d.recs, rec)
		return nil
	})
	if err == nil {
		return nil
	}
	var perr *DecodeError
	if errors.As(err, &perr) {
		return perr
	}
	return poison(ReasonUnparsable, "%v", err)
}

// resolve finds the reading columns in schema.
func (d *ArrowDecoder) resolve(s *arrow.Schema) *DecodeError {
	c := &d.cols
	c.series, c.ts, c.tsInt, c.tsUnit = -1, -1, false, arrow.Millisecond
	c.values = c.values[:0]
	find := func(name string) int {
		if idx := s.FieldIndices(name); len(idx) > 0 {
			return idx[0]
		}
		return -1
	}
	if i := find(d.f.series); i >= 0 {
		switch s.Field(i).Type.ID() {
		case arrow.STRING, arrow.LARGE_STRING:
		default:
			return poison(ReasonBadSchema, "column %q is %s, want utf8", d.f.series, s.Field(i).Type)
		}
		c.series = i
	}
	i := find(d.f.time)
	if i < 0 {
		return poison(ReasonBadSchema, "no column %q (the time) among %q", d.f.time, fieldNames(s))
	}
	switch t := s.Field(i).Type.(type) {
	case *arrow.TimestampType:
		c.tsUnit = t.Unit
	case *arrow.Int64Type:
		c.tsInt = true
	default:
		return poison(ReasonBadSchema, "column %q is %s, want a timestamp or int64 epoch milliseconds", d.f.time, t)
	}
	c.ts = i
	for _, name := range d.f.values {
		i := find(name)
		if i < 0 {
			return poison(ReasonBadSchema, "no column %q (a value) among %q", name, fieldNames(s))
		}
		if s.Field(i).Type.ID() != arrow.FLOAT64 {
			return poison(ReasonBadSchema, "column %q is %s, want float64", name, s.Field(i).Type)
		}
		c.values = append(c.values, i)
	}
	return nil
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i := range names {
		names[i] = s.Field(i).Name
	}
	return names
}

// stringColumn is what utf8 and large_utf8 arrays share.
type stringColumn interface {
	arrow.Array
	Value(i int) string
}

// tsMs returns row i of the time column in epoch milliseconds.
func (d *ArrowDecoder) tsMs(col arrow.Array, i int) (int64, bool) {
	if d.cols.tsInt {
		return col.(*array.Int64).Value(i), true
	}
	v := int64(col.(*array.Timestamp).Value(i))
	switch d.cols.tsUnit {
	case arrow.Second:
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			return 0, false
		}
		return v * 1000, true
	case arrow.Microsecond:
		return floorDiv(v, 1000), true
	case arrow.Nanosecond:
		return floorDiv(v, 1000000), true
	}
	return v, true
}

// validate checks every row of rec.
func (d *ArrowDecoder) validate(rec arrow.Record, key []byte, now int64) *DecodeError {
	c := &d.cols
	if c.series < 0 {
		if len(key) == 0 && rec.NumRows() > 0 {
			return poison(ReasonMissingField, "no column %q and no message key", d.f.series)
		}
		if !utf8.Valid(key) {
			return poison(ReasonWrongType, "message key %s is not valid UTF-8", quote(key))
		}
		if perr := d.f.checkSeries(key); perr != nil {
			return perr
		}
	} else {
		col := rec.Column(c.series).(stringColumn)
		if col.NullN() > 0 {
			return poison(ReasonMissingField, "column %q has %d nulls", d.f.series, col.NullN())
		}
		for i := 0; i < col.Len(); i++ {
			s := col.Value(i)
			if s == "" {
				return poison(ReasonEmptySeries, "row %d: %s is the empty string", i, d.f.series)
			}
			if !utf8.ValidString(s) {
				return poison(ReasonWrongType, "row %d: %s %q is not valid UTF-8", i, d.f.series, s)
			}
			if perr := d.f.checkSeries(bytesOf(s)); perr != nil {
				perr.Err = fmt.Errorf("row %d: %w", i, perr.Err)
				return perr
			}
		}
	}
	tcol := rec.Column(c.ts)
	if tcol.NullN() > 0 {
		return poison(ReasonMissingField, "column %q has %d nulls", d.f.time, tcol.NullN())
	}
	for i := 0; i < tcol.Len(); i++ {
		ts, ok := d.tsMs(tcol, i)
		if !ok {
			return poison(ReasonBadTimestamp, "row %d: %s is out of range", i, d.f.time)
		}
		if c.tsInt {
			if _, perr := epochMillis(d.f.time, ts, nil); perr != nil {
				perr.Err = fmt.Errorf("row %d: %w", i, perr.Err)
				return perr
			}
		}
		if perr := d.f.checkTime(ts, now); perr != nil {
			perr.Err = fmt.Errorf("row %d: %w", i, perr.Err)
			return perr
		}
	}
	for j, ci := range c.values {
		col := rec.Column(ci).(*array.Float64)
		if col.NullN() > 0 {
			return poison(ReasonMissingField, "column %q has %d nulls", d.f.values[j], col.NullN())
		}
		for i, v := range col.Float64Values() {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return poison(ReasonNonFinite, "row %d: %s = %v is not finite", i, d.f.values[j], v)
			}
			if perr := d.f.checkValue(d.f.values[j], v); perr != nil {
				perr.Err = fmt.Errorf("row %d: %w", i, perr.Err)
				return perr
			}
		}
		if len(col.Float64Values()) != col.Len() {
			return poison(ReasonUnparsable, "column %q holds %d values for %d rows", d.f.values[j], len(col.Float64Values()), col.Len())
		}
	}
	return nil
}

// appendRows appends the validated rows of rec to rb.
func (d *ArrowDecoder) appendRows(rb *array.RecordBuilder, rec arrow.Record, key []byte, ingest int64) {
	c := &d.cols
	n := int(rec.NumRows())
	rb.Reserve(n)
	var series stringColumn
	if c.series >= 0 {
		series = rec.Column(c.series).(stringColumn)
	}
	tcol := rec.Column(c.ts)
	for i := 0; i < n; i++ {
		s := key
		if series != nil {
			s = bytesOf(series.Value(i))
		}
		ts, _ := d.tsMs(tcol, i)
		for j, ci := range c.values {
			d.vals[j] = rec.Column(ci).(*array.Float64).Value(i)
		}
		appendRow(rb, s, ts, ingest, d.vals)
	}
}

// AppendArrow appends rs as one Arrow IPC stream, the value of one message,
// to dst and returns the extended slice; a nil dst allocates. The stream
// holds one record batch (none when rs is empty) with the columns
// SeriesField (utf8), TimeField (timestamp[ms, UTC]) and the value fields
// (float64), names from cfg, taken as given (start from DefaultConfig).
// Non-finite values are written as they are (poison to ArrowDecoder). mem
// allocates the temporary Arrow buffers; nil means
// memory.DefaultAllocator. It returns an error when cfg names no series or
// time field or a reading has the wrong number of values.
func AppendArrow(dst []byte, rs []Reading, cfg Config, mem memory.Allocator) ([]byte, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if cfg.SeriesField == "" || cfg.TimeField == "" {
		return dst, fmt.Errorf("readings: encoding with series field %q and time field %q; start from DefaultConfig", cfg.SeriesField, cfg.TimeField)
	}
	values := cfg.ValueFields
	fields := []arrow.Field{
		{Name: cfg.SeriesField, Type: arrow.BinaryTypes.String},
		{Name: cfg.TimeField, Type: TimestampType},
	}
	for _, f := range values {
		fields = append(fields, arrow.Field{Name: f, Type: arrow.PrimitiveTypes.Float64})
	}
	schema := arrow.NewSchema(fields, nil)
	buf := bytes.NewBuffer(dst)
	w := ipc.NewWriter(buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if len(rs) > 0 {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		b.Reserve(len(rs))
		sb := b.Field(0).(*array.StringBuilder)
		tb := b.Field(1).(*array.TimestampBuilder)
		for _, r := range rs {
			if len(r.Values) != len(values) {
				w.Close()
				return dst, fmt.Errorf("readings: reading of series %q has %d values for %d value fields %q",
					r.Series, len(r.Values), len(values), values)
			}
			sb.Append(r.Series)
			tb.Append(arrow.Timestamp(r.Time.UnixMilli()))
			for j, v := range r.Values {
				b.Field(2 + j).(*array.Float64Builder).Append(v)
			}
		}
		rec := b.NewRecord()
		defer rec.Release()
		if err := w.Write(rec); err != nil {
			w.Close()
			return dst, fmt.Errorf("readings: encode Arrow record batch: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return dst, fmt.Errorf("readings: encode Arrow stream: %w", err)
	}
	return buf.Bytes(), nil
}
