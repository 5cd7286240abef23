// Package wiretest holds test helpers for the wire format: a generator of
// complete random forecasts, a bit-exact comparison, and a check that a
// forecast's attribution adds up. The tests of wire, sink, pipeline and cmd
// use it; it imports wire only.
package wiretest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/freqlens/freqlens/wire"
)

// Forecast returns a complete random forecast of the series at ts: cadence
// one hour, model version 3, horizon steps of len(fields) channels, k
// frequencies with distinct ids, and 80% and 95% intervals. The residual is
// around 400, contributions around ±10, and Values is computed as Residual +
// Σ contributions, so Complete holds exactly; shares are each frequency's
// part of the total absolute contribution. The intervals widen with the
// step (AddIntervals).
func Forecast(rng *rand.Rand, series string, ts time.Time, fields []string, horizon, k int) wire.Forecast {
	n := horizon * len(fields)
	f := wire.Forecast{
		Series:       series,
		TS:           ts,
		ModelVersion: 3,
		Cadence:      time.Hour,
		Fields:       append([]string(nil), fields...),
		Horizon:      horizon,
		Alpha:        rng.Float64(),
		Residual:     make([]float64, n),
		Values:       make([]float64, n),
		Frequencies:  make([]wire.Contribution, k),
	}
	for i := range f.Residual {
		f.Residual[i] = 400 + 50*rng.NormFloat64()
	}
	copy(f.Values, f.Residual)
	ids := rng.Perm(64)
	var total float64
	for j := range f.Frequencies {
		steps := 168 / float64(j+1) * (1 + 0.01*rng.Float64())
		c := wire.Contribution{
			ID:          ids[j],
			PeriodSteps: steps,
			Period:      time.Duration(steps * float64(f.Cadence)),
			Values:      make([]float64, n),
		}
		for i := range c.Values {
			c.Values[i] = 10 * rng.NormFloat64()
			f.Values[i] += c.Values[i]
			c.Share += math.Abs(c.Values[i])
		}
		total += c.Share
		f.Frequencies[j] = c
	}
	for j := range f.Frequencies {
		f.Frequencies[j].Share /= total
	}
	AddIntervals(&f, 0.8, 0.95)
	return f
}

// AddIntervals gives f intervals of these levels (increasing), about
// symmetric around Values with a half-width that grows with the step and the
// level, (1 + h/2)·(1 + 2·level) at step h, and bounds at float32 precision
// as the layouts keep them.
func AddIntervals(f *wire.Forecast, levels ...float64) {
	c := len(f.Fields)
	f.Intervals = make([]wire.Interval, len(levels))
	for k, l := range levels {
		iv := wire.Interval{Level: l, Lower: make([]float64, len(f.Values)), Upper: make([]float64, len(f.Values))}
		for i, v := range f.Values {
			w := (1 + float64(i/c)/2) * (1 + 2*l)
			iv.Lower[i], iv.Upper[i] = float64(float32(v-w)), float64(float32(v+w))
		}
		f.Intervals[k] = iv
	}
}

// Diff returns "" when got and want are the same forecast bit for bit
// (floats compared with math.Float64bits, times with Equal, nil and empty
// slices alike), and otherwise describes the first differences.
func Diff(got, want wire.Forecast) string {
	var d []string
	add := func(format string, args ...any) {
		if len(d) < 5 {
			d = append(d, fmt.Sprintf(format, args...))
		}
	}
	if got.Series != want.Series {
		add("Series = %q, want %q", got.Series, want.Series)
	}
	if !got.TS.Equal(want.TS) {
		add("TS = %s, want %s", got.TS, want.TS)
	}
	if got.ModelVersion != want.ModelVersion {
		add("ModelVersion = %d, want %d", got.ModelVersion, want.ModelVersion)
	}
	if got.Cadence != want.Cadence {
		add("Cadence = %s, want %s", got.Cadence, want.Cadence)
	}
	if fmt.Sprint(got.Fields) != fmt.Sprint(want.Fields) || len(got.Fields) != len(want.Fields) {
		add("Fields = %q, want %q", got.Fields, want.Fields)
	}
	if got.Horizon != want.Horizon {
		add("Horizon = %d, want %d", got.Horizon, want.Horizon)
	}
	floats := func(name string, g, w []float64) {
		if len(g) != len(w) {
			add("len(%s) = %d, want %d", name, len(g), len(w))
			return
		}
		for i := range w {
			if math.Float64bits(g[i]) != math.Float64bits(w[i]) {
				add("%s[%d] = %v, want %v", name, i, g[i], w[i])
				return
			}
		}
	}
	floats("Values", got.Values, want.Values)
	floats("Alpha", []float64{got.Alpha}, []float64{want.Alpha})
	floats("Residual", got.Residual, want.Residual)
	if got.ResidualAllChannels != want.ResidualAllChannels {
		add("ResidualAllChannels = %t, want %t", got.ResidualAllChannels, want.ResidualAllChannels)
	}
	if len(got.Frequencies) != len(want.Frequencies) {
		add("len(Frequencies) = %d, want %d", len(got.Frequencies), len(want.Frequencies))
	} else {
		for k, w := range want.Frequencies {
			g := got.Frequencies[k]
			if g.ID != w.ID || g.Period != w.Period {
				add("Frequencies[%d] = id %d period %s, want id %d period %s", k, g.ID, g.Period, w.ID, w.Period)
			}
			floats(fmt.Sprintf("Frequencies[%d].PeriodSteps", k), []float64{g.PeriodSteps}, []float64{w.PeriodSteps})
			floats(fmt.Sprintf("Frequencies[%d].Share", k), []float64{g.Share}, []float64{w.Share})
			floats(fmt.Sprintf("Frequencies[%d].Values", k), g.Values, w.Values)
		}
	}
	if len(got.Intervals) != len(want.Intervals) {
		add("len(Intervals) = %d, want %d", len(got.Intervals), len(want.Intervals))
	} else {
		for k, w := range want.Intervals {
			g := got.Intervals[k]
			floats(fmt.Sprintf("Intervals[%d].Level", k), []float64{g.Level}, []float64{w.Level})
			floats(fmt.Sprintf("Intervals[%d].Lower", k), g.Lower, w.Lower)
			floats(fmt.Sprintf("Intervals[%d].Upper", k), g.Upper, w.Upper)
		}
	}
	return strings.Join(d, "; ")
}

// Complete checks that f's attribution is complete: every contribution has
// Horizon×len(Fields) values and Residual + Σ contributions equals Values at
// every step and channel, to 1e-9 relative to the largest term.
func Complete(f wire.Forecast) error {
	n := f.Horizon * len(f.Fields)
	if len(f.Values) != n || len(f.Residual) != n {
		return fmt.Errorf("forecast %q@%s: len(Values) = %d, len(Residual) = %d, want %d",
			f.Series, f.TS.Format(time.RFC3339), len(f.Values), len(f.Residual), n)
	}
	for k, c := range f.Frequencies {
		if len(c.Values) != n {
			return fmt.Errorf("forecast %q@%s: frequency %d (id %d) has %d values, want %d",
				f.Series, f.TS.Format(time.RFC3339), k, c.ID, len(c.Values), n)
		}
	}
	for i := 0; i < n; i++ {
		sum, scale := f.Residual[i], math.Abs(f.Residual[i])
		for _, c := range f.Frequencies {
			sum += c.Values[i]
			scale = max(scale, math.Abs(c.Values[i]))
		}
		if math.Abs(sum-f.Values[i]) > 1e-9*max(scale, math.Abs(f.Values[i]), 1) {
			return fmt.Errorf("forecast %q@%s, step %d field %q: residual + Σ contributions = %v, forecast %v",
				f.Series, f.TS.Format(time.RFC3339), i/len(f.Fields), f.Fields[i%len(f.Fields)], sum, f.Values[i])
		}
	}
	return nil
}

// Origin is the ts of Example and ExampleMulti, and of the first forecast of
// Forecasts.
var Origin = time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)

// Example is the single-field example of the wire documentation: shares
// 24/32 and 8/32 of the absolute attribution.
func Example() wire.Forecast {
	return wire.Forecast{
		Series:       "s-17",
		TS:           Origin,
		ModelVersion: 3,
		Cadence:      time.Hour,
		Fields:       []string{"value"},
		Horizon:      3,
		Values:       []float64{412.5, 398.25, 368.75},
		Alpha:        0.625,
		Residual:     []float64{400, 390, 380},
		Frequencies: []wire.Contribution{
			{ID: 7, PeriodSteps: 24, Period: 24 * time.Hour, Share: 0.75, Values: []float64{8.5, 6.25, -9.25}},
			{ID: 2, PeriodSteps: 12, Period: 12 * time.Hour, Share: 0.25, Values: []float64{4, 2, -2}},
		},
	}
}

// ExampleIntervals is Example with the 80% and 95% intervals of the wire
// documentation.
func ExampleIntervals() wire.Forecast {
	f := Example()
	f.Intervals = []wire.Interval{
		{Level: 0.8, Lower: []float64{398, 380.5, 345}, Upper: []float64{427, 416, 392.5}},
		{Level: 0.95, Lower: []float64{385.5, 365, 325.25}, Upper: []float64{440, 431.5, 412.25}},
	}
	return f
}

// ExampleMultiIntervals is ExampleMulti with an 80% interval.
func ExampleMultiIntervals() wire.Forecast {
	f := ExampleMulti()
	f.Intervals = []wire.Interval{
		{Level: 0.8, Lower: []float64{2.5, 77, 1.25, 73.5}, Upper: []float64{4.5, 83.5, 4.25, 82.5}},
	}
	return f
}

// ExampleMulti is the multichannel example of the wire documentation.
func ExampleMulti() wire.Forecast {
	return wire.Forecast{
		Series:       "s-17",
		TS:           Origin,
		ModelVersion: 3,
		Cadence:      time.Hour,
		Fields:       []string{"temp", "humidity"},
		Horizon:      2,
		Values:       []float64{3.5, 80.25, 2.75, 78},
		Alpha:        0.625,
		Residual:     []float64{3, 75, 2.5, 78},
		Frequencies: []wire.Contribution{
			{ID: 7, PeriodSteps: 24, Period: 24 * time.Hour, Share: 0.75, Values: []float64{0.5, 5, -0.25, 1.75}},
			{ID: 2, PeriodSteps: 12, Period: 12 * time.Hour, Share: 0.25, Values: []float64{0, 0.25, 0.5, -1.75}},
		},
	}
}

// Forecasts returns n complete forecasts (see Forecast), an hour apart from
// Origin, of horizon h and k frequencies over fields; with several fields,
// every third (the second, fifth, …) has ResidualAllChannels set.
func Forecasts(seed uint64, n int, fields []string, h, k int) []wire.Forecast {
	rng := rand.New(rand.NewPCG(seed, 1))
	fs := make([]wire.Forecast, n)
	for i := range fs {
		fs[i] = Forecast(rng, "s-"+string(rune('a'+i%26)), Origin.Add(time.Duration(i)*time.Hour), fields, h, k)
		// A model with several fields may mix them in its residual: every
		// third forecast says so, so encoders switch between the two.
		fs[i].ResidualAllChannels = len(fields) > 1 && i%3 == 1
	}
	return fs
}

// ForecastPart keeps what the forecast layouts carry (the intervals too).
func ForecastPart(f wire.Forecast) wire.Forecast {
	f.Alpha, f.Residual, f.Frequencies, f.ResidualAllChannels = 0, nil, nil, false
	return f
}

// AttributionPart keeps what the attribution layouts carry in mode; the
// JSON layout has no cadence (cadence false drops it).
func AttributionPart(f wire.Forecast, mode wire.AttributionMode, cadence bool) wire.Forecast {
	f.Values, f.Intervals = nil, nil
	if !cadence {
		f.Cadence = 0
	}
	if mode == wire.AttributionsSummary {
		f.Horizon, f.Fields, f.Residual = 0, nil, nil
		fr := make([]wire.Contribution, len(f.Frequencies))
		for k, c := range f.Frequencies {
			c.Values = nil
			fr[k] = c
		}
		f.Frequencies = fr
	}
	return f
}
