package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/internal/gemm"
)

// TestAdamSkipsOnlyWhatCannotMove: an update that skips the chunks whose
// gradient and moments are zero gives the parameters, moments and cleared
// gradient of a step over every parameter, bit for bit, over seeded
// steps with chunks of zero gradient, with and without weight decay, and
// after moments were restored from outside (a checkpoint) into chunks
// whose gradient is zero.
func TestAdamSkipsOnlyWhatCannotMove(t *testing.T) {
	cfg := Config{Lookback: 16, Horizon: 7, Channels: 3, Hidden: 8, Frequencies: 12, TopK: 3}.withDefaults()
	n := paramCount(cfg)
	for _, tc := range []struct {
		name     string
		decay    float64
		restored bool
	}{{"fresh", 0, false}, {"weight decay", 1e-2, false}, {"restored moments", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 1))
			a := newAdam(cfg, 5, tc.decay)
			ref := newAdam(cfg, 5, tc.decay)
			p := make([]float64, n)
			for i := range p {
				p[i] = rng.NormFloat64()
			}
			q := slices.Clone(p)
			if tc.restored {
				for i := range a.m {
					if (i/adamChunk)%2 == 0 {
						a.m[i], a.v[i] = 0.01*rng.NormFloat64(), 1e-4*rng.Float64()
					}
				}
				copy(ref.m, a.m)
				copy(ref.v, a.v)
				a.relive()
			}
			chunks := (n + adamChunk - 1) / adamChunk
			for step := range 6 {
				g := make([]float64, n)
				for c := range chunks {
					if rng.IntN(3) > 0 || (tc.restored && c%2 == 0 && step < 3) {
						continue // this chunk has no gradient this step
					}
					for i := c * adamChunk; i < min(n, (c+1)*adamChunk); i++ {
						g[i] = rng.NormFloat64()
					}
				}
				h := slices.Clone(g)
				a.t++
				ref.t++
				lr, clip := 1e-3, 0.7
				mid := n / 3 // as a parallel update splits the range
				a.update(p, g, clip, lr, 0, mid)
				a.update(p, g, clip, lr, mid, n)
				adamEverywhere(ref, q, h, clip, lr)
				for i := range p {
					if math.Float64bits(p[i]) != math.Float64bits(q[i]) || a.m[i] != ref.m[i] || a.v[i] != ref.v[i] || g[i] != 0 {
						t.Fatalf("step %d, parameter %d: %v (m %v, v %v, g %v) after the update that skips, %v (m %v, v %v) after a step of every parameter",
							step, i, p[i], a.m[i], a.v[i], g[i], q[i], ref.m[i], ref.v[i])
					}
				}
			}
		})
	}
}

// adamEverywhere is adam.update without skipping anything.
func adamEverywhere(a *adam, p, g []float64, clip, lr float64) {
	bc1 := 1 - math.Pow(adamBeta1, float64(a.t))
	bc2 := 1 - math.Pow(adamBeta2, float64(a.t))
	for _, sg := range a.segs {
		k := gemm.AdamConsts{Clip: clip, Beta1: adamBeta1, OneMinusBeta1: 1 - adamBeta1, Beta2: adamBeta2, OneMinusBeta2: 1 - adamBeta2,
			InvSqrtBC2: 1 / math.Sqrt(bc2), Eps: adamEps, Step: sg.scale * lr / bc1, Decay: lr * sg.decay}
		gemm.AdamStep(p[sg.lo:sg.hi], g[sg.lo:sg.hi], a.m[sg.lo:sg.hi], a.v[sg.lo:sg.hi], &k)
	}
}
