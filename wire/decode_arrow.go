package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/internal/arrowipc"
)

// DecodeForecastArrow decodes a forecast message of the Arrow layout into a
// Forecast with Series, TS (in UTC), ModelVersion, Cadence, Fields, Horizon
// and Values set, allocating Arrow buffers from mem (memory.DefaultAllocator
// when nil) and releasing them before it returns.
//
// It never panics and every error is a *DecodeError. For every forecast f,
// DecodeForecastArrow(AppendForecast(nil, f)) equals f's forecast part bit
// for bit, NaN payloads included (times compare with Equal). The stream must
// hold exactly one record batch and nothing after its end.
func DecodeForecastArrow(data []byte, mem memory.Allocator) (Forecast, error) {
	var f Forecast
	err := readOne(data, mem, func(rec arrow.Record) (err error) {
		f, err = forecastFromRecord(rec)
		return err
	})
	if err != nil {
		return Forecast{}, &DecodeError{Layout: "forecast arrow", Err: err}
	}
	return f, nil
}

// DecodeAttributionArrow decodes an attribution message of the Arrow layout
// into a Forecast with Series, TS (in UTC), ModelVersion, Cadence, Alpha and
// Frequencies set and, for a full message, Fields, Horizon, Residual and
// every Contribution's Values too (a summary message leaves them zero),
// allocating Arrow buffers from mem (memory.DefaultAllocator when nil) and
// releasing them before it returns.
//
// It never panics and every error is a *DecodeError. For every forecast f,
// DecodeAttributionArrow(AppendAttribution(nil, f, mode)) equals f's
// attribution part in mode bit for bit.
func DecodeAttributionArrow(data []byte, mem memory.Allocator) (Forecast, error) {
	var f Forecast
	err := readOne(data, mem, func(rec arrow.Record) (err error) {
		f, err = attributionFromRecord(rec)
		return err
	})
	if err != nil {
		return Forecast{}, &DecodeError{Layout: "attribution arrow", Err: err}
	}
	return f, nil
}

// readOne reads the one record batch of an IPC stream with the project's
// hardened IPC reader (internal/arrowipc) and hands it to fn.
func readOne(data []byte, mem memory.Allocator, fn func(arrow.Record) error) error {
	n := 0
	err := arrowipc.Read(data, mem, func(*arrow.Schema) error { return nil }, func(rec arrow.Record) error {
		if n++; n > 1 {
			return errors.New("the stream holds more than one record batch")
		}
		return fn(rec)
	})
	if err == nil && n == 0 {
		err = errors.New("the stream holds no record batch")
	}
	return err
}

// schemaMeta checks that the schema starts with the fixed columns and is the
// message kind, and returns the cadence and the remaining columns.
func schemaMeta(s *arrow.Schema, kind string, fixed []arrow.Field) (time.Duration, []arrow.Field, error) {
	md := s.Metadata()
	if v, _ := md.GetValue(MetaMessage); v != kind {
		return 0, nil, fmt.Errorf("schema metadata %s = %q, want %q", MetaMessage, v, kind)
	}
	v, ok := md.GetValue(MetaCadence)
	if !ok {
		return 0, nil, fmt.Errorf("schema metadata has no %s", MetaCadence)
	}
	cadence, err := time.ParseDuration(v)
	if err != nil {
		return 0, nil, fmt.Errorf("schema metadata %s: %w", MetaCadence, err)
	}
	cols := s.Fields()
	if len(cols) < len(fixed) {
		return 0, nil, fmt.Errorf("%d columns, want at least %d", len(cols), len(fixed))
	}
	for i, want := range fixed {
		if cols[i].Name != want.Name || !arrow.TypeEqual(cols[i].Type, want.Type) {
			return 0, nil, fmt.Errorf("column %d is %s %s, want %s %s", i, cols[i].Name, cols[i].Type, want.Name, want.Type)
		}
	}
	return cadence, cols[len(fixed):], nil
}

func fieldNames(cols []arrow.Field) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return names
}

func noNulls(rec arrow.Record, cols ...int) error {
	for _, i := range cols {
		if rec.Column(i).NullN() != 0 {
			return fmt.Errorf("column %s has nulls", rec.ColumnName(i))
		}
	}
	return nil
}

// constant checks that the series, origin_ts and model_version columns hold
// one value and returns it.
func constant(rec arrow.Record, seriesCol, originCol, versionCol int) (string, int64, int64, error) {
	series := rec.Column(seriesCol).(*array.String)
	origin := rec.Column(originCol).(*array.Timestamp).TimestampValues()
	version := rec.Column(versionCol).(*array.Int64).Int64Values()
	n := int(rec.NumRows())
	if len(origin) < n || len(version) < n {
		return "", 0, 0, errors.New("columns shorter than the record")
	}
	s, o, v := strings.Clone(series.Value(0)), int64(origin[0]), version[0]
	for r := 1; r < n; r++ {
		if series.Value(r) != s || int64(origin[r]) != o || version[r] != v {
			return "", 0, 0, fmt.Errorf("row %d has another series, origin_ts or model_version than row 0", r)
		}
	}
	return s, o, v, nil
}

// forecastLevels returns the interval levels of a forecast schema's
// metadata (none without the key).
func forecastLevels(s *arrow.Schema) ([]float64, error) {
	v, ok := s.Metadata().GetValue(MetaIntervals)
	if !ok {
		return nil, nil
	}
	var levels []float64
	var prev float64
	for _, part := range strings.Split(v, ",") {
		l, err := strconv.ParseFloat(part, 64)
		if err != nil {
			return nil, fmt.Errorf("schema metadata %s = %q: %q is not a level such as 0.9", MetaIntervals, v, part)
		}
		if err := checkLevel(l, prev); err != nil {
			return nil, fmt.Errorf("schema metadata %s = %q: %w", MetaIntervals, v, err)
		}
		levels, prev = append(levels, l), l
	}
	return levels, nil
}

func forecastFromRecord(rec arrow.Record) (Forecast, error) {
	cadence, fields, levels, err := forecastLayout(rec.Schema())
	if err != nil {
		return Forecast{}, err
	}
	h := int(rec.NumRows())
	if h < 1 {
		return Forecast{}, errors.New("no rows")
	}
	all := make([]int, rec.NumCols())
	for i := range all {
		all[i] = i
	}
	if err := noNulls(rec, all...); err != nil {
		return Forecast{}, err
	}
	series, origin, version, err := constant(rec, 0, 2, 3)
	if err != nil {
		return Forecast{}, err
	}
	f := Forecast{
		Series:       series,
		TS:           time.Unix(0, origin).UTC(),
		ModelVersion: version,
		Cadence:      cadence,
		Fields:       fields,
		Horizon:      h,
	}
	if err := checkArrowFields(f.Fields); err != nil {
		return Forecast{}, err
	}
	if err := f.checkID(); err != nil {
		return Forecast{}, err
	}
	if err := f.checkShape(); err != nil {
		return Forecast{}, err
	}
	if err := f.checkCadence(); err != nil {
		return Forecast{}, err
	}
	ts := rec.Column(1).(*array.Timestamp).TimestampValues()
	step := rec.Column(4).(*array.Int32).Int32Values()
	if len(ts) < h || len(step) < h {
		return Forecast{}, errors.New("columns shorter than the record")
	}
	for i := 0; i < h; i++ {
		if step[i] != int32(i+1) {
			return Forecast{}, fmt.Errorf("row %d: step = %d, want %d", i, step[i], i+1)
		}
		if want := origin + int64(i+1)*int64(cadence); int64(ts[i]) != want {
			return Forecast{}, fmt.Errorf("row %d: ts = %d ns, want origin_ts + %d×cadence = %d ns", i, ts[i], i+1, want)
		}
	}
	c := len(fields)
	col := len(forecastColumns)
	f.Values = make([]float64, h*c)
	for j := 0; j < c; j++ {
		v := rec.Column(col).(*array.Float64).Float64Values()
		col++
		if len(v) < h {
			return Forecast{}, errors.New("columns shorter than the record")
		}
		for i := 0; i < h; i++ {
			f.Values[i*c+j] = v[i]
		}
	}
	readColumns := func() ([]float64, error) {
		out := make([]float64, h*c)
		for j := 0; j < c; j++ {
			v := rec.Column(col).(*array.Float32).Float32Values()
			col++
			if len(v) < h {
				return nil, errors.New("columns shorter than the record")
			}
			for i := 0; i < h; i++ {
				out[i*c+j] = float64(v[i])
			}
		}
		return out, nil
	}
	if len(levels) > 0 {
		f.Intervals = make([]Interval, len(levels))
	}
	for k, l := range levels {
		iv := Interval{Level: l}
		if iv.Lower, err = readColumns(); err != nil {
			return Forecast{}, err
		}
		if iv.Upper, err = readColumns(); err != nil {
			return Forecast{}, err
		}
		f.Intervals[k] = iv
	}
	if err := f.checkIntervals(); err != nil {
		return Forecast{}, err
	}
	return f, nil
}

// forecastLayout reads a forecast record's schema: the cadence, the value
// fields (float64 columns) and the interval levels, whose float32 bound
// columns follow the fields level by level.
func forecastLayout(schema *arrow.Schema) (cadence time.Duration, fields []string, levels []float64, err error) {
	cadence, cols, err := schemaMeta(schema, "forecast", forecastColumns)
	if err != nil {
		return 0, nil, nil, err
	}
	levels, err = forecastLevels(schema)
	if err != nil {
		return 0, nil, nil, err
	}
	per := 1 + 2*len(levels) // columns per field
	if len(cols)%per != 0 {
		return 0, nil, nil, fmt.Errorf("%d value columns with %d interval levels: want (1 + 2×%d) per field", len(cols), len(levels), len(levels))
	}
	fields = fieldNames(cols[:len(cols)/per])
	for i, name := range boundColumns(fields, levels) {
		if got := cols[len(fields)+i].Name; got != name {
			return 0, nil, nil, fmt.Errorf("column %s, want %s (the interval columns follow the fields, level by level)", got, name)
		}
	}
	for i, c := range cols {
		want := arrow.PrimitiveTypes.Float64
		if i >= len(fields) {
			want = arrow.PrimitiveTypes.Float32 // an interval bound
		}
		if !arrow.TypeEqual(c.Type, want) {
			return 0, nil, nil, fmt.Errorf("column %s is %s, want %s", c.Name, c.Type, want)
		}
	}
	return cadence, fields, levels, nil
}

func attributionFromRecord(rec arrow.Record) (Forecast, error) {
	fixed, cols, cadence, full, err := attributionLayout(rec)
	if err != nil {
		return Forecast{}, err
	}
	rows := int(rec.NumRows())
	if rows < 1 {
		return Forecast{}, errors.New("no rows (row 0 is the residual)")
	}
	if err := noNulls(rec, 0, 1, 2, 3); err != nil {
		return Forecast{}, err
	}
	series, origin, version, err := constant(rec, 0, 1, 2)
	if err != nil {
		return Forecast{}, err
	}
	alpha := rec.Column(3).(*array.Float64).Float64Values()
	id := rec.Column(4).(*array.Int64)
	periodSteps := rec.Column(5).(*array.Float64)
	period := rec.Column(6).(*array.Duration)
	share := rec.Column(7).(*array.Float64)
	var rhythmShare *array.Float64
	if len(fixed) == len(attributionColumns) {
		rhythmShare = rec.Column(8).(*array.Float64)
		if rhythmShare.Len() < rows {
			return Forecast{}, errors.New("columns shorter than the record")
		}
	}
	if len(alpha) < rows || id.Len() < rows || periodSteps.Len() < rows || period.Len() < rows || share.Len() < rows {
		return Forecast{}, errors.New("columns shorter than the record")
	}
	f := Forecast{
		Series:       series,
		TS:           time.Unix(0, origin).UTC(),
		ModelVersion: version,
		Cadence:      cadence,
		Alpha:        alpha[0],
	}
	for r := 0; r < rows; r++ {
		if math.Float64bits(alpha[r]) != math.Float64bits(f.Alpha) {
			return Forecast{}, fmt.Errorf("row %d has another alpha than row 0", r)
		}
		null := r == 0
		for _, col := range []arrow.Array{id, periodSteps, period, share} {
			if col.IsNull(r) != null {
				if null {
					return Forecast{}, errors.New("row 0 (the residual) has frequency columns set")
				}
				return Forecast{}, fmt.Errorf("row %d has null frequency columns", r)
			}
		}
	}
	if err := f.checkID(); err != nil {
		return Forecast{}, err
	}
	if rows > 1 {
		f.Frequencies = make([]Contribution, rows-1)
	}
	for k := range f.Frequencies {
		r := k + 1
		if v := id.Value(r); v < math.MinInt || v > math.MaxInt {
			return Forecast{}, fmt.Errorf("row %d: frequency_id %d overflows int", r, v)
		}
		f.Frequencies[k] = Contribution{
			ID:          int(id.Value(r)),
			PeriodSteps: periodSteps.Value(r),
			Period:      time.Duration(period.Value(r)),
			Share:       share.Value(r),
		}
	}
	if err := readRhythms(rec.Schema(), &f, rhythmShare); err != nil {
		return Forecast{}, err
	}
	if v, ok := rec.Schema().Metadata().GetValue(MetaResidual); ok {
		if v != residualAllChannelsValue {
			return Forecast{}, fmt.Errorf("schema metadata %s is %q, want %q or no key", MetaResidual, v, residualAllChannelsValue)
		}
		f.ResidualAllChannels = true
	}
	if !full {
		return f, nil
	}
	if err := readAttributionValues(rec, &f, len(fixed), cols); err != nil {
		return Forecast{}, err
	}
	sumRhythms(&f)
	return f, nil
}

// attributionLayout reads an attribution record's schema: its fixed
// columns (with rhythm_share or, in the older layout, without), its value
// columns (list<float64>, a full attribution's), the cadence and whether
// it is full or a summary.
func attributionLayout(rec arrow.Record) (fixed []arrow.Field, cols []arrow.Field, cadence time.Duration, full bool, err error) {
	fixed = attributionColumns
	if fs, last := rec.Schema().Fields(), fixed[len(fixed)-1]; len(fs) <= len(attributionColumnsBefore) ||
		fs[len(attributionColumnsBefore)].Name != last.Name || !arrow.TypeEqual(fs[len(attributionColumnsBefore)].Type, last.Type) {
		// A stream of the layout without rhythm_share; its first value
		// field may even be named so (a list column).
		fixed = attributionColumnsBefore
	}
	cadence, cols, err = schemaMeta(rec.Schema(), "attribution", fixed)
	if err != nil {
		return nil, nil, 0, false, err
	}
	mode, _ := rec.Schema().Metadata().GetValue(MetaAttributions)
	full = AttributionMode(mode) == AttributionsFull
	switch {
	case AttributionMode(mode) != AttributionsFull && AttributionMode(mode) != AttributionsSummary:
		return nil, nil, 0, false, fmt.Errorf("schema metadata %s = %q, want %q or %q", MetaAttributions, mode, AttributionsFull, AttributionsSummary)
	case !full && len(cols) > 0:
		return nil, nil, 0, false, fmt.Errorf("a summary has %d value columns, want none", len(cols))
	case full && len(cols) == 0:
		return nil, nil, 0, false, errors.New("a full attribution has no value columns")
	}
	for _, c := range cols {
		lt, ok := c.Type.(*arrow.ListType)
		if !ok || !arrow.TypeEqual(lt.Elem(), arrow.PrimitiveTypes.Float64) {
			return nil, nil, 0, false, fmt.Errorf("field column %s is %s, want list<float64>", c.Name, c.Type)
		}
	}
	return fixed, cols, cadence, full, nil
}

// readAttributionValues reads a full attribution's value columns (after
// the nfixed fixed ones) into f's residual (row 0) and its frequencies'
// values, H×C each, and sets its fields and horizon.
func readAttributionValues(rec arrow.Record, f *Forecast, nfixed int, cols []arrow.Field) error {
	rows := int(rec.NumRows())
	f.Fields = fieldNames(cols)
	if err := checkArrowFields(f.Fields); err != nil {
		return err
	}
	c := len(cols)
	for j := 0; j < c; j++ {
		list := rec.Column(nfixed + j).(*array.List)
		if list.NullN() != 0 {
			return fmt.Errorf("column %s has nulls", cols[j].Name)
		}
		vals, ok := list.ListValues().(*array.Float64)
		if !ok {
			return fmt.Errorf("column %s does not hold float64 values", cols[j].Name)
		}
		raw := vals.Float64Values()
		for r := 0; r < rows; r++ {
			start, end := list.ValueOffsets(r)
			if start < 0 || end < start || end > int64(len(raw)) {
				return fmt.Errorf("column %s row %d: offsets out of range", cols[j].Name, r)
			}
			n := int(end - start)
			if j == 0 && r == 0 {
				f.Horizon = n
				if err := f.checkShape(); err != nil {
					return err
				}
				f.Residual = make([]float64, n*c)
				for k := range f.Frequencies {
					f.Frequencies[k].Values = make([]float64, n*c)
				}
			}
			if n != f.Horizon {
				return fmt.Errorf("column %s row %d has %d steps, row 0 of %s has %d",
					cols[j].Name, r, n, cols[0].Name, f.Horizon)
			}
			dst := f.Residual
			if r > 0 {
				dst = f.Frequencies[r-1].Values
			}
			for i := 0; i < n; i++ {
				dst[i*c+j] = raw[int(start)+i]
			}
		}
	}
	return nil
}

// readRhythms fills f.Rhythms from the schema's MetaRhythms (absent for a
// model without rhythms), with each rhythm's share from the rhythm_share
// column on its frequencies' rows (which must agree), or, for a stream
// of the layout without that column (share nil), the sum of its
// frequencies'; and
// marks those frequencies with their rhythm.
func readRhythms(s *arrow.Schema, f *Forecast, share *array.Float64) error {
	v, ok := s.Metadata().GetValue(MetaRhythms)
	if !ok {
		if share != nil && share.NullN() != share.Len() {
			return errors.New("rhythm_share is set but the schema names no rhythms")
		}
		return nil
	}
	var rm []rhythmMeta
	if err := json.Unmarshal([]byte(v), &rm); err != nil {
		return fmt.Errorf("schema metadata %s: %w", MetaRhythms, err)
	}
	for _, r := range rm {
		period, err := time.ParseDuration(r.Period)
		if err != nil {
			return fmt.Errorf("schema metadata %s: rhythm %d: period: %w", MetaRhythms, r.Index, err)
		}
		rp := RhythmPart{Index: r.Index, PeriodSteps: r.PeriodSteps, Period: period, Frequencies: r.Frequencies}
		for k := range f.Frequencies {
			fr := &f.Frequencies[k]
			if slices.Contains(r.Frequencies, fr.ID) {
				fr.Cycle, fr.Rhythm = true, r.Index
				rp.Share += fr.Share // a stream without rhythm_share: its lines' sum
			}
		}
		f.Rhythms = append(f.Rhythms, rp)
	}
	if share == nil {
		return nil
	}
	// Each frequency's row carries the share of the first rhythm that
	// lists it (Forecast.rhythmOf); a rhythm with no such row keeps its
	// lines' sum.
	if !share.IsNull(0) {
		return errors.New("row 0 (the residual) has a rhythm_share")
	}
	seen := make([]bool, len(f.Rhythms))
	for k := range f.Frequencies {
		fr, row := &f.Frequencies[k], k+1
		r := f.rhythmOf(fr)
		switch {
		case r < 0 && !share.IsNull(row):
			return fmt.Errorf("row %d: frequency %d of no rhythm has a rhythm_share", row, fr.ID)
		case r < 0:
			continue
		case share.IsNull(row):
			return fmt.Errorf("row %d: frequency %d of rhythm %d has no rhythm_share", row, fr.ID, f.Rhythms[r].Index)
		}
		rp, v := &f.Rhythms[r], share.Value(row)
		if seen[r] && math.Float64bits(v) != math.Float64bits(rp.Share) {
			return fmt.Errorf("row %d: rhythm %d's rhythm_share %v, another of its rows says %v", row, rp.Index, v, rp.Share)
		}
		rp.Share, seen[r] = v, true
	}
	return nil
}

// sumRhythms sets each rhythm's values to the sum of its frequencies'.
func sumRhythms(f *Forecast) {
	n := len(f.Residual)
	for k := range f.Rhythms {
		rp := &f.Rhythms[k]
		rp.Values = make([]float64, n)
		for _, fr := range f.Frequencies {
			if fr.Cycle && fr.Rhythm == rp.Index {
				for i, v := range fr.Values {
					rp.Values[i] += v
				}
			}
		}
	}
}
