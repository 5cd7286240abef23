package readings_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/readings"
)

func newJSON(t testing.TB, cfg readings.Config) *readings.JSONDecoder {
	t.Helper()
	d, err := readings.NewJSONDecoder(cfg, testClock)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const t0 = 1767600000000 // 2026-01-05T08:00:00Z

func TestJSONDecode(t *testing.T) {
	ing := testIngest.UnixMilli()
	multi := func(c *readings.Config) { c.ValueFields = []string{"temp", "humidity"} }
	for _, tc := range []struct {
		name  string
		edit  func(*readings.Config) // of DefaultConfig
		key   string
		in    string
		want  []row
		wantR string // reason when poison
	}{
		{name: "the issue's example", in: `{"series": "s-17", "ts": "2026-01-05T08:00:00Z", "value": 412.0}`,
			want: []row{{Series: "s-17", TS: t0, Ingest: ing, Values: []float64{412}}}},
		{name: "epoch milliseconds as a number", in: `{"series":"a","ts":1767600000000,"value":-1.5e-3}`,
			want: []row{{Series: "a", TS: t0, Ingest: ing, Values: []float64{-1.5e-3}}}},
		{name: "epoch milliseconds as a string", in: `{"series":"a","ts":"1767600000000","value":1}`,
			want: []row{{Series: "a", TS: t0, Ingest: ing, Values: []float64{1}}}},
		{name: "integral float epoch", in: `{"series":"a","ts":1767600000000.0,"value":1}`,
			want: []row{{Series: "a", TS: t0, Ingest: ing, Values: []float64{1}}}},
		{name: "offset and fraction", in: `{"series":"a","ts":"2026-01-05T09:00:00.25+01:00","value":1}`,
			want: []row{{Series: "a", TS: t0 + 250, Ingest: ing, Values: []float64{1}}}},
		{name: "nanoseconds round down", in: `{"series":"a","ts":"2026-01-05T08:00:00.123999999Z","value":1}`,
			want: []row{{Series: "a", TS: t0 + 123, Ingest: ing, Values: []float64{1}}}},
		{name: "before 1970 rounds down", in: `{"series":"a","ts":"1969-12-31T23:59:59.9995Z","value":1}`,
			want: []row{{Series: "a", TS: -1, Ingest: ing, Values: []float64{1}}}},
		{name: "multichannel from the issue", edit: multi,
			in:   `{"series":"st-1","ts":1767600000000,"temp":3.5,"humidity":81}`,
			want: []row{{Series: "st-1", TS: t0, Ingest: ing, Values: []float64{3.5, 81}}}},
		{name: "fields in any order, others skipped", edit: multi,
			in:   ` { "humidity" : 81 , "meta": {"a": [1, {"b": null}], "c": "}"}, "temp": "3.5", "ok": true, "ts": 1767600000000, "series": "st-1" } ` + "\n",
			want: []row{{Series: "st-1", TS: t0, Ingest: ing, Values: []float64{3.5, 81}}}},
		{name: "numeric string value", in: `{"series":"a","ts":1767600000000,"value":"412.5"}`,
			want: []row{{Series: "a", TS: t0, Ingest: ing, Values: []float64{412.5}}}},
		{name: "no series field: the key", key: "k-1", in: `{"ts":1767600000000,"value":1}`,
			want: []row{{Series: "k-1", TS: t0, Ingest: ing, Values: []float64{1}}}},
		{name: "null series: the key", key: "k-1", in: `{"series":null,"ts":1767600000000,"value":1}`,
			want: []row{{Series: "k-1", TS: t0, Ingest: ing, Values: []float64{1}}}},
		{name: "payload series wins over the key", key: "k-1", in: `{"series":"p","ts":1767600000000,"value":1}`,
			want: []row{{Series: "p", TS: t0, Ingest: ing, Values: []float64{1}}}},
		{name: "escapes and surrogate pairs", in: `{"ser\u0069es":"s\u002d17 \ud83d\ude00 \"q\" \\ \/","ts":1767600000000,"value":1}`,
			want: []row{{Series: "s-17 😀 \"q\" \\ /", TS: t0, Ingest: ing, Values: []float64{1}}}},
		{name: "repeated field: last wins", in: `{"series":"a","ts":1767600000000,"value":1,"value":2}`,
			want: []row{{Series: "a", TS: t0, Ingest: ing, Values: []float64{2}}}},
		{name: "custom field names", edit: func(c *readings.Config) { c.SeriesField, c.TimeField, c.ValueFields = "id", "time", []string{"v"} },
			in:   `{"id":"x","time":"2026-01-05T08:00:00Z","v":0,"series":"ignored"}`,
			want: []row{{Series: "x", TS: t0, Ingest: ing, Values: []float64{0}}}},
		{name: "up to MaxFuture ahead is fine", in: `{"series":"a","ts":"2026-01-05T10:00:00Z","value":1}`,
			want: []row{{Series: "a", TS: testNow.UnixMilli() + 3600000, Ingest: ing, Values: []float64{1}}}},

		{name: "empty", in: ``, wantR: readings.ReasonUnparsable},
		{name: "white space", in: "  \n", wantR: readings.ReasonUnparsable},
		{name: "not an object", in: `[1,2]`, wantR: readings.ReasonUnparsable},
		{name: "truncated", in: `{"series":"a","ts":1767600000000,"val`, wantR: readings.ReasonUnparsable},
		{name: "trailing garbage", in: `{"series":"a","ts":1767600000000,"value":1} {}`, wantR: readings.ReasonUnparsable},
		{name: "missing comma", in: `{"series":"a" "ts":1767600000000,"value":1}`, wantR: readings.ReasonUnparsable},
		{name: "bad skipped value", in: `{"series":"a","x":[1,,2],"ts":1767600000000,"value":1}`, wantR: readings.ReasonUnparsable},
		{name: "bad escape", in: `{"series":"a\q","ts":1767600000000,"value":1}`, wantR: readings.ReasonUnparsable},
		{name: "nested too deep", in: `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"series":"a","ts":1,"value":1}`, wantR: readings.ReasonUnparsable},
		{name: "missing value", in: `{"series":"a","ts":1767600000000}`, wantR: readings.ReasonMissingField},
		{name: "null value", in: `{"series":"a","ts":1767600000000,"value":null}`, wantR: readings.ReasonMissingField},
		{name: "missing second channel", edit: multi, in: `{"series":"a","ts":1767600000000,"temp":1}`, wantR: readings.ReasonMissingField},
		{name: "missing time", in: `{"series":"a","value":1}`, wantR: readings.ReasonMissingField},
		{name: "no series and no key", in: `{"ts":1767600000000,"value":1}`, wantR: readings.ReasonMissingField},
		{name: "value is a word", in: `{"series":"a","ts":1767600000000,"value":"high"}`, wantR: readings.ReasonWrongType},
		{name: "value is a bool", in: `{"series":"a","ts":1767600000000,"value":true}`, wantR: readings.ReasonWrongType},
		{name: "value is an object", in: `{"series":"a","ts":1767600000000,"value":{"v":1}}`, wantR: readings.ReasonWrongType},
		{name: "series is a number", in: `{"series":17,"ts":1767600000000,"value":1}`, wantR: readings.ReasonWrongType},
		{name: "series is not UTF-8", in: "{\"series\":\"\xff\",\"ts\":1767600000000,\"value\":1}", wantR: readings.ReasonWrongType},
		{name: "key is not UTF-8", key: "\xfe", in: `{"ts":1767600000000,"value":1}`, wantR: readings.ReasonWrongType},
		{name: "time is a bool", in: `{"series":"a","ts":false,"value":1}`, wantR: readings.ReasonWrongType},
		{name: "epoch seconds", in: `{"series":"a","ts":1767600000,"value":1}`, wantR: readings.ReasonBadTimestamp},
		{name: "epoch seconds as text", in: `{"series":"a","ts":"1767600000","value":1}`, wantR: readings.ReasonBadTimestamp},
		{name: "epoch seconds with an exponent", in: `{"series":"a","ts":1.7676e9,"value":1}`, wantR: readings.ReasonBadTimestamp},
		{name: "epoch seconds with a fraction", in: `{"series":"a","ts":1767600000.123,"value":1}`, wantR: readings.ReasonBadTimestamp},
		{name: "NaN string", in: `{"series":"a","ts":1767600000000,"value":"NaN"}`, wantR: readings.ReasonNonFinite},
		{name: "Infinity string", in: `{"series":"a","ts":1767600000000,"value":"-Infinity"}`, wantR: readings.ReasonNonFinite},
		{name: "+Inf string", in: `{"series":"a","ts":1767600000000,"value":"+Inf"}`, wantR: readings.ReasonNonFinite},
		{name: "beyond float64", in: `{"series":"a","ts":1767600000000,"value":1e999}`, wantR: readings.ReasonNonFinite},
		{name: "empty series", key: "k", in: `{"series":"","ts":1767600000000,"value":1}`, wantR: readings.ReasonEmptySeries},
		{name: "time is words", in: `{"series":"a","ts":"yesterday","value":1}`, wantR: readings.ReasonBadTimestamp},
		{name: "no such day", in: `{"series":"a","ts":"2026-02-29T00:00:00Z","value":1}`, wantR: readings.ReasonBadTimestamp},
		{name: "leap second", in: `{"series":"a","ts":"2026-06-30T23:59:60Z","value":1}`, wantR: readings.ReasonBadTimestamp},
		{name: "no zone", in: `{"series":"a","ts":"2026-01-05T08:00:00","value":1}`, wantR: readings.ReasonBadTimestamp},
		{name: "fractional epoch", in: `{"series":"a","ts":1767600000000.5,"value":1}`, wantR: readings.ReasonBadTimestamp},
		{name: "epoch beyond int64", in: `{"series":"a","ts":99999999999999999999,"value":1}`, wantR: readings.ReasonBadTimestamp},
		{name: "too far ahead", in: `{"series":"a","ts":"2026-01-05T10:00:00.001Z","value":1}`, wantR: readings.ReasonFutureTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			cfg := configWith(tc.edit)
			dec := newJSON(t, cfg)
			got, err := decodeOne(t, mem, dec, cfg.ValueFields, []byte(tc.key), []byte(tc.in))
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

func TestDecodeErrorMessage(t *testing.T) {
	dec := newJSON(t, readings.DefaultConfig())
	_, err := decodeOne(t, memory.DefaultAllocator, dec, nil, nil, []byte(`{"series":"a","ts":1767600000000,"value":"high"}`))
	de := err.(*readings.DecodeError)
	de.Topic, de.Partition, de.Offset = "readings", 3, 1234
	const want = `decode readings/3@1234: wrong_type: value = "high" is not a number`
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	// A bare word is no JSON: the excerpt is the word, not the rest of the message.
	_, err = decodeOne(t, memory.DefaultAllocator, dec, nil, nil, []byte(`{"series":"a","ts":1767600000000,"value":NaN}`))
	if got, want := err.Error(), `wrong_type: value = "NaN" is not a number`; !strings.Contains(got, want) {
		t.Errorf("bare NaN: %q, want it to contain %q", got, want)
	}
	if de.Unwrap() == nil {
		t.Error("Unwrap() = nil")
	}
	// JSON that is not a number is quoted as sent; a null value is told
	// apart from one left out.
	for in, want := range map[string]string{
		`{"series":"a","ts":1767600000000,"value":true}`:    `wrong_type: value = true is not a number`,
		`{"series":"a","ts":1767600000000,"value":{"v":1}}`: `wrong_type: value = {"v":1} is not a number`,
		`{"series":"a","ts":1767600000000,"value":null}`:    `missing_field: value is null; a reading needs every value field`,
		`{"series":"a","ts":1767600000000}`:                 `missing_field: no "value" field`,
	} {
		_, err := decodeOne(t, memory.DefaultAllocator, dec, nil, nil, []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to contain %q", in, err, want)
		}
	}
}

func TestAppendJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*readings.Config) // of DefaultConfig
		r    readings.Reading
		want string
	}{
		{name: "the issue's example", r: readings.Reading{Series: "s-17", Time: time.UnixMilli(t0), Values: []float64{412}},
			want: `{"series":"s-17","ts":"2026-01-05T08:00:00Z","value":412}`},
		{name: "milliseconds, escapes, exponents", r: readings.Reading{Series: "a\"b\\\n", Time: time.UnixMilli(t0 + 7), Values: []float64{1e21}},
			want: `{"series":"a\"b\\\n","ts":"2026-01-05T08:00:00.007Z","value":1e+21}`},
		{name: "multichannel", edit: func(c *readings.Config) { c.ValueFields = []string{"temp", "humidity"} },
			r:    readings.Reading{Series: "st-1", Time: time.UnixMilli(t0), Values: []float64{3.5, 81}},
			want: `{"series":"st-1","ts":"2026-01-05T08:00:00Z","temp":3.5,"humidity":81}`},
		{name: "non-finite as strings", edit: func(c *readings.Config) { c.ValueFields = []string{"a", "b", "c"} },
			r:    readings.Reading{Series: "x", Time: time.UnixMilli(0), Values: []float64{math.NaN(), math.Inf(1), math.Inf(-1)}},
			want: `{"series":"x","ts":"1970-01-01T00:00:00Z","a":"NaN","b":"+Inf","c":"-Inf"}`},
		{name: "beyond year 9999 as a number", r: readings.Reading{Series: "x", Time: time.UnixMilli(maxRFC3339Ms + 1), Values: []float64{0}},
			want: `{"series":"x","ts":253402300800000,"value":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(readings.AppendJSON(nil, tc.r, configWith(tc.edit))); got != tc.want {
				t.Errorf("AppendJSON = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestAppendJSONPanicsOnProgrammerErrors: a reading with the wrong number
// of values, and a Config that names no series or time field (a zero
// Config is taken as given, not as the defaults), are the caller's bugs.
func TestAppendJSONPanicsOnProgrammerErrors(t *testing.T) {
	one := readings.Reading{Series: "a", Values: []float64{1}}
	for _, tc := range []struct {
		name string
		r    readings.Reading
		cfg  readings.Config
	}{
		{"2 values for 1 field", readings.Reading{Series: "a", Values: []float64{1, 2}}, readings.DefaultConfig()},
		{"a zero Config", one, readings.Config{}},
		{"no series field", one, configWith(func(c *readings.Config) { c.SeriesField = "" })},
		{"no time field", one, configWith(func(c *readings.Config) { c.TimeField = "" })},
	} {
		for _, enc := range []struct {
			name string
			f    func(readings.Reading, readings.Config)
		}{
			{"AppendJSON", func(r readings.Reading, cfg readings.Config) { readings.AppendJSON(nil, r, cfg) }},
			{"AppendCSV", func(r readings.Reading, cfg readings.Config) { readings.AppendCSV(nil, r, cfg) }},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s with %s did not panic", enc.name, tc.name)
					}
				}()
				enc.f(tc.r, tc.cfg)
			}()
		}
	}
}

// TestAppendAllocs: the encoders take cfg as given and allocate nothing once
// dst has room, the feeds' hot path.
func TestAppendAllocs(t *testing.T) {
	cfg := configWith(func(c *readings.Config) { c.ValueFields = []string{"temp", "humidity"} })
	r := readings.Reading{Series: "station-0017", Time: time.UnixMilli(t0 + 250), Values: []float64{3.5, 81.25}}
	dst := make([]byte, 0, 256)
	if allocs := testing.AllocsPerRun(1000, func() {
		dst = readings.AppendJSON(dst[:0], r, cfg)
		dst = readings.AppendCSV(dst[:0], r, cfg)
	}); allocs != 0 {
		t.Errorf("AppendJSON and AppendCSV allocate %.2f times per reading, want 0", allocs)
	}
}

func TestJSONRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, channels := range []int{1, 3} {
		cfg := readings.DefaultConfig()
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
	dec := newJSON(t, configWith(func(c *readings.Config) { c.ValueFields = []string{"temp", "humidity"} }))
	msg := []byte(`{"series":"station-0017","ts":"2026-01-05T08:00:00.250Z","temp":3.5,"humidity":81.25,"meta":{"fw":"1.2"}}`)
	checkDecodeAllocs(t, dec, []string{"temp", "humidity"}, msg)
}

func checkDecodeAllocs(t *testing.T, dec readings.Decoder, values []string, msg []byte) {
	t.Helper()
	rb := array.NewRecordBuilder(memory.DefaultAllocator, readings.Schema(values...))
	defer rb.Release()
	const runs = 1000
	rb.Reserve(2 * runs)
	rb.Field(readings.SeriesColumn).(*array.StringBuilder).ReserveData(2 * runs * 32)
	if err := dec.Decode(rb, nil, msg, testIngest); err != nil {
		t.Fatal(err)
	}
	var newest int64
	allocs := testing.AllocsPerRun(runs, func() {
		dec.SetOldest(testNow.UnixMilli() - 168*3600*1000) // as the consumer applies input.max_past
		if err := dec.Decode(rb, nil, msg, testIngest); err != nil {
			t.Fatal(err)
		}
		newest = max(newest, dec.Newest())
	})
	if allocs != 0 {
		t.Errorf("Decode allocates %.2f times per message, want 0", allocs)
	}
	if newest == readings.NoTime {
		t.Error("Newest() = NoTime after decoding readings")
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
		cfg := configWith(func(c *readings.Config) { c.ValueFields = []string{field} })
		r := readings.Reading{Series: word(), Time: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), Values: []float64{rng.NormFloat64()}}
		if out := readings.AppendJSON(nil, r, cfg); !json.Valid(out) {
			t.Fatalf("AppendJSON of series %q, field %q = %q: not valid JSON", r.Series, field, out)
		}
	}
}
