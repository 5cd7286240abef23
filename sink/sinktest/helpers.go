package sinktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/freqlens/freqlens/sink"
)

// Forecast returns a complete random forecast of the series at ts: cadence
// one hour, model version 3, horizon steps of len(fields) channels, and k
// frequencies with distinct ids. The residual is around 400, contributions
// around ±10, and Values is computed as Residual + Σ contributions, so
// Complete holds exactly; shares are each frequency's part of the total
// absolute contribution.
func Forecast(rng *rand.Rand, series string, ts time.Time, fields []string, horizon, k int) sink.Forecast {
	n := horizon * len(fields)
	f := sink.Forecast{
		Series:       series,
		TS:           ts,
		ModelVersion: 3,
		Cadence:      time.Hour,
		Fields:       append([]string(nil), fields...),
		Horizon:      horizon,
		Alpha:        rng.Float64(),
		Residual:     make([]float64, n),
		Values:       make([]float64, n),
		Frequencies:  make([]sink.Contribution, k),
	}
	for i := range f.Residual {
		f.Residual[i] = 400 + 50*rng.NormFloat64()
	}
	copy(f.Values, f.Residual)
	ids := rng.Perm(64)
	var total float64
	for j := range f.Frequencies {
		steps := 168 / float64(j+1) * (1 + 0.01*rng.Float64())
		c := sink.Contribution{
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
	return f
}

// Diff returns "" when got and want are the same forecast bit for bit
// (floats compared with math.Float64bits, times with Equal, nil and empty
// slices alike), and otherwise describes the first differences.
func Diff(got, want sink.Forecast) string {
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
	return strings.Join(d, "; ")
}

// Complete checks that f's attribution is complete: every contribution has
// Horizon×len(Fields) values and Residual + Σ contributions equals Values at
// every step and channel, to 1e-9 relative to the largest term.
func Complete(f sink.Forecast) error {
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

// ReadLines decodes the output of the writer sink: forecast JSON lines, each
// followed by its attribution line unless attributions are off.
func ReadLines(data []byte) ([]sink.Forecast, error) {
	var out []sink.Forecast
	last := -1 // index in out of the forecast awaiting its attribution
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(line, &keys); err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if _, ok := keys["frequencies"]; !ok {
			f, err := sink.DecodeForecastJSON(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
			out = append(out, f)
			last = len(out) - 1
			continue
		}
		a, err := sink.DecodeAttributionJSON(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if last < 0 {
			return nil, fmt.Errorf("line %d: an attribution without its forecast", n+1)
		}
		if out[last], err = sink.Merge(out[last], a); err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		last = -1
	}
	return out, nil
}
