package window

import (
	"fmt"
	"math"
	"time"
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

// Align says which step a reading's time belongs to.
type Align string

const (
	// AlignFloor puts a reading into the step it falls in: step k holds the
	// times from k·Cadence up to (k+1)·Cadence. For readings stamped
	// anywhere inside their step, or at a fixed offset into it. The zero
	// value means AlignFloor.
	AlignFloor Align = "floor"
	// AlignNearest puts a reading into the step whose time is nearest: step
	// k holds the times within half a step of k·Cadence. For sensors read
	// on a schedule whose stamps jitter around the step times, some a
	// moment early (12:59:58 for 13:00), which AlignFloor would put a step
	// early, onto the step before, leaving a hole at theirs.
	AlignNearest Align = "nearest"
)

// AlignOffset is what alignment a adds to a time before it is floored to its
// step of length cadence: 0 for AlignFloor, half a step (to the
// millisecond below) for AlignNearest. A step's readings then span
// [k·cadence − offset, (k+1)·cadence − offset).
func AlignOffset(a Align, cadence time.Duration) time.Duration {
	if a == AlignNearest {
		return cadence / 2 / time.Millisecond * time.Millisecond
	}
	return 0
}

// Shape is the wiring of a Set: what the model and the input settings fix,
// not the user's window.* keys. The pipeline builds it from the model's
// lookback, input.value_fields and input.cadence. Every field is required.
type Shape struct {
	// Lookback is L, the number of steps in a window: the model's lookback.
	Lookback int
	// Fields names the value columns of the records, in channel order;
	// C = len(Fields) (input.value_fields). Names are unique and are none of
	// "series", "ts" and "ingest_ts".
	Fields []string
	// Cadence is the length of one step, e.g. 5m or 1h: a whole number of
	// milliseconds (input.cadence).
	Cadence time.Duration
	// Align is which step a reading's time belongs to (input.align, or the
	// model's); empty means AlignFloor.
	Align Align
}

// Validate reports the first field of the Shape that cannot work, naming
// where it comes from and saying what to change.
func (sh Shape) Validate() error {
	if sh.Lookback <= 0 {
		return fmt.Errorf("window lookback = %d; set it to the model's lookback L (at least 1)", sh.Lookback)
	}
	if len(sh.Fields) == 0 {
		return fmt.Errorf("input.value_fields is empty; list the value fields of the readings, e.g. [value]")
	}
	seen := make(map[string]bool, len(sh.Fields))
	for i, f := range sh.Fields {
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
	if sh.Cadence <= 0 {
		return fmt.Errorf("input.cadence = %v; set it to the step length of the series, e.g. 5m or 1h", sh.Cadence)
	}
	if sh.Cadence%time.Millisecond != 0 {
		return fmt.Errorf("input.cadence = %v is not a whole number of milliseconds (timestamps are in ms); use e.g. %v",
			sh.Cadence, max(sh.Cadence.Round(time.Millisecond), time.Millisecond))
	}
	if sh.Align != "" && sh.Align != AlignFloor && sh.Align != AlignNearest {
		return fmt.Errorf("input.align = %q; use floor (a reading belongs to the step it falls in) or nearest (to the step whose time is nearest)", sh.Align)
	}
	return nil
}

// Config holds the window.* settings of one Set, each naming its YAML key,
// which Validate's errors name too. New takes it as given: no field is
// filled in, so start from DefaultConfig and change what you mean to. The
// defaults below are DefaultConfig's.
type Config struct {
	// Stride emits a window every Stride steps once the series' window is
	// full (1 = at every new step); at least 1 (window.stride).
	//
	// Default: 1
	Stride int
	// MaxGap is the number of missing steps that are filled; a longer gap
	// restarts the series' window. 0 restarts it on any missing step
	// (window.max_gap).
	//
	// Default: 3
	MaxGap int
	// Fill says how missing steps are filled: FillLinear or FillHold
	// (window.fill).
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
	// clock) before Expire evicts it; positive (window.series_ttl).
	//
	// Default: 24h
	SeriesTTL time.Duration
	// MaxSeries caps the live series, at least 1; readings of new series
	// beyond it are rejected, counted and logged (window.max_series). Sets
	// that share a Budget (WithBudget) share its cap instead: the pipeline
	// gives all its Sets one Budget of MaxSeries, so the cap is the
	// process's.
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
	// Positive and finite.
	//
	// Default: 10000
	MaxJump float64
}

// DefaultConfig returns the default of every setting: the Config to start
// from.
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

// Validate reports the first setting that cannot work, naming its YAML key
// and saying what to write instead. Every field is checked as it is: a zero
// is a value, not the default.
func (cfg Config) Validate() error {
	d := DefaultConfig()
	switch {
	case cfg.Stride < 1:
		return fmt.Errorf("window.stride = %d; use a positive number of steps (default %d: a window at every step)", cfg.Stride, d.Stride)
	case cfg.MaxGap < 0:
		return fmt.Errorf("window.max_gap = %d is negative; use 0 to restart on any missing step, or the number of missing steps to fill (default %d)", cfg.MaxGap, d.MaxGap)
	case cfg.Fill != FillLinear && cfg.Fill != FillHold:
		return fmt.Errorf("window.fill = %q; use %q or %q", cfg.Fill, FillLinear, FillHold)
	case cfg.AllowedLateness < 0:
		return fmt.Errorf("window.allowed_lateness = %v is negative; use 0 to update no step that has passed, or a positive duration", cfg.AllowedLateness)
	case cfg.Late != LateDeadLetter && cfg.Late != LateDrop:
		return fmt.Errorf("window.late = %q; use %q (too-late readings go to the dead-letter topic) or %q", cfg.Late, LateDeadLetter, LateDrop)
	case cfg.SeriesTTL <= 0:
		return fmt.Errorf("window.series_ttl = %v; use a positive duration (default %v)", cfg.SeriesTTL, d.SeriesTTL)
	case cfg.MaxSeries < 1:
		return fmt.Errorf("window.max_series = %d; use a positive cap (default %d)", cfg.MaxSeries, d.MaxSeries)
	case !(cfg.MaxJump > 0) || math.IsInf(cfg.MaxJump, 0):
		return fmt.Errorf("window.max_jump = %v; use a positive finite factor (default %g)", cfg.MaxJump, d.MaxJump)
	}
	return nil
}
