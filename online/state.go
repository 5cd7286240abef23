package online

import (
	"fmt"
	"time"

	"github.com/freqlens/freqlens/online/calibration"
)

// StateStore is a compacted topic of per-series state that every replica
// reads and writes (calibration.StateStore): broadcast.States on
// topics.state.
type StateStore = calibration.StateStore

// restoreCalibration picks the store of the interval calibration (the
// state topic, else CheckpointDir, else none) and restores from it the
// series seen before this start.
func (l *Learner) restoreCalibration(intervals bool) error {
	if !intervals {
		return nil
	}
	switch {
	case l.states != nil:
		ts := calibration.NewTopicStore(l.states, calibration.ReplicaName(l.cfg.Replica), l.tr.shape(modelFingerprint(l.ref)))
		ts.OnSkipped = func(n int, first error) {
			l.met.stateSkipped.Add(float64(n))
			l.log.Warn("skipping state records this build cannot read; their series start from the model's quantiles",
				"topic", l.states.Name(), "records", n, "first", first)
		}
		ts.OnWritten = func(records, bytes int) {
			l.met.stateRecords.Add(float64(records))
			l.met.stateBytes.Add(float64(bytes))
		}
		ts.OnShared = func() {
			if !l.shared {
				l.shared = true
				l.log.Warn("another replica writes this replica's records on the state topic, and each takes the other's series for its own: give every replica its own online.replica (the pod name by default)",
					"topic", l.states.Name(), "replica", calibration.ReplicaName(l.cfg.Replica))
			}
		}
		l.store = ts
	case l.cfg.CheckpointDir != "":
		l.store = calibration.NewFileStore(l.cfg.CheckpointDir, l.cfg.Replica)
	default:
		return nil
	}
	l.fingerprint = modelFingerprint(l.ref)
	start := time.Now()
	n, err := l.tr.restoreCalibration(l.store, l.fingerprint, func(where string, err error) {
		l.log.Warn("skipping a saved interval calibration", "where", where, "err", err)
	})
	if err != nil {
		return fmt.Errorf("online: reading the saved interval calibration in %s: %w (check that it is reachable, or leave it unset to start every series from the model's quantiles)", l.store, err)
	}
	if n > 0 {
		l.log.Info("the interval calibration of the series seen before the restart is restored when they are seen again",
			"series", n, "store", l.store.String(), "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}
