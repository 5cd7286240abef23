package online

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Config sets the online learner. Every field is the YAML key
// online.<name in snake case> of `freqlens serve` (Keep is
// online.keep_checkpoints, Intervals output.intervals), which Validate's
// errors name. New takes it as given: no field is filled in, so start from
// DefaultConfig and change what you mean to. The defaults below are
// DefaultConfig's.
type Config struct {
	// Enabled turns fine-tuning on. Without it the learner still tracks the
	// online error and the drift of the serving model.
	Enabled bool
	// Interval is the most time between fine-tuning rounds; positive.
	//
	// Default: 5m
	Interval time.Duration
	// MinNewSamples starts a round early once this many new pairs arrived;
	// at least 1.
	//
	// Default: 500
	MinNewSamples int
	// ReplaySize caps the (window, target) pairs kept; at least twice
	// MinHoldout.
	//
	// Default: 20000
	ReplaySize int
	// Replay is how the buffer chooses what to keep when full: "recent"
	// keeps the newest pairs, "reservoir" a uniform sample of all pairs seen.
	//
	// Default: recent
	Replay string
	// LearningRate, Steps and TrainHeads set a round (FineTuneConfig):
	// a rate in (0, 0.1] and at least 1 step.
	//
	// Default: 0.001, 50, false
	LearningRate float64
	Steps        int
	TrainHeads   bool
	// BatchSize is the windows per fine-tuning step; at least 1.
	//
	// Default: 32
	BatchSize int
	// Holdout is the fraction of the newest pairs a round does not train on
	// and judges the candidate by, at least MinHoldout pairs: a fraction in
	// (0, 1), and at least 1 pair.
	//
	// Default: 0.2 and 64
	Holdout    float64
	MinHoldout int
	// PromoteZ and PromoteMargin say when a candidate is better: its
	// holdout MSE must lie PromoteZ standard errors below the serving
	// model's (the holdout cut into blocks of series and of time, whose
	// errors are compared pairwise) and be at most the serving and the base
	// model's times (1 + PromoteMargin). A candidate that is better waits
	// for the next round's holdout, newer pairs, to be better again
	// before it is promoted: a holiday's candidate, tuned on the holiday,
	// does not survive the days after it. A negative PromoteZ promotes a
	// candidate within PromoteMargin without a test.
	//
	// Default: 3 and 0
	PromoteZ      float64
	PromoteMargin float64
	// Workers is how many cores a round may use, at least 1; the rest stay
	// with serving.
	//
	// Default: 1
	Workers int
	// Duty is the fraction of its time a round computes: after each step
	// it sleeps so that computing takes Duty of the round's wall time, and
	// forecasting keeps the cores it needs. In (0, 1]; 1 never sleeps.
	//
	// Default: 0.25
	Duty float64
	// CheckpointDir, when set, receives every promoted version as a
	// safetensors file; Keep is how many of them stay, at least 1.
	//
	// Default: "" (no checkpoints), 5
	CheckpointDir string
	Keep          int
	// CalibrationEvery is how often the interval calibration is saved
	// (to topics.state or CheckpointDir), besides when the learner stops:
	// what a kill -9 can lose. At least a second.
	//
	// Default: 1m
	CalibrationEvery time.Duration
	// Replica names this replica's file of interval calibration in
	// CheckpointDir (intervals-<Replica>.gob). Replicas that share the
	// directory need distinct names, or they overwrite each other's file:
	// set it when several run on one host.
	//
	// Default: "" (the host name)
	Replica string
	// DriftThreshold is the relative change of a dominant frequency's period
	// that raises a "period" event once the period has settled for
	// MinDuration (in the data's time); see DriftEvent for the rules. The
	// threshold is a fraction in (0, 1); a MinDuration of 0 raises the event
	// as soon as the change is seen.
	//
	// Default: 0.05 and 30m
	DriftThreshold float64
	MinDuration    time.Duration
	// A frequency is dominant, and its period changes are events, while it
	// carries the attribution: it joins at DominantMinShare of the recent
	// attribution (among the Dominant largest) and leaves below half of it.
	// Frequencies that carry a few percent come and go with the data and
	// are not worth paging anyone about. Dominant is at least 1,
	// DominantMinShare a fraction in [0, 1).
	//
	// Default: 3 and 0.10
	Dominant         int
	DominantMinShare float64
	// SpectrumSteps is how many recent steps of each tracked series a
	// round reads the spectrum of, to move the cycles the model carries to
	// their current periods (model.Model.TrackCycles). Longer resolves a
	// period more finely, and tells an old and a new period apart instead
	// of reporting the blur between them; shorter follows a change sooner.
	// 0 means 8 × the model's lookback.
	//
	// Default: 0
	SpectrumSteps int
	// TrackSeries caps the series whose forecasts are remembered and scored
	// (each with its own online error and intervals); 0 sets no cap of its
	// own, so every series the windows hold is tracked (window.max_series
	// bounds them). A series beyond the cap gets the mean intervals of the
	// others. See the package doc for the bytes a series costs.
	//
	// Default: 0 (every series)
	TrackSeries int
	// ErrorHalfLife is how many scored values per horizon step the rolling
	// error averages over (an exponential half-life); at least 1.
	//
	// Default: 2000
	ErrorHalfLife int
	// Intervals are the nominal levels of the prediction intervals published
	// with every forecast (YAML output.intervals, e.g. [0.8, 0.95]), in
	// increasing order; none turns intervals off. They are calibrated online
	// from the realised values by conformal prediction (see interval.go):
	// a series' intervals appear once 32 of its forecasts have completed
	// their horizon, or at once when other series are calibrated (or the
	// model recorded its held-out errors). They cost
	// 2 × 2 × levels × H × channels × 4 bytes per tracked series.
	//
	// Default: none
	Intervals []float64
	// IntervalRate is the step of the slowest of the intervals' online
	// calibrations (see interval.go): after a miss a side of an interval
	// widens by about this fraction, after a hit it narrows by this
	// fraction times its miss rate. Its two faster experts step 4 and 16
	// times as far, and are published while they score better. The size
	// of the errors is followed apart from this, so the rate is small:
	// larger follows a change of the errors' shape sooner, smaller gives
	// steadier widths. In (0, 1].
	//
	// Default: 0.01
	IntervalRate float64
	// Seed drives the fine-tuning rounds' sampling.
	//
	// Default: 0
	Seed uint64
}

// DefaultConfig returns the default of every field: the Config to start
// from.
func DefaultConfig() Config {
	return Config{
		Interval: 5 * time.Minute, MinNewSamples: 500, ReplaySize: 20000, Replay: ReplayRecent,
		LearningRate: 1e-3, Steps: 50, BatchSize: 32, Holdout: 0.2, MinHoldout: 64, PromoteZ: 3, Workers: 1, Duty: 0.25,
		Keep: 5, DriftThreshold: 0.05, MinDuration: 30 * time.Minute, Dominant: 3, DominantMinShare: 0.10,
		ErrorHalfLife: 2000, IntervalRate: 0.01, CalibrationEvery: time.Minute,
	}
}

// Replay policies.
const (
	ReplayRecent    = "recent"
	ReplayReservoir = "reservoir"
)

// Validate reports the first setting that cannot work, naming its YAML key
// and saying what to write instead. Every field is checked as it is: a zero
// is a value, not the default. Zeros that mean something are
// PromoteZ and PromoteMargin, MinDuration and DominantMinShare (the bounds they set),
// SpectrumSteps (8 × the lookback), TrackSeries (every series),
// CheckpointDir (none), Intervals (none), Seed and Enabled.
func (c Config) Validate() error {
	d := DefaultConfig()
	switch {
	case c.Interval <= 0:
		return fmt.Errorf("online.interval %v; use a positive duration (default %v)", c.Interval, d.Interval)
	case c.MinNewSamples < 1:
		return fmt.Errorf("online.min_new_samples %d; use at least 1 (default %d)", c.MinNewSamples, d.MinNewSamples)
	case c.Replay != ReplayRecent && c.Replay != ReplayReservoir:
		return fmt.Errorf("online.replay %q; use %q (the default) or %q", c.Replay, ReplayRecent, ReplayReservoir)
	case !(c.LearningRate > 0 && c.LearningRate <= 0.1):
		return fmt.Errorf("online.learning_rate %g; use a small positive rate (default %g)", c.LearningRate, d.LearningRate)
	case c.Steps < 1:
		return fmt.Errorf("online.steps %d; use at least 1 (default %d)", c.Steps, d.Steps)
	case c.BatchSize < 1:
		return fmt.Errorf("online.batch_size %d; use at least 1 (default %d)", c.BatchSize, d.BatchSize)
	case !(c.Holdout > 0 && c.Holdout < 1):
		return fmt.Errorf("online.holdout %g; use a fraction between 0 and 1 (default %g)", c.Holdout, d.Holdout)
	case c.MinHoldout < 1:
		return fmt.Errorf("online.min_holdout %d; use at least 1 (default %d)", c.MinHoldout, d.MinHoldout)
	case c.ReplaySize < 2*c.MinHoldout:
		return fmt.Errorf("online.replay_size %d must hold at least twice online.min_holdout (%d) (default %d)", c.ReplaySize, c.MinHoldout, d.ReplaySize)
	case math.IsNaN(c.PromoteZ) || math.IsInf(c.PromoteZ, 0):
		return fmt.Errorf("online.promote_z %g; use a number of standard errors such as 3 (default %g)", c.PromoteZ, d.PromoteZ)
	case c.PromoteMargin < 0:
		return fmt.Errorf("online.promote_margin %g is negative; use 0 or a small fraction such as 0.01", c.PromoteMargin)
	case !(c.Duty > 0 && c.Duty <= 1):
		return fmt.Errorf("online.duty %g; use a fraction of time in (0, 1] (default %g)", c.Duty, d.Duty)
	case c.Workers < 1:
		return fmt.Errorf("online.workers %d; use at least 1 (default %d)", c.Workers, d.Workers)
	case c.Replica != "" && (strings.ContainsAny(c.Replica, `/\`) || strings.TrimSpace(c.Replica) != c.Replica || c.Replica == "." || c.Replica == ".." || len(c.Replica) > 100):
		return fmt.Errorf("online.replica %q names a file in online.checkpoint_dir; use a name of at most 100 characters without slashes or surrounding spaces, such as the host name and a number", c.Replica)
	case c.CalibrationEvery < time.Second:
		return fmt.Errorf("online.calibration_every %v; save at most once a second (default %v)", c.CalibrationEvery, d.CalibrationEvery)
	case c.Keep < 1:
		return fmt.Errorf("online.keep_checkpoints %d; keep at least 1 version (default %d)", c.Keep, d.Keep)
	case !(c.DriftThreshold > 0 && c.DriftThreshold < 1):
		return fmt.Errorf("online.drift_threshold %g; use a fraction between 0 and 1 (default %g)", c.DriftThreshold, d.DriftThreshold)
	case c.MinDuration < 0:
		return fmt.Errorf("online.min_duration %v is negative; use a duration such as 30m", c.MinDuration)
	case c.Dominant < 1:
		return fmt.Errorf("online.dominant %d; use at least 1 (default %d)", c.Dominant, d.Dominant)
	case c.DominantMinShare < 0 || c.DominantMinShare >= 1:
		return fmt.Errorf("online.dominant_min_share %g; use a fraction such as 0.10", c.DominantMinShare)
	case c.SpectrumSteps < 0:
		return fmt.Errorf("online.spectrum_steps %d is negative; use a count of steps such as 768, or 0 for 8 × the lookback", c.SpectrumSteps)
	case c.TrackSeries < 0:
		return fmt.Errorf("online.track_series %d is negative; use a number of series, or 0 to track every series", c.TrackSeries)
	case c.ErrorHalfLife < 1:
		return fmt.Errorf("online.error_half_life %d; use at least 1 (default %d)", c.ErrorHalfLife, d.ErrorHalfLife)
	case !(c.IntervalRate > 0 && c.IntervalRate <= 1):
		return fmt.Errorf("online.interval_rate %g; use a small fraction in (0, 1] (default %g)", c.IntervalRate, d.IntervalRate)
	}
	for k, level := range c.Intervals {
		switch {
		case !(level > 0 && level < 1):
			return fmt.Errorf("output.intervals %v: %g is not a coverage level; write levels between 0 and 1, such as [0.8, 0.95]", c.Intervals, level)
		case k > 0 && !(level > c.Intervals[k-1]):
			return fmt.Errorf("output.intervals %v: list each level once, in increasing order, such as [0.8, 0.95]", c.Intervals)
		}
	}
	return nil
}
