package pipeline

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	runtimemetrics "runtime/metrics"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/window"
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
			ob.shares[1].arena = make([]float64, 0, 1000) // 8 KB: always kept
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
			if cap(ob.shares[1].arena) != 1000 {
				t.Errorf("small buffer dropped")
			}
			if c.idle && dropped < keepBytes {
				t.Errorf("idle trim dropped %d bytes, want the large buffer's", dropped)
			}
		})
	}
}

// TestIdleTrimFreesTheArena: after a large batch, the idle trim frees the
// batch's arena (the forecasts' numbers): nothing the workers keep between
// batches (the last forecast handed to the learner or the observer, the
// bounds' slices) still points into it. It frees the worker's ready
// windows too.
func TestIdleTrimFreesTheArena(t *testing.T) {
	const L, H, series = 96, 24, 1500
	m, err := model.New(model.Config{Lookback: L, Horizon: H, Channels: 1, Mode: model.Independent, Hidden: 16, Frequencies: 8, TopK: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	ocfg := online.DefaultConfig()
	ocfg.Intervals = []float64{0.8}
	l, err := online.New(ocfg, m)
	if err != nil {
		t.Fatal(err)
	}
	var observed int
	p, err := New(Wiring{Fields: []string{"value"}, Cadence: time.Hour, ModelVersion: 1}, DefaultConfig(), nil, window.DefaultConfig(), m,
		sink.NewMemory(), WithOnline(l), WithForecastObserver(func(*wire.Forecast, []float64, []float64) { observed++ }))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, readings.Schema("value"))
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range L {
		for s := range series {
			ts := arrow.Timestamp(int64(k) * time.Hour.Milliseconds())
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("s-%d", s))
			b.Field(1).(*array.TimestampBuilder).Append(ts)
			b.Field(2).(*array.TimestampBuilder).Append(ts + 1000)
			b.Field(3).(*array.Float64Builder).Append(10 + rng.NormFloat64())
		}
	}
	rec := b.NewRecord()
	b.Release()
	defer rec.Release()

	w, ob := p.workers[0], newOutBatch(1)
	rows := w.rowsOf(0)
	for i := range int(rec.NumRows()) {
		*rows = append(*rows, i)
	}
	w.run(p, p.current.Load(), rec, false, &ob.shares[0])
	if sh := &ob.shares[0]; sh.err != nil || len(sh.fs) != series || observed != series {
		t.Fatalf("the batch gave %d forecasts (%d observed, error %v), want %d", len(sh.fs), observed, sh.err, series)
	}
	arena, ready := weak.Make(&ob.shares[0].arena[:1][0]), weak.Make(&w.ready.Values[:1][0])
	if dropped := ob.trimIdle(); dropped < keepBytes {
		t.Fatalf("the idle trim dropped %d bytes; the arena should exceed %d", dropped, keepBytes)
	}
	p.trimIdle(true)
	runtime.GC()
	if arena.Value() != nil {
		t.Error("the batch's arena is still reachable after the idle trim dropped it: a worker keeps a forecast of the last batch")
	}
	if ready.Value() != nil {
		t.Error("the worker's ready windows are still reachable after the idle trim")
	}
	runtime.KeepAlive(p) // the pipeline and its workers live on, as in a service
}

// TestIdleTrimReturnsUncollectedGarbage: a backlog's garbage that no
// collection has reached yet (less than the heap's goal, as a backlog of
// smaller forecasts leaves) is returned to the operating system by the
// idle trim too, not only pages a collection already freed.
func TestIdleTrimReturnsUncollectedGarbage(t *testing.T) {
	m, err := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 8, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	p, err := New(Wiring{Fields: []string{"value"}, Cadence: time.Hour, ModelVersion: 1}, DefaultConfig(), nil, window.DefaultConfig(), m, sink.NewMemory(),
		WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	returned := func() int { return strings.Count(log.String(), "their memory returned") }
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection but the trim's
	const size = 96 << 20
	garbage := make([]byte, size)
	for i := range garbage {
		garbage[i] = byte(i)
	}
	runtime.KeepAlive(garbage)
	garbage = nil
	released := func() uint64 {
		s := []runtimemetrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
		runtimemetrics.Read(s)
		return s[0].Value.Uint64()
	}
	before := released()
	p.trimIdle(true)
	if after := released(); after < before+size/2 || returned() != 1 {
		t.Errorf("the idle trim released %d MB of %d MB of uncollected garbage to the operating system (%d times), want at least half, once",
			(max(after, before)-before)>>20, size>>20, returned())
	}
	// Nothing left to return: the next idle period does not collect.
	p.trimIdle(true)
	if returned() != 1 {
		t.Errorf("a second idle trim with no new garbage returned memory again (%d times in all)", returned())
	}
	// Nor does one that may not return memory, whatever there is.
	garbage = make([]byte, size)
	clear(garbage)
	garbage = nil
	p.trimIdle(false)
	if returned() != 1 {
		t.Errorf("an idle trim told not to return memory did (%d times in all)", returned())
	}
}

// TestIdleReturnsSpanTheForcedCollection: the idle periods that may return
// memory cover at least three periods and 2.5 minutes, by which the
// runtime's forced collection has freed what the last batches still held.
func TestIdleReturnsSpanTheForcedCollection(t *testing.T) {
	for _, tc := range []struct {
		expire time.Duration
		want   int
	}{{time.Minute, 3}, {10 * time.Minute, 3}, {10 * time.Second, 15}, {40 * time.Second, 4}, {0, 3}} {
		if got := idleReturns(tc.expire); got != tc.want {
			t.Errorf("idleReturns(%v) = %d, want %d", tc.expire, got, tc.want)
		}
	}
}
