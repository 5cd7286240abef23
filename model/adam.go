package model

import (
	"math"
	"sync/atomic"

	"github.com/freqlens/freqlens/internal/gemm"
)

// adam is the Adam optimiser (with AdamW's decoupled weight decay) over the
// flat parameter vector, with a learning-rate scale and a decay per tensor.
//
// A parameter whose gradient has been zero at every step so far has zero
// moments, and an Adam step without weight decay leaves it exactly as it
// is. update skips such parameters in chunks of adamChunk, so the heads of
// frequencies no window has selected cost a read of their gradient
// instead of a step.
type adam struct {
	m, v []float64
	segs []adamSegment
	t    int
	// live[c] is 1 once chunk c of the parameters has had a nonzero
	// gradient, after which its moments may be nonzero and it always
	// steps. Atomic: the two halves of a parallel update may share a chunk.
	live []atomic.Uint32
	// stale says the moments may have been written from outside (the
	// Stepper handed them out: a checkpoint restores into them), so the
	// next update first sets live from them.
	stale bool
}

// adamChunk is how many parameters share a live flag.
const adamChunk = 512

// adamSegment is one tensor's range of the parameter vector.
type adamSegment struct {
	lo, hi       int
	scale, decay float64
	frozen       bool // fine-tuning leaves this tensor as it is
}

const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
	adamEps   = 1e-8
)

func newAdam(cfg Config, freqScale, weightDecay float64) *adam {
	n := paramCount(cfg)
	a := &adam{m: make([]float64, n), v: make([]float64, n), live: make([]atomic.Uint32, (n+adamChunk-1)/adamChunk)}
	off := 0
	for _, t := range tensors(cfg) {
		k := numel(t.shape)
		sg := adamSegment{lo: off, hi: off + k, scale: 1}
		if t.component == "frequencies" {
			sg.scale = freqScale
		}
		if len(t.shape) >= 2 {
			sg.decay = weightDecay // weights only: not biases, θ, φ or α
		}
		a.segs = append(a.segs, sg)
		off += k
	}
	return a
}

// update applies one Adam step with gradient clip·g to p[lo:hi] and clears
// g[lo:hi].
func (a *adam) update(p, g []float64, clip, lr float64, lo, hi int) {
	if a.stale {
		panic("model: adam.update with stale live flags; apply calls relive first")
	}
	bc1 := 1 - math.Pow(adamBeta1, float64(a.t))
	bc2 := 1 - math.Pow(adamBeta2, float64(a.t))
	k := gemm.AdamConsts{
		Clip: clip, Beta1: adamBeta1, OneMinusBeta1: 1 - adamBeta1, Beta2: adamBeta2, OneMinusBeta2: 1 - adamBeta2,
		InvSqrtBC2: 1 / math.Sqrt(bc2), Eps: adamEps,
	}
	for _, sg := range a.segs {
		l, h := max(lo, sg.lo), min(hi, sg.hi)
		if l >= h || sg.frozen {
			continue
		}
		k.Step = sg.scale * lr / bc1
		k.Decay = lr * sg.decay
		if k.Decay != 0 {
			gemm.AdamStep(p[l:h], g[l:h], a.m[l:h], a.v[l:h], &k)
			continue
		}
		for c0 := l; c0 < h; {
			c := c0 / adamChunk
			c1 := min(h, (c+1)*adamChunk)
			if a.live[c].Load() == 0 {
				if allZero(g[c0:c1]) {
					c0 = c1 // zero gradient, zero moments: the step changes nothing
					continue
				}
				a.live[c].Store(1)
			}
			gemm.AdamStep(p[c0:c1], g[c0:c1], a.m[c0:c1], a.v[c0:c1], &k)
			c0 = c1
		}
	}
}

// relive sets the live flags from the moments, after they may have been
// written from outside (a checkpoint restored).
func (a *adam) relive() {
	a.stale = false
	for c := range a.live {
		lo, hi := c*adamChunk, min(len(a.m), (c+1)*adamChunk)
		if allZero(a.m[lo:hi]) && allZero(a.v[lo:hi]) {
			a.live[c].Store(0)
		} else {
			a.live[c].Store(1)
		}
	}
}

// allZero reports whether every value of g is zero.
func allZero(g []float64) bool {
	for _, v := range g {
		if v != 0 {
			return false
		}
	}
	return true
}

// freezeExcept marks every tensor whose component is not trainable as
// frozen: apply clears its gradient before clipping and Adam leaves it.
func (a *adam) freezeExcept(cfg Config, trainable func(tensor) bool) {
	for i, t := range tensors(cfg) {
		a.segs[i].frozen = !trainable(t)
	}
}

// clearFrozen zeroes the gradient of the frozen tensors within [lo, hi).
func (a *adam) clearFrozen(g []float64, lo, hi int) {
	for _, sg := range a.segs {
		if l, h := max(lo, sg.lo), min(hi, sg.hi); sg.frozen && l < h {
			clear(g[l:h])
		}
	}
}
