package calibration

import (
	"slices"
	"time"
)

// Kept is one replica's Snapshot as a store holds it, with where it lies
// (a file's path, or "replica <name>" on a topic) and when it was last
// written.
type Kept struct {
	Snapshot
	Where    string
	Modified time.Time
}

// Store is where the replicas keep their calibrations for each other: a
// directory with one file per replica (FileStore) or a compacted topic
// keyed by series (TopicStore).
type Store interface {
	// Save writes this replica's calibration.
	Save(sc *Snapshot) error
	// Read returns the calibrations the store holds, this replica's own
	// too unless others, one Kept per replica. Those a learner of shape
	// sh cannot use (unreadable, another layout, other levels or shapes,
	// another model) are said to skipped.
	Read(sh Shape, others bool, skipped func(where string, err error)) ([]Kept, error)
	// Drop forgets the calibration k of a replica that is gone. An error
	// leaves it in place, to be dropped at a later start; its series are
	// idle either way.
	Drop(k Kept) error
	// Own is where Read puts this replica's calibration (Kept.Where).
	Own() string
	// String says where the store is, for the log.
	String() string
}

// GoneAfter is how long a replica's calibration must have gone unwritten,
// besides holding only idle series, before a starting replica drops it:
// five of the default saves.
const GoneAfter = 5 * time.Minute

// Newest is the calibration of kept whose newest step is the latest.
func Newest(kept []Kept) Kept {
	return slices.MaxFunc(kept, func(a, b Kept) int { return a.Newest.Compare(b.Newest) })
}

// PoolSource is the calibration whose pooled correction (of n values) a
// restart takes: the replica's own (Where own), else the newest that has
// one.
func PoolSource(kept []Kept, own string, n int) Kept {
	var best Kept
	for _, k := range kept {
		if len(k.Steer) != n {
			continue
		}
		if k.Where == own {
			return k
		}
		if best.Steer == nil || k.Newest.After(best.Newest) {
			best = k
		}
	}
	return best
}

// Gone returns the calibrations of kept a starting replica drops: whose
// newest step lies more than a lookback and horizon before the newest
// one's, and which nobody wrote for GoneAfter, so that they hold only idle
// series (a replica gone: a pod's name changes with every deploy). A live
// replica whose data lags writes its own every save, so it is kept.
func Gone(kept []Kept, sh Shape, now time.Time) []Kept {
	span := time.Duration(sh.Span) * sh.Cadence
	latest := Newest(kept).Newest
	var gone []Kept
	for _, k := range kept {
		if k.Newest.Add(span).Before(latest) && now.Sub(k.Modified) >= GoneAfter {
			gone = append(gone, k)
		}
	}
	return gone
}

// Merge returns, per series, the state of kept seen last (after a
// rebalance, the replica's that had the series last, by NewerState),
// leaving out states of another layout than sh's and the series idle at
// newest: last seen more than a lookback and horizon before it, so that no
// restart carries them over again. A state's thresholds are in units of
// its own error level, and its level in units of its scale, so a state
// means the same to every replica.
func Merge(kept []Kept, sh Shape, newest time.Time) map[string]Series {
	idle := sh.idleBefore(newest)
	merged := map[string]Series{}
	for _, k := range kept {
		for key, s := range k.Series {
			if !sh.fits(s) || s.Last < idle {
				continue
			}
			if old, ok := merged[key]; ok && !NewerState(s, old, sh.Span) {
				continue
			}
			merged[key] = s
		}
	}
	return merged
}

// NewerState reports whether state s of a series replaces state old of it
// in another replica's calibration: the one seen last wins (after a
// rebalance, the replica that had the series last), except that a fresh
// state (a replica the series reached that had not yet taken its
// calibration) loses to one that is not and was seen within span steps of
// it.
func NewerState(s, old Series, span int64) bool {
	if s.Fresh != old.Fresh && max(s.Last-old.Last, old.Last-s.Last) <= span {
		return !s.Fresh
	}
	return s.Last > old.Last
}
