package window

import (
	"fmt"
	"math"
	"time"

	"github.com/freqlens/freqlens/internal/defaults"
)

// Late says what happens to a reading too late to update its step.
type Late string

const (
	// LateDeadLetter lists the reading in Batch.TooLate, for the pipeline
	// to send to the dead-letter topic (reason too_late), and counts it.
	LateDeadLetter Late = "dead_letter"
	// LateDrop counts the reading and drops it.
	LateDrop Late = "drop"
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

// Config describes the windows of one Set. A zero field means its default
// (DefaultConfig). Lookback, Fields and Cadence are required: the pipeline
// sets them from the model and from input.value_fields and input.cadence;
// the other fields name their YAML key, which Validate's errors name too.
type Config struct {
	// Lookback is L, the number of steps in a window: the model's lookback.
	// Required.
	Lookback int
	// Fields names the value columns of the records, in channel order;
	// C = len(Fields) (input.value_fields). Required; names are unique and
	// are none of "series", "ts" and "ingest_ts".
	Fields []string
	// Cadence is the length of one step, e.g. 5m or 1h: a whole number of
	// milliseconds (input.cadence). Required.
	Cadence time.Duration
	// Stride emits a window every Stride steps once the series' window is
	// full (1 = at every new step) (window.stride).
	//
	// Default: 1
	Stride int
	// MaxGap is the number of missing steps that are filled; a longer gap
	// restarts the series' window (window.max_gap). Set it to -1 to restart
	// on any missing step (the YAML key writes that as 0).
	//
	// Default: 3
	MaxGap int
	// Fill says how missing steps are filled (window.fill).
	//
	// Default: linear
	Fill Fill
	// AllowedLateness is how far behind the series' newest step a reading
	// may be and still update its step (while the step is in the window)
	// (window.allowed_lateness). Later readings are too late: see Late.
	//
	// Default: 0 (every late reading is too late)
	AllowedLateness time.Duration
	// Late says what happens to a reading too late to update its step
	// (window.late): LateDeadLetter lists it in Batch.TooLate, so that the
	// pipeline writes it to the dead-letter topic with reason too_late;
	// LateDrop drops it. Either way it is counted (Stats.LateDropped).
	//
	// Default: dead_letter
	Late Late
	// SeriesTTL is how long a series may go without readings (by the wall
	// clock) before Expire evicts it (window.series_ttl).
	//
	// Default: 24h
	SeriesTTL time.Duration
	// MaxSeries caps the live series; readings of new series beyond it are
	// rejected, counted and logged (window.max_series). Sets that share a
	// Budget (WithBudget) share its cap instead: the pipeline gives all its
	// Sets one Budget of MaxSeries, so the cap is the process's.
	//
	// Default: 1000000
	MaxSeries int
	// MaxJump bounds how far a reading may lie outside the range of its
	// series' window: a value beyond [lo − MaxJump·scale, hi + MaxJump·scale]
	// of its channel, where lo and hi are the smallest and largest held
	// values and scale = max(hi − lo, |lo|, |hi|), is refused as out of
	// range (Batch.OutOfRange), and the windows do not change
	// (window.max_jump). It keeps a reading such as 1e300 among values
	// near 20 from turning every forecast of the next L steps non-finite.
	//
	// Default: 10000
	MaxJump float64
}

// DefaultConfig returns the default of every field that has one; Lookback,
// Fields and Cadence are left for the caller.
func DefaultConfig() Config {
	return Config{Stride: 1, MaxGap: 3, Fill: FillLinear, Late: LateDeadLetter, SeriesTTL: 24 * time.Hour, MaxSeries: 1_000_000, MaxJump: 1e4}
}

// reserved are the fixed column names of a readings record.
var reserved = [...]string{colSeries, colTS, colIngest}

const (
	colSeries = "series"
	colTS     = "ts"
	colIngest = "ingest_ts"
)

// withDefaults returns cfg with every zero field set to its default. MaxGap
// stays -1 when it is -1, so that the result can be passed to New again.
func (cfg Config) withDefaults() Config {
	defaults.Fill(&cfg, DefaultConfig())
	return cfg
}

// Validate reports the first setting that cannot work, with zero fields
// taken as their defaults, naming its YAML key and saying what to change.
func (cfg Config) Validate() error {
	cfg = cfg.withDefaults()
	if cfg.Lookback <= 0 {
		return fmt.Errorf("window lookback = %d; set it to the model's lookback L (at least 1)", cfg.Lookback)
	}
	if len(cfg.Fields) == 0 {
		return fmt.Errorf("input.value_fields is empty; list the value fields of the readings, e.g. [value]")
	}
	seen := make(map[string]bool, len(cfg.Fields))
	for i, f := range cfg.Fields {
		if f == "" {
			return fmt.Errorf("input.value_fields[%d] is empty; name every value field", i)
		}
		for _, r := range reserved {
			if f == r {
				return fmt.Errorf("input.value_fields[%d] = %q is a reserved column name (series, ts, ingest_ts); rename the value field", i, f)
			}
		}
		if seen[f] {
			return fmt.Errorf("input.value_fields[%d] = %q appears twice; list each value field once", i, f)
		}
		seen[f] = true
	}
	if cfg.Cadence <= 0 {
		return fmt.Errorf("input.cadence = %v; set it to the step length of the series, e.g. 5m or 1h", cfg.Cadence)
	}
	if cfg.Cadence%time.Millisecond != 0 {
		r := cfg.Cadence.Round(time.Millisecond)
		if r == 0 {
			r = time.Millisecond
		}
		return fmt.Errorf("input.cadence = %v is not a whole number of milliseconds (timestamps are in ms); use e.g. %v", cfg.Cadence, r)
	}
	d := DefaultConfig()
	switch {
	case cfg.Stride < 0:
		return fmt.Errorf("window.stride = %d is negative; use a positive number of steps (default %d)", cfg.Stride, d.Stride)
	case cfg.MaxGap < -1:
		return fmt.Errorf("window.max_gap = %d; use -1 to restart on any missing step, or a positive number of steps (default %d)", cfg.MaxGap, d.MaxGap)
	case cfg.Fill != FillLinear && cfg.Fill != FillHold:
		return fmt.Errorf("window.fill = %q; use %q or %q", cfg.Fill, FillLinear, FillHold)
	case cfg.AllowedLateness < 0:
		return fmt.Errorf("window.allowed_lateness = %v is negative; use 0 to update no step that has passed, or a positive duration", cfg.AllowedLateness)
	case cfg.Late != LateDeadLetter && cfg.Late != LateDrop:
		return fmt.Errorf("window.late = %q; use %q (too-late readings go to the dead-letter topic) or %q", cfg.Late, LateDeadLetter, LateDrop)
	case cfg.SeriesTTL < 0:
		return fmt.Errorf("window.series_ttl = %v is negative; use a positive duration (default %v)", cfg.SeriesTTL, d.SeriesTTL)
	case cfg.MaxSeries < 0:
		return fmt.Errorf("window.max_series = %d is negative; use a positive cap (default %d)", cfg.MaxSeries, d.MaxSeries)
	case !(cfg.MaxJump > 0) || math.IsInf(cfg.MaxJump, 0):
		return fmt.Errorf("window.max_jump = %v; use a positive finite factor (default %g)", cfg.MaxJump, d.MaxJump)
	}
	return nil
}
