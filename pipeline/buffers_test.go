package pipeline

import (
	"testing"

	"github.com/freqlens/freqlens/wire"
)

// TestBuffersShrinkAfterABacklog checks that the buffers a backlog's large
// batch grew are not kept: an ordinary batch after it drops what it used
// less than a quarter of, an idle period drops everything above keepBytes,
// and buffers within keepBytes or well used are kept for reuse.
func TestBuffersShrinkAfterABacklog(t *testing.T) {
	const big = 20_000 // forecasts: several MB of wire.Forecast
	cases := []struct {
		name     string
		used     int // forecasts the last batch wrote into the big buffer
		idle     bool
		wantKept bool
	}{
		{"well used, busy", big, false, true},
		{"a third used, busy", big / 3, false, true},
		{"a tenth used, busy", big / 10, false, false},
		{"well used, idle", big, true, false},
		{"empty, idle", 0, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ob := newOutBatch(2)
			ob.all = make([]wire.Forecast, c.used, big)
			ob.parts[1].arena = make([]float64, 0, 1000) // 8 KB: always kept
			var dropped uintptr
			if c.idle {
				dropped = ob.trimIdle()
			} else {
				ob.reset(nil)
			}
			if kept := ob.all != nil; kept != c.wantKept {
				t.Errorf("large buffer kept = %v, want %v", kept, c.wantKept)
			}
			if len(ob.all) != 0 {
				t.Errorf("kept buffer not emptied: len %d", len(ob.all))
			}
			if cap(ob.parts[1].arena) != 1000 {
				t.Errorf("small buffer dropped")
			}
			if c.idle && dropped < keepBytes {
				t.Errorf("idle trim dropped %d bytes, want the large buffer's", dropped)
			}
		})
	}
}
