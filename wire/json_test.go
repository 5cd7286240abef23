package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if want = bytes.TrimSuffix(want, []byte("\n")); !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}

func TestJSONGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    wire.Forecast
	}{
		{"single", exampleSingle()},
		{"multi", exampleMulti()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.AppendForecastJSON(nil, &tc.f)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "forecast_"+tc.name+".json", got)
			for _, mode := range []wire.AttributionMode{wire.AttributionsFull, wire.AttributionsSummary} {
				got, err := wire.AppendAttributionJSON(nil, &tc.f, mode)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, "attribution_"+tc.name+"_"+string(mode)+".json", got)
				if !json.Valid(got) {
					t.Errorf("attribution %s is not valid JSON", mode)
				}
			}
		})
	}
}

// TestJSONIntervalsGolden writes the documented interval layouts: bounds
// keyed by level beside each step's value(s).
func TestJSONIntervalsGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    wire.Forecast
	}{
		{"single_intervals", wiretest.ExampleIntervals()},
		{"multi_intervals", wiretest.ExampleMultiIntervals()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.AppendForecastJSON(nil, &tc.f)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "forecast_"+tc.name+".json", got)
			back, err := wire.DecodeForecastJSON(got)
			if err != nil {
				t.Fatal(err)
			}
			want := forecastPart(tc.f)
			if len(want.Fields) == 1 {
				want.Fields = []string{"value"}
			}
			if d := wiretest.Diff(back, want); d != "" {
				t.Error(d)
			}
		})
	}
	// A consumer reads the bounds with plain encoding/json.
	f := wiretest.ExampleIntervals()
	b, _ := wire.AppendForecastJSON(nil, &f)
	var doc struct {
		Horizon []struct {
			Value float64 `json:"value"`
		} `json:"horizon"`
		Intervals []struct {
			Level float64   `json:"level"`
			L     []float64 `json:"lower"`
			U     []float64 `json:"upper"`
		} `json:"intervals"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Intervals) != 2 || doc.Intervals[0].Level != 0.8 || doc.Intervals[1].Level != 0.95 {
		t.Fatalf("intervals %+v, want levels 0.8 and 0.95", doc.Intervals)
	}
	i80, i95 := doc.Intervals[0], doc.Intervals[1]
	for h, st := range doc.Horizon {
		if !(i95.L[h] <= i80.L[h] && i80.L[h] <= st.Value && st.Value <= i80.U[h] && i80.U[h] <= i95.U[h]) {
			t.Errorf("step %d: bounds 80%% [%v, %v], 95%% [%v, %v] around %v are not nested", h, i80.L[h], i80.U[h], i95.L[h], i95.U[h], st.Value)
		}
	}
}

// TestJSONLayoutSums reads the golden multichannel messages with plain
// encoding/json, as a consumer would, and checks that residual plus the
// frequency values gives the forecast, field by field.
func TestJSONLayoutSums(t *testing.T) {
	f := exampleMulti()
	fb, _ := wire.AppendForecastJSON(nil, &f)
	ab, _ := wire.AppendAttributionJSON(nil, &f, wire.AttributionsFull)
	var fc struct {
		Horizon []struct {
			TS     time.Time          `json:"ts"`
			Values map[string]float64 `json:"values"`
		} `json:"horizon"`
	}
	var at struct {
		Residual    []map[string]float64 `json:"residual"`
		Frequencies []struct {
			Values []map[string]float64 `json:"values"`
		} `json:"frequencies"`
	}
	if err := json.Unmarshal(fb, &fc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ab, &at); err != nil {
		t.Fatal(err)
	}
	for h, step := range fc.Horizon {
		if want := origin.Add(time.Duration(h+1) * time.Hour); !step.TS.Equal(want) {
			t.Errorf("horizon[%d].ts = %s, want %s", h, step.TS, want)
		}
		for field, v := range step.Values {
			sum := at.Residual[h][field]
			for _, fr := range at.Frequencies {
				sum += fr.Values[h][field]
			}
			if sum != v {
				t.Errorf("step %d %s: residual + Σ values = %v, forecast %v", h, field, sum, v)
			}
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	cases := map[string][]wire.Forecast{
		"examples":   {exampleSingle(), exampleMulti()},
		"one field":  randomForecasts(1, 20, []string{"value"}, 24, 4),
		"multi":      randomForecasts(2, 20, []string{"temp", "humidity", "wind"}, 12, 3),
		"no freq":    randomForecasts(3, 2, []string{"value"}, 5, 0),
		"horizon 1":  randomForecasts(4, 2, []string{"a", "b"}, 1, 2),
		"extremes":   {extremes()},
		"sub-second": {subSecond()},
	}
	for name, fs := range cases {
		t.Run(name, func(t *testing.T) {
			for i := range fs {
				f := &fs[i]
				b, err := wire.AppendForecastJSON(nil, f)
				if err != nil {
					t.Fatal(err)
				}
				got, err := wire.DecodeForecastJSON(b)
				if err != nil {
					t.Fatalf("DecodeForecastJSON(%s): %v", b, err)
				}
				if d := wiretest.Diff(got, forecastPart(*f)); d != "" {
					t.Errorf("forecast %d: %s", i, d)
				}
				for _, mode := range []wire.AttributionMode{wire.AttributionsFull, wire.AttributionsSummary} {
					b, err := wire.AppendAttributionJSON(nil, f, mode)
					if err != nil {
						t.Fatal(err)
					}
					got, err := wire.DecodeAttributionJSON(b)
					if err != nil {
						t.Fatalf("DecodeAttributionJSON(%s): %v", b, err)
					}
					if d := wiretest.Diff(got, attributionPart(*f, mode, false)); d != "" {
						t.Errorf("attribution %d (%s): %s", i, mode, d)
					}
				}
			}
		})
	}
}

// extremes has numbers and strings that stress the encoding.
func extremes() wire.Forecast {
	f := exampleMulti()
	f.Series = "naïve \"s\"\t\\ \x01 \u2028 end"
	f.Fields = []string{"température", "a\"b\\c\nd"}
	f.ModelVersion = math.MinInt64
	f.Values = []float64{math.Copysign(0, -1), 5e-324, math.MaxFloat64, -math.SmallestNonzeroFloat64}
	f.Residual = []float64{1e21, 1e-7, 123456789012345680, 0.1 + 0.2}
	f.Alpha = 1.0 / 3
	f.Frequencies[0].PeriodSteps = math.Pi
	f.Frequencies[0].Period = 75398223686 * time.Nanosecond
	f.Frequencies[1].Period = 0
	f.Frequencies[1].ID = -1
	return f
}

// subSecond has a cadence and times with fractional seconds.
func subSecond() wire.Forecast {
	f := exampleSingle()
	f.TS = time.Date(2026, 1, 5, 8, 0, 0, 123456789, time.FixedZone("CET", 3600))
	f.TS = f.TS.UTC()
	f.Cadence = 250*time.Millisecond + time.Nanosecond
	f.Frequencies[0].Period = 1500 * time.Microsecond
	return f
}

func TestJSONNonFinite(t *testing.T) {
	f := exampleSingle()
	f.Values = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
	f.Alpha = math.NaN()
	b, err := wire.AppendForecastJSON(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) || !bytes.Contains(b, []byte(`"value":null`)) {
		t.Fatalf("forecast with NaN/Inf = %s, want valid JSON with null values", b)
	}
	got, err := wire.DecodeForecastJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got.Values {
		if !math.IsNaN(v) {
			t.Errorf("Values[%d] = %v, want NaN (from null)", i, v)
		}
	}
	ab, err := wire.AppendAttributionJSON(nil, &f, wire.AttributionsSummary)
	if err != nil {
		t.Fatal(err)
	}
	a, err := wire.DecodeAttributionJSON(ab)
	if err != nil || !math.IsNaN(a.Alpha) {
		t.Errorf("alpha NaN → %s → %v, %v; want NaN", ab, a.Alpha, err)
	}
}

func TestJSONTimesAreUTC(t *testing.T) {
	f := exampleSingle()
	f.TS = origin.In(time.FixedZone("X", -5*3600))
	b, _ := wire.AppendForecastJSON(nil, &f)
	if !bytes.Contains(b, []byte(`"ts":"2026-01-05T08:00:00Z"`)) || !bytes.Contains(b, []byte(`"ts":"2026-01-05T09:00:00Z"`)) {
		t.Errorf("times not in UTC: %s", b)
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*wire.Forecast)
		want   string
	}{
		{"empty series", func(f *wire.Forecast) { f.Series = "" }, "empty series"},
		{"zero horizon", func(f *wire.Forecast) { f.Horizon = 0 }, "horizon = 0"},
		{"no fields", func(f *wire.Forecast) { f.Fields = nil }, "no fields"},
		{"empty field", func(f *wire.Forecast) { f.Fields = []string{"a", ""} }, "empty name"},
		{"duplicate field", func(f *wire.Forecast) { f.Fields = []string{"a", "a"} }, `"a" appears twice`},
		{"short values", func(f *wire.Forecast) { f.Values = f.Values[1:] }, "len(Values) = 3, want"},
		{"short residual", func(f *wire.Forecast) { f.Residual = nil }, "len(Residual) = 0"},
		{"short contribution", func(f *wire.Forecast) { f.Frequencies[1].Values = nil }, "frequency 1 (id 2)"},
		{"zero cadence", func(f *wire.Forecast) { f.Cadence = 0 }, "cadence = 0s"},
		{"ts too late", func(f *wire.Forecast) { f.TS = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }, "outside the years"},
		{"last step too late", func(f *wire.Forecast) { f.TS = time.Date(2262, 4, 11, 23, 0, 0, 0, time.UTC) }, "after the year 2262"},
		{"level 1", func(f *wire.Forecast) { wiretest.AddIntervals(f, 1) }, "level 1, want a coverage"},
		{"levels not increasing", func(f *wire.Forecast) { wiretest.AddIntervals(f, 0.9, 0.8) }, "increasing"},
		{"short bounds", func(f *wire.Forecast) { wiretest.AddIntervals(f, 0.9); f.Intervals[0].Upper = nil }, "len(Lower), len(Upper) = 4, 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := exampleMulti()
			tc.modify(&f)
			err := f.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	f := exampleSingle()
	f.Values = nil
	if b, err := wire.AppendForecastJSON([]byte("keep"), &f); err == nil || string(b) != "keep" {
		t.Errorf("AppendForecastJSON(invalid) = %q, %v; want dst unchanged and an error", b, err)
	}
	if _, err := wire.AppendAttributionJSON(nil, &f, wire.AttributionsOff); err == nil {
		t.Error("AppendAttributionJSON(off) = nil error, want one")
	}
	if _, err := wire.AppendAttributionJSON(nil, &f, "some"); err == nil || !strings.Contains(err.Error(), `"some"`) {
		t.Errorf("AppendAttributionJSON(some) = %v, want an error naming the mode", err)
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	single, _ := wire.AppendForecastJSON(nil, ptr(exampleSingle()))
	attr, _ := wire.AppendAttributionJSON(nil, ptr(exampleMulti()), wire.AttributionsFull)
	ivl, _ := wire.AppendForecastJSON(nil, ptr(wiretest.ExampleIntervals()))
	ivlMulti, _ := wire.AppendForecastJSON(nil, ptr(wiretest.ExampleMultiIntervals()))
	for _, tc := range []struct {
		name        string
		attribution bool
		in          string
		want        string
	}{
		{"empty", false, ``, "unexpected end"},
		{"truncated", false, string(single[:len(single)/2]), "unexpected end"},
		{"garbage after", false, string(single) + "x", "invalid character"},
		{"missing cadence", false, strings.Replace(string(single), `"cadence":"1h0m0s",`, ``, 1), `missing "cadence"`},
		{"bad cadence", false, strings.Replace(string(single), `"1h0m0s"`, `"1 hour"`, 1), `"cadence"`},
		{"zero cadence", false, strings.Replace(string(single), `"1h0m0s"`, `"0s"`, 1), "cadence = 0s"},
		{"wrong step ts", false, strings.Replace(string(single), `T10:00:00Z`, `T10:30:00Z`, 1), "horizon[1]: ts"},
		{"string value", false, strings.Replace(string(single), `"value":412.5`, `"value":"412.5"`, 1), "want a number"},
		{"huge value", false, strings.Replace(string(single), `"value":412.5`, `"value":1e999`, 1), "does not fit"},
		{"value and values", false, strings.Replace(string(single), `"value":412.5`, `"value":1,"values":{"a":1}`, 1), "both"},
		{"missing residual values", true, strings.Replace(string(attr), `,"values":[{"temp":0.5,"humidity":5},{"temp":-0.25,"humidity":1.75}]`, ``, 1), `missing "values"`},
		{"field missing in a step", true, strings.Replace(string(attr), `{"temp":2.5,"humidity":78}`, `{"temp":2.5}`, 1), "step 1"},
		{"duplicate field", true, strings.Replace(string(attr), `{"temp":2.5,"humidity":78}`, `{"temp":2.5,"temp":78}`, 1), "twice"},
		{"mixed steps", true, strings.Replace(string(attr), `{"temp":2.5,"humidity":78}`, `2.5`, 1), "step 1 is a number"},
		{"missing alpha", true, strings.Replace(string(attr), `"alpha":0.625,`, ``, 1), `missing "alpha"`},
		{"short values", true, strings.Replace(string(attr), `,{"temp":0.5,"humidity":-1.75}`, ``, 1), "1 steps, residual has 2"},
		{"level out of range", false, strings.Replace(string(ivl), `"level":0.8`, `"level":1.5`, 1), "level 1.5"},
		{"level missing", false, strings.Replace(string(ivl), `"level":0.8,`, ``, 1), `intervals[0]: missing "level"`},
		{"levels decreasing", false, strings.Replace(string(ivl), `"level":0.95`, `"level":0.7`, 1), "increasing"},
		{"upper missing", false, strings.Replace(string(ivl), `,"upper":[427,416,392.5]`, ``, 1), `intervals[0]: missing "upper"`},
		{"short bound", false, strings.Replace(string(ivl), `"lower":[398,380.5,345]`, `"lower":[398,380.5]`, 1), `"lower" has 2 steps, the horizon 3`},
		{"lower above upper", false, strings.Replace(string(ivl), `"upper":[427,`, `"upper":[397,`, 1), "lower bound 398 above the upper 397"},
		{"field objects with one field", false, strings.Replace(string(ivl), `"lower":[398,380.5,345]`, `"lower":[{"value":398},{"value":380.5},{"value":345}]`, 1), "different layouts"},
		{"numbers with several fields", false, strings.Replace(string(ivlMulti), `"lower":[{"temp":2.5,"humidity":77},{"temp":1.25,"humidity":73.5}]`, `"lower":[2.5,1.25]`, 1), "different layouts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.attribution {
				_, err = wire.DecodeAttributionJSON([]byte(tc.in))
			} else {
				_, err = wire.DecodeForecastJSON([]byte(tc.in))
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

func TestDecodeJSONToleratesKeyOrder(t *testing.T) {
	in := `{"frequencies":[{"values":[{"humidity":5,"temp":0.5}],"share":1,"period":"24h0m0s","period_steps":24,"id":7}],` +
		`"residual":[{"temp":3,"humidity":75}],"alpha":0.5,"model_version":1,"ts":"2026-01-05T09:00:00+01:00","series":"s","extra":[1,2]}`
	got, err := wire.DecodeAttributionJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Forecast{Series: "s", TS: origin, ModelVersion: 1, Fields: []string{"temp", "humidity"}, Horizon: 1,
		Alpha: 0.5, Residual: []float64{3, 75},
		Frequencies: []wire.Contribution{{ID: 7, PeriodSteps: 24, Period: 24 * time.Hour, Share: 1, Values: []float64{0.5, 5}}}}
	if d := wiretest.Diff(got, want); d != "" {
		t.Error(d)
	}
}

func TestMerge(t *testing.T) {
	f := exampleMulti()
	fb, _ := wire.AppendForecastJSON(nil, &f)
	fc, _ := wire.DecodeForecastJSON(fb)
	for _, mode := range []wire.AttributionMode{wire.AttributionsFull, wire.AttributionsSummary} {
		ab, _ := wire.AppendAttributionJSON(nil, &f, mode)
		at, _ := wire.DecodeAttributionJSON(ab)
		got, err := wire.Merge(fc, at)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		want := f
		if mode == wire.AttributionsSummary {
			want = attributionPart(f, mode, true)
			want.Fields, want.Horizon, want.Values = f.Fields, f.Horizon, f.Values
		}
		if d := wiretest.Diff(got, want); d != "" {
			t.Errorf("%s: %s", mode, d)
		}
	}
	other := exampleSingle()
	other.ModelVersion = 4
	ob, _ := wire.AppendAttributionJSON(nil, &other, wire.AttributionsFull)
	oa, _ := wire.DecodeAttributionJSON(ob)
	if _, err := wire.Merge(fc, oa); err == nil {
		t.Error("Merge of different forecasts = nil error, want one")
	}
}

func TestJSONZeroAllocs(t *testing.T) {
	f := randomForecasts(5, 1, []string{"value"}, 96, 8)[0]
	m := randomForecasts(6, 1, []string{"temp", "humidity"}, 96, 8)[0]
	r := withRhythm(randomForecasts(7, 1, []string{"value"}, 96, 8)[0], 0.4) // its residual_share looks up each frequency's rhythm
	buf := make([]byte, 0, 64<<10)
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"forecast", func() { buf, _ = wire.AppendForecastJSON(buf[:0], &f) }},
		{"forecast multi", func() { buf, _ = wire.AppendForecastJSON(buf[:0], &m) }},
		{"attribution full", func() { buf, _ = wire.AppendAttributionJSON(buf[:0], &f, wire.AttributionsFull) }},
		{"attribution multi", func() { buf, _ = wire.AppendAttributionJSON(buf[:0], &m, wire.AttributionsFull) }},
		{"attribution summary", func() { buf, _ = wire.AppendAttributionJSON(buf[:0], &f, wire.AttributionsSummary) }},
		{"attribution with a rhythm", func() { buf, _ = wire.AppendAttributionJSON(buf[:0], &r, wire.AttributionsSummary) }},
		{"forecast-id", func() { buf = wire.AppendForecastID(buf[:0], f.Series, f.TS, f.ModelVersion) }},
		{"validate", func() { _ = f.Validate() }},
	} {
		tc.fn()
		if got := testing.AllocsPerRun(100, tc.fn); got != 0 {
			t.Errorf("%s: %v allocs per run, want 0", tc.name, got)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestIntervalBoundsAtFloat32Precision: bounds are written at float32
// precision in both layouts, and decode as float64(float32(bound)), bit for
// bit; beyond the float32 range JSON writes null.
func TestIntervalBoundsAtFloat32Precision(t *testing.T) {
	f := exampleSingle()
	f.Intervals = []wire.Interval{{Level: 0.9,
		Lower: []float64{398.123456789012, 1.0 / 3, -7e-9}, Upper: []float64{427.98765432101, 2.0 / 3, 1e39}}}
	b, err := wire.AppendForecastJSON(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"lower":[398.12344,0.33333334,-7e-09],"upper":[427.98764,0.6666667,null]`)) {
		t.Errorf("bounds not at float32 precision: %s", b)
	}
	enc := wire.NewArrowEncoder(nil)
	defer enc.Release()
	ab, err := enc.AppendForecast(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := wire.DecodeForecastJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	fromArrow, err := wire.DecodeForecastArrow(ab, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []wire.Forecast{fromJSON, fromArrow} {
		for i := range 3 {
			for _, side := range []struct{ got, sent float64 }{{got.Intervals[0].Lower[i], f.Intervals[0].Lower[i]}, {got.Intervals[0].Upper[i], f.Intervals[0].Upper[i]}} {
				want := float64(float32(side.sent))
				if math.IsInf(want, 0) && math.IsNaN(side.got) {
					continue // JSON: null
				}
				if math.Float64bits(side.got) != math.Float64bits(want) {
					t.Errorf("bound %v decoded as %v, want float32 precision %v", side.sent, side.got, want)
				}
			}
		}
	}
}

// TestResidualShareMakesTheRest: the attribution JSON's residual_share is
// what the rhythms' and the free frequencies' shares leave of 1, in both
// modes; a rhythm counts by its own share, not its lines'.
func TestResidualShareMakesTheRest(t *testing.T) {
	f := exampleMulti()
	f.Frequencies[0].Share, f.Frequencies[1].Share = 0.5, 0.3 // lines that partly cancel …
	f = withRhythm(f, 0.6)                                    // … into a rhythm of 0.6
	f.Frequencies = append(f.Frequencies, f.Frequencies[1])
	fr := &f.Frequencies[2]
	fr.ID, fr.Cycle, fr.Rhythm, fr.Share = 9, false, 0, 0.15 // a free frequency
	if got := f.ResidualShare(); math.Abs(got-0.25) > 1e-12 {
		t.Fatalf("ResidualShare = %v, want 1 − 0.6 − 0.15 = 0.25", got)
	}
	for _, mode := range []wire.AttributionMode{wire.AttributionsFull, wire.AttributionsSummary} {
		b, err := wire.AppendAttributionJSON(nil, &f, mode)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			ResidualShare *float64 `json:"residual_share"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || doc.ResidualShare == nil || math.Abs(*doc.ResidualShare-0.25) > 1e-12 {
			t.Errorf("%s: residual_share %v (%v) in %s, want 0.25", mode, doc.ResidualShare, err, b)
		}
	}
	f.Frequencies[2].Share = 0.9 // shares beyond 1 leave the residual nothing, not less
	if got := f.ResidualShare(); got != 0 {
		t.Errorf("ResidualShare of over-full shares = %v, want 0", got)
	}
}
