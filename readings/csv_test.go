package readings_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/readings"
)

func newCSV(t testing.TB, cfg readings.Config) *readings.CSVDecoder {
	t.Helper()
	d, err := readings.NewCSVDecoder(cfg, testClock)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCSVDecode(t *testing.T) {
	ing := testIngest.UnixMilli()
	multi := func(c *readings.Config) { c.ValueFields = []string{"temp", "humidity"} }
	keyed := func(c *readings.Config) { c.CSVColumns = []string{"ts", "-", "value"} }
	for _, tc := range []struct {
		name  string
		edit  func(*readings.Config) // of DefaultConfig
		key   string
		in    string
		want  []row
		wantR string
	}{
		{name: "the issue's example", in: `s-17,2026-01-05T08:00:00Z,412.0`,
			want: []row{{Series: "s-17", TS: t0, Ingest: ing, Values: []float64{412}}}},
		{name: "epoch milliseconds, line break", in: "s-17,1767600000000,412\r\n",
			want: []row{{Series: "s-17", TS: t0, Ingest: ing, Values: []float64{412}}}},
		{name: "spaces around fields", in: " s-17 ,\t1767600000000 , 412 ",
			want: []row{{Series: "s-17", TS: t0, Ingest: ing, Values: []float64{412}}}},
		{name: "quoted fields", in: `"s,""17"" ",1767600000000,"412"`,
			want: []row{{Series: `s,"17" `, TS: t0, Ingest: ing, Values: []float64{412}}}},
		{name: "quoted line break", in: "\"a\nb\",1767600000000,1\n",
			want: []row{{Series: "a\nb", TS: t0, Ingest: ing, Values: []float64{1}}}},
		{name: "multichannel", edit: multi, in: `st-1,1767600000000,3.5,81`,
			want: []row{{Series: "st-1", TS: t0, Ingest: ing, Values: []float64{3.5, 81}}}},
		{name: "columns by position, key as series, ignored column", edit: keyed, key: "k-9",
			in: `2026-01-05T08:00:00Z,whatever,7`, want: []row{{Series: "k-9", TS: t0, Ingest: ing, Values: []float64{7}}}},

		{name: "empty", in: ``, wantR: readings.ReasonUnparsable},
		{name: "just a line break", in: "\n", wantR: readings.ReasonUnparsable},
		{name: "two lines", in: "a,1,1\nb,1,1", wantR: readings.ReasonUnparsable},
		{name: "unterminated quote", in: `"a,1,1`, wantR: readings.ReasonUnparsable},
		{name: "text after a quoted field", in: `"a"x,1,1`, wantR: readings.ReasonUnparsable},
		{name: "quote inside a field", in: `a"b,1,1`, wantR: readings.ReasonUnparsable},
		{name: "too few columns", in: `a,1767600000000`, wantR: readings.ReasonBadSchema},
		{name: "too many columns", in: `a,1767600000000,1,2`, wantR: readings.ReasonBadSchema},
		{name: "empty value", in: `a,1767600000000,`, wantR: readings.ReasonMissingField},
		{name: "empty time", in: `a,,1`, wantR: readings.ReasonMissingField},
		{name: "no series column and no key", edit: keyed, in: `1767600000000,x,1`, wantR: readings.ReasonMissingField},
		{name: "a header line", in: `series,ts,value`, wantR: readings.ReasonBadTimestamp},
		{name: "epoch seconds", in: `a,1767600000,1`, wantR: readings.ReasonBadTimestamp},
		{name: "epoch seconds of 1999", in: `a,936000000,1`, wantR: readings.ReasonBadTimestamp},
		{name: "value is a word", in: `a,1767600000000,high`, wantR: readings.ReasonWrongType},
		{name: "series is not UTF-8", in: "\xff,1767600000000,1", wantR: readings.ReasonWrongType},
		{name: "NaN", in: `a,1767600000000,NaN`, wantR: readings.ReasonNonFinite},
		{name: "-Inf", in: `a,1767600000000,-Inf`, wantR: readings.ReasonNonFinite},
		{name: "empty series", key: "k", in: `,1767600000000,1`, wantR: readings.ReasonEmptySeries},
		{name: "too far ahead", in: `a,2026-01-05T10:00:01Z,1`, wantR: readings.ReasonFutureTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			cfg := configWith(tc.edit)
			cfg.Format = readings.FormatCSV
			dec := newCSV(t, cfg)
			got, err := decodeOne(t, mem, dec, cfg.ValueFields, []byte(tc.key), []byte(tc.in))
			if r := reasonOf(err); r != tc.wantR {
				t.Fatalf("reason = %q (%v), want %q", r, err, tc.wantR)
			}
			if !sameRows(got, tc.want) {
				t.Errorf("rows = %v, want %v", got, tc.want)
			}
			if err == nil && tc.key == "" {
				checkRoundTrip(t, cfg, dec, got)
			}
		})
	}
}

func TestAppendCSV(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*readings.Config) // of DefaultConfig
		r    readings.Reading
		want string
	}{
		{name: "the issue's example", r: readings.Reading{Series: "s-17", Time: time.UnixMilli(t0), Values: []float64{412}},
			want: `s-17,2026-01-05T08:00:00Z,412`},
		{name: "quoting", r: readings.Reading{Series: ` a,"b"`, Time: time.UnixMilli(t0), Values: []float64{math.Inf(-1)}},
			want: `" a,""b""",2026-01-05T08:00:00Z,-Inf`},
		{name: "configured columns", edit: func(c *readings.Config) { c.CSVColumns = []string{"value", "", "ts"} },
			r: readings.Reading{Series: "s", Time: time.UnixMilli(t0 + 1), Values: []float64{-0.5}}, want: `-0.5,,2026-01-05T08:00:00.001Z`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(readings.AppendCSV(nil, tc.r, configWith(tc.edit))); got != tc.want {
				t.Errorf("AppendCSV = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCSVRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, cfg := range []readings.Config{readings.DefaultConfig(), configWith(func(c *readings.Config) {
		c.ValueFields, c.CSVColumns = []string{"a", "b", "c"}, []string{"c", "ts", "x", "series", "a", "b"}
	})} {
		cfg.Format = readings.FormatCSV
		dec := newCSV(t, cfg)
		rs := randomReadings(rng, 2000, len(cfg.ValueFields))
		var got []row
		for _, msg := range encode(t, cfg, rs) {
			rows, err := decodeOne(t, memory.DefaultAllocator, dec, cfg.ValueFields, nil, msg)
			if err != nil {
				t.Fatalf("decode %q: %v", msg, err)
			}
			got = append(got, rows...)
		}
		if want := rowsFromReadings(rs); !sameRows(got, want) {
			t.Fatalf("decode∘encode is not the identity over %d readings", len(rs))
		}
	}
}

func TestCSVDecodeAllocs(t *testing.T) {
	cfg := configWith(func(c *readings.Config) { c.ValueFields = []string{"temp", "humidity"} })
	checkDecodeAllocs(t, newCSV(t, cfg), cfg.ValueFields, []byte(`"station,0017",2026-01-05T08:00:00.250Z,3.5,81.25`))
}
