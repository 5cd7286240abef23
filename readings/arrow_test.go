package readings_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/readings"
)

func newArrow(t testing.TB, cfg readings.Config) *readings.ArrowDecoder {
	t.Helper()
	d, err := readings.NewArrowDecoder(cfg, testClock)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// ipcStream writes one record batch per builder call as an IPC stream.
func ipcStream(t testing.TB, mem memory.Allocator, fields []arrow.Field, batches ...func(rb *array.RecordBuilder)) []byte {
	t.Helper()
	schema := arrow.NewSchema(fields, nil)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	for _, fill := range batches {
		rb := array.NewRecordBuilder(mem, schema)
		fill(rb)
		rec := rb.NewRecord()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		rb.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var (
	fSeries = arrow.Field{Name: "series", Type: arrow.BinaryTypes.String}
	fTS     = arrow.Field{Name: "ts", Type: readings.TimestampType}
	fValue  = arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Float64}
)

func TestArrowDecode(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	valid := ipcStream(t, mem, []arrow.Field{fSeries, fTS, fValue}, arrowThreeRows)
	cases := append(arrowDecodeCases(t, mem, valid), arrowRejectCases(t, mem, valid)...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configWith(tc.edit)
			cfg.Format = readings.FormatArrow
			dec := newArrow(t, cfg)
			got, err := decodeOne(t, mem, dec, cfg.ValueFields, []byte(tc.key), tc.in)
			if r := reasonOf(err); r != tc.wantR {
				t.Fatalf("reason = %q (%v), want %q", r, err, tc.wantR)
			}
			if !sameRows(got, tc.want) {
				t.Errorf("rows = %v, want %v", got, tc.want)
			}
			if err == nil {
				checkRoundTrip(t, cfg, dec, got)
			}
		})
	}
}

// arrowCase is a row of TestArrowDecode: a message (under key) and the
// rows it decodes to, or the reason it is refused.
type arrowCase struct {
	name  string
	edit  func(*readings.Config) // of DefaultConfig
	key   string
	in    []byte
	want  []row
	wantR string
}

// arrowThreeRows appends three readings of series a and b.
func arrowThreeRows(rb *array.RecordBuilder) {
	rb.Field(0).(*array.StringBuilder).AppendValues([]string{"a", "b", "a"}, nil)
	rb.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{t0, t0, t0 + 1000}, nil)
	rb.Field(2).(*array.Float64Builder).AppendValues([]float64{1, 2, 3}, nil)
}

// arrowWithValues returns a batch of readings of series s, all at t0, one
// a value of vals (null where valid says so).
func arrowWithValues(vals []float64, valid []bool) func(rb *array.RecordBuilder) {
	return func(rb *array.RecordBuilder) {
		n := len(vals)
		for i := 0; i < n; i++ {
			rb.Field(0).(*array.StringBuilder).Append("s")
			rb.Field(1).(*array.TimestampBuilder).Append(t0)
		}
		rb.Field(2).(*array.Float64Builder).AppendValues(vals, valid)
	}
}

// arrowDecodeCases returns the rows of TestArrowDecode that decode: valid
// is the stream of arrowThreeRows. Every stream is allocated from mem.
func arrowDecodeCases(t *testing.T, mem memory.Allocator, valid []byte) []arrowCase {
	ing := testIngest.UnixMilli()
	std := []arrow.Field{fSeries, fTS, fValue}
	return []arrowCase{
		{name: "three readings", in: valid, want: []row{{Series: "a", TS: t0, Ingest: ing, Values: []float64{1}}, {Series: "b", TS: t0, Ingest: ing, Values: []float64{2}}, {Series: "a", TS: t0 + 1000, Ingest: ing, Values: []float64{3}}}},
		{name: "two record batches", in: ipcStream(t, mem, std, arrowThreeRows, arrowWithValues([]float64{9}, nil)),
			want: []row{{Series: "a", TS: t0, Ingest: ing, Values: []float64{1}}, {Series: "b", TS: t0, Ingest: ing, Values: []float64{2}}, {Series: "a", TS: t0 + 1000, Ingest: ing, Values: []float64{3}}, {Series: "s", TS: t0, Ingest: ing, Values: []float64{9}}}},
		{name: "schema only", in: ipcStream(t, mem, std), want: nil},
		{name: "int64 epoch, extra columns, no series: the key", key: "k",
			edit: func(c *readings.Config) { c.ValueFields = []string{"temp", "humidity"} },
			in: ipcStream(t, mem, []arrow.Field{
				{Name: "humidity", Type: arrow.PrimitiveTypes.Float64},
				{Name: "site", Type: arrow.PrimitiveTypes.Int32},
				{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
				{Name: "temp", Type: arrow.PrimitiveTypes.Float64},
			}, func(rb *array.RecordBuilder) {
				rb.Field(0).(*array.Float64Builder).Append(81)
				rb.Field(1).(*array.Int32Builder).AppendNull()
				rb.Field(2).(*array.Int64Builder).Append(t0)
				rb.Field(3).(*array.Float64Builder).Append(3.5)
			}),
			want: []row{{Series: "k", TS: t0, Ingest: ing, Values: []float64{3.5, 81}}}},
		{name: "microsecond timestamps round down", in: ipcStream(t, mem, []arrow.Field{fSeries,
			{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}}, fValue},
			func(rb *array.RecordBuilder) {
				rb.Field(0).(*array.StringBuilder).AppendValues([]string{"a", "a"}, nil)
				rb.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{t0*1000 + 1999, -1}, nil)
				rb.Field(2).(*array.Float64Builder).AppendValues([]float64{1, 2}, nil)
			}),
			want: []row{{Series: "a", TS: t0 + 1, Ingest: ing, Values: []float64{1}}, {Series: "a", TS: -1, Ingest: ing, Values: []float64{2}}}},
		{name: "second timestamps", in: ipcStream(t, mem, []arrow.Field{
			{Name: "series", Type: arrow.BinaryTypes.LargeString},
			{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "Europe/Paris"}}, fValue},
			func(rb *array.RecordBuilder) {
				rb.Field(0).(*array.LargeStringBuilder).Append("a")
				rb.Field(1).(*array.TimestampBuilder).Append(t0 / 1000)
				rb.Field(2).(*array.Float64Builder).Append(1)
			}),
			want: []row{{Series: "a", TS: t0, Ingest: ing, Values: []float64{1}}}},
	}
}

// arrowRejectCases returns the rows of TestArrowDecode that are refused,
// and why: valid is the stream of arrowThreeRows, to truncate or extend.
// Every stream is allocated from mem.
func arrowRejectCases(t *testing.T, mem memory.Allocator, valid []byte) []arrowCase {
	std := []arrow.Field{fSeries, fTS, fValue}
	return []arrowCase{
		{name: "empty", in: nil, wantR: readings.ReasonUnparsable},
		{name: "garbage", in: []byte("{\"series\":\"a\"}"), wantR: readings.ReasonUnparsable},
		{name: "truncated", in: valid[:len(valid)-20], wantR: readings.ReasonUnparsable},
		{name: "garbage after the end", in: append(append([]byte(nil), valid...), "xyz"...), wantR: readings.ReasonUnparsable},
		{name: "huge metadata length", in: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 2, 3}, wantR: readings.ReasonUnparsable},
		{name: "no value column", in: ipcStream(t, mem, []arrow.Field{fSeries, fTS}), wantR: readings.ReasonBadSchema},
		{name: "no time column", in: ipcStream(t, mem, []arrow.Field{fSeries, fValue}), wantR: readings.ReasonBadSchema},
		{name: "value column of ints", in: ipcStream(t, mem, []arrow.Field{fSeries, fTS, {Name: "value", Type: arrow.PrimitiveTypes.Int64}}), wantR: readings.ReasonBadSchema},
		{name: "series column of ints", in: ipcStream(t, mem, []arrow.Field{{Name: "series", Type: arrow.PrimitiveTypes.Int64}, fTS, fValue}), wantR: readings.ReasonBadSchema},
		{name: "time column of strings", in: ipcStream(t, mem, []arrow.Field{fSeries, {Name: "ts", Type: arrow.BinaryTypes.String}, fValue}), wantR: readings.ReasonBadSchema},
		{name: "one null value", in: ipcStream(t, mem, std, arrowWithValues([]float64{1, 2, 3}, []bool{true, false, true})), wantR: readings.ReasonMissingField},
		{name: "one NaN among many", in: ipcStream(t, mem, std, arrowWithValues([]float64{1, 2, math.NaN(), 4}, nil)), wantR: readings.ReasonNonFinite},
		{name: "one bad row in the second batch", in: ipcStream(t, mem, std, arrowThreeRows, arrowWithValues([]float64{math.Inf(1)}, nil)), wantR: readings.ReasonNonFinite},
		{name: "no series column and no key", in: ipcStream(t, mem, []arrow.Field{fTS, fValue}, func(rb *array.RecordBuilder) {
			rb.Field(0).(*array.TimestampBuilder).Append(t0)
			rb.Field(1).(*array.Float64Builder).Append(1)
		}), wantR: readings.ReasonMissingField},
		{name: "empty series", in: ipcStream(t, mem, std, func(rb *array.RecordBuilder) {
			rb.Field(0).(*array.StringBuilder).AppendValues([]string{"a", ""}, nil)
			rb.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{t0, t0}, nil)
			rb.Field(2).(*array.Float64Builder).AppendValues([]float64{1, 2}, nil)
		}), wantR: readings.ReasonEmptySeries},
		{name: "a row too far ahead", in: ipcStream(t, mem, std, func(rb *array.RecordBuilder) {
			rb.Field(0).(*array.StringBuilder).AppendValues([]string{"a", "a"}, nil)
			rb.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{t0, arrow.Timestamp(testNow.Add(2 * time.Hour).UnixMilli())}, nil)
			rb.Field(2).(*array.Float64Builder).AppendValues([]float64{1, 2}, nil)
		}), wantR: readings.ReasonFutureTimestamp},
		{name: "an int64 column of epoch seconds", in: ipcStream(t, mem, []arrow.Field{fSeries, {Name: "ts", Type: arrow.PrimitiveTypes.Int64}, fValue},
			func(rb *array.RecordBuilder) {
				rb.Field(0).(*array.StringBuilder).Append("a")
				rb.Field(1).(*array.Int64Builder).Append(t0 / 1000)
				rb.Field(2).(*array.Float64Builder).Append(1)
			}), wantR: readings.ReasonBadTimestamp},
		{name: "seconds beyond int64 milliseconds", in: ipcStream(t, mem, []arrow.Field{fSeries,
			{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Second}}, fValue},
			func(rb *array.RecordBuilder) {
				rb.Field(0).(*array.StringBuilder).Append("a")
				rb.Field(1).(*array.TimestampBuilder).Append(math.MinInt64 / 10)
				rb.Field(2).(*array.Float64Builder).Append(1)
			}), wantR: readings.ReasonBadTimestamp},
	}
}

func TestAppendArrowRoundTripRandom(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, cfg := range []readings.Config{readings.DefaultConfig(), configWith(func(c *readings.Config) {
		c.SeriesField, c.TimeField, c.ValueFields = "id", "time", []string{"a", "b", "c"}
	})} {
		cfg.Format = readings.FormatArrow
		dec := newArrow(t, cfg)
		rs := randomReadings(rng, 3000, len(cfg.ValueFields))
		msg, err := readings.AppendArrow([]byte("prefix"), rs, cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		if string(msg[:6]) != "prefix" {
			t.Fatalf("AppendArrow did not append to dst")
		}
		got, err := decodeOne(t, mem, dec, cfg.ValueFields, nil, msg[6:])
		if err != nil {
			t.Fatal(err)
		}
		if want := rowsFromReadings(rs); !sameRows(got, want) {
			t.Fatalf("decode∘encode is not the identity over %d readings", len(rs))
		}
	}
}

func TestAppendArrowWrongValueCount(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	_, err := readings.AppendArrow(nil, []readings.Reading{{Series: "a", Values: []float64{1, 2}}}, readings.DefaultConfig(), mem)
	if err == nil {
		t.Fatal("AppendArrow with 2 values for 1 field: no error")
	}
	// A zero Config is taken as given: it names no series or time field.
	if _, err := readings.AppendArrow(nil, []readings.Reading{{Series: "a", Values: []float64{1}}}, readings.Config{}, mem); err == nil ||
		!strings.Contains(err.Error(), "start from DefaultConfig") {
		t.Errorf("AppendArrow with a zero Config: error %v, want one saying to start from DefaultConfig", err)
	}
}

// TestArrowMetadataChecks: the metadata checks of internal/arrowipc let
// real schemas through (nested and dictionary extra columns, metadata); what
// they refuse is tested there.
func TestArrowMetadataChecks(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	md := arrow.NewMetadata([]string{"origin"}, []string{"test"})
	rich := []arrow.Field{
		fSeries, fTS, fValue,
		{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true, Metadata: md},
		{Name: "site", Type: arrow.StructOf(arrow.Field{Name: "id", Type: arrow.BinaryTypes.String}), Nullable: true},
		{Name: "kind", Type: dict, Nullable: true},
	}
	in := ipcStream(t, mem, rich, func(rb *array.RecordBuilder) {
		rb.Field(0).(*array.StringBuilder).Append("a")
		rb.Field(1).(*array.TimestampBuilder).Append(t0)
		rb.Field(2).(*array.Float64Builder).Append(1)
		rb.Field(3).AppendNull()
		rb.Field(4).AppendNull()
		rb.Field(5).(*array.BinaryDictionaryBuilder).AppendString("x")
	})
	got, err := decodeOne(t, mem, newArrow(t, readings.DefaultConfig()), nil, nil, in)
	if err != nil {
		t.Fatalf("a schema with nested, dictionary and metadata extras: %v", err)
	}
	if want := []row{{Series: "a", TS: t0, Ingest: testIngest.UnixMilli(), Values: []float64{1}}}; !sameRows(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}

}
