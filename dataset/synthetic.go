package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// Cycle is a sinusoid in a synthetic series. At step t (counted from the
// first row, not from FromStep, so a cycle keeps its phase when it starts
// late) it contributes
//
//	Amplitude · sin(2π·t/P + Phase)
//
// where P is the period in steps: PeriodSteps, or Period divided by the
// generator's cadence. Exactly one of Period and PeriodSteps must be set.
type Cycle struct {
	// Period is the period in time, converted to steps with
	// SyntheticConfig.Cadence. Leave it 0 when PeriodSteps is set.
	Period time.Duration
	// PeriodSteps is the period in steps, which need not be whole. Leave it
	// 0 when Period is set.
	PeriodSteps float64
	// Amplitude is the peak deviation from the level, in the units of the
	// readings.
	Amplitude float64
	// Phase is the phase at step 0, in radians.
	Phase float64
	// FromStep is the first step at which the cycle is active.
	FromStep int
	// UntilStep is one past the last step at which the cycle is active; 0
	// means the cycle never ends. Two cycles, one with UntilStep k and one
	// with FromStep k, model a period that drifts at step k.
	UntilStep int
}

// Peak is a daily bump such as a rush hour: a Gaussian in the time of day,
//
//	Amplitude · exp(−d² / (2·Width²))
//
// where d is the distance, wrapping around midnight, between the row's time
// of day and Hour. Times of day are taken in the location of
// SyntheticConfig.Start.
type Peak struct {
	// Hour is the time of day of the centre in hours, in [0, 24); 8.5 means
	// 08:30.
	Hour float64
	// Width is the standard deviation of the bump in time. Required.
	Width time.Duration
	// Amplitude is the height of the bump at its centre.
	Amplitude float64
	// WeekdaysOnly limits the bump to Monday to Friday.
	WeekdaysOnly bool
}

// SyntheticConfig describes a synthetic sensor data set for Synthetic. The
// value of series s at step t is
//
//	level_s + Trend·t + scale_s·(Σ cycles + Σ peaks) + noise
//
// where level_s, scale_s and the cycle phases vary per series by
// SeriesJitter, and noise is Gaussian with standard deviation NoiseStd.
type SyntheticConfig struct {
	// Series is the number of series, one channel each.
	//
	// Default: 1
	Series int
	// Steps is the number of rows. Required.
	Steps int
	// Cadence is the time between rows.
	//
	// Default: 1h
	Cadence time.Duration
	// Start is the time of the first row.
	//
	// Default: 2026-01-05 00:00 UTC, a Monday
	Start time.Time
	// Level is the mean level of every series.
	Level float64
	// Trend is added once per step: row t carries Trend·t.
	Trend float64
	// Cycles are the sinusoids added to every series.
	Cycles []Cycle
	// Peaks are the daily bumps added to every series.
	Peaks []Peak
	// NoiseStd is the standard deviation of the Gaussian noise added to
	// every reading.
	NoiseStd float64
	// NoiseRelative adds noise in proportion to the reading: its standard
	// deviation is NoiseStd + NoiseRelative·|noise-free value|, as counts
	// (vehicles, trips) vary more when there are more of them.
	NoiseRelative float64
	// Shocks are the events real feeds have (holidays, storms, outages,
	// stuck sensors, spikes, level shifts), applied in order.
	Shocks []Shock
	// MissingRate is the probability, in [0, 1), that a reading is missing
	// and set to NaN.
	MissingRate float64
	// SeriesJitter, in [0, 1), makes series differ: each series draws a
	// level Level·(1+j·u), a scale 1+j·u for its cycles and peaks, and a
	// phase shift j·π·u for each cycle, with u uniform in [−1, 1) and j the
	// jitter. 0 makes every series the same shape (the noise still differs).
	SeriesJitter float64
	// Seed seeds the generator. The same configuration and seed always
	// give the same Frame.
	Seed uint64
}

// maxSyntheticValues bounds Series×Steps (2 GiB of float64).
const maxSyntheticValues = 1 << 28

// Synthetic generates the data set cfg describes, after filling in its
// defaults. The Frame is named "synthetic", its columns are "s-0", "s-1", …,
// its cadence is cfg.Cadence, and its missing readings are NaN (see
// FillMissing).
//
// The output is deterministic: it depends only on cfg, and each series
// draws from its own PCG stream seeded by Seed and the series index, so a
// config with more Steps or more Series extends the same data rather than
// replacing it. Synthetic returns an error naming the field to fix when cfg
// is invalid.
func Synthetic(cfg SyntheticConfig) (*Frame, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	series, steps := cfg.Series, cfg.Steps

	// Per-step parts shared by every series: times and peaks.
	times := make([]time.Time, steps)
	peaks := make([]float64, steps)
	for t := range steps {
		ts := cfg.Start.Add(time.Duration(t) * cfg.Cadence)
		times[t] = ts
		if len(cfg.Peaks) == 0 {
			continue
		}
		h, m, s := ts.Clock()
		hour := float64(h) + float64(m)/60 + (float64(s)+float64(ts.Nanosecond())/1e9)/3600
		wd := ts.Weekday()
		weekday := wd != time.Saturday && wd != time.Sunday
		for _, p := range cfg.Peaks {
			if p.WeekdaysOnly && !weekday {
				continue
			}
			d := math.Mod(hour-p.Hour+36, 24) - 12 // circular distance in [−12, 12)
			w := p.Width.Hours()
			peaks[t] += p.Amplitude * math.Exp(-d*d/(2*w*w))
		}
	}
	periods := make([]float64, len(cfg.Cycles))
	for k, c := range cfg.Cycles {
		periods[k] = c.PeriodSteps
		if c.Period != 0 {
			periods[k] = float64(c.Period) / float64(cfg.Cadence)
		}
	}

	// like is, per step, the step whose calendar it follows: itself, or
	// for a holiday's weekday the Sunday before (the Sunday after when
	// there is none before).
	like := make([]int, steps)
	for t := range like {
		like[t] = t
	}
	for _, sh := range cfg.Shocks {
		if sh.Kind == ShockHoliday {
			sh.holiday(&cfg, times, like)
		}
	}

	cols := make([]string, series)
	values := make([]float64, series*steps)
	phase := make([]float64, len(cfg.Cycles))
	j := cfg.SeriesJitter
	for s := range series {
		cols[s] = "s-" + strconv.Itoa(s)
		rng := rand.New(rand.NewPCG(cfg.Seed, splitmix64(uint64(s))))
		// Always draw the jitter, so that SeriesJitter does not shift the noise.
		level := cfg.Level * (1 + j*uniform(rng))
		scale := 1 + j*uniform(rng)
		for k, c := range cfg.Cycles {
			phase[k] = c.Phase + j*math.Pi*uniform(rng)
		}
		for t := range steps {
			tc := like[t]
			v := level + cfg.Trend*float64(t) + scale*peaks[tc]
			for k, c := range cfg.Cycles {
				if t < c.FromStep || (c.UntilStep != 0 && t >= c.UntilStep) {
					continue
				}
				v += scale * c.Amplitude * math.Sin(2*math.Pi*float64(tc)/periods[k]+phase[k])
			}
			v = applyShocks(&cfg, s, t, v, level)
			// Always draw both, so that NoiseStd and MissingRate do not shift each other.
			v += (cfg.NoiseStd + cfg.NoiseRelative*math.Abs(v)) * rng.NormFloat64()
			if rng.Float64() < cfg.MissingRate {
				v = math.NaN()
			}
			values[t*series+s] = v
		}
		stickAndDrop(&cfg, s, values, series)
	}
	return &Frame{
		Name:    "synthetic",
		Columns: cols,
		Times:   times,
		Values:  values,
		Cadence: cfg.Cadence,
	}, nil
}

// Traffic returns a SyntheticConfig that resembles road traffic counts from
// the given number of sensors: a level of about 220 vehicles per step, a
// daily cycle lowest around 04:00, a weekly cycle lower at weekends,
// weekday rush-hour peaks at 08:00 and 17:30, Gaussian noise, 1% missing
// readings and 20% jitter between sensors. The values stay positive: the
// lowest noise-free reading is more than 9 noise standard deviations above
// zero. A zero cadence means the default of 1h; the daily and weekly cycles
// follow the cadence, since they are given in time.
func Traffic(series, steps int, cadence time.Duration, seed uint64) SyntheticConfig {
	return SyntheticConfig{
		Series:  series,
		Steps:   steps,
		Cadence: cadence,
		Level:   220,
		Cycles: []Cycle{
			// sin(2π·4/24 + φ) = −1 puts the daily minimum at 04:00.
			{Period: 24 * time.Hour, Amplitude: 60, Phase: -5 * math.Pi / 6},
			// Peaks mid-week (Thursday 00:00), lowest at the weekend.
			{Period: 7 * 24 * time.Hour, Amplitude: 25, Phase: -math.Pi / 2},
		},
		Peaks: []Peak{
			{Hour: 8, Width: time.Hour, Amplitude: 150, WeekdaysOnly: true},
			{Hour: 17.5, Width: 90 * time.Minute, Amplitude: 120, WeekdaysOnly: true},
		},
		NoiseStd:     8,
		MissingRate:  0.01,
		SeriesJitter: 0.2,
		Seed:         seed,
	}
}

// fill sets the defaults of cfg and validates it.
func (cfg *SyntheticConfig) fill() error {
	if cfg.Series == 0 {
		cfg.Series = 1
	}
	if cfg.Cadence == 0 {
		cfg.Cadence = time.Hour
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)
	}
	switch {
	case cfg.Series < 0:
		return fmt.Errorf("synthetic config: Series = %d is negative; set it to the number of series, or 0 for 1", cfg.Series)
	case cfg.Steps <= 0:
		return fmt.Errorf("synthetic config: Steps = %d; set it to the number of rows to generate (at least 1)", cfg.Steps)
	case cfg.Series > maxSyntheticValues/cfg.Steps:
		return fmt.Errorf("synthetic config: Series×Steps = %d×%d exceeds the limit of %d values; generate fewer steps or series",
			cfg.Series, cfg.Steps, maxSyntheticValues)
	case cfg.Cadence < 0:
		return fmt.Errorf("synthetic config: Cadence = %v is negative; use a positive step such as 1h, or 0 for 1h", cfg.Cadence)
	case int64(cfg.Steps) > math.MaxInt64/int64(cfg.Cadence):
		return fmt.Errorf("synthetic config: Steps×Cadence = %d×%v overflows a time.Duration; use fewer steps or a shorter cadence",
			cfg.Steps, cfg.Cadence)
	case cfg.NoiseStd < 0 || !finite(cfg.NoiseStd):
		return fmt.Errorf("synthetic config: NoiseStd = %v; use a finite standard deviation ≥ 0", cfg.NoiseStd)
	case !(cfg.MissingRate >= 0 && cfg.MissingRate < 1):
		return fmt.Errorf("synthetic config: MissingRate = %v is outside [0, 1); use a probability such as 0.01", cfg.MissingRate)
	case !(cfg.SeriesJitter >= 0 && cfg.SeriesJitter < 1):
		return fmt.Errorf("synthetic config: SeriesJitter = %v is outside [0, 1); use a relative variation such as 0.2", cfg.SeriesJitter)
	case !finite(cfg.Level) || !finite(cfg.Trend):
		return fmt.Errorf("synthetic config: Level = %v and Trend = %v must be finite", cfg.Level, cfg.Trend)
	case cfg.NoiseRelative < 0 || !finite(cfg.NoiseRelative):
		return fmt.Errorf("synthetic config: NoiseRelative = %v; use a finite fraction ≥ 0, such as 0.05", cfg.NoiseRelative)
	}
	for k, sh := range cfg.Shocks {
		if err := sh.check(cfg.Series); err != nil {
			return fmt.Errorf("synthetic config: Shocks[%d]: %w", k, err)
		}
	}
	for k, c := range cfg.Cycles {
		switch {
		case c.Period < 0 || c.PeriodSteps < 0 || math.IsNaN(c.PeriodSteps) || math.IsInf(c.PeriodSteps, 0):
			return fmt.Errorf("synthetic config: Cycles[%d]: Period = %v, PeriodSteps = %v; periods must be positive and finite",
				k, c.Period, c.PeriodSteps)
		case (c.Period == 0) == (c.PeriodSteps == 0):
			return fmt.Errorf("synthetic config: Cycles[%d]: Period = %v, PeriodSteps = %v; set exactly one of them",
				k, c.Period, c.PeriodSteps)
		case !finite(c.Amplitude) || !finite(c.Phase):
			return fmt.Errorf("synthetic config: Cycles[%d]: Amplitude = %v and Phase = %v must be finite", k, c.Amplitude, c.Phase)
		case c.FromStep < 0 || c.UntilStep < 0:
			return fmt.Errorf("synthetic config: Cycles[%d]: FromStep = %d, UntilStep = %d; steps cannot be negative",
				k, c.FromStep, c.UntilStep)
		case c.UntilStep != 0 && c.UntilStep <= c.FromStep:
			return fmt.Errorf("synthetic config: Cycles[%d]: UntilStep = %d is not after FromStep = %d; "+
				"raise UntilStep, or use 0 for a cycle that never ends", k, c.UntilStep, c.FromStep)
		}
	}
	for k, p := range cfg.Peaks {
		switch {
		case !(p.Hour >= 0 && p.Hour < 24):
			return fmt.Errorf("synthetic config: Peaks[%d]: Hour = %v is outside [0, 24); use the time of day in hours, such as 8.5 for 08:30",
				k, p.Hour)
		case p.Width <= 0:
			return fmt.Errorf("synthetic config: Peaks[%d]: Width = %v; set a positive standard deviation such as 1h", k, p.Width)
		case !finite(p.Amplitude):
			return fmt.Errorf("synthetic config: Peaks[%d]: Amplitude = %v must be finite", k, p.Amplitude)
		}
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// uniform returns a number uniform in [−1, 1).
func uniform(rng *rand.Rand) float64 { return 2*rng.Float64() - 1 }

// splitmix64 scrambles a series index into a well-spread PCG stream seed.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
