package calibration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// StateStore is a compacted topic of per-series state that every replica
// reads and writes: the latest value of each key, as Kafka keeps it.
// broadcast.States implements it on topics.state.
type StateStore interface {
	// Sync reads what was written since the last call (everything, the
	// first time) up to the store's end as of the call, and returns the
	// latest value of every key. The map stays the store's: it is read,
	// not changed, and only until the next call.
	Sync(ctx context.Context) (map[string][]byte, error)
	// Put writes values[i] under keys[i], a nil value being a tombstone
	// that deletes the key, and returns once the store holds them all.
	Put(ctx context.Context, keys []string, values [][]byte) error
	// Name says where the store is, for the log.
	Name() string
}

// stateVersion is the layout of the state topic's records (stateMagic and
// this byte start each one). A record of another layout is skipped.
const stateVersion = 1

const (
	stateMagic  = "FLS"
	kindSeries  = 1
	kindPool    = 2
	poolKeyHead = "\x00pool\x00"
)

// Bounds of one state read and one save: a restore reads the whole topic.
const (
	stateRestoreTimeout = 2 * time.Minute
	stateSyncTimeout    = 30 * time.Second
)

// TopicStore keeps the calibrations on a StateStore (see the package
// doc). A TopicStore is used by one goroutine at a time.
type TopicStore struct {
	states  StateStore
	replica string
	shape   Shape
	// known is the latest state of each series key on the topic, as this
	// replica last read or wrote it: what a save compares with.
	known map[string]knownState
	// timeout bounds the next read (the first reads the whole topic).
	timeout time.Duration
	// OnSkipped is told how many records a read skipped, and why the
	// first; OnWritten counts the records and bytes of each save;
	// OnShared is called when a read finds this replica's pooled record
	// written by another replica of its name. Each may be nil.
	OnSkipped func(n int, first error)
	OnWritten func(records, bytes int)
	OnShared  func()
	// wroteAt is when this replica last wrote its pooled record.
	wroteAt time.Time
}

// knownState is what a save needs of a series' record on the topic: the
// step it was last seen at, whether it is fresh, and a hash of its state.
type knownState struct {
	last  int64
	fresh bool
	sum   uint64
}

// NewTopicStore returns the store of the calibrations on states, writing
// replica's (its name: ReplicaName) for a learner of shape sh.
func NewTopicStore(states StateStore, replica string, sh Shape) *TopicStore {
	return &TopicStore{states: states, replica: replica, shape: sh, known: map[string]knownState{}, timeout: stateRestoreTimeout}
}

func poolKey(replica string) string { return poolKeyHead + replica }

// Own is where Read puts this replica's calibration.
func (ts *TopicStore) Own() string { return "replica " + ts.replica }

// String names the topic.
func (ts *TopicStore) String() string { return ts.states.Name() }

// Read returns one Kept per replica with a pooled record on the
// topic, holding the series whose latest record that replica wrote.
// Series of a replica without one (removed as gone) are idle, and left out.
func (ts *TopicStore) Read(sh Shape, others bool, skipped func(where string, err error)) ([]Kept, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ts.timeout)
	defer cancel()
	vals, err := ts.states.Sync(ctx)
	if err != nil {
		return nil, err
	}
	ts.timeout = stateSyncTimeout
	groups := map[string]*Kept{}
	unusable := map[string]bool{}
	var bad int
	var firstErr error
	fail := func(err error) {
		if bad++; firstErr == nil {
			firstErr = err
		}
	}
	for key, v := range vals {
		if !strings.HasPrefix(key, poolKeyHead) {
			continue
		}
		replica, sc, written, err := decodePool(v)
		if err != nil {
			fail(fmt.Errorf("record %q: %w", key, err))
			continue
		}
		if replica != strings.TrimPrefix(key, poolKeyHead) {
			fail(fmt.Errorf("record %q names replica %q", key, replica))
			continue
		}
		if replica == ts.replica && !ts.wroteAt.IsZero() && !written.Equal(ts.wroteAt) && ts.OnShared != nil {
			ts.OnShared()
		}
		where := ts.states.Name() + " " + "replica " + replica
		if err := sh.Check(&sc); err != nil {
			unusable[replica] = true
			skipped(where, err)
			continue
		}
		sc.Series = map[string]Series{}
		groups[replica] = &Kept{Snapshot: sc, Where: "replica " + replica, Modified: written}
	}
	clear(ts.known)
	for key, v := range vals {
		if strings.HasPrefix(key, poolKeyHead) {
			continue
		}
		h, s, sum, err := decodeSeries(v)
		if err != nil {
			fail(fmt.Errorf("record of series %q: %w", key, err))
			continue
		}
		if h.fingerprint != sh.Model || h.H != sh.H || h.C != sh.C || !slices.Equal(h.levels, sh.Levels) {
			continue // another model's or shape's: as its replica's pooled record says
		}
		ts.known[key] = knownState{last: s.Last, fresh: s.Fresh, sum: sum}
		if g := groups[h.replica]; g != nil {
			g.Series[key] = s
		}
	}
	if bad > 0 && ts.OnSkipped != nil {
		ts.OnSkipped(bad, firstErr)
	}
	files := make([]Kept, 0, len(groups))
	for replica, g := range groups {
		if others && replica == ts.replica {
			continue
		}
		files = append(files, *g)
	}
	// In a fixed order, as a directory lists its files: the merge's ties
	// are then broken the same way on every replica.
	slices.SortFunc(files, func(a, b Kept) int { return strings.Compare(a.Where, b.Where) })
	return files, nil
}

// Save writes the series of sc whose state is newer than the topic's, a
// tombstone for every series idle at sc.Newest, and this replica's pooled
// record.
func (ts *TopicStore) Save(sc *Snapshot) error {
	idle := ts.shape.idleBefore(sc.Newest)
	var keys []string
	var vals [][]byte
	bytes := 0
	put := func(key string, v []byte) {
		keys, vals = append(keys, key), append(vals, v)
		bytes += len(key) + len(v)
	}
	hd := seriesHeader{fingerprint: sc.Model, replica: ts.replica, levels: sc.Levels, H: sc.H, C: sc.C}
	names := make([]string, 0, len(sc.Series))
	for key := range sc.Series {
		names = append(names, key)
	}
	slices.Sort(names)
	for _, key := range names {
		s := sc.Series[key]
		if s.Last < idle {
			continue
		}
		v, sum := encodeSeries(hd, s)
		if k, ok := ts.known[key]; ok && (k.sum == sum || !NewerState(s, Series{Last: k.last, Fresh: k.fresh}, ts.shape.Span)) {
			continue // the topic holds this state, or one that wins over it
		}
		put(key, v)
		ts.known[key] = knownState{last: s.Last, fresh: s.Fresh, sum: sum}
	}
	var gone []string
	for key, k := range ts.known {
		if k.last < idle {
			gone = append(gone, key)
		}
	}
	slices.Sort(gone)
	for _, key := range gone {
		put(key, nil)
		delete(ts.known, key)
	}
	now := time.Now()
	put(poolKey(ts.replica), encodePool(ts.replica, sc, now))
	ctx, cancel := context.WithTimeout(context.Background(), stateSyncTimeout)
	defer cancel()
	if err := ts.states.Put(ctx, keys, vals); err != nil {
		return fmt.Errorf("online: writing the interval calibration to %s: %w", ts.states.Name(), err)
	}
	ts.wroteAt = time.Unix(0, now.UnixNano())
	if ts.OnWritten != nil {
		ts.OnWritten(len(keys), bytes)
	}
	return nil
}

// Drop deletes the pooled record of k's replica, which is gone; its series
// are idle and go at the next save's tombstones.
func (ts *TopicStore) Drop(k Kept) error {
	ctx, cancel := context.WithTimeout(context.Background(), stateSyncTimeout)
	defer cancel()
	if err := ts.states.Put(ctx, []string{poolKey(strings.TrimPrefix(k.Where, "replica "))}, [][]byte{nil}); err != nil {
		return fmt.Errorf("deleting the pooled record of the gone %s from %s: %w", k.Where, ts.states.Name(), err)
	}
	return nil
}
