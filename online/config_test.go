package online_test

import (
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
)

// TestConfigValidate: Validate checks every field as it is. Each zero that
// cannot work is refused, naming its YAML key and the default to write;
// the zeros that mean something are valid.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*online.Config) // of DefaultConfig
		want []string             // the YAML key first, then the fix; none for valid
	}{
		{name: "the defaults", edit: func(*online.Config) {}},
		{name: "negative interval", edit: func(c *online.Config) { c.Interval = -time.Minute }, want: []string{"online.interval -1m0s", "positive"}},
		{name: "zero interval", edit: func(c *online.Config) { c.Interval = 0 }, want: []string{"online.interval 0s", "positive", "(default 5m0s)"}},
		{name: "zero min new samples", edit: func(c *online.Config) { c.MinNewSamples = 0 }, want: []string{"online.min_new_samples 0", "(default 500)"}},
		{name: "zero replay size", edit: func(c *online.Config) { c.ReplaySize = 0 }, want: []string{"online.replay_size 0", "twice online.min_holdout", "(default 20000)"}},
		{name: "no replay policy", edit: func(c *online.Config) { c.Replay = "" }, want: []string{`online.replay ""`, `"recent" (the default)`}},
		{name: "zero learning rate", edit: func(c *online.Config) { c.LearningRate = 0 }, want: []string{"online.learning_rate 0", "(default 0.001)"}},
		{name: "zero steps", edit: func(c *online.Config) { c.Steps = 0 }, want: []string{"online.steps 0", "(default 50)"}},
		{name: "zero batch size", edit: func(c *online.Config) { c.BatchSize = 0 }, want: []string{"online.batch_size 0", "(default 32)"}},
		{name: "zero holdout", edit: func(c *online.Config) { c.Holdout = 0 }, want: []string{"online.holdout 0", "(default 0.2)"}},
		{name: "zero min holdout", edit: func(c *online.Config) { c.MinHoldout = 0 }, want: []string{"online.min_holdout 0", "(default 64)"}},
		{name: "zero duty", edit: func(c *online.Config) { c.Duty = 0 }, want: []string{"online.duty 0", "(default 0.25)"}},
		{name: "zero workers", edit: func(c *online.Config) { c.Workers = 0 }, want: []string{"online.workers 0", "(default 1)"}},
		{name: "zero checkpoints kept", edit: func(c *online.Config) { c.Keep = 0 }, want: []string{"online.keep_checkpoints 0", "(default 5)"}},
		{name: "zero drift threshold", edit: func(c *online.Config) { c.DriftThreshold = 0 }, want: []string{"online.drift_threshold 0", "(default 0.05)"}},
		{name: "zero dominant", edit: func(c *online.Config) { c.Dominant = 0 }, want: []string{"online.dominant 0", "(default 3)"}},
		{name: "zero error half-life", edit: func(c *online.Config) { c.ErrorHalfLife = 0 }, want: []string{"online.error_half_life 0", "(default 2000)"}},
		{name: "zero interval rate", edit: func(c *online.Config) { c.IntervalRate = 0 }, want: []string{"online.interval_rate 0", "(default 0.01)"}},
		// Zeros that are values: no margin, no settling time, no share
		// needed, 8 × the lookback, every series, no checkpoints, no
		// intervals, seed 0.
		{name: "the zeros that mean something", edit: func(c *online.Config) {
			c.PromoteMargin, c.MinDuration, c.DominantMinShare, c.SpectrumSteps, c.TrackSeries = 0, 0, 0, 0, 0
			c.CheckpointDir, c.Intervals, c.Seed, c.Enabled = "", nil, 0, false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := configWith(tc.edit).Validate()
			switch {
			case len(tc.want) == 0:
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			case err == nil:
				t.Fatalf("Validate() = nil, want an error starting with %s", tc.want[0])
			case !strings.HasPrefix(err.Error(), tc.want[0]):
				t.Errorf("error %q does not start with the YAML key %s", err, tc.want[0])
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	if err := (online.Config{}).Validate(); err == nil {
		t.Error("Config{}.Validate() = nil; a zero Config has no interval between rounds")
	}
}

// TestNewTakesConfigAsGiven: New refuses a zero Config rather than filling
// it, accepts the zeros that mean something and keeps the levels as given;
// DefaultConfig holds the documented defaults.
func TestNewTakesConfigAsGiven(t *testing.T) {
	m, err := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	if _, err := online.New(online.Config{}, m); err == nil || !strings.HasPrefix(err.Error(), "online.interval") {
		t.Errorf("New(Config{}) error = %v, want online.interval refused", err)
	}
	l, err := online.New(configWith(func(c *online.Config) { c.MinDuration, c.DominantMinShare, c.Intervals = 0, 0, nil }), m)
	if err != nil {
		t.Fatalf("New with MinDuration, DominantMinShare and Intervals zero: %v", err)
	}
	if got := l.Levels(); got != nil {
		t.Errorf("Levels() = %v without output.intervals, want none", got)
	}
	d := online.DefaultConfig()
	if d.Interval != 5*time.Minute || d.MinNewSamples != 500 || d.ReplaySize != 20000 || d.Replay != online.ReplayRecent ||
		d.LearningRate != 1e-3 || d.Steps != 50 || d.BatchSize != 32 || d.Holdout != 0.2 || d.MinHoldout != 64 || d.Workers != 1 ||
		d.Duty != 0.25 || d.Keep != 5 || d.DriftThreshold != 0.05 || d.MinDuration != 30*time.Minute || d.Dominant != 3 ||
		d.DominantMinShare != 0.10 || d.ErrorHalfLife != 2000 || d.IntervalRate != 0.01 || d.PromoteMargin != 0 || d.PromoteZ != 3 ||
		d.SpectrumSteps != 0 || d.TrackSeries != 0 || d.Enabled || d.CheckpointDir != "" || d.Intervals != nil || d.Seed != 0 {
		t.Errorf("DefaultConfig() = %+v", d)
	}
}
