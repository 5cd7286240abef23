// Package ftoa writes floating-point numbers as the shortest decimal that
// parses back to the same value, byte for byte as strconv.AppendFloat(dst,
// v, 'g', -1, bits) writes them, in about half to two thirds of its time
// (40–48 against 60–78 ns for a float32, 46–68 against 82–92 ns for a
// float64, each pair measured in the same run on the 2-core development
// machine, whose speed moves by half between minutes: BenchmarkAppendFloat).
//
// Why: a forecast message carries hundreds of numbers, and formatting them
// with strconv is the largest part of the service's CPU (27% of it in the
// production configuration), more than the model. strconv finds the
// digits quickly (Dragonbox) but then writes them out as text and lays
// that out one byte at a time through a general formatter; this package
// finds them with Schubfach (Raffaello Giulietti, "The Schubfach way to
// render doubles", 2020) as an integer, and writes them eight digits a
// store, each step of the conversion dividing every digit lane of a 64-bit
// word at once.
//
// The tests compare it with strconv on the edges of every exponent and on
// a million seeded random numbers, and, with FREQLENS_FTOA_EXHAUSTIVE=1, on
// every float32 and a billion random float64 bit patterns; numbers it does
// not handle itself (subnormals, zero, NaN, ±Inf) go to strconv.
package ftoa

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strconv"
)

// AppendFloat appends v as strconv.AppendFloat(dst, v, 'g', -1, bitSize)
// does: the shortest decimal that parses back to v at bitSize (32 or 64)
// precision, in %e form when its exponent is below −4 or at least 6 (the
// %e exponent has at least two digits). For bitSize 32, v must be a float32
// value converted to float64.
func AppendFloat(dst []byte, v float64, bitSize int) []byte {
	var (
		f uint64 // the digits, as an integer: v = ±f·10^e
		e int
	)
	if bitSize == 32 {
		b := math.Float32bits(float32(v))
		t := uint64(b & (1<<23 - 1))
		bq := int(b>>23) & 0xff
		if bq == 0 || bq == 0xff {
			return strconv.AppendFloat(dst, v, 'g', -1, 32)
		}
		if b>>31 != 0 {
			dst = append(dst, '-')
		}
		f, e = toDecimal32(bq-150, t|1<<23)
	} else {
		b := math.Float64bits(v)
		t := b & (1<<52 - 1)
		bq := int(b>>52) & 0x7ff
		if bq == 0 || bq == 0x7ff {
			return strconv.AppendFloat(dst, v, 'g', -1, 64)
		}
		if b>>63 != 0 {
			dst = append(dst, '-')
		}
		c := t | 1<<52
		q := bq - 1075
		if q < 0 && q > -53 && c&(1<<-q-1) == 0 {
			// An integer below 2^53: itself is the shortest, as the
			// spacing of its neighbours is at most 1/2.
			f, e = c>>-q, 0
		} else {
			f, e = toDecimal64(q, c)
		}
	}
	return layout(dst, f, e)
}

// toDecimal64 returns the shortest f·10^e (closest to v on a tie of length,
// even f on an exact tie) in the rounding interval of the normal float64
// v = c·2^q, c in [2^52, 2^53).
func toDecimal64(q int, c uint64) (uint64, int) {
	cb, cbl, k := interval(q, c, 1<<52, -1074)
	h := q + floorLog2Pow10(-k) + 2
	g := &pow10G[k-minPow10K]
	vb := roundToOdd64(g[0], g[1], cb<<h)
	vbl := roundToOdd64(g[0], g[1], cbl<<h)
	vbr := roundToOdd64(g[0], g[1], (cb+2)<<h)
	return choose(vb, vbl, vbr, c&1, k, c == 1<<52 && q != -77)
}

// toDecimal32 is toDecimal64 for the normal float32 v = c·2^q, c in
// [2^23, 2^24).
func toDecimal32(q int, c uint64) (uint64, int) {
	cb, cbl, k := interval(q, c, 1<<23, -149)
	h := q + floorLog2Pow10(-k) + 33
	g := pow10G[k-minPow10K][0] + 1
	vb := roundToOdd32(g, cb<<h)
	vbl := roundToOdd32(g, cbl<<h)
	vbr := roundToOdd32(g, (cb+2)<<h)
	return choose(vb, vbl, vbr, c&1, k, c == 1<<23 && q != -77)
}

// interval returns 4c, the lower end of v = c·2^q's rounding interval in
// quarters of 2^q (4c − 2; 4c − 1 at a binade's first value cMin above the
// smallest exponent qMin, whose neighbour below is half as far; the upper
// end is always 4c + 2) and the power of ten k that scales v to the
// digits Schubfach compares.
func interval(q int, c, cMin uint64, qMin int) (cb, cbl uint64, k int) {
	cb = c << 2
	if c != cMin || q == qMin {
		return cb, cb - 2, floorLog10Pow2(q)
	}
	return cb, cb - 1, floorLog10ThreeQuartersPow2(q)
}

// choose picks the decimal from the scaled value vb = 4·v·10^−k and the
// interval's ends vbl and vbr, each rounded to odd so that comparing them
// with multiples of 4 is exact: one digit fewer when exactly one of the two
// shorter candidates is inside, else the closer of s and s+1. An exact tie
// goes to the even one, as strconv's Dragonbox does, except that it goes up
// when tieUp is set: the first value of a binade, where Dragonbox rounds up
// (but at 2^−77·2^52, where it rounds to even).
//
// out is 1 when c is odd: then the interval's ends round away from v and
// are outside it.
func choose(vb, vbl, vbr, out uint64, k int, tieUp bool) (uint64, int) {
	s := vb >> 2
	if s >= 100 {
		sp10 := s / 10 * 10
		if d, ok := onlyInside(sp10, sp10+10, vbl, vbr, out); ok {
			return d, k
		}
	}
	t := s + 1
	if d, ok := onlyInside(s, t, vbl, vbr, out); ok {
		return d, k
	}
	// Both or neither: the closer.
	cmp := int64(vb - (s+t)<<1)
	if cmp < 0 || cmp == 0 && !tieUp && s&1 == 0 {
		return s, k
	}
	return t, k
}

// onlyInside returns whichever of the candidates u < w alone lies in the
// interval whose ends are vbl and vbr (in quarters, rounded to odd; out as
// for choose), and whether exactly one does.
func onlyInside(u, w, vbl, vbr, out uint64) (uint64, bool) {
	uin := vbl+out <= u<<2
	win := w<<2+out <= vbr
	if uin == win {
		return 0, false
	}
	if uin {
		return u, true
	}
	return w, true
}

// roundToOdd64 returns ⌊g·cp/2^127⌋ with its lowest bit set when the
// product is not a whole number (as far as the paper shows it matters),
// where g = g1·2^63 + g0.
func roundToOdd64(g1, g0, cp uint64) uint64 {
	x1, _ := bits.Mul64(g0, cp)
	y1, y0 := bits.Mul64(g1, cp)
	z := y0>>1 + x1
	vbp := y1 + z>>63
	return vbp | (z&(1<<63-1)+(1<<63-1))>>63
}

// roundToOdd32 returns ⌊g·cp/2^95⌋, rounded to odd as roundToOdd64.
func roundToOdd32(g, cp uint64) uint64 {
	x1, _ := bits.Mul64(g, cp)
	vbp := x1 >> 31
	return vbp | (x1&(1<<32-1)+(1<<32-1))>>32
}

// floorLog10Pow2 returns ⌊q·log10 2⌋ for |q| ≤ 5456721.
func floorLog10Pow2(q int) int { return (q * 661971961083) >> 41 }

// floorLog10ThreeQuartersPow2 returns ⌊log10(3/4·2^q)⌋ for |q| ≤ 5456721.
func floorLog10ThreeQuartersPow2(q int) int { return (q*661971961083 - 274743187321) >> 41 }

// floorLog2Pow10 returns ⌊e·log2 10⌋ for |e| ≤ 1233.
func floorLog2Pow10(e int) int { return (e * 913124641741) >> 38 }

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// layout appends f·10^e (f > 0) as strconv's shortest %g: %e form when the
// exponent of the first digit is below −4 or at least 6, else plain. It
// lays the number out in a buffer on the stack, eight digits a store
// (digits8), and appends it at once.
func layout(dst []byte, f uint64, e int) []byte {
	for f%10 == 0 {
		f /= 10
		e++
	}
	nd := decimalLen(f)
	dp := nd + e   // the decimal point's place: after the first dp digits
	var b [48]byte // at most 6 bytes of "0.0000", 20 digits and putDigits' 8 beyond them
	if x := dp - 1; x < -4 || x >= 6 {
		// d.ddde±xx: the digits go one place right, then the first moves
		// back over the point.
		putDigits(b[1:], f, nd)
		b[0] = b[1]
		n := 1
		if nd > 1 {
			b[1] = '.'
			n = nd + 1
		}
		sign := byte('+')
		if x < 0 {
			sign, x = '-', -x
		}
		switch {
		case x < 10:
			b[n], b[n+1], b[n+2], b[n+3] = 'e', sign, '0', byte('0'+x)
			n += 4
		case x < 100:
			b[n], b[n+1], b[n+2], b[n+3] = 'e', sign, digitPairs[2*x], digitPairs[2*x+1]
			n += 4
		default:
			b[n], b[n+1], b[n+2], b[n+3], b[n+4] = 'e', sign, byte('0'+x/100), digitPairs[2*(x%100)], digitPairs[2*(x%100)+1]
			n += 5
		}
		return appendShort(dst, &b, n)
	}
	switch {
	case dp <= 0: // 0.000ddd
		z := 2 - dp
		copy(b[:], "0.0000"[:z])
		putDigits(b[z:], f, nd)
		return appendShort(dst, &b, z+nd)
	case dp >= nd: // ddd000
		putDigits(b[:], f, nd)
		copy(b[nd:], "00000"[:dp-nd])
		return appendShort(dst, &b, dp)
	default: // dd.ddd: the digits go one place right, then the first dp
		// move back over the point.
		putDigits(b[1:], f, nd)
		for i := range dp {
			b[i] = b[i+1]
		}
		b[dp] = '.'
		return appendShort(dst, &b, nd+1)
	}
}

// appendShort appends b[:n] (n ≤ 32) to dst with at most four
// overlapping word stores, writing nothing past the n bytes: append's
// memmove call cost a quarter of the layout for the few bytes of a number.
func appendShort(dst []byte, b *[48]byte, n int) []byte {
	at := len(dst)
	dst = slices.Grow(dst, n)[:at+n]
	d := dst[at:]
	le := binary.LittleEndian
	switch {
	case n > 16:
		le.PutUint64(d, le.Uint64(b[0:]))
		le.PutUint64(d[8:], le.Uint64(b[8:]))
		le.PutUint64(d[n-16:], le.Uint64(b[n-16:]))
		le.PutUint64(d[n-8:], le.Uint64(b[n-8:]))
	case n >= 8:
		le.PutUint64(d, le.Uint64(b[0:]))
		le.PutUint64(d[n-8:], le.Uint64(b[n-8:]))
	case n >= 4:
		le.PutUint32(d, le.Uint32(b[0:]))
		le.PutUint32(d[n-4:], le.Uint32(b[n-4:]))
	default:
		for i := range n {
			d[i] = b[i]
		}
	}
	return dst
}

// decimalLen returns the number of decimal digits of f > 0.
func decimalLen(f uint64) int {
	// log10(f) ≈ log2(f)·1233/4096, then at most one too low.
	n := (bits.Len64(f) * 1233) >> 12
	if f >= pow10u64[n] {
		n++
	}
	return n
}

var pow10u64 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
	1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// putDigits writes f's nd decimal digits to b[:nd], and scratch to at most
// 8 bytes after them: eight digits a store (digits8).
func putDigits(b []byte, f uint64, nd int) {
	switch {
	case nd <= 8:
		binary.LittleEndian.PutUint64(b, digits8(uint32(f))>>(8*(8-nd)))
	case nd <= 16:
		binary.LittleEndian.PutUint64(b, digits8(uint32(f/1e8))>>(8*(16-nd)))
		binary.LittleEndian.PutUint64(b[nd-8:], digits8(uint32(f%1e8)))
	default:
		rest := f % 1e16
		binary.LittleEndian.PutUint64(b, digits8(uint32(f/1e16))>>(8*(24-nd)))
		binary.LittleEndian.PutUint64(b[nd-16:], digits8(uint32(rest/1e8)))
		binary.LittleEndian.PutUint64(b[nd-8:], digits8(uint32(rest%1e8)))
	}
}

// digits8 returns the eight decimal digits of x < 10^8, leading zeros
// included, as ASCII in the bytes of a little-endian word (the first digit
// lowest). Each step divides every lane at once by a multiply and shift
// that is exact in its range, no lane's product reaching the next: the two
// halves of four digits in 32-bit lanes (x/100 = x·10486 >> 20 for x <
// 10^4), then the pairs in 16-bit lanes (x/10 = x·103 >> 10 for x < 100).
func digits8(x uint32) uint64 {
	v := uint64(x/10000) | uint64(x%10000)<<32
	hi := (v * 10486 >> 20) & 0x0000007f_0000007f
	v = hi | (v-hi*100)<<16
	hi = (v * 103 >> 10) & 0x000f000f_000f000f
	v = hi | (v-hi*10)<<8
	return v | 0x30303030_30303030
}
