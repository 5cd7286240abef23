package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

func TestArrowRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc := wire.NewArrowEncoder(mem)
	defer enc.Release()

	nan := exampleMulti()
	nan.Values[0] = math.Float64frombits(0x7ff8000000000123) // a NaN with a payload
	nan.Values[1] = math.Inf(-1)
	nan.Residual[2] = math.Copysign(0, -1)
	nan.Alpha = math.NaN()
	nan.Frequencies[0].Share = math.Inf(1)
	fs := []wire.Forecast{exampleSingle(), exampleMulti(), nan, extremes(), subSecond()}
	fs = append(fs, randomForecasts(7, 10, []string{"value"}, 24, 4)...)
	fs = append(fs, randomForecasts(8, 10, []string{"temp", "humidity", "wind"}, 12, 3)...)
	fs = append(fs, randomForecasts(9, 2, []string{"x"}, 3, 0)...)
	for i := range fs {
		f := &fs[i]
		b, err := enc.AppendForecast(nil, f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.DecodeForecastArrow(b, mem)
		if err != nil {
			t.Fatalf("forecast %d: %v", i, err)
		}
		if d := wiretest.Diff(got, forecastPart(*f)); d != "" {
			t.Errorf("forecast %d: %s", i, d)
		}
		for _, mode := range []wire.AttributionMode{wire.AttributionsFull, wire.AttributionsSummary} {
			b, err := enc.AppendAttribution(nil, f, mode)
			if err != nil {
				t.Fatal(err)
			}
			got, err := wire.DecodeAttributionArrow(b, mem)
			if err != nil {
				t.Fatalf("attribution %d (%s): %v", i, mode, err)
			}
			if d := wiretest.Diff(got, attributionPart(*f, mode, true)); d != "" {
				t.Errorf("attribution %d (%s): %s", i, mode, d)
			}
		}
	}
}

// readTable reads an IPC stream with the plain Arrow reader, as a consumer
// would.
func readTable(t *testing.T, mem memory.Allocator, b []byte) (*arrow.Schema, arrow.Record) {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatalf("no record: %v", r.Err())
	}
	rec := r.Record()
	rec.Retain()
	return r.Schema(), rec
}

func TestArrowForecastLayout(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc := wire.NewArrowEncoder(mem)
	defer enc.Release()
	f := exampleMulti()
	b, err := enc.AppendForecast(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	schema, rec := readTable(t, mem, b)
	defer rec.Release()
	want := "schema:\n  fields: 7\n" +
		"    - series: type=utf8\n" +
		"    - ts: type=timestamp[ns, tz=UTC]\n" +
		"    - origin_ts: type=timestamp[ns, tz=UTC]\n" +
		"    - model_version: type=int64\n" +
		"    - step: type=int32\n" +
		"    - temp: type=float64\n" +
		"    - humidity: type=float64\n" +
		"  metadata: [\"freqlens.message\": \"forecast\", \"freqlens.cadence\": \"1h0m0s\"]"
	if got := schema.String(); got != want {
		t.Errorf("schema:\n%s\nwant\n%s", got, want)
	}
	if rec.NumRows() != 2 {
		t.Fatalf("%d rows, want 2 (one per step)", rec.NumRows())
	}
	ts := rec.Column(1).(*array.Timestamp)
	if got := ts.Value(1).ToTime(arrow.Nanosecond); !got.Equal(origin.Add(2 * time.Hour)) {
		t.Errorf("ts of step 2 = %s", got)
	}
	if got := rec.Column(6).(*array.Float64).Value(0); got != 80.25 {
		t.Errorf("humidity at step 1 = %v, want 80.25", got)
	}
}

// TestArrowIntervalColumns checks the interval columns of the forecast
// layout: per level the lower then the upper bound of each field, named
// <field>_lower_<level>, and the levels in the schema metadata.
func TestArrowIntervalColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc := wire.NewArrowEncoder(mem)
	defer enc.Release()
	f := wiretest.ExampleMulti()
	wiretest.AddIntervals(&f, 0.8, 0.95)
	b, err := enc.AppendForecast(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	schema, rec := readTable(t, mem, b)
	defer rec.Release()
	var names []string
	for _, fl := range schema.Fields()[5:] {
		names = append(names, fl.Name)
	}
	want := "temp humidity temp_lower_0.8 humidity_lower_0.8 temp_upper_0.8 humidity_upper_0.8 " +
		"temp_lower_0.95 humidity_lower_0.95 temp_upper_0.95 humidity_upper_0.95"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("value columns %s\nwant %s", got, want)
	}
	if v, _ := schema.Metadata().GetValue(wire.MetaIntervals); v != "0.8,0.95" {
		t.Errorf("%s = %q, want 0.8,0.95", wire.MetaIntervals, v)
	}
	if got, want := float64(rec.Column(14).(*array.Float32).Value(1)), f.Intervals[1].Upper[3]; got != want {
		t.Errorf("humidity_upper_0.95 at step 2 = %v, want %v", got, want)
	}
	back, err := wire.DecodeForecastArrow(b, mem)
	if err != nil {
		t.Fatal(err)
	}
	if d := wiretest.Diff(back, forecastPart(f)); d != "" {
		t.Error(d)
	}
}

func TestArrowAttributionLayout(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc := wire.NewArrowEncoder(mem)
	defer enc.Release()
	f := exampleMulti()
	for _, tc := range []struct {
		mode   wire.AttributionMode
		fields string
	}{
		{wire.AttributionsFull, "    - temp: type=list<item: float64, nullable>, nullable\n" +
			"    - humidity: type=list<item: float64, nullable>, nullable\n"},
		{wire.AttributionsSummary, ""},
	} {
		b, err := enc.AppendAttribution(nil, &f, tc.mode)
		if err != nil {
			t.Fatal(err)
		}
		schema, rec := readTable(t, mem, b)
		n := 9
		if tc.mode == wire.AttributionsFull {
			n = 11
		}
		want := fmt.Sprintf("schema:\n  fields: %d\n", n) +
			"    - series: type=utf8\n" +
			"    - origin_ts: type=timestamp[ns, tz=UTC]\n" +
			"    - model_version: type=int64\n" +
			"    - alpha: type=float64\n" +
			"    - frequency_id: type=int64, nullable\n" +
			"    - period_steps: type=float64, nullable\n" +
			"    - period: type=duration[ns], nullable\n" +
			"    - share: type=float64, nullable\n" +
			"    - rhythm_share: type=float64, nullable\n" + tc.fields +
			"  metadata: [\"freqlens.message\": \"attribution\", \"freqlens.cadence\": \"1h0m0s\", \"freqlens.attributions\": \"" + string(tc.mode) + "\"]"
		if got := schema.String(); got != want {
			t.Errorf("%s schema:\n%s\nwant\n%s", tc.mode, got, want)
		}
		if rec.NumRows() != 3 {
			t.Errorf("%s: %d rows, want 3 (residual, then one per frequency)", tc.mode, rec.NumRows())
		}
		if !rec.Column(4).IsNull(0) || rec.Column(4).(*array.Int64).Value(1) != 7 {
			t.Errorf("%s: frequency_id = %v, want [null 7 2]", tc.mode, rec.Column(4))
		}
		if tc.mode == wire.AttributionsFull {
			// Σ over rows of each list, element by element, is the forecast.
			for j := 0; j < 2; j++ {
				list := rec.Column(9 + j).(*array.List)
				vals := list.ListValues().(*array.Float64)
				for h := 0; h < 2; h++ {
					var sum float64
					for r := 0; r < 3; r++ {
						start, _ := list.ValueOffsets(r)
						sum += vals.Value(int(start) + h)
					}
					if want := f.Values[h*2+j]; sum != want {
						t.Errorf("Σ rows of %s at step %d = %v, want %v", rec.ColumnName(9+j), h, sum, want)
					}
				}
			}
		}
		rec.Release()
	}
}

// encodeDecodeAttribution writes f's attribution message in mode (failing
// the test if it cannot) and decodes it back.
func encodeDecodeAttribution(t *testing.T, enc *wire.ArrowEncoder, mem memory.Allocator, f *wire.Forecast, mode wire.AttributionMode) ([]byte, wire.Forecast, error) {
	t.Helper()
	b, err := enc.AppendAttribution(nil, f, mode)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.DecodeAttributionArrow(b, mem)
	return b, got, err
}

// withRhythm returns f with its first two frequencies made one rhythm
// whose summed part's share is share (less than their shares' sum: the
// lines partly cancel).
func withRhythm(f wire.Forecast, share float64) wire.Forecast {
	ids := []int{f.Frequencies[0].ID, f.Frequencies[1].ID}
	sum := make([]float64, len(f.Values))
	for k := range 2 {
		f.Frequencies[k].Cycle, f.Frequencies[k].Rhythm = true, 4
		for j, v := range f.Frequencies[k].Values {
			sum[j] += v
		}
	}
	f.Rhythms = []wire.RhythmPart{{Index: 4, PeriodSteps: 168, Period: 168 * time.Hour, Share: share, Frequencies: ids, Values: sum}}
	return f
}

// TestRhythmSharesRoundTrip: a rhythm's share, its summed part's, reaches
// the consumer in every layout, not recounted from its frequencies'; and an
// Arrow stream of the layout without the rhythm_share column decodes, with
// each rhythm's share the sum of its frequencies' shares.
func TestRhythmSharesRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc := wire.NewArrowEncoder(mem)
	defer enc.Release()
	for i, f := range randomForecasts(21, 6, []string{"temp", "humidity"}, 6, 4) {
		f = withRhythm(f, 0.0625+0.01*float64(i))
		lines := f.Frequencies[0].Share + f.Frequencies[1].Share
		for _, mode := range []wire.AttributionMode{wire.AttributionsFull, wire.AttributionsSummary} {
			b, got, err := encodeDecodeAttribution(t, enc, mem, &f, mode)
			if err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			if len(got.Rhythms) != 1 || got.Rhythms[0].Share != f.Rhythms[0].Share {
				t.Errorf("%s: rhythms %+v, want share %v", mode, got.Rhythms, f.Rhythms[0].Share)
			}
			js, err := wire.AppendAttributionJSON(nil, &f, mode)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := wire.DecodeAttributionJSON(js); err != nil || len(got.Rhythms) != 1 || got.Rhythms[0].Share != f.Rhythms[0].Share {
				t.Errorf("%s JSON: rhythms %+v (%v), want share %v", mode, got.Rhythms, err, f.Rhythms[0].Share)
			}

			// The same message in the layout without rhythm_share.
			oldLayout := rewriteColumns(t, mem, b, func(fd arrow.Field) (arrow.Field, bool) { return fd, fd.Name != "rhythm_share" })
			got, err = wire.DecodeAttributionArrow(oldLayout, mem)
			if err != nil {
				t.Fatalf("%s without rhythm_share: %v", mode, err)
			}
			if len(got.Rhythms) != 1 || got.Rhythms[0].Share != lines {
				t.Errorf("%s without rhythm_share: rhythms %+v, want the lines' sum %v", mode, got.Rhythms, lines)
			}
			if mode == wire.AttributionsFull && len(got.Residual) != len(f.Residual) {
				t.Errorf("%s without rhythm_share: %d residual values, want %d", mode, len(got.Residual), len(f.Residual))
			}
		}
	}
}

// rewriteColumns returns the attribution message b with its columns passed
// through keep (renamed, or dropped when it says false), as another
// writer, or a FreqLens of an earlier layout, writes it.
func rewriteColumns(t *testing.T, mem memory.Allocator, b []byte, keep func(arrow.Field) (arrow.Field, bool)) []byte {
	t.Helper()
	schema, rec := readTable(t, mem, b)
	defer rec.Release()
	var fields []arrow.Field
	var cols []arrow.Array
	for c, fd := range schema.Fields() {
		if fd, ok := keep(fd); ok {
			fields, cols = append(fields, fd), append(cols, rec.Column(c))
		}
	}
	md := schema.Metadata()
	s := arrow.NewSchema(fields, &md)
	r := array.NewRecord(s, cols, rec.NumRows())
	defer r.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s), ipc.WithAllocator(mem))
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

// TestRhythmShareEdgeCases: the Arrow layouts read back what they write
// when a rhythm's share is NaN, when a frequency's Cycle flag disagrees
// with the rhythms' lists (the lists decide, in the encoder as in the
// decoder), and a stream of the layout without rhythm_share whose first
// value field is named rhythm_share (a list column) is read as that layout
// and refused for the field's name, which the encoders refuse too.
func TestRhythmShareEdgeCases(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc := wire.NewArrowEncoder(mem)
	defer enc.Release()
	base := func() wire.Forecast {
		return withRhythm(randomForecasts(31, 1, []string{"temp", "humidity"}, 4, 4)[0], 0.125)
	}
	nan, unflagged, stray := base(), base(), base()
	nan.Rhythms[0].Share = math.NaN()
	unflagged.Frequencies[1].Cycle = false                            // listed by the rhythm
	stray.Frequencies[2].Cycle, stray.Frequencies[2].Rhythm = true, 4 // not listed
	for name, f := range map[string]wire.Forecast{"NaN share": nan, "member not flagged": unflagged, "flagged, not a member": stray} {
		for _, mode := range []wire.AttributionMode{wire.AttributionsFull, wire.AttributionsSummary} {
			_, got, err := encodeDecodeAttribution(t, enc, mem, &f, mode)
			if err != nil {
				t.Errorf("%s, %s: %v", name, mode, err)
				continue
			}
			if math.Float64bits(got.Rhythms[0].Share) != math.Float64bits(f.Rhythms[0].Share) {
				t.Errorf("%s, %s: rhythm share %v, want %v", name, mode, got.Rhythms[0].Share, f.Rhythms[0].Share)
			}
		}
	}
	f := base()
	b, err := enc.AppendAttribution(nil, &f, wire.AttributionsFull)
	if err != nil {
		t.Fatal(err)
	}
	old := rewriteColumns(t, mem, b, func(fd arrow.Field) (arrow.Field, bool) {
		if fd.Name == "temp" {
			fd.Name = "rhythm_share"
		}
		return fd, fd.Name != "rhythm_share" || fd.Type.ID() == arrow.LIST
	})
	// Read as the layout without rhythm_share it is, then refused by name,
	// as the encoders refuse the field (it could not be written back).
	if _, err := wire.DecodeAttributionArrow(old, mem); err == nil || !strings.Contains(err.Error(), `field "rhythm_share" has the name of a fixed column`) {
		t.Errorf("a stream without the rhythm_share column, with a field named so: %v, want the field named as the reason", err)
	}
}

func TestArrowRejects(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc := wire.NewArrowEncoder(mem)
	defer enc.Release()

	f := exampleSingle()
	f.Fields = []string{"share"}
	if _, err := enc.AppendForecast(nil, &f); err == nil || !strings.Contains(err.Error(), `"share"`) {
		t.Errorf("AppendForecast with a field named share = %v, want an error naming it", err)
	}
	if err := wire.ValidateFields([]string{"temp", "step"}, wire.FormatArrow); err == nil {
		t.Error(`ValidateFields([temp step], arrow) = nil, want an error`)
	}
	if err := wire.ValidateFields([]string{"temp", "step"}, wire.FormatJSON); err != nil {
		t.Errorf(`ValidateFields([temp step], json) = %v, want nil`, err)
	}

	f = exampleSingle()
	fb, _ := enc.AppendForecast(nil, &f)
	ab, _ := enc.AppendAttribution(nil, &f, wire.AttributionsFull)
	rec := func() arrow.Record {
		_, r := readTable(t, mem, fb)
		return r
	}
	var lz4 bytes.Buffer
	{
		r := rec()
		w := ipc.NewWriter(&lz4, ipc.WithSchema(r.Schema()), ipc.WithAllocator(mem), ipc.WithLZ4())
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		w.Close()
		r.Release()
	}
	var twice bytes.Buffer
	{
		r := rec()
		w := ipc.NewWriter(&twice, ipc.WithSchema(r.Schema()), ipc.WithAllocator(mem))
		w.Write(r)
		w.Write(r)
		w.Close()
		r.Release()
	}
	// The reader is Arrow's, hardened: LZ4-compressed record batches decode
	// like uncompressed ones.
	if got, err := wire.DecodeForecastArrow(lz4.Bytes(), mem); err != nil {
		t.Errorf("an LZ4-compressed forecast: %v", err)
	} else if d := wiretest.Diff(got, forecastPart(f)); d != "" {
		t.Errorf("an LZ4-compressed forecast decodes differently: %s", d)
	}
	for _, tc := range []struct {
		name        string
		in          []byte
		attribution bool
		want        string
	}{
		{"empty", nil, false, "empty"},
		{"truncated", fb[:len(fb)-20], false, "remain"},
		{"schema only", fb[:8+binary.LittleEndian.Uint32(fb[4:])], false, "no record batch"},
		{"garbage after", append(append([]byte(nil), fb...), 1, 2, 3), false, "bytes after the end"},
		{"attribution as forecast", ab, false, `"attribution", want "forecast"`},
		{"forecast as attribution", fb, true, `"forecast", want "attribution"`},
		{"two records", twice.Bytes(), false, "more than one record batch"},
		{"bad interval levels", withMeta(t, mem, fb, wire.MetaIntervals, "0.9,0.8"), false, "increasing"},
		{"interval columns missing", withMeta(t, mem, fb, wire.MetaIntervals, "0.9"), false, "1 value columns with 1 interval levels"},
		{"unknown residual input", withMeta(t, mem, ab, wire.MetaResidual, "own"), true, `freqlens.residual is "own"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.attribution {
				_, err = wire.DecodeAttributionArrow(tc.in, mem)
			} else {
				_, err = wire.DecodeForecastArrow(tc.in, mem)
			}
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error = %v, want a *wire.DecodeError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestArrowEncoderSwitchesLayouts writes forecasts of alternating fields and
// cadences through one encoder.
func TestArrowEncoderSwitchesLayouts(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc := wire.NewArrowEncoder(mem)
	defer enc.Release()
	for i := 0; i < 6; i++ {
		f := exampleSingle()
		if i%2 == 1 {
			f = exampleMulti()
		}
		if i%3 == 2 {
			f.Cadence = 5 * time.Minute
		}
		b, err := enc.AppendForecast(nil, &f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.DecodeForecastArrow(b, mem)
		if err != nil {
			t.Fatal(err)
		}
		if d := wiretest.Diff(got, forecastPart(f)); d != "" {
			t.Errorf("forecast %d: %s", i, d)
		}
	}
}

// withMeta returns the forecast message b with its schema metadata key set
// to value.
func withMeta(t *testing.T, mem memory.Allocator, b []byte, key, value string) []byte {
	t.Helper()
	_, r := readTable(t, mem, b)
	defer r.Release()
	md := r.Schema().Metadata()
	keys, vals := append(md.Keys(), key), append(md.Values(), value)
	schema := arrow.NewSchema(r.Schema().Fields(), ptr(arrow.NewMetadata(keys, vals)))
	var out bytes.Buffer
	w := ipc.NewWriter(&out, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	rec := array.NewRecord(schema, r.Columns(), r.NumRows())
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return out.Bytes()
}
