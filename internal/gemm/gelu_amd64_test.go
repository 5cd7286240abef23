//go:build !amd64.v3

package gemm

import (
	"math/rand/v2"
	"testing"
)

// TestGELUMatchesTanhForSmallU: below |u| = 0.625 GELU performs the
// operations of math.Tanh's portable code, which amd64 runs unfused unless
// GOAMD64 is v3 or higher, so t has the bits of math.Tanh(u).
func TestGELUMatchesTanhForSmallU(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 5))
	x := make([]float64, 100000)
	for i := range x {
		x[i] = 1.5 * (2*rng.Float64() - 1)
	}
	y, th := make([]float64, len(x)), make([]float64, len(x))
	impls(t, func(t *testing.T) {
		GELU(y, th, x)
		for i, xi := range x {
			if _, tRef, u := geluRef(xi); u < geluSplit && u > -geluSplit && th[i] != tRef {
				t.Fatalf("x = %v: t = %v, want math.Tanh(%v) = %v", xi, th[i], u, tRef)
			}
		}
	})
}
