package calibration

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

// memStates is a StateStore in memory: the latest value of each key, and a
// Put that fails while failPut is set.
type memStates struct {
	vals    map[string][]byte
	failPut error
}

func (s *memStates) Sync(context.Context) (map[string][]byte, error) { return maps.Clone(s.vals), nil }

func (s *memStates) Put(_ context.Context, keys []string, values [][]byte) error {
	if s.failPut != nil {
		return s.failPut
	}
	for i, k := range keys {
		if values[i] == nil {
			delete(s.vals, k)
			continue
		}
		s.vals[k] = values[i]
	}
	return nil
}

func (s *memStates) Name() string { return "topic freqlens-state" }

// TestTopicStoreDropsGoneReplicas: of three replicas' pooled records, the
// one whose newest step is a span behind the latest and that has gone
// unwritten for GoneAfter is gone, one as far behind but written a minute
// ago is not; dropping the gone one deletes its record and nothing else,
// and a store that cannot write says so, naming the replica, and keeps it.
func TestTopicStoreDropsGoneReplicas(t *testing.T) {
	sh := smallShape
	now := time.Now()
	latest := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	behind := latest.Add(-100 * time.Hour) // far more than the span of 10 steps
	mem := &memStates{vals: map[string][]byte{
		poolKey("live"):   encodePool("live", smallSnapshot(latest), now),
		poolKey("gone"):   encodePool("gone", smallSnapshot(behind), now.Add(-2*GoneAfter)),
		poolKey("recent"): encodePool("recent", smallSnapshot(behind), now.Add(-time.Minute)),
	}}
	ts := NewTopicStore(mem, "live", sh)
	kept, err := ts.Read(sh, false, func(where string, err error) { t.Errorf("skipped %s: %v", where, err) })
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 3 {
		t.Fatalf("read %d replicas' calibrations, want 3", len(kept))
	}
	gone := Gone(kept, sh, now)
	if len(gone) != 1 || gone[0].Where != "replica gone" {
		t.Fatalf("gone = %v, want only replica gone", wheres(gone))
	}

	mem.failPut = errors.New("broker unreachable")
	err = ts.Drop(gone[0])
	if err == nil || !strings.Contains(err.Error(), "replica gone") || !strings.Contains(err.Error(), "broker unreachable") {
		t.Errorf("Drop with a store that cannot write = %v, want an error naming the replica and the cause", err)
	}
	if _, ok := mem.vals[poolKey("gone")]; !ok {
		t.Fatal("a failed Drop deleted the record")
	}

	mem.failPut = nil
	if err := ts.Drop(gone[0]); err != nil {
		t.Fatal(err)
	}
	if _, ok := mem.vals[poolKey("gone")]; ok {
		t.Error("the gone replica's pooled record is still on the topic")
	}
	for _, r := range []string{"live", "recent"} {
		if _, ok := mem.vals[poolKey(r)]; !ok {
			t.Errorf("dropping the gone replica deleted %s's record", r)
		}
	}
	kept, err = ts.Read(sh, false, nil)
	if err != nil || len(kept) != 2 {
		t.Errorf("after the drop, read %v (%v), want live and recent", wheres(kept), err)
	}
}

// smallShape is the layout of one channel, two steps and one level that
// the store tests keep.
var smallShape = Shape{Levels: []float64{0.8}, H: 2, C: 1, ProfileBins: 1, Experts: 1, LossStride: 1, Span: 10, Cadence: time.Hour, Model: 7}

// smallSnapshot is a calibration of smallShape whose newest step is newest.
func smallSnapshot(newest time.Time) *Snapshot {
	sh := smallShape
	return &Snapshot{Version: Version, Levels: sh.Levels, H: sh.H, C: sh.C, Newest: newest, Model: sh.Model,
		AbsErr: make([]float64, 2), Weight: make([]float64, 2), ProfSum: []float64{1}, ProfW: []float64{1}, ProfAt: []int64{0}}
}

func wheres(kept []Kept) []string {
	var w []string
	for _, k := range kept {
		w = append(w, k.Where)
	}
	return w
}
