package stream

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func newJSON(t testing.TB, cfg Config) *JSONDecoder {
	t.Helper()
	d, err := NewJSONDecoder(cfg, WithClock(testClock))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const t0 = 1767600000000 // 2026-01-05T08:00:00Z

func TestJSONDecode(t *testing.T) {
	ing := testIngest.UnixMilli()
	multi := Config{ValueFields: []string{"temp", "humidity"}}
	for _, tc := range []struct {
		name  string
		cfg   Config
		key   string
		in    string
		want  []row
		wantR string // reason when poison
	}{
		{name: "the issue's example", in: `{"series": "s-17", "ts": "2026-01-05T08:00:00Z", "value": 412.0}`,
			want: []row{{"s-17", t0, ing, []float64{412}}}},
		{name: "epoch milliseconds as a number", in: `{"series":"a","ts":1767600000000,"value":-1.5e-3}`,
			want: []row{{"a", t0, ing, []float64{-1.5e-3}}}},
		{name: "epoch milliseconds as a string", in: `{"series":"a","ts":"1767600000000","value":1}`,
			want: []row{{"a", t0, ing, []float64{1}}}},
		{name: "integral float epoch", in: `{"series":"a","ts":1767600000000.0,"value":1}`,
			want: []row{{"a", t0, ing, []float64{1}}}},
		{name: "offset and fraction", in: `{"series":"a","ts":"2026-01-05T09:00:00.25+01:00","value":1}`,
			want: []row{{"a", t0 + 250, ing, []float64{1}}}},
		{name: "nanoseconds round down", in: `{"series":"a","ts":"2026-01-05T08:00:00.123999999Z","value":1}`,
			want: []row{{"a", t0 + 123, ing, []float64{1}}}},
		{name: "before 1970 rounds down", in: `{"series":"a","ts":"1969-12-31T23:59:59.9995Z","value":1}`,
			want: []row{{"a", -1, ing, []float64{1}}}},
		{name: "multichannel from the issue", cfg: multi,
			in:   `{"series":"st-1","ts":1767600000000,"temp":3.5,"humidity":81}`,
			want: []row{{"st-1", t0, ing, []float64{3.5, 81}}}},
		{name: "fields in any order, others skipped", cfg: multi,
			in:   ` { "humidity" : 81 , "meta": {"a": [1, {"b": null}], "c": "}"}, "temp": "3.5", "ok": true, "ts": 1767600000000, "series": "st-1" } ` + "\n",
			want: []row{{"st-1", t0, ing, []float64{3.5, 81}}}},
		{name: "numeric string value", in: `{"series":"a","ts":1767600000000,"value":"412.5"}`,
			want: []row{{"a", t0, ing, []float64{412.5}}}},
		{name: "no series field: the key", key: "k-1", in: `{"ts":1767600000000,"value":1}`,
			want: []row{{"k-1", t0, ing, []float64{1}}}},
		{name: "null series: the key", key: "k-1", in: `{"series":null,"ts":1767600000000,"value":1}`,
			want: []row{{"k-1", t0, ing, []float64{1}}}},
		{name: "payload series wins over the key", key: "k-1", in: `{"series":"p","ts":1767600000000,"value":1}`,
			want: []row{{"p", t0, ing, []float64{1}}}},
		{name: "escapes and surrogate pairs", in: `{"ser\u0069es":"s\u002d17 \ud83d\ude00 \"q\" \\ \/","ts":1767600000000,"value":1}`,
			want: []row{{"s-17 😀 \"q\" \\ /", t0, ing, []float64{1}}}},
		{name: "repeated field: last wins", in: `{"series":"a","ts":1767600000000,"value":1,"value":2}`,
			want: []row{{"a", t0, ing, []float64{2}}}},
		{name: "custom field names", cfg: Config{SeriesField: "id", TimeField: "time", ValueFields: []string{"v"}},
			in:   `{"id":"x","time":"2026-01-05T08:00:00Z","v":0,"series":"ignored"}`,
			want: []row{{"x", t0, ing, []float64{0}}}},
		{name: "up to MaxFuture ahead is fine", in: `{"series":"a","ts":"2026-01-05T10:00:00Z","value":1}`,
			want: []row{{"a", testNow.UnixMilli() + 3600000, ing, []float64{1}}}},

		{name: "empty", in: ``, wantR: ReasonUnparsable},
		{name: "white space", in: "  \n", wantR: ReasonUnparsable},
		{name: "not an object", in: `[1,2]`, wantR: ReasonUnparsable},
		{name: "truncated", in: `{"series":"a","ts":1767600000000,"val`, wantR: ReasonUnparsable},
		{name: "trailing garbage", in: `{"series":"a","ts":1767600000000,"value":1} {}`, wantR: ReasonUnparsable},
		{name: "missing comma", in: `{"series":"a" "ts":1767600000000,"value":1}`, wantR: ReasonUnparsable},
		{name: "bad skipped value", in: `{"series":"a","x":[1,,2],"ts":1767600000000,"value":1}`, wantR: ReasonUnparsable},
		{name: "bad escape", in: `{"series":"a\q","ts":1767600000000,"value":1}`, wantR: ReasonUnparsable},
		{name: "nested too deep", in: `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"series":"a","ts":1,"value":1}`, wantR: ReasonUnparsable},
		{name: "missing value", in: `{"series":"a","ts":1767600000000}`, wantR: ReasonMissingField},
		{name: "null value", in: `{"series":"a","ts":1767600000000,"value":null}`, wantR: ReasonMissingField},
		{name: "missing second channel", cfg: multi, in: `{"series":"a","ts":1767600000000,"temp":1}`, wantR: ReasonMissingField},
		{name: "missing time", in: `{"series":"a","value":1}`, wantR: ReasonMissingField},
		{name: "no series and no key", in: `{"ts":1767600000000,"value":1}`, wantR: ReasonMissingField},
		{name: "value is a word", in: `{"series":"a","ts":1767600000000,"value":"high"}`, wantR: ReasonWrongType},
		{name: "value is a bool", in: `{"series":"a","ts":1767600000000,"value":true}`, wantR: ReasonWrongType},
		{name: "value is an object", in: `{"series":"a","ts":1767600000000,"value":{"v":1}}`, wantR: ReasonWrongType},
		{name: "series is a number", in: `{"series":17,"ts":1767600000000,"value":1}`, wantR: ReasonWrongType},
		{name: "series is not UTF-8", in: "{\"series\":\"\xff\",\"ts\":1767600000000,\"value\":1}", wantR: ReasonWrongType},
		{name: "key is not UTF-8", key: "\xfe", in: `{"ts":1767600000000,"value":1}`, wantR: ReasonWrongType},
		{name: "time is a bool", in: `{"series":"a","ts":false,"value":1}`, wantR: ReasonWrongType},
		{name: "NaN string", in: `{"series":"a","ts":1767600000000,"value":"NaN"}`, wantR: ReasonNonFinite},
		{name: "Infinity string", in: `{"series":"a","ts":1767600000000,"value":"-Infinity"}`, wantR: ReasonNonFinite},
		{name: "+Inf string", in: `{"series":"a","ts":1767600000000,"value":"+Inf"}`, wantR: ReasonNonFinite},
		{name: "beyond float64", in: `{"series":"a","ts":1767600000000,"value":1e999}`, wantR: ReasonNonFinite},
		{name: "empty series", key: "k", in: `{"series":"","ts":1767600000000,"value":1}`, wantR: ReasonEmptySeries},
		{name: "time is words", in: `{"series":"a","ts":"yesterday","value":1}`, wantR: ReasonBadTimestamp},
		{name: "no such day", in: `{"series":"a","ts":"2026-02-29T00:00:00Z","value":1}`, wantR: ReasonBadTimestamp},
		{name: "leap second", in: `{"series":"a","ts":"2026-06-30T23:59:60Z","value":1}`, wantR: ReasonBadTimestamp},
		{name: "no zone", in: `{"series":"a","ts":"2026-01-05T08:00:00","value":1}`, wantR: ReasonBadTimestamp},
		{name: "fractional epoch", in: `{"series":"a","ts":1767600000000.5,"value":1}`, wantR: ReasonBadTimestamp},
		{name: "epoch beyond int64", in: `{"series":"a","ts":99999999999999999999,"value":1}`, wantR: ReasonBadTimestamp},
		{name: "too far ahead", in: `{"series":"a","ts":"2026-01-05T10:00:00.001Z","value":1}`, wantR: ReasonFutureTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			dec := newJSON(t, tc.cfg)
			got, err := decodeOne(t, mem, dec, tc.cfg.ValueFields, []byte(tc.key), []byte(tc.in))
			if r := reasonOf(err); r != tc.wantR {
				t.Fatalf("reason = %q (%v), want %q", r, err, tc.wantR)
			}
			if !sameRows(got, tc.want) {
				t.Errorf("rows = %v, want %v", got, tc.want)
			}
			if err == nil {
				checkRoundTrip(t, tc.cfg, dec, got)
			}
		})
	}
}

func TestDecodeErrorMessage(t *testing.T) {
	dec := newJSON(t, Config{})
	_, err := decodeOne(t, memory.DefaultAllocator, dec, nil, nil, []byte(`{"series":"a","ts":1767600000000,"value":"high"}`))
	de := err.(*DecodeError)
	de.Topic, de.Partition, de.Offset = "readings", 3, 1234
	const want = `decode readings/3@1234: wrong_type: value = "high" is not a number`
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if de.Unwrap() == nil {
		t.Error("Unwrap() = nil")
	}
}

func TestAppendJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		r    Reading
		want string
	}{
		{name: "the issue's example", r: Reading{Series: "s-17", Time: time.UnixMilli(t0), Values: []float64{412}},
			want: `{"series":"s-17","ts":"2026-01-05T08:00:00Z","value":412}`},
		{name: "milliseconds, escapes, exponents", r: Reading{Series: "a\"b\\\n", Time: time.UnixMilli(t0 + 7), Values: []float64{1e21}},
			want: `{"series":"a\"b\\\n","ts":"2026-01-05T08:00:00.007Z","value":1e+21}`},
		{name: "multichannel", cfg: Config{ValueFields: []string{"temp", "humidity"}},
			r:    Reading{Series: "st-1", Time: time.UnixMilli(t0), Values: []float64{3.5, 81}},
			want: `{"series":"st-1","ts":"2026-01-05T08:00:00Z","temp":3.5,"humidity":81}`},
		{name: "non-finite as strings", cfg: Config{ValueFields: []string{"a", "b", "c"}},
			r:    Reading{Series: "x", Time: time.UnixMilli(0), Values: []float64{math.NaN(), math.Inf(1), math.Inf(-1)}},
			want: `{"series":"x","ts":"1970-01-01T00:00:00Z","a":"NaN","b":"+Inf","c":"-Inf"}`},
		{name: "beyond year 9999 as a number", r: Reading{Series: "x", Time: time.UnixMilli(maxRFC3339Ms + 1), Values: []float64{0}},
			want: `{"series":"x","ts":253402300800000,"value":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendJSON(nil, tc.r, tc.cfg)); got != tc.want {
				t.Errorf("AppendJSON = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAppendJSONPanicsOnWrongValueCount(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("AppendJSON with 2 values for 1 field did not panic")
		}
	}()
	AppendJSON(nil, Reading{Series: "a", Values: []float64{1, 2}}, Config{})
}

func TestJSONRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, channels := range []int{1, 3} {
		cfg := Config{}
		if channels > 1 {
			cfg.ValueFields = []string{"a", "b\"", "c d"}
		}
		dec := newJSON(t, cfg)
		rs := randomReadings(rng, 2000, channels)
		var got []row
		for _, msg := range encode(t, cfg, rs) {
			rows, err := decodeOne(t, memory.DefaultAllocator, dec, cfg.ValueFields, nil, msg)
			if err != nil {
				t.Fatalf("decode %s: %v", msg, err)
			}
			got = append(got, rows...)
		}
		if want := rowsFromReadings(rs); !sameRows(got, want) {
			t.Fatalf("decode∘encode is not the identity over %d readings", len(rs))
		}
	}
}

// TestJSONDecodeAllocs checks the hot path: nothing allocated per message
// once the batch's buffers have grown.
func TestJSONDecodeAllocs(t *testing.T) {
	dec := newJSON(t, Config{ValueFields: []string{"temp", "humidity"}})
	msg := []byte(`{"series":"station-0017","ts":"2026-01-05T08:00:00.250Z","temp":3.5,"humidity":81.25,"meta":{"fw":"1.2"}}`)
	checkDecodeAllocs(t, dec, []string{"temp", "humidity"}, msg)
}

func checkDecodeAllocs(t *testing.T, dec Decoder, values []string, msg []byte) {
	t.Helper()
	rb := array.NewRecordBuilder(memory.DefaultAllocator, Schema(values...))
	defer rb.Release()
	const runs = 1000
	rb.Reserve(2 * runs)
	rb.Field(SeriesColumn).(*array.StringBuilder).ReserveData(2 * runs * 32)
	if err := dec.Decode(rb, nil, msg, testIngest); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(runs, func() {
		if err := dec.Decode(rb, nil, msg, testIngest); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Decode allocates %.2f times per message, want 0", allocs)
	}
}

// TestAppendJSONIsAlwaysJSON: whatever bytes a series id or a field name
// holds, the reading AppendJSON writes is valid JSON (invalid UTF-8 becomes
// U+FFFD, as in the forecasts wire writes).
func TestAppendJSONIsAlwaysJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	word := func() string {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	for range 2000 {
		field := word()
		cfg := Config{ValueFields: []string{field}}
		r := Reading{Series: word(), Time: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), Values: []float64{rng.NormFloat64()}}
		if out := AppendJSON(nil, r, cfg); !json.Valid(out) {
			t.Fatalf("AppendJSON of series %q, field %q = %q: not valid JSON", r.Series, field, out)
		}
	}
}
