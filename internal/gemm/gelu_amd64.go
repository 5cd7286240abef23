//go:build !purego

package gemm

import (
	"math"
	"unsafe"
)

// geluTable holds the constants of geluKernel, four copies of each so that
// the kernel can use them as 256-bit memory operands. The offsets K_… in
// gelu_amd64.s follow this order.
var geluTable = [...][4]uint64{
	splat(math.Float64bits(geluC)),
	splat(math.Float64bits(geluA)),
	splat(^uint64(signBit)), // clears the sign
	splat(signBit),
	splat(math.Float64bits(geluClamp)),
	splat(math.Float64bits(twoLog2E)),
	splat(math.Float64bits(geluMagic)),
	splat(math.Float64bits(ln2Hi)),
	splat(math.Float64bits(ln2Lo)),
	splat(math.Float64bits(geluPoly[0])),
	splat(math.Float64bits(geluPoly[1])),
	splat(math.Float64bits(geluPoly[2])),
	splat(math.Float64bits(geluPoly[3])),
	splat(math.Float64bits(geluPoly[4])),
	splat(math.Float64bits(geluPoly[5])),
	splat(math.Float64bits(geluPoly[6])),
	splat(math.Float64bits(geluPoly[7])),
	splat(math.Float64bits(geluPoly[8])),
	splat(math.Float64bits(geluPoly[9])),
	splat(math.Float64bits(geluPoly[10])),
	splat(math.Float64bits(geluPoly[11])),
	splat(expBias),
	splat(math.Float64bits(tanhP0)),
	splat(math.Float64bits(tanhP1)),
	splat(math.Float64bits(tanhP2)),
	splat(math.Float64bits(tanhQ0)),
	splat(math.Float64bits(tanhQ1)),
	splat(math.Float64bits(tanhQ2)),
	splat(math.Float64bits(geluSplit)),
	splat(math.Float64bits(1)),
	splat(math.Float64bits(-2)),
	splat(math.Float64bits(0.5)),
	splat(math.Float64bits(-math.MaxFloat64)),
}

// The kernel reads 33 entries, up to K_MMAX; these fail to compile otherwise.
const (
	_ = uint(len(geluTable) - 33)
	_ = uint(33 - len(geluTable))
)

func splat(b uint64) [4]uint64 { return [4]uint64{b, b, b, b} }

//go:noescape
func geluKernel(y, t, x *float64, n int, k *[4]uint64)

func geluAsm(y, t, x []float64) {
	if !useAsm {
		geluGeneric(y, t, x)
		return
	}
	n4 := len(x) &^ 3
	if n4 > 0 {
		geluKernel(unsafe.SliceData(y), unsafe.SliceData(t), unsafe.SliceData(x), n4, &geluTable[0])
	}
	if n4 < len(x) {
		geluGeneric(y[n4:], t[n4:], x[n4:])
	}
}
