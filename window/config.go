package window

import (
	"fmt"
	"time"
)

// Fill says how the steps of a short gap are filled.
type Fill string

const (
	// FillLinear interpolates each channel on a straight line between the
	// value before the gap and the value after it.
	FillLinear Fill = "linear"
	// FillHold repeats the value before the gap (hold-last).
	FillHold Fill = "hold"
)

// Config describes the windows of one Set. The zero value of every field
// except Lookback, Fields and Cadence means its default.
type Config struct {
	// Lookback is L, the number of steps in a window: the model's lookback.
	// Required.
	Lookback int
	// Fields names the value columns of the records, in channel order;
	// C = len(Fields). Required; names are unique and are none of "series",
	// "ts" and "ingest_ts".
	Fields []string
	// Cadence is the length of one step, e.g. 5m or 1h: a whole number of
	// milliseconds. Required.
	Cadence time.Duration
	// Stride emits a window every Stride steps once the series' window is
	// full (1 = at every new step).
	//
	// Default: 1
	Stride int
	// MaxGap is the number of missing steps that are filled; a longer gap
	// restarts the series' window. Set it to -1 to restart on any missing
	// step.
	//
	// Default: 3
	MaxGap int
	// Fill says how missing steps are filled.
	//
	// Default: linear
	Fill Fill
	// AllowedLateness is how far behind the series' newest step a reading
	// may be and still update its step (while the step is in the window).
	// Later readings are dropped and counted.
	//
	// Default: 0 (every late reading is dropped)
	AllowedLateness time.Duration
	// SeriesTTL is how long a series may go without readings (by the wall
	// clock) before Expire evicts it.
	//
	// Default: 24h
	SeriesTTL time.Duration
	// MaxSeries caps the live series of a Set; readings of new series
	// beyond it are rejected, counted and logged.
	//
	// Default: 1000000
	MaxSeries int
}

// Defaults of Config.
const (
	DefaultStride    = 1
	DefaultMaxGap    = 3
	DefaultFill      = FillLinear
	DefaultSeriesTTL = 24 * time.Hour
	DefaultMaxSeries = 1_000_000
)

// reserved are the fixed column names of a readings record.
var reserved = [...]string{colSeries, colTS, colIngest}

const (
	colSeries = "series"
	colTS     = "ts"
	colIngest = "ingest_ts"
)

// withDefaults fills in the defaults and validates cfg. MaxGap stays -1 when
// it is -1 so that the result can be passed to New again.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Lookback <= 0 {
		return cfg, fmt.Errorf("window: Lookback = %d; set it to the model's lookback L (at least 1)", cfg.Lookback)
	}
	if len(cfg.Fields) == 0 {
		return cfg, fmt.Errorf("window: Fields is empty; list the value columns of the readings, e.g. [value]")
	}
	seen := make(map[string]bool, len(cfg.Fields))
	for i, f := range cfg.Fields {
		if f == "" {
			return cfg, fmt.Errorf("window: Fields[%d] is empty; name every value column", i)
		}
		for _, r := range reserved {
			if f == r {
				return cfg, fmt.Errorf("window: Fields[%d] = %q is a reserved column name (series, ts, ingest_ts); rename the value field", i, f)
			}
		}
		if seen[f] {
			return cfg, fmt.Errorf("window: Fields[%d] = %q appears twice; list each value column once", i, f)
		}
		seen[f] = true
	}
	cfg.Fields = append([]string(nil), cfg.Fields...)
	if cfg.Cadence <= 0 {
		return cfg, fmt.Errorf("window: Cadence = %v; set it to the step length of the series, e.g. 5m or 1h", cfg.Cadence)
	}
	if cfg.Cadence%time.Millisecond != 0 {
		r := cfg.Cadence.Round(time.Millisecond)
		if r == 0 {
			r = time.Millisecond
		}
		return cfg, fmt.Errorf("window: Cadence = %v is not a whole number of milliseconds (timestamps are in ms); use e.g. %v", cfg.Cadence, r)
	}
	switch {
	case cfg.Stride == 0:
		cfg.Stride = DefaultStride
	case cfg.Stride < 0:
		return cfg, fmt.Errorf("window: Stride = %d is negative; use 0 for the default (%d) or a positive number of steps", cfg.Stride, DefaultStride)
	}
	switch {
	case cfg.MaxGap == 0:
		cfg.MaxGap = DefaultMaxGap
	case cfg.MaxGap == -1:
	case cfg.MaxGap < -1:
		return cfg, fmt.Errorf("window: MaxGap = %d; use 0 for the default (%d), -1 to restart on any missing step, or a positive number of steps", cfg.MaxGap, DefaultMaxGap)
	}
	switch cfg.Fill {
	case "":
		cfg.Fill = DefaultFill
	case FillLinear, FillHold:
	default:
		return cfg, fmt.Errorf("window: Fill = %q; use %q or %q", cfg.Fill, FillLinear, FillHold)
	}
	if cfg.AllowedLateness < 0 {
		return cfg, fmt.Errorf("window: AllowedLateness = %v is negative; use 0 to drop every late reading or a positive duration", cfg.AllowedLateness)
	}
	switch {
	case cfg.SeriesTTL == 0:
		cfg.SeriesTTL = DefaultSeriesTTL
	case cfg.SeriesTTL < 0:
		return cfg, fmt.Errorf("window: SeriesTTL = %v is negative; use 0 for the default (%v) or a positive duration", cfg.SeriesTTL, DefaultSeriesTTL)
	}
	switch {
	case cfg.MaxSeries == 0:
		cfg.MaxSeries = DefaultMaxSeries
	case cfg.MaxSeries < 0:
		return cfg, fmt.Errorf("window: MaxSeries = %d is negative; use 0 for the default (%d) or a positive cap", cfg.MaxSeries, DefaultMaxSeries)
	}
	return cfg, nil
}
