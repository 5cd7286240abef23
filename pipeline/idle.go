package pipeline

import (
	"runtime/debug"
	runtimemetrics "runtime/metrics"
	"time"
)

// The pipeline's upkeep when readings pause: idle series expire, and the
// buffers a backlog's batches grew, with the garbage they left, go back to
// the operating system.

// freeAfter is how many series one expiry must evict for the pipeline to
// hand the freed memory back to the operating system at once (a burst of
// new series that went idle), instead of letting the runtime return it
// over minutes.
const freeAfter = 10_000

// idleReturns returns how many idle expiry periods after the last batch may
// hand memory back to the operating system: the first finds what the
// batches left, the next ones what was still live at the last collection
// during them, which the runtime's forced collection (at least every 2
// minutes) frees; so at least three periods, and enough of them to span
// 2.5 minutes. After them, what an idle replica allocates is its own
// upkeep, not a backlog's, and is left to the runtime.
func idleReturns(expire time.Duration) int {
	const span = 150 * time.Second
	if expire <= 0 {
		return 3
	}
	return max(3, int((span+expire-1)/expire))
}

// trimIdle drops the large buffers of the batches waiting for reuse, and
// of the workers' ready windows, when no batch came for a whole expiry
// period, and, when returnMemory is set, hands their memory back to the
// operating system when they were big (a backlog's batches), so that a
// catch-up does not leave its peak behind.
func (p *Pipeline) trimIdle(returnMemory bool) {
	var waiting [batchesInFlight]*outBatch
	n := 0
	var dropped uintptr
drain:
	for n < len(waiting) {
		select {
		case ob := <-p.free:
			dropped += ob.trimIdle()
			waiting[n] = ob
			n++
		default:
			break drain
		}
	}
	for _, ob := range waiting[:n] {
		p.free <- ob
	}
	t := trim{idle: true}
	for _, w := range p.workers {
		w.trimIdle(&t)
	}
	dropped += t.dropped
	// The garbage of a backlog's batches sits in the heap until the next
	// collection, which an idle replica may not reach for a long time (a
	// backlog smaller than the heap's goal), and then in the heap's free
	// pages until the runtime's scavenger returns it over minutes; an idle
	// replica collects and returns it at once.
	if !returnMemory {
		return
	}
	if reclaimable := p.reclaimable() + uint64(dropped); reclaimable >= freeBytesAfter {
		debug.FreeOSMemory()
		p.log.Info("idle after large batches; their memory returned", "bytes", reclaimable)
	}
}

// reclaimable returns what a collection would hand back to the operating
// system: the heap's free pages and its dead objects not yet swept (what
// objects occupy beyond the live bytes the last collection marked, an
// overestimate by what was allocated and kept since).
func (p *Pipeline) reclaimable() uint64 {
	p.heap[0].Name = "/memory/classes/heap/free:bytes"
	p.heap[1].Name = "/memory/classes/heap/objects:bytes"
	p.heap[2].Name = "/gc/heap/live:bytes"
	runtimemetrics.Read(p.heap[:])
	var v [3]uint64
	for i, s := range p.heap {
		if s.Value.Kind() != runtimemetrics.KindUint64 {
			return 0
		}
		v[i] = s.Value.Uint64()
	}
	free, objects, live := v[0], v[1], v[2]
	return free + objects - min(objects, live)
}

// freeBytesAfter is how many bytes the heap must hold free, or an idle trim
// drop, for the pipeline to hand them back to the operating system at once.
const freeBytesAfter = 32 << 20

// expireIdle forgets idle series on every worker.
func (p *Pipeline) expireIdle(now time.Time) {
	active, evicted := 0, 0
	for _, w := range p.workers {
		for _, set := range w.sets {
			evicted += set.Expire(now)
		}
		w.refresh()
		active += w.stats.Active
	}
	p.stats.active.Store(int64(active))
	p.met.windowStats.update(p.workers)
	if evicted >= freeAfter {
		debug.FreeOSMemory()
		p.log.Info("idle series expired; their memory returned", "expired", evicted, "active", active)
	}
}
