package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

func randSlice(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = 2*rng.Float64() - 1
	}
	return s
}

// benchProduct benchmarks one product on the listed shapes, for this
// package's dispatch ("gemm"), its pure-Go kernels ("go"), and gonum's
// blas64 Dgemm ("gonum"), reporting GFLOPS (2mnk per call).
func benchProduct(b *testing.B, o op, tA, tB blas.Transpose) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range listed[o.name] {
		ar, ac := o.aShape(s.m, s.n, s.k)
		br, bc := o.bShape(s.m, s.n, s.k)
		a, bm, c := randSlice(rng, ar*ac), randSlice(rng, br*bc), make([]float64, s.m*s.n)
		impls := []struct {
			name string
			f    func()
		}{
			{"gemm", func() { o.f(s.m, s.n, s.k, a, ac, bm, bc, c, s.n) }},
			{"go", func() {
				saved := useAsm
				useAsm = false
				o.f(s.m, s.n, s.k, a, ac, bm, bc, c, s.n)
				useAsm = saved
			}},
			{"gonum", func() {
				blas64.Implementation().Dgemm(tA, tB, s.m, s.n, s.k, 1, a, ac, bm, bc, 1, c, s.n)
			}},
		}
		for _, impl := range impls {
			b.Run(fmt.Sprintf("%v/%s", s, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					impl.f()
				}
				flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			})
		}
	}
}

func BenchmarkNN(b *testing.B) { benchProduct(b, ops[0], blas.NoTrans, blas.NoTrans) }
func BenchmarkTN(b *testing.B) { benchProduct(b, ops[1], blas.Trans, blas.NoTrans) }
func BenchmarkNT(b *testing.B) { benchProduct(b, ops[2], blas.NoTrans, blas.Trans) }

// BenchmarkWindow runs a chain of vector×matrix products shaped like one
// forward pass of a single window, about 650k multiply-adds over 5 MB of
// distinct weights, and reports windows per second on one goroutine.
func BenchmarkWindow(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	dims := []int{64, 672, 128, 672, 128, 672, 128, 672, 128}
	weights := make([][]float64, len(dims)-1)
	acts := make([][]float64, len(dims))
	macs := 0
	for i := range weights {
		weights[i] = randSlice(rng, dims[i]*dims[i+1])
		macs += dims[i] * dims[i+1]
	}
	for i := range acts {
		acts[i] = randSlice(rng, dims[i])
	}
	b.ReportAllocs()
	for b.Loop() {
		for i, w := range weights {
			clear(acts[i+1])
			NN(1, dims[i+1], dims[i], acts[i], dims[i], w, dims[i+1], acts[i+1], dims[i+1])
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/sec, "windows/s")
	b.ReportMetric(2*float64(macs)*float64(b.N)/sec/1e9, "GFLOPS")
}

func BenchmarkDot(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{64, 672, 2016} {
		x, y := randSlice(rng, n), randSlice(rng, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var s float64
			for b.Loop() {
				s += Dot(x, y)
			}
			b.ReportMetric(2*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
		})
	}
}

func BenchmarkAxpy(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{64, 672, 2016} {
		x, y := randSlice(rng, n), randSlice(rng, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				Axpy(1e-9, x, y)
			}
			b.ReportMetric(2*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
		})
	}
}
