package calibration

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Version is the layout of a Snapshot. Layout 2 keeps the thresholds in
// units of each series' error level; a snapshot of another layout is
// skipped, and its series start from the model's quantiles once.
const Version = 2

// Snapshot is one replica's calibration.
type Snapshot struct {
	Version        int
	Levels         []float64
	H, C           int
	Newest         time.Time // data time of the newest step seen
	Model          uint64    // the served model's fingerprint
	AbsErr, Weight []float64 // the shape of the error along the horizon
	// ProfSum, ProfW and ProfAt are the shape over the day.
	ProfSum, ProfW []float64
	ProfAt         []int64
	// Shape is the horizon shape in use, Fresh the errors noted since it
	// was computed, so that a restart goes on with it.
	Shape []float64
	Fresh int
	// Steer is the pooled coverage correction; a snapshot without it
	// starts the correction at 1.
	Steer  []float64
	Series map[string]Series
}

// Series is one series' calibration: its thresholds, its experts, its
// error level (with its weight, slow level, largest recent error and the
// errors it rests on, per channel), its warm-up, and the running scale its
// errors are normalised by (count, mean and sum of squares per channel).
type Series struct {
	Lo, Hi                                   []float64
	Expert, Loss                             []float64
	Level, LevelW, Fast, Long, LongW, MaxAbs []float64
	Away                                     []int16
	Seen                                     []uint32
	Completed                                int
	Calibrated                               bool
	Scale                                    []float64
	Last                                     int64 // the newest step the scale holds
	// Fresh marks a state that started on this replica from none and is
	// still warming up: a series a rebalance moved here that has not yet
	// taken the state of the replica that had it.
	Fresh bool
}

// Shape is what a learner serves, which a kept calibration must match to
// be used.
type Shape struct {
	Levels []float64
	H, C   int
	// ProfileBins is the length of the shape over the day (ProfSum).
	ProfileBins int
	// Experts and LossStride set a series' layout: Expert holds
	// 2·len(Levels)·C·Experts values, Loss 2·len(Levels)·C·LossStride.
	Experts, LossStride int
	// Span is a lookback and a horizon in steps of Cadence: a series not
	// seen for that long is idle.
	Span    int64
	Cadence time.Duration
	// Model is the served model's fingerprint.
	Model uint64
}

// Check says why a learner of shape sh cannot use sc, or nil when it can.
func (sh Shape) Check(sc *Snapshot) error {
	switch {
	case sc.Version != Version:
		return fmt.Errorf("layout version %d, this build reads %d", sc.Version, Version)
	case !slices.Equal(sc.Levels, sh.Levels) || sc.H != sh.H || sc.C != sh.C || len(sc.AbsErr) != sh.H*sh.C || len(sc.Weight) != sh.H*sh.C ||
		len(sc.ProfSum) != sh.ProfileBins || len(sc.ProfW) != sh.ProfileBins || len(sc.ProfAt) != sh.ProfileBins:
		return fmt.Errorf("levels %v, horizon %d, %d channels: not those served now (%v, %d, %d)", sc.Levels, sc.H, sc.C, sh.Levels, sh.H, sh.C)
	case sc.Model != sh.Model:
		return errors.New("written for another model.path; its series start from this model's quantiles")
	}
	return nil
}

// fits reports whether series state s has the layout of shape sh.
func (sh Shape) fits(s Series) bool {
	k, C := len(sh.Levels), sh.C
	return len(s.Lo) == k*C && len(s.Hi) == k*C && len(s.Expert) == 2*k*C*sh.Experts && len(s.Loss) == 2*k*C*sh.LossStride &&
		len(s.Level) == C && len(s.LevelW) == C && len(s.Fast) == C && len(s.Long) == C && len(s.LongW) == C && len(s.Away) == C &&
		len(s.MaxAbs) == C && len(s.Seen) == C && len(s.Scale) == 3*C
}

// idleBefore is the step before which a series is idle at newest.
func (sh Shape) idleBefore(newest time.Time) int64 {
	return newest.UnixNano()/int64(sh.Cadence) - sh.Span
}

// ReplicaName is the name of a replica: replica, else the host name (a
// pod's name on Kubernetes).
func ReplicaName(replica string) string {
	if replica != "" {
		return replica
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "replica"
	}
	return host
}

// Path is the file in dir of the replica named replica (the host name
// when empty).
func Path(dir, replica string) string {
	return filepath.Join(dir, filePrefix+strings.ReplaceAll(ReplicaName(replica), string(filepath.Separator), "_")+fileSuffix)
}

// The calibration files' names: intervals-<replica>.gob.
const filePrefix, fileSuffix = "intervals-", ".gob"
