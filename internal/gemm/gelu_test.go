package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// geluRef computes GELU the way package model does, with math.Tanh.
func geluRef(x float64) (y, t, u float64) {
	u = geluC * (x + float64(float64(float64(geluA*x)*x)*x))
	t = math.Tanh(u)
	return 0.5 * x * (1 + t), t, u
}

// geluInputs returns a dense sweep of [−40, 40], random values at every
// scale from subnormal to MaxFloat64, the neighbourhoods of the points where
// the algorithm changes course, and the special values.
func geluInputs(rng *rand.Rand) []float64 {
	var xs []float64
	for i := -40000; i <= 40000; i++ {
		xs = append(xs, float64(i)*1e-3)
	}
	for range 200000 {
		// Uniform in log scale over the range where tanh bends.
		xs = append(xs, math.Copysign(math.Pow(10, -8+10*rng.Float64()), rng.Float64()-0.5))
	}
	for range 100000 {
		xs = append(xs, 3*rng.NormFloat64())
	}
	for range 20000 {
		// Any exponent, subnormals included.
		bits := rng.Uint64() &^ (0x7ff << 52)
		xs = append(xs, math.Float64frombits(bits|uint64(rng.IntN(0x7ff))<<52))
	}
	// x where u = 0.625 (the switch from the rational function to e^{2a}),
	// u = 19.06 (where tanh starts to round to 1), u = 20 (the clamp) and
	// where x³ overflows.
	for _, u := range []float64{0.625, 19.06, 20, math.MaxFloat64} {
		x := geluInverse(u)
		for _, s := range []float64{1, -1} {
			xi := s * x
			for range 2000 {
				xs = append(xs, xi)
				xi = math.Nextafter(xi, math.Inf(-1))
			}
			xi = s * x
			for range 2000 {
				xi = math.Nextafter(xi, math.Inf(1))
				xs = append(xs, xi)
			}
			for range 2000 {
				xs = append(xs, s*x*(1+1e-6*(2*rng.Float64()-1)))
			}
		}
	}
	return append(xs, 0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		0x1p-1022, -0x1p-1022, math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN())
}

// geluInverse returns the x ≥ 0 at which u(x) first reaches target, by
// bisection.
func geluInverse(target float64) float64 {
	lo, hi := 0.0, math.MaxFloat64
	for range 2000 {
		mid := lo + (hi-lo)/2
		if mid == lo || mid == hi {
			break
		}
		if _, _, u := geluRef(mid); u < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// TestGELUAccuracy checks t and y against math.Tanh for every finite input
// of geluInputs, in both implementations:
//
//	|t − tanh(u)| ≤ 4e-16,   |y − yRef| ≤ 4e-16·max(1, |x|),   |t| ≤ 1
//
// with t exactly ±1 once |u| ≥ 19.1 and the sign of t that of u.
func TestGELUAccuracy(t *testing.T) {
	const tolT, tolY = 4e-16, 4e-16
	x := geluInputs(rand.New(rand.NewPCG(1, 1)))
	impls(t, func(t *testing.T) {
		y, th := make([]float64, len(x)), make([]float64, len(x))
		GELU(y, th, x)
		var maxT, maxY, atT, atY float64
		for i, xi := range x {
			if math.IsInf(xi, 0) || math.IsNaN(xi) {
				continue
			}
			yRef, tRef, u := geluRef(xi)
			if d := math.Abs(th[i] - tRef); !(d <= maxT) {
				maxT, atT = d, xi
			}
			if d := math.Abs(y[i]-yRef) / math.Max(1, math.Abs(xi)); !(d <= maxY) {
				maxY, atY = d, xi
			}
			if !(math.Abs(th[i]) <= 1) || math.Signbit(th[i]) != math.Signbit(u) {
				t.Fatalf("x = %v: t = %v for u = %v, want |t| ≤ 1 with the sign of u", xi, th[i], u)
			}
			if math.Abs(u) >= 19.1 && math.Abs(th[i]) != 1 {
				t.Fatalf("x = %v: t = %v for u = %v, want exactly ±1", xi, th[i], u)
			}
		}
		t.Logf("%d inputs: max |t − tanh(u)| = %.3g at x = %v, max |y − yRef|/max(1, |x|) = %.3g at x = %v",
			len(x), maxT, atT, maxY, atY)
		if !(maxT <= tolT) {
			t.Errorf("max |t − tanh(u)| = %.3g at x = %v, want ≤ %g", maxT, atT, tolT)
		}
		if !(maxY <= tolY) {
			t.Errorf("max |y − yRef|/max(1, |x|) = %.3g at x = %v, want ≤ %g", maxY, atY, tolY)
		}
	})
}

func TestGELUSpecialValues(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		name  string
		x     float64
		wantY float64
		wantT float64
	}{
		{name: "+0", x: 0, wantY: 0, wantT: 0},
		{name: "−0 keeps its sign", x: negZero, wantY: negZero, wantT: negZero},
		{name: "smallest subnormal", x: math.SmallestNonzeroFloat64, wantY: 0, wantT: math.SmallestNonzeroFloat64},
		{name: "+Inf", x: math.Inf(1), wantY: math.Inf(1), wantT: 1},
		{name: "−Inf gives −0, the limit from below", x: math.Inf(-1), wantY: negZero, wantT: -1},
		{name: "MaxFloat64", x: math.MaxFloat64, wantY: math.MaxFloat64, wantT: 1},
		{name: "−MaxFloat64", x: -math.MaxFloat64, wantY: negZero, wantT: -1},
		{name: "tanh rounds to 1", x: 10, wantY: 10, wantT: 1},
		{name: "tanh rounds to −1", x: -10, wantY: negZero, wantT: -1},
		{name: "NaN", x: math.NaN(), wantY: math.NaN(), wantT: math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			impls(t, func(t *testing.T) {
				// Seven lanes: four through the kernel and three through
				// the tail.
				x, y, th := make([]float64, 7), make([]float64, 7), make([]float64, 7)
				for i := range x {
					x[i] = tc.x
				}
				GELU(y, th, x)
				for i := range x {
					if !sameFloat(y[i], tc.wantY) || !sameFloat(th[i], tc.wantT) {
						t.Errorf("lane %d: GELU(%v) = (y %v, t %v), want (y %v, t %v)",
							i, tc.x, y[i], th[i], tc.wantY, tc.wantT)
					}
				}
			})
		})
	}
}

// sameFloat reports whether a and b have the same bits or are both NaN,
// whose payload the two implementations need not agree on.
func sameFloat(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// TestGELUAsmMatchesGo: the vector kernel and the Go loop give the same bits
// for every input and every length (the kernel handles multiples of 4, Go
// the rest).
func TestGELUAsmMatchesGo(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly kernels on this CPU")
	}
	rng := rand.New(rand.NewPCG(1, 3))
	all := geluInputs(rng)
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 13, 64, 1001, len(all)} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			x := all[:n]
			y, th := make([]float64, n), make([]float64, n)
			y2, th2 := make([]float64, n), make([]float64, n)
			GELU(y, th, x)
			geluGeneric(y2, th2, x)
			for i := range x {
				if !sameFloat(y[i], y2[i]) || !sameFloat(th[i], th2[i]) {
					t.Fatalf("x[%d] = %v: kernel (y %v, t %v), Go (y %v, t %v)", i, x[i], y[i], th[i], y2[i], th2[i])
				}
			}
		})
	}
}

func TestGELUPanicsOnLengthMismatch(t *testing.T) {
	s := func(n int) []float64 { return make([]float64, n) }
	for _, tc := range []struct {
		name    string
		y, t, x []float64
		want    string
	}{
		{name: "short y", y: s(3), t: s(4), x: s(4), want: "len(y) = 3, len(t) = 4 and len(x) = 4 differ"},
		{name: "short t", y: s(4), t: s(3), x: s(4), want: "len(y) = 4, len(t) = 3 and len(x) = 4 differ"},
		{name: "long x", y: s(4), t: s(4), x: s(5), want: "len(y) = 4, len(t) = 4 and len(x) = 5 differ"},
		{name: "empty x", y: s(1), t: nil, x: nil, want: "len(y) = 1, len(t) = 0 and len(x) = 0 differ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.Contains(msg, tc.want) {
					t.Errorf("panic = %v, want a message containing %q", r, tc.want)
				}
			}()
			GELU(tc.y, tc.t, tc.x)
		})
	}
}

func TestGELUEmptyDoesNothing(t *testing.T) {
	GELU(nil, nil, nil)
	GELU([]float64{}, []float64{}, []float64{})
}

func TestGELUNoAllocations(t *testing.T) {
	impls(t, func(t *testing.T) {
		x, y, th := make([]float64, 1155), make([]float64, 1155), make([]float64, 1155)
		for i := range x {
			x[i] = float64(i-577) / 100
		}
		if got := testing.AllocsPerRun(20, func() { GELU(y, th, x) }); got != 0 {
			t.Errorf("AllocsPerRun = %v, want 0", got)
		}
	})
}

// BenchmarkGELU compares the kernel ("asm"), the Go loop ("go") and the
// loop over math.Tanh that package model ran before ("tanh") on standard
// normal inputs, in ns per element.
func BenchmarkGELU(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1152, 32768} {
		x, y, th := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		for _, impl := range []struct {
			name string
			f    func()
		}{
			{"asm", func() { GELU(y, th, x) }},
			{"go", func() {
				saved := useAsm
				useAsm = false
				GELU(y, th, x)
				useAsm = saved
			}},
			{"tanh", func() {
				for i, xi := range x {
					y[i], th[i], _ = geluRef(xi)
				}
			}},
		} {
			b.Run(fmt.Sprintf("n=%d/%s", n, impl.name), func(b *testing.B) {
				if impl.name == "asm" && !useAsm {
					b.Skip("no assembly kernels on this CPU")
				}
				b.ReportAllocs()
				for b.Loop() {
					impl.f()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/element")
			})
		}
	}
}
