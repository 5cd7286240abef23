package ftoa

import (
	"iter"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// check fails t when AppendFloat and strconv disagree on v.
func check(t *testing.T, v float64, bitSize int) {
	t.Helper()
	want := strconv.AppendFloat(nil, v, 'g', -1, bitSize)
	got := AppendFloat(nil, v, bitSize)
	if string(got) != string(want) {
		t.Fatalf("AppendFloat(%x, %d) = %s, strconv writes %s", math.Float64bits(v), bitSize, got, want)
	}
	// Appended after what dst holds, into its spare room or not.
	for _, room := range []int{0, 40} {
		dst := append(make([]byte, 0, 3+room), "x:["...)
		if got := AppendFloat(dst, v, bitSize); string(got) != "x:["+string(want) {
			t.Fatalf("AppendFloat(\"x:[\" with room for %d, %x, %d) = %s, want x:[%s", room, math.Float64bits(v), bitSize, got, want)
		}
	}
}

func TestAppendFloatEdges(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 100000, 1e6, 123456, 1234567,
		1e-4, 1e-5, 0.00012345, 0.000012345, 9.999999e5, 999999.5, 1e21, 1e22, 1e23, 5e-324, 1e-323,
		math.SmallestNonzeroFloat64, math.MaxFloat64, math.MaxFloat32, math.SmallestNonzeroFloat32,
		math.Inf(1), math.Inf(-1), math.NaN(), math.Pi, math.E, 1 << 53, 1<<53 + 2, 1<<53 - 1, 9007199254740993,
		2.2250738585072014e-308, 2.225073858507201e-308, 4.35, 0.015, 1.5, 2.5}
	for _, v := range vals {
		check(t, v, 64)
		check(t, float64(float32(v)), 32)
		check(t, -v, 64)
	}
	// Every power of two and its neighbours: the binades' irregular first
	// values and the exponents' ends.
	for e := -1074; e <= 1023; e++ {
		p := math.Ldexp(1, e)
		for _, v := range []float64{p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1))} {
			check(t, v, 64)
		}
		if e >= -149 && e <= 127 {
			p32 := float32(p)
			for _, v := range []float32{p32, math.Nextafter32(p32, 0), math.Nextafter32(p32, float32(math.Inf(1)))} {
				check(t, float64(v), 32)
			}
		}
	}
	// Every power of ten and its neighbours: the digit counts' ends.
	for e := -323; e <= 308; e++ {
		p, _ := strconv.ParseFloat("1e"+strconv.Itoa(e), 64)
		for _, v := range []float64{p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1))} {
			check(t, v, 64)
			check(t, float64(float32(v)), 32)
		}
	}
}

// TestAppendFloatRandom compares with strconv on seeded random bit patterns
// (every exponent equally likely) and on values like the service's
// forecasts (a few digits before the point).
func TestAppendFloatRandom(t *testing.T) {
	n := 250_000
	if testing.Short() {
		n = 50_000
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		check(t, math.Float64frombits(r.Uint64()), 64)
		check(t, float64(math.Float32frombits(r.Uint32())), 32)
		v := (r.Float64() - 0.3) * math.Pow(10, float64(r.IntN(12)-4))
		check(t, v, 64)
		check(t, float64(float32(v)), 32)
	}
}

// FuzzAppendFloat compares with strconv on any bit pattern, at both widths.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 1, 0.1, 1e23, 5e-324, math.MaxFloat64, 1 << 60, 123456.789} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		check(t, math.Float64frombits(bits), 64)
		check(t, float64(math.Float32frombits(uint32(bits))), 32)
	})
}

// TestAppendFloatEveryFloat32 compares with strconv on all 2^32 float32
// values, on every core; it takes 5–10 minutes on two cores, so it runs
// with FREQLENS_FTOA_EXHAUSTIVE=1.
func TestAppendFloatEveryFloat32(t *testing.T) {
	if os.Getenv("FREQLENS_FTOA_EXHAUSTIVE") == "" {
		t.Skip("set FREQLENS_FTOA_EXHAUSTIVE=1 to compare every float32 with strconv")
	}
	compareOnEveryCore(t, 32, func(w, workers int) iter.Seq[float64] {
		return func(yield func(float64) bool) {
			for x := uint64(w); x < 1<<32; x += uint64(workers) {
				if !yield(float64(math.Float32frombits(uint32(x)))) {
					return
				}
			}
		}
	})
}

// TestAppendFloatManyFloat64 compares with strconv on a billion seeded
// random float64 bit patterns, on every core; with FREQLENS_FTOA_EXHAUSTIVE=1
// (about four minutes on two cores).
func TestAppendFloatManyFloat64(t *testing.T) {
	if os.Getenv("FREQLENS_FTOA_EXHAUSTIVE") == "" {
		t.Skip("set FREQLENS_FTOA_EXHAUSTIVE=1 to compare a billion float64 with strconv")
	}
	compareOnEveryCore(t, 64, func(w, workers int) iter.Seq[float64] {
		return func(yield func(float64) bool) {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range 1_000_000_000 / workers {
				if !yield(math.Float64frombits(r.Uint64())) {
					return
				}
			}
		}
	})
}

// compareOnEveryCore compares AppendFloat with strconv at bitSize on the
// values each of GOMAXPROCS workers is given, and reports the first
// difference each finds.
func compareOnEveryCore(t *testing.T, bitSize int, values func(w, workers int) iter.Seq[float64]) {
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	fails := make(chan float64, workers)
	for w := range workers {
		wg.Go(func() {
			var a, b []byte
			for v := range values(w, workers) {
				a = strconv.AppendFloat(a[:0], v, 'g', -1, bitSize)
				b = AppendFloat(b[:0], v, bitSize)
				if string(a) != string(b) {
					fails <- v
					return
				}
			}
		})
	}
	wg.Wait()
	close(fails)
	for v := range fails {
		bits := math.Float64bits(v)
		if bitSize == 32 {
			bits = uint64(math.Float32bits(float32(v)))
		}
		t.Errorf("float%d bits %#x: AppendFloat writes %s, strconv %s", bitSize, bits,
			AppendFloat(nil, v, bitSize), strconv.AppendFloat(nil, v, 'g', -1, bitSize))
	}
}

// TestPow10Table recomputes the generated table with math/big.
func TestPow10Table(t *testing.T) {
	ten := big.NewInt(10)
	mask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 63), big.NewInt(1))
	for k := minPow10K; k <= maxPow10K; k++ {
		// g = ⌊10^−k·2^(125−e)⌋ + 1 with e = ⌊log2 10^−k⌋ = floorLog2Pow10(−k).
		e := floorLog2Pow10(-k)
		num, den := big.NewInt(1), big.NewInt(1)
		if k <= 0 {
			num.Exp(ten, big.NewInt(int64(-k)), nil)
		} else {
			den.Exp(ten, big.NewInt(int64(k)), nil)
		}
		if s := 125 - e; s >= 0 {
			num.Lsh(num, uint(s))
		} else {
			den.Lsh(den, uint(-s))
		}
		g := new(big.Int).Quo(num, den)
		g.Add(g, big.NewInt(1))
		if g.BitLen() != 126 {
			t.Fatalf("k=%d: g has %d bits, want 126 (floorLog2Pow10 is wrong)", k, g.BitLen())
		}
		hi, lo := new(big.Int).Rsh(g, 63).Uint64(), new(big.Int).And(g, mask).Uint64()
		if pow10G[k-minPow10K] != [2]uint64{hi, lo} {
			t.Fatalf("k=%d: table holds %#x, want {%#x, %#x}", k, pow10G[k-minPow10K], hi, lo)
		}
	}
}

// TestFloorLogs checks the fixed-point logarithms against math/big over the
// exponents the formatter uses.
func TestFloorLogs(t *testing.T) {
	for q := -1100; q <= 1100; q++ {
		// ⌊q·log10 2⌋: the k with 10^k ≤ 2^q < 10^(k+1).
		if got, want := floorLog10Pow2(q), floorLog10(new(big.Rat).SetFrac(pow2(q))); got != want {
			t.Fatalf("floorLog10Pow2(%d) = %d, want %d", q, got, want)
		}
		r := new(big.Rat).SetFrac(pow2(q))
		r.Mul(r, big.NewRat(3, 4))
		if got, want := floorLog10ThreeQuartersPow2(q), floorLog10(r); got != want {
			t.Fatalf("floorLog10ThreeQuartersPow2(%d) = %d, want %d", q, got, want)
		}
	}
	for e := -330; e <= 330; e++ {
		// ⌊e·log2 10⌋: the w with 2^w ≤ 10^e < 2^(w+1).
		num, den := pow10(e)
		want := num.BitLen() - den.BitLen()
		if new(big.Int).Lsh(den, uint(max(want, 0))).Cmp(new(big.Int).Lsh(num, uint(max(-want, 0)))) > 0 {
			want--
		}
		if got := floorLog2Pow10(e); got != want {
			t.Fatalf("floorLog2Pow10(%d) = %d, want %d", e, got, want)
		}
	}
}

func pow2(q int) (num, den *big.Int) {
	num, den = big.NewInt(1), big.NewInt(1)
	if q >= 0 {
		num.Lsh(num, uint(q))
	} else {
		den.Lsh(den, uint(-q))
	}
	return num, den
}

func pow10(e int) (num, den *big.Int) {
	num, den = big.NewInt(1), big.NewInt(1)
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(e, -e))), nil)
	if e >= 0 {
		num = p
	} else {
		den = p
	}
	return num, den
}

// floorLog10 returns ⌊log10 r⌋ for r > 0.
func floorLog10(r *big.Rat) int {
	k := 0
	ten := big.NewRat(10, 1)
	x := new(big.Rat).Set(r)
	one := big.NewRat(1, 1)
	for x.Cmp(ten) >= 0 {
		x.Quo(x, ten)
		k++
	}
	for x.Cmp(one) < 0 {
		x.Mul(x, ten)
		k--
	}
	return k
}

func BenchmarkAppendFloat(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 4096)
	for i := range vals {
		vals[i] = (r.Float64()*40 - 5)
	}
	for _, bitSize := range []int{32, 64} {
		buf := make([]byte, 0, 64)
		b.Run("ftoa/"+strconv.Itoa(bitSize), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				buf = AppendFloat(buf[:0], vals[i&4095], bitSize)
			}
		})
		b.Run("strconv/"+strconv.Itoa(bitSize), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				buf = strconv.AppendFloat(buf[:0], vals[i&4095], 'g', -1, bitSize)
			}
		})
	}
}
