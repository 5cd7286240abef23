package dataset

import (
	"math"
	"math/cmplx"
	"strings"
	"testing"
	"time"
)

// dominantPeriod returns n/k for the bin k in [1, n/2] with the largest
// periodogram power of x (the mean removed, NaN readings skipped).
func dominantPeriod(x []float64) float64 {
	n := len(x)
	var mean float64
	var cnt int
	for _, v := range x {
		if !math.IsNaN(v) {
			mean += v
			cnt++
		}
	}
	mean /= float64(cnt)
	best, bestK := -1.0, 0
	for k := 1; k <= n/2; k++ {
		var s complex128
		for t, v := range x {
			if !math.IsNaN(v) {
				s += complex(v-mean, 0) * cmplx.Rect(1, -2*math.Pi*float64(k*t)/float64(n))
			}
		}
		if p := real(s)*real(s) + imag(s)*imag(s); p > best {
			best, bestK = p, k
		}
	}
	return float64(n) / float64(bestK)
}

// column returns channel c of a frame.
func column(f *Frame, c int) []float64 {
	out := make([]float64, f.Rows())
	for r := range out {
		out[r] = f.Values[r*f.Channels()+c]
	}
	return out
}

func TestSyntheticDeterministic(t *testing.T) {
	cfg := Traffic(3, 500, 15*time.Minute, 42)
	a, b := mustSynthetic(t, cfg), mustSynthetic(t, cfg)
	if !bitsEqual(a.Values, b.Values) {
		t.Error("two runs with the same config and seed differ, want identical values (NaN positions included)")
	}
	for r := range a.Times {
		if !a.Times[r].Equal(b.Times[r]) {
			t.Fatalf("Times[%d] = %v and %v, want equal", r, a.Times[r], b.Times[r])
		}
	}
	cfg.Seed = 43
	c := mustSynthetic(t, cfg)
	var same int
	for i := range a.Values {
		if math.Float64bits(a.Values[i]) == math.Float64bits(c.Values[i]) {
			same++
		}
	}
	if same > len(a.Values)/100 {
		t.Errorf("seeds 42 and 43 share %d of %d values, want almost none", same, len(a.Values))
	}
}

func TestSyntheticExtendsWithStepsAndSeries(t *testing.T) {
	small := mustSynthetic(t, Traffic(2, 300, 0, 7))
	big := mustSynthetic(t, Traffic(3, 600, 0, 7))
	for r := range small.Rows() {
		for c := range small.Channels() {
			if got, want := big.Values[r*3+c], small.Values[r*2+c]; math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("row %d series %d: %v with more steps and series, want %v as with fewer", r, c, got, want)
			}
		}
	}
}

func TestSyntheticMissingRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate float64
	}{
		{name: "none", rate: 0},
		{name: "one percent", rate: 0.01},
		{name: "a fifth", rate: 0.2},
		{name: "most", rate: 0.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustSynthetic(t, SyntheticConfig{Series: 20, Steps: 10000, Level: 1, MissingRate: tc.rate, Seed: 5})
			var missing int
			for _, v := range f.Values {
				if math.IsNaN(v) {
					missing++
				}
			}
			n := float64(len(f.Values))
			got := float64(missing) / n
			tol := 5*math.Sqrt(tc.rate*(1-tc.rate)/n) + 1e-12 // five binomial standard deviations
			if math.Abs(got-tc.rate) > tol {
				t.Errorf("missing fraction = %.5f, want %.5f ± %.5f", got, tc.rate, tol)
			}
		})
	}
}

func TestSyntheticPeriodPresent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        SyntheticConfig
		wantPeriod float64
	}{
		{name: "24 steps under noise and missing readings",
			cfg:        SyntheticConfig{Steps: 1344, Level: 5, Cycles: []Cycle{{PeriodSteps: 24, Amplitude: 1}}, NoiseStd: 1, MissingRate: 0.05, Seed: 1},
			wantPeriod: 24},
		{name: "28 steps beside a weaker 12",
			cfg:        SyntheticConfig{Steps: 1344, Cycles: []Cycle{{PeriodSteps: 28, Amplitude: 2}, {PeriodSteps: 12, Amplitude: 1}}, NoiseStd: 0.5, Seed: 2},
			wantPeriod: 28},
		{name: "a day in time at a 15-minute cadence is 96 steps",
			cfg:        SyntheticConfig{Steps: 96 * 14, Cadence: 15 * time.Minute, Cycles: []Cycle{{Period: 24 * time.Hour, Amplitude: 3}}, NoiseStd: 1, Seed: 3},
			wantPeriod: 96},
		{name: "traffic preset is daily",
			cfg:        Traffic(1, 24*7*8, time.Hour, 4),
			wantPeriod: 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustSynthetic(t, tc.cfg)
			if got := dominantPeriod(column(f, 0)); got != tc.wantPeriod {
				t.Errorf("dominant period = %v steps, want %v", got, tc.wantPeriod)
			}
		})
	}
}

func TestSyntheticPeriodDrift(t *testing.T) {
	const switchAt = 672 // 24·28, so both periods fall on exact bins of each half
	f := mustSynthetic(t, SyntheticConfig{
		Steps: 2 * switchAt,
		Level: 10,
		Cycles: []Cycle{
			{PeriodSteps: 24, Amplitude: 2, UntilStep: switchAt},
			{PeriodSteps: 28, Amplitude: 2, FromStep: switchAt},
		},
		NoiseStd: 0.5,
		Seed:     11,
	})
	x := column(f, 0)
	for _, tc := range []struct {
		name string
		part []float64
		want float64
	}{
		{name: "before the switch", part: x[:switchAt], want: 24},
		{name: "after the switch", part: x[switchAt:], want: 28},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dominantPeriod(tc.part); got != tc.want {
				t.Errorf("dominant period = %v steps, want %v", got, tc.want)
			}
		})
	}
}

func TestSyntheticDefaults(t *testing.T) {
	f := mustSynthetic(t, SyntheticConfig{Steps: 3, Level: 2})
	if f.Name != "synthetic" || f.SHA256 != "" {
		t.Errorf("Name, SHA256 = %q, %q; want %q, empty", f.Name, f.SHA256, "synthetic")
	}
	if got := f.Columns; len(got) != 1 || got[0] != "s-0" {
		t.Errorf("Columns = %q, want [s-0]", got)
	}
	if f.Cadence != time.Hour {
		t.Errorf("Cadence = %v, want 1h", f.Cadence)
	}
	wantStart := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	if !f.Times[0].Equal(wantStart) || f.Times[0].Weekday() != time.Monday || !f.Times[2].Equal(wantStart.Add(2*time.Hour)) {
		t.Errorf("Times = %v, want hourly from %v, a Monday", f.Times, wantStart)
	}
	if want := []float64{2, 2, 2}; !bitsEqual(f.Values, want) {
		t.Errorf("Values = %v, want %v with no cycles, trend or noise", f.Values, want)
	}
	g := mustSynthetic(t, SyntheticConfig{Series: 12, Steps: 2})
	if got := g.Columns[11]; got != "s-11" {
		t.Errorf("Columns[11] = %q, want %q", got, "s-11")
	}
}

func TestSyntheticShape(t *testing.T) {
	start := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC) // a Friday
	peak := func(hour float64, weekdays bool) SyntheticConfig {
		return SyntheticConfig{Steps: 72, Cadence: 30 * time.Minute, Start: start,
			Peaks: []Peak{{Hour: hour, Width: time.Hour, Amplitude: 10, WeekdaysOnly: weekdays}}}
	}
	for _, tc := range []struct {
		name string
		cfg  SyntheticConfig
		step int
		want float64
	}{
		{name: "trend adds per step", cfg: SyntheticConfig{Steps: 10, Level: 5, Trend: 0.5}, step: 7, want: 8.5},
		{name: "cycle phase at step 0", cfg: SyntheticConfig{Steps: 10, Cycles: []Cycle{{PeriodSteps: 8, Amplitude: 3, Phase: math.Pi / 2}}}, step: 0, want: 3},
		{name: "cycle quarter period", cfg: SyntheticConfig{Steps: 10, Cycles: []Cycle{{PeriodSteps: 8, Amplitude: 3}}}, step: 2, want: 3},
		{name: "cycle inactive before FromStep", cfg: SyntheticConfig{Steps: 10, Cycles: []Cycle{{PeriodSteps: 8, Amplitude: 3, FromStep: 5}}}, step: 2, want: 0},
		{name: "cycle keeps global phase after FromStep", cfg: SyntheticConfig{Steps: 20, Cycles: []Cycle{{PeriodSteps: 8, Amplitude: 3, FromStep: 5}}}, step: 10, want: 3},
		{name: "cycle inactive from UntilStep", cfg: SyntheticConfig{Steps: 20, Cycles: []Cycle{{PeriodSteps: 8, Amplitude: 3, UntilStep: 10}}}, step: 10, want: 0},
		{name: "peak centre on a weekday", cfg: peak(8, true), step: 16, want: 10},
		{name: "peak one width off centre", cfg: peak(8, true), step: 18, want: 10 * math.Exp(-0.5)},
		{name: "weekday peak absent on Saturday", cfg: peak(8, true), step: 48 + 16, want: 0},
		{name: "all-week peak present on Saturday", cfg: peak(8, false), step: 48 + 16, want: 10},
		{name: "peak wraps around midnight", cfg: peak(23.5, false), step: 1, want: 10 * math.Exp(-0.5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustSynthetic(t, tc.cfg)
			if got := f.Values[tc.step]; math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("value at step %d (%v) = %v, want %v", tc.step, f.Times[tc.step], got, tc.want)
			}
		})
	}
}

func TestSyntheticSeriesJitter(t *testing.T) {
	for _, tc := range []struct {
		name      string
		jitter    float64
		wantEqual bool
	}{
		{name: "no jitter, no noise: identical series", jitter: 0, wantEqual: true},
		{name: "jitter makes series differ", jitter: 0.3, wantEqual: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Traffic(3, 200, 0, 1)
			cfg.NoiseStd, cfg.MissingRate, cfg.SeriesJitter = 0, 0, tc.jitter
			f := mustSynthetic(t, cfg)
			a, b := column(f, 0), column(f, 2)
			if got := bitsEqual(a, b); got != tc.wantEqual {
				t.Errorf("series 0 and 2 equal = %v, want %v", got, tc.wantEqual)
			}
		})
	}
}

func TestTrafficPreset(t *testing.T) {
	f := mustSynthetic(t, Traffic(20, 24*7*6, 0, 8))
	var rush, night, weekday, weekend float64
	var nRush, nNight, nWeekday, nWeekend int
	for r, ts := range f.Times {
		for _, v := range f.Row(r) {
			if math.IsNaN(v) {
				continue
			}
			if v <= 0 {
				t.Fatalf("row %d (%v): value %v, want positive counts", r, ts, v)
			}
			wd := ts.Weekday() != time.Saturday && ts.Weekday() != time.Sunday
			if wd {
				weekday += v
				nWeekday++
			} else {
				weekend += v
				nWeekend++
			}
			switch h := ts.Hour(); {
			case wd && h == 8:
				rush += v
				nRush++
			case h == 3:
				night += v
				nNight++
			}
		}
	}
	if rush/float64(nRush) < 2*night/float64(nNight) {
		t.Errorf("mean at 08:00 on weekdays = %.1f, at 03:00 = %.1f; want rush hour more than twice the night",
			rush/float64(nRush), night/float64(nNight))
	}
	if weekend/float64(nWeekend) >= weekday/float64(nWeekday) {
		t.Errorf("weekend mean %.1f ≥ weekday mean %.1f, want quieter weekends",
			weekend/float64(nWeekend), weekday/float64(nWeekday))
	}
}

func TestSyntheticConfigErrors(t *testing.T) {
	valid := func(edit func(*SyntheticConfig)) SyntheticConfig {
		cfg := SyntheticConfig{Steps: 10}
		edit(&cfg)
		return cfg
	}
	for _, tc := range []struct {
		name string
		cfg  SyntheticConfig
		want string
	}{
		{name: "steps missing", cfg: SyntheticConfig{},
			want: "synthetic config: Steps = 0; set it to the number of rows to generate (at least 1)"},
		{name: "negative series", cfg: valid(func(c *SyntheticConfig) { c.Series = -2 }),
			want: "synthetic config: Series = -2 is negative; set it to the number of series, or 0 for 1"},
		{name: "too many values", cfg: valid(func(c *SyntheticConfig) { c.Series, c.Steps = 1<<20, 1<<10 }),
			want: "exceeds the limit of 268435456 values; generate fewer steps or series"},
		{name: "negative cadence", cfg: valid(func(c *SyntheticConfig) { c.Cadence = -time.Second }),
			want: "synthetic config: Cadence = -1s is negative; use a positive step such as 1h, or 0 for 1h"},
		{name: "steps overflow the duration", cfg: valid(func(c *SyntheticConfig) { c.Steps, c.Cadence = 1<<27, 1<<40 }),
			want: "overflows a time.Duration"},
		{name: "missing rate of 1", cfg: valid(func(c *SyntheticConfig) { c.MissingRate = 1 }),
			want: "synthetic config: MissingRate = 1 is outside [0, 1); use a probability such as 0.01"},
		{name: "NaN missing rate", cfg: valid(func(c *SyntheticConfig) { c.MissingRate = math.NaN() }),
			want: "MissingRate = NaN is outside [0, 1)"},
		{name: "negative noise", cfg: valid(func(c *SyntheticConfig) { c.NoiseStd = -1 }),
			want: "synthetic config: NoiseStd = -1; use a finite standard deviation ≥ 0"},
		{name: "jitter of 1", cfg: valid(func(c *SyntheticConfig) { c.SeriesJitter = 1 }),
			want: "SeriesJitter = 1 is outside [0, 1)"},
		{name: "infinite level", cfg: valid(func(c *SyntheticConfig) { c.Level = math.Inf(1) }),
			want: "Level = +Inf and Trend = 0 must be finite"},
		{name: "cycle with both periods", cfg: valid(func(c *SyntheticConfig) { c.Cycles = []Cycle{{Period: time.Hour, PeriodSteps: 24}} }),
			want: "synthetic config: Cycles[0]: Period = 1h0m0s, PeriodSteps = 24; set exactly one of them"},
		{name: "cycle with no period", cfg: valid(func(c *SyntheticConfig) { c.Cycles = []Cycle{{PeriodSteps: 24}, {Amplitude: 1}} }),
			want: "synthetic config: Cycles[1]: Period = 0s, PeriodSteps = 0; set exactly one of them"},
		{name: "cycle with a negative period", cfg: valid(func(c *SyntheticConfig) { c.Cycles = []Cycle{{PeriodSteps: -24}} }),
			want: "Cycles[0]: Period = 0s, PeriodSteps = -24; periods must be positive and finite"},
		{name: "cycle ending before it starts", cfg: valid(func(c *SyntheticConfig) { c.Cycles = []Cycle{{PeriodSteps: 24, FromStep: 5, UntilStep: 5}} }),
			want: "Cycles[0]: UntilStep = 5 is not after FromStep = 5; raise UntilStep, or use 0 for a cycle that never ends"},
		{name: "peak hour past midnight", cfg: valid(func(c *SyntheticConfig) { c.Peaks = []Peak{{Hour: 24, Width: time.Hour}} }),
			want: "Peaks[0]: Hour = 24 is outside [0, 24); use the time of day in hours, such as 8.5 for 08:30"},
		{name: "peak without width", cfg: valid(func(c *SyntheticConfig) { c.Peaks = []Peak{{Hour: 8}} }),
			want: "Peaks[0]: Width = 0s; set a positive standard deviation such as 1h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Synthetic(tc.cfg)
			if err == nil {
				t.Fatalf("Synthetic = %d rows, want an error", f.Rows())
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
