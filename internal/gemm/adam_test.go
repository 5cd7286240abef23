package gemm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAdamStepAsmMatchesGo: the vector kernel and the Go loop give the same
// bits for every length (the kernel handles multiples of 4, Go the rest).
func TestAdamStepAsmMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	k := &AdamConsts{Clip: 0.7, Beta1: 0.9, OneMinusBeta1: 0.1, Beta2: 0.999, OneMinusBeta2: 1 - 0.999,
		Step: 1e-3 / (1 - 0.9*0.9), InvSqrtBC2: 1 / math.Sqrt(1-0.999*0.999), Eps: 1e-8, Decay: 1e-4}
	for _, n := range []int{1, 3, 4, 5, 8, 31, 64, 1001} {
		p, g, m, v := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range p {
			p[i], g[i], m[i], v[i] = rng.NormFloat64(), rng.NormFloat64(), 0.1*rng.NormFloat64(), 0.01*rng.Float64()
		}
		p2, g2, m2, v2 := slices.Clone(p), slices.Clone(g), slices.Clone(m), slices.Clone(v)
		AdamStep(p, g, m, v, k)
		adamGeneric(p2, g2, m2, v2, k)
		for i := range p {
			for _, pair := range [][2]float64{{p[i], p2[i]}, {m[i], m2[i]}, {v[i], v2[i]}} {
				if math.Float64bits(pair[0]) != math.Float64bits(pair[1]) {
					t.Fatalf("n=%d element %d: kernel %v, Go %v", n, i, pair[0], pair[1])
				}
			}
			if g[i] != 0 || g2[i] != 0 {
				t.Fatalf("n=%d: gradient %d not cleared", n, i)
			}
		}
	}
}

// TestAdamStepFirstStep checks one step against the textbook formula.
func TestAdamStepFirstStep(t *testing.T) {
	const lr, b1, b2, eps = 1e-2, 0.9, 0.999, 1e-8
	k := &AdamConsts{Clip: 1, Beta1: b1, OneMinusBeta1: 1 - b1, Beta2: b2, OneMinusBeta2: 1 - b2,
		Step: lr / (1 - b1), InvSqrtBC2: 1 / math.Sqrt(1-b2), Eps: eps}
	p, g, m, v := []float64{1, -2, 3, 0.5, 7}, []float64{0.5, -0.25, 2, 0, -1}, make([]float64, 5), make([]float64, 5)
	want := make([]float64, 5)
	for i := range p {
		// After one step m̂ = g and v̂ = g², so the step is lr·g/(|g| + ε).
		want[i] = p[i] - lr*g[i]/(math.Abs(g[i])+eps)
	}
	AdamStep(p, g, m, v, k)
	for i := range p {
		if math.Abs(p[i]-want[i]) > 1e-12 {
			t.Errorf("p[%d] = %v, want %v", i, p[i], want[i])
		}
	}
}

func BenchmarkAdamStep(b *testing.B) {
	n := 1 << 20
	p, g, m, v := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	k := &AdamConsts{Clip: 1, Beta1: 0.9, OneMinusBeta1: 0.1, Beta2: 0.999, OneMinusBeta2: 0.001, Step: 1e-3, InvSqrtBC2: 1, Eps: 1e-8}
	for _, asm := range []bool{true, false} {
		name := "go"
		if asm {
			name = "asm"
		}
		b.Run(name, func(b *testing.B) {
			saved := useAsm
			useAsm = useAsm && asm
			defer func() { useAsm = saved }()
			for b.Loop() {
				AdamStep(p, g, m, v, k)
			}
			b.ReportMetric(float64(b.N)*float64(n)/b.Elapsed().Seconds()/1e6, "Mparams/s")
		})
	}
}
