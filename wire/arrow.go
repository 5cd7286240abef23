package wire

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// The schema metadata keys of the Arrow layouts.
const (
	// MetaMessage is "forecast" or "attribution".
	MetaMessage = "freqlens.message"
	// MetaCadence is the step length as a Go duration string ("1h0m0s").
	MetaCadence = "freqlens.cadence"
	// MetaAttributions is "full" or "summary" (attribution messages only).
	MetaAttributions = "freqlens.attributions"
	// MetaIntervals lists the nominal levels of a forecast message's
	// intervals, comma-separated in increasing order ("0.8,0.95"); absent
	// when the message has none.
	MetaIntervals = "freqlens.intervals"
	// MetaRhythms lists the model's rhythms in an attribution message, as
	// JSON: [{"index":0,"period_steps":24,"period":"24h0m0s",
	// "frequencies":[3,7,9]}, …]; absent for a model without rhythms. A
	// rhythm's part of the forecast is the sum of its frequencies' rows.
	MetaRhythms = "freqlens.rhythms"
	// MetaResidual is "all_channels" in an attribution message whose
	// residual reads every field's leftover (Forecast.ResidualAllChannels);
	// absent when it reads its own field's alone.
	MetaResidual = "freqlens.residual"
)

// residualAllChannelsValue is MetaResidual's value.
const residualAllChannelsValue = "all_channels"

var (
	timestampNS = &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	durationNS  = &arrow.DurationType{Unit: arrow.Nanosecond}
	float64List = arrow.ListOf(arrow.PrimitiveTypes.Float64)
)

// The fixed columns of the forecast layout, then one float64 column per field.
var forecastColumns = []arrow.Field{
	{Name: "series", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: timestampNS},
	{Name: "origin_ts", Type: timestampNS},
	{Name: "model_version", Type: arrow.PrimitiveTypes.Int64},
	{Name: "step", Type: arrow.PrimitiveTypes.Int32},
}

// The fixed columns of the attribution layout, then (full mode) one
// list<float64> column per field.
var attributionColumns = []arrow.Field{
	{Name: "series", Type: arrow.BinaryTypes.String},
	{Name: "origin_ts", Type: timestampNS},
	{Name: "model_version", Type: arrow.PrimitiveTypes.Int64},
	{Name: "alpha", Type: arrow.PrimitiveTypes.Float64},
	{Name: "frequency_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "period_steps", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "period", Type: durationNS, Nullable: true},
	{Name: "share", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	// rhythm_share is, on a frequency's row, the share of the rhythm it
	// belongs to (RhythmPart.Share; the first that lists it); null for a
	// free frequency and on the residual's row. A stream of the layout
	// without this column decodes too (attributionColumnsBefore).
	{Name: "rhythm_share", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}

// attributionColumnsBefore are the fixed columns that precede rhythm_share:
// those of the attribution layout without it, which decoders read too.
var attributionColumnsBefore = attributionColumns[:len(attributionColumns)-1]

func isReservedColumn(name string) bool {
	for _, cols := range [...][]arrow.Field{forecastColumns, attributionColumns} {
		for _, c := range cols {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// ArrowEncoder writes the Arrow layouts (see the package documentation):
// one Arrow IPC stream — schema, one record batch, end-of-stream marker — per
// message. It keeps the schema and the column builders of the last layout it
// wrote, so a run of forecasts with the same fields and cadence reuses them.
// It is not safe for concurrent use.
type ArrowEncoder struct {
	mem      memory.Allocator
	forecast arrowLayout
	attr     arrowLayout
}

type arrowLayout struct {
	fields      []string
	cadence     time.Duration
	mode        AttributionMode
	levels      []float64    // of the intervals (forecast layout)
	rhythms     []RhythmPart // of the attribution layout: index, period and frequencies only
	allChannels bool         // of the attribution layout: the residual reads every field
	schema      *arrow.Schema
	b           *array.RecordBuilder

	// w writes the record batches; it wrote the schema before the first one,
	// and schemaMsg (the encapsulated schema message) goes before the others.
	w         *ipc.Writer
	out       *appendWriter
	started   bool
	schemaMsg []byte
}

// NewArrowEncoder returns an encoder allocating its Arrow buffers from mem
// (memory.DefaultAllocator when nil). Call Release when done.
func NewArrowEncoder(mem memory.Allocator) *ArrowEncoder {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &ArrowEncoder{mem: mem}
}

// Release frees the encoder's builders; the encoder may be used again.
func (e *ArrowEncoder) Release() {
	e.forecast.release()
	e.attr.release()
}

func (l *arrowLayout) release() {
	if l.b != nil {
		l.b.Release()
	}
	if l.w != nil {
		l.out.b = nil
		l.w.Close() // writes an end-of-stream marker nobody reads
	}
	*l = arrowLayout{}
}

// builder returns the record builder of the layout, rebuilding it when the
// fields, the cadence, the mode, the interval levels, the rhythms or what
// the residual reads (allChannels) changed.
func (l *arrowLayout) builder(mem memory.Allocator, fields []string, cadence time.Duration, mode AttributionMode,
	ivs []Interval, rhythms []RhythmPart, allChannels bool, schema func() *arrow.Schema) *array.RecordBuilder {
	if l.b != nil && l.cadence == cadence && l.mode == mode && slices.Equal(l.fields, fields) && sameLevels(l.levels, ivs) &&
		sameRhythms(l.rhythms, rhythms) && l.allChannels == allChannels {
		return l.b
	}
	l.release()
	l.fields = append([]string(nil), fields...)
	l.cadence, l.mode, l.allChannels = cadence, mode, allChannels
	l.rhythms = nil
	for _, r := range rhythms {
		l.rhythms = append(l.rhythms, RhythmPart{Index: r.Index, PeriodSteps: r.PeriodSteps, Period: r.Period,
			Frequencies: append([]int(nil), r.Frequencies...)})
	}
	l.levels = nil
	for _, iv := range ivs {
		l.levels = append(l.levels, iv.Level)
	}
	l.schema = schema()
	l.b = array.NewRecordBuilder(mem, l.schema)
	return l.b
}

// sameRhythms reports whether two lists of rhythms agree on what the schema
// records of them: index, period and frequencies.
func sameRhythms(a, b []RhythmPart) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k].Index != b[k].Index || a[k].PeriodSteps != b[k].PeriodSteps || a[k].Period != b[k].Period ||
			len(a[k].Frequencies) != len(b[k].Frequencies) {
			return false
		}
		for j, id := range a[k].Frequencies {
			if b[k].Frequencies[j] != id {
				return false
			}
		}
	}
	return true
}

// rhythmMeta is one rhythm in the MetaRhythms metadata.
type rhythmMeta struct {
	Index       int     `json:"index"`
	PeriodSteps float64 `json:"period_steps"`
	Period      string  `json:"period"`
	Frequencies []int   `json:"frequencies"`
}

func sameLevels(levels []float64, ivs []Interval) bool {
	if len(levels) != len(ivs) {
		return false
	}
	for k, iv := range ivs {
		if levels[k] != iv.Level {
			return false
		}
	}
	return true
}

// ForecastSchema returns the Arrow schema of forecast messages with these
// fields and cadence, and intervals of these levels: after the field columns,
// per level, the lower bound of each field (<field>_lower_<level>, e.g.
// value_lower_0.8), then the upper bound of each (<field>_upper_<level>),
// as float32: interval bounds are kept at float32 precision.
func ForecastSchema(fields []string, cadence time.Duration, levels ...float64) *arrow.Schema {
	cols := append([]arrow.Field(nil), forecastColumns...)
	for _, name := range fields {
		cols = append(cols, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64})
	}
	keys, vals := []string{MetaMessage, MetaCadence}, []string{"forecast", cadence.String()}
	if len(levels) > 0 {
		var list []byte
		for k, l := range levels {
			if k > 0 {
				list = append(list, ',')
			}
			list = appendLevel(list, l)
		}
		keys, vals = append(keys, MetaIntervals), append(vals, string(list))
		for _, name := range boundColumns(fields, levels) {
			cols = append(cols, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float32})
		}
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(cols, &md)
}

// boundColumns names the interval columns of the forecast layout in order.
func boundColumns(fields []string, levels []float64) []string {
	var names []string
	for _, l := range levels {
		for _, side := range [...]string{"_lower_", "_upper_"} {
			for _, f := range fields {
				names = append(names, string(appendLevel([]byte(f+side), l)))
			}
		}
	}
	return names
}

// AttributionSchema returns the Arrow schema of attribution messages with
// these fields and cadence in mode (full or summary). residualAllChannels
// (Forecast.ResidualAllChannels) sets MetaResidual.
//
// With rhythms (the model's, whose index, period and frequencies it
// records in MetaRhythms) the schema says which frequencies make each
// rhythm; their shares and values are those of its frequencies' rows.
func AttributionSchema(fields []string, cadence time.Duration, mode AttributionMode, residualAllChannels bool, rhythms ...RhythmPart) *arrow.Schema {
	cols := append([]arrow.Field(nil), attributionColumns...)
	if mode == AttributionsFull {
		for _, name := range fields {
			cols = append(cols, arrow.Field{Name: name, Type: float64List, Nullable: true})
		}
	}
	keys, vals := []string{MetaMessage, MetaCadence, MetaAttributions}, []string{"attribution", cadence.String(), string(mode)}
	if len(rhythms) > 0 {
		rm := make([]rhythmMeta, len(rhythms))
		for k, r := range rhythms {
			rm[k] = rhythmMeta{Index: r.Index, PeriodSteps: r.PeriodSteps, Period: r.Period.String(), Frequencies: r.Frequencies}
			if rm[k].Frequencies == nil {
				rm[k].Frequencies = []int{}
			}
		}
		b, _ := json.Marshal(rm) // plain numbers and strings: cannot fail
		keys, vals = append(keys, MetaRhythms), append(vals, string(b))
	}
	if residualAllChannels {
		keys, vals = append(keys, MetaResidual), append(vals, residualAllChannelsValue)
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(cols, &md)
}

// AppendForecast appends the forecast message of f (the forecast Arrow
// layout) to dst and returns the extended buffer. It returns dst unchanged
// and an error when f fails the checks of AppendForecastJSON or a field has
// the name of a fixed column.
func (e *ArrowEncoder) AppendForecast(dst []byte, f *Forecast) ([]byte, error) {
	if err := f.checkForecast(); err != nil {
		return dst, fmt.Errorf("wire: encode forecast arrow: %w: %w", ErrInvalid, err)
	}
	if err := checkArrowFields(f.Fields); err != nil {
		return dst, err
	}
	b := e.forecast.builder(e.mem, f.Fields, f.Cadence, "", f.Intervals, nil, false, func() *arrow.Schema {
		return ForecastSchema(f.Fields, f.Cadence, levelsOf(f.Intervals)...)
	})
	h, c := f.Horizon, len(f.Fields)
	series := b.Field(0).(*array.StringBuilder)
	ts := b.Field(1).(*array.TimestampBuilder)
	origin := b.Field(2).(*array.TimestampBuilder)
	version := b.Field(3).(*array.Int64Builder)
	step := b.Field(4).(*array.Int32Builder)
	for _, col := range []array.Builder{series, ts, origin, version, step} {
		col.Reserve(h)
	}
	o := f.TS.UnixNano()
	for i := 0; i < h; i++ {
		series.Append(f.Series)
		ts.Append(arrow.Timestamp(o + int64(i+1)*int64(f.Cadence)))
		origin.Append(arrow.Timestamp(o))
		version.Append(f.ModelVersion)
		step.Append(int32(i + 1))
	}
	col := len(forecastColumns)
	for j := 0; j < c; j++ {
		fb := b.Field(col).(*array.Float64Builder)
		col++
		fb.Reserve(h)
		for i := 0; i < h; i++ {
			fb.UnsafeAppend(f.Values[i*c+j])
		}
	}
	appendBounds := func(v []float64) {
		for j := 0; j < c; j++ {
			fb := b.Field(col).(*array.Float32Builder)
			col++
			fb.Reserve(h)
			for i := 0; i < h; i++ {
				fb.UnsafeAppend(float32(v[i*c+j]))
			}
		}
	}
	for k := range f.Intervals {
		appendBounds(f.Intervals[k].Lower)
		appendBounds(f.Intervals[k].Upper)
	}
	return e.write(dst, &e.forecast, "forecast")
}

// AppendAttribution appends the attribution message of f in mode (the
// attribution Arrow layout) to dst and returns the extended buffer. It
// returns dst unchanged and an error when f fails the checks of
// AppendAttributionJSON or a field has the name of a fixed column.
func (e *ArrowEncoder) AppendAttribution(dst []byte, f *Forecast, mode AttributionMode) ([]byte, error) {
	if err := checkEncodeMode(mode); err != nil {
		return dst, err
	}
	if err := f.checkAttributionLayout(mode); err != nil {
		return dst, fmt.Errorf("wire: encode attribution arrow: %w: %w", ErrInvalid, err)
	}
	full := mode == AttributionsFull
	if full {
		if err := checkArrowFields(f.Fields); err != nil {
			return dst, err
		}
	}
	fields := f.Fields
	if !full {
		fields = nil
	}
	b := e.attr.builder(e.mem, fields, f.Cadence, mode, nil, f.Rhythms, f.ResidualAllChannels, func() *arrow.Schema {
		return AttributionSchema(fields, f.Cadence, mode, f.ResidualAllChannels, f.Rhythms...)
	})
	rows := 1 + len(f.Frequencies)
	series := b.Field(0).(*array.StringBuilder)
	origin := b.Field(1).(*array.TimestampBuilder)
	version := b.Field(2).(*array.Int64Builder)
	alpha := b.Field(3).(*array.Float64Builder)
	id := b.Field(4).(*array.Int64Builder)
	periodSteps := b.Field(5).(*array.Float64Builder)
	period := b.Field(6).(*array.DurationBuilder)
	share := b.Field(7).(*array.Float64Builder)
	rhythmShare := b.Field(8).(*array.Float64Builder)
	for _, col := range []array.Builder{series, origin, version, alpha, id, periodSteps, period, share, rhythmShare} {
		col.Reserve(rows)
	}
	o := arrow.Timestamp(f.TS.UnixNano())
	for r := 0; r < rows; r++ {
		series.Append(f.Series)
		origin.Append(o)
		version.Append(f.ModelVersion)
		alpha.Append(f.Alpha)
	}
	id.AppendNull()
	periodSteps.AppendNull()
	period.AppendNull()
	share.AppendNull()
	rhythmShare.AppendNull()
	for k := range f.Frequencies {
		fr := &f.Frequencies[k]
		id.Append(int64(fr.ID))
		periodSteps.Append(fr.PeriodSteps)
		period.Append(arrow.Duration(fr.Period))
		share.Append(fr.Share)
		if r := f.rhythmOf(fr); r >= 0 {
			rhythmShare.Append(f.Rhythms[r].Share)
		} else {
			rhythmShare.AppendNull()
		}
	}
	if full {
		h, c := f.Horizon, len(f.Fields)
		for j := 0; j < c; j++ {
			list := b.Field(len(attributionColumns) + j).(*array.ListBuilder)
			vals := list.ValueBuilder().(*array.Float64Builder)
			vals.Reserve(rows * h)
			for r := 0; r < rows; r++ {
				src := f.Residual
				if r > 0 {
					src = f.Frequencies[r-1].Values
				}
				list.Append(true)
				for i := 0; i < h; i++ {
					vals.UnsafeAppend(src[i*c+j])
				}
			}
		}
	}
	return e.write(dst, &e.attr, "attribution")
}

// eos is the end-of-stream marker of the IPC stream format.
var eos = []byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}

// write appends the IPC stream of the layout's record: the schema message,
// the record batch and the end-of-stream marker.
func (e *ArrowEncoder) write(dst []byte, l *arrowLayout, what string) ([]byte, error) {
	rec := l.b.NewRecord()
	defer rec.Release()
	if l.w == nil {
		var s appendWriter
		sw := ipc.NewWriter(&s, ipc.WithSchema(l.schema), ipc.WithAllocator(e.mem))
		if err := sw.Close(); err != nil { // the schema and an end-of-stream marker
			return dst, fmt.Errorf("wire: encode %s arrow: %w", what, err)
		}
		l.schemaMsg = s.b[:len(s.b)-len(eos)]
		l.out = &appendWriter{}
		l.w = ipc.NewWriter(l.out, ipc.WithSchema(l.schema), ipc.WithAllocator(e.mem))
	}
	l.out.b = dst
	if l.started {
		l.out.b = append(l.out.b, l.schemaMsg...)
	}
	err := l.w.Write(rec)
	l.started = true
	out := append(l.out.b, eos...)
	l.out.b = nil
	if err != nil {
		l.release() // the writer's state is unknown: start afresh
		return dst, fmt.Errorf("wire: encode %s arrow: %w", what, err)
	}
	return out, nil
}

func checkArrowFields(fields []string) error {
	for _, name := range fields {
		if isReservedColumn(name) {
			return fmt.Errorf("wire: %w: field %q has the name of a fixed column of the arrow layouts; rename the value field", ErrInvalid, name)
		}
	}
	return nil
}

// appendWriter is an io.Writer appending to a byte slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
