package gemm

import (
	"fmt"
	"math"
)

// GELU writes the tanh form of the Gaussian error linear unit of x to y, and
// to t the hyperbolic tangent it uses, which the derivative needs:
//
//	u[i] = √(2/π)·(x[i] + 0.044715·x[i]³)
//	t[i] = tanh(u[i])
//	y[i] = 0.5·x[i]·(1 + t[i])
//
// u is rounded as the Go expression 0.7978845608028654*(x+0.044715*x*x*x)
// rounds it without fused multiply-adds, and y as 0.5*x*(1+t), so a caller
// holding x and t can recompute y exactly.
//
// For every finite x, t is within 4e-16 of math.Tanh(u) (2.2e-16 measured)
// and y within 4e-16·max(1, |x|) of 0.5·x·(1 + math.Tanh(u)). t never exceeds
// 1 in magnitude, has the sign of x, and is exactly ±1 once |u| ≥ 19.1,
// where tanh rounds to ±1. x = ±0 gives t = y = ±0; x = +Inf gives t = 1
// and y = +Inf; x = −Inf gives t = −1 and y = −0, the limit of GELU from
// below, where 0.5·x·(1 + t) would be NaN; NaN gives NaN in both.
//
// y, t and x must have the same length, and y and t must not overlap x or
// each other. GELU panics if the lengths differ. It never allocates and is
// safe for concurrent use by calls that write disjoint slices. On a Zen 4
// core with AVX2 it takes 2 to 3 ns per element, 7 to 8 times less than a
// loop over math.Tanh; the assembly and the Go versions perform the same
// operations in the same order without fused multiply-adds, so both give the
// same bits.
func GELU(y, t, x []float64) {
	n := len(x)
	if len(y) != n || len(t) != n {
		panic(fmt.Sprintf("gemm: GELU: len(y) = %d, len(t) = %d and len(x) = %d differ; "+
			"pass slices of equal length", len(y), len(t), n))
	}
	if n == 0 {
		return
	}
	geluAsm(y, t, x)
}

// The algorithm of GELU, lane by lane.
//
// With a = |u| clamped to 20 (where tanh has long rounded to 1), GELU
// computes T = tanh(a) ≥ +0 with math.Tanh's formulas, in two ranges:
//
//	a < 0.625:   T = a + a·w·P(w)/Q(w),   w = a²
//	a ≥ 0.625:   T = 1 − 2/(e^{2a} + 1)
//
// where P/Q is Cephes's rational approximation. Every lane evaluates the
// terms of both ranges and selects (A, N, D) = (a, a·w·P, Q) or
// (1, −2, e^{2a} + 1) for a single T = A + N/D, so that the vector code has
// no branch and one division. t is T with the sign bit of x, which is that
// of u. NaN fails both the clamp and the comparison a < 0.625, and so
// propagates through the second range.
//
// e^{2a} + 1 comes from the range reduction
//
//	2a = k·ln2 + r,   k = round(a·2log₂e) ∈ [0, 58],   |r| ≲ ln2/2
//	q  = e^r − 1 = r + r²·Σ_{j=0}^{11} r^j/(j+2)!
//	e^{2a} + 1 = (2^k + 1) + 2^k·q
//
// k is rounded with the 1.5·2^52 trick: adding 1.5·2^52 leaves k in the low
// bits of the sum, and shifting those bits left by 52 and adding 1023<<52 as
// integers builds 2^k, which AVX2 can do (VPSLLQ, VPADDQ) although it cannot
// convert float64 to int64. ln2 is split in two so that k·ln2Hi is exact.
// The Taylor polynomial truncated after r^13 is within 2^-57 of e^r relative
// to it, and Estrin's scheme (pairs of coefficients joined by r, pairs of
// pairs by r², then r⁴ and r⁶) keeps its dependency chain short. 2^k·q is
// exact, and so is 2^k + 1 where it matters (k ≤ 52), so the sum is the only
// rounding after q.
//
// Measured against tanh in 120-bit arithmetic, T is within 1.2 ulp of
// tanh(a), where math.Tanh is within 1.5 ulp, and within 0.55 ulp from a = 2
// on. Below a = 0.625 T has the bits of math.Tanh's portable code; above it
// the two differ in a few per cent of the samples, by 1 or 2 ulp, and in
// none past a = 4.
const (
	geluC     = 0.7978845608028654 // √(2/π), as in package model
	geluA     = 0.044715
	geluClamp = 20.0
	geluSplit = 0.625
	geluMagic = 0x1.8p52 // 1.5·2^52
	twoLog2E  = 2 / math.Ln2
	ln2Hi     = 6.93147180369123816490e-01 // ln2 rounded to 32 bits
	ln2Lo     = 1.90821492927058770002e-10 // ln2 − ln2Hi
	signBit   = 1 << 63
	expBias   = 1023 << 52

	// The coefficients of Cephes's tanh, as in package math.
	tanhP0 = -9.64399179425052238628e-1
	tanhP1 = -9.92877231001918586564e1
	tanhP2 = -1.61468768441708447952e3
	tanhQ0 = 1.12811678491632931402e2
	tanhQ1 = 2.23548839060100448583e3
	tanhQ2 = 4.84406305325125486048e3
)

// geluPoly holds 1/(j+2)! for j = 0…11, the coefficients of
// (e^r − 1 − r)/r² from the constant term up.
var geluPoly = [12]float64{
	1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
	1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800,
}

// geluGeneric is GELU in Go, operation for operation as geluKernel. The
// float64 conversions keep the compiler from fusing a product into the sum
// that follows it.
func geluGeneric(y, t, x []float64) {
	y, t = y[:len(x)], t[:len(x)]
	p := &geluPoly
	for i, xi := range x {
		u := geluC * (xi + float64(float64(float64(geluA*xi)*xi)*xi))
		a := math.Abs(u)
		if a > geluClamp { // false for NaN, which VMINPD keeps too
			a = geluClamp
		}

		// Cephes's rational function of a².
		w := float64(a * a)
		P := float64(float64(float64(tanhP0*w)+tanhP1)*w) + tanhP2
		Q := float64(float64(float64(float64(w+tanhQ0)*w)+tanhQ1)*w) + tanhQ2

		// e^{2a} + 1. kf takes a·2log₂e, which rounds as 2a·log₂e does,
		// so as not to wait for 2a.
		z := a + a
		kf := float64(a*twoLog2E) + geluMagic
		k := kf - geluMagic
		r := float64(z-float64(k*ln2Hi)) - float64(k*ln2Lo)
		r2 := float64(r * r)
		r4 := float64(r2 * r2)
		r6 := float64(r2 * r4)
		p01 := p[0] + float64(p[1]*r)
		p23 := p[2] + float64(p[3]*r)
		p45 := p[4] + float64(p[5]*r)
		p67 := p[6] + float64(p[7]*r)
		p89 := p[8] + float64(p[9]*r)
		pab := p[10] + float64(p[11]*r)
		p03 := p01 + float64(p23*r2)
		p47 := p45 + float64(p67*r2)
		p8b := p89 + float64(pab*r2)
		q := float64(r+float64(r2*p03)) + float64(r6*float64(p47+float64(r4*p8b)))
		s := math.Float64frombits(math.Float64bits(kf)<<52 + expBias) // 2^k
		e1 := float64(s+1) + float64(s*q)

		A, N, D := 1.0, -2.0, e1
		if a < geluSplit { // false for NaN, as VCMPPD's NLT_US is true
			A, N, D = a, float64(a*w)*P, Q
		}
		T := A + N/D
		ti := math.Float64frombits(math.Float64bits(T) | math.Float64bits(xi)&signBit)
		h := 0.5 * xi
		if h < -math.MaxFloat64 { // x = −Inf: y = −0 rather than −Inf·0
			h = -math.MaxFloat64
		}
		t[i] = ti
		y[i] = h * (1 + ti)
	}
}
