package gemm

import "fmt"

// NN computes
//
//	C += A·B
//
// where A is m×k with row stride lda ≥ max(1, k), B is k×n with row stride
// ldb ≥ max(1, n), and C is m×n with row stride ldc ≥ max(1, n). It does
// nothing when m, n or k is 0, and then reads no slice. C must not overlap
// A or B.
//
// NN panics if a dimension is negative, a stride is too small, or a slice is
// shorter than its matrix needs. It never allocates and is safe for
// concurrent use by calls that write disjoint parts of C.
func NN(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	mm("NN", false, false, m, n, k, a, lda, b, ldb, c, ldc)
}

// NNSet computes
//
//	C = A·B
//
// as NN does, but in place of C's old values, which it never reads (they
// may be anything, NaN included). The result is bit for bit what NN adds
// to a cleared C, without the pass that clears it. With k = 0 it sets the
// m×n C to zero.
func NNSet(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	mm("NNSet", false, true, m, n, k, a, lda, b, ldb, c, ldc)
}

// TN computes
//
//	C += Aᵀ·B
//
// where A is stored k×m with row stride lda ≥ max(1, m), B is k×n with row
// stride ldb ≥ max(1, n), and C is m×n with row stride ldc ≥ max(1, n). It
// does nothing when m, n or k is 0, and then reads no slice. C must not
// overlap A or B.
//
// TN panics if a dimension is negative, a stride is too small, or a slice is
// shorter than its matrix needs. It never allocates and is safe for
// concurrent use by calls that write disjoint parts of C.
func TN(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	mm("TN", true, false, m, n, k, a, lda, b, ldb, c, ldc)
}

// TNSet computes
//
//	C = Aᵀ·B
//
// as TN does, in place of C's old values, which it never reads; bit for bit
// what TN adds to a cleared C. With k = 0 it sets the m×n C to zero.
func TNSet(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	mm("TNSet", true, true, m, n, k, a, lda, b, ldb, c, ldc)
}

// mm checks and computes NN and TN (trans) products, added to C or set in
// its place (over).
func mm(op string, trans, over bool, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	checkDims(op, m, n, k)
	ar, ac := m, k
	if trans {
		ar, ac = k, m
	}
	checkStride(op, "A", ac, lda)
	checkStride(op, "B", n, ldb)
	checkStride(op, "C", n, ldc)
	if m == 0 || n == 0 || k == 0 && !over {
		return
	}
	if k > 0 {
		checkLen(op, "A", ar, ac, a, lda)
		checkLen(op, "B", k, n, b, ldb)
	}
	checkLen(op, "C", m, n, c, ldc)
	if over && (k == 0 || !useAsm) {
		// A·B is zero, or the Go kernels add onto a cleared C.
		for i := range m {
			clear(c[i*ldc : i*ldc+n])
		}
		over = false
	}
	switch {
	case k == 0:
	case useAsm && trans:
		tnAsm(over, m, n, k, a, lda, b, ldb, c, ldc)
	case useAsm:
		nnAsm(over, m, n, k, a, lda, b, ldb, c, ldc)
	case trans:
		tnGeneric(m, n, k, a, lda, b, ldb, c, ldc)
	default:
		nnGeneric(m, n, k, a, lda, b, ldb, c, ldc)
	}
}

// NT computes
//
//	C += A·Bᵀ
//
// where A is m×k with row stride lda ≥ max(1, k), B is stored n×k with row
// stride ldb ≥ max(1, k), and C is m×n with row stride ldc ≥ max(1, n). Each
// element of C gains the dot product of a row of A and a row of B. It does
// nothing when m, n or k is 0, and then reads no slice. C must not overlap
// A or B.
//
// NT panics if a dimension is negative, a stride is too small, or a slice is
// shorter than its matrix needs. It never allocates and is safe for
// concurrent use by calls that write disjoint parts of C.
func NT(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	checkDims("NT", m, n, k)
	checkStride("NT", "A", k, lda)
	checkStride("NT", "B", k, ldb)
	checkStride("NT", "C", n, ldc)
	if m == 0 || n == 0 || k == 0 {
		return
	}
	checkLen("NT", "A", m, k, a, lda)
	checkLen("NT", "B", n, k, b, ldb)
	checkLen("NT", "C", m, n, c, ldc)
	if useAsm {
		ntAsm(m, n, k, a, lda, b, ldb, c, ldc)
		return
	}
	ntGeneric(m, n, k, a, lda, b, ldb, c, ldc)
}

// Axpy computes
//
//	y += alpha·x
//
// element by element. It panics if len(x) != len(y), never allocates, and
// is safe for concurrent use on disjoint y. x and y must not overlap unless
// they are the same slice.
func Axpy(alpha float64, x, y []float64) {
	if len(x) != len(y) {
		panic(fmt.Sprintf("gemm: Axpy: len(x) = %d != len(y) = %d; pass slices of equal length", len(x), len(y)))
	}
	if len(x) == 0 {
		return
	}
	if useAsm {
		axpyAsm(alpha, x, y)
		return
	}
	axpyGeneric(alpha, x, y)
}

// Dot returns the dot product
//
//	Σ_i x[i]·y[i]
//
// and 0 for empty slices. It panics if len(x) != len(y), never allocates,
// and is safe for concurrent use.
func Dot(x, y []float64) float64 {
	if len(x) != len(y) {
		panic(fmt.Sprintf("gemm: Dot: len(x) = %d != len(y) = %d; pass slices of equal length", len(x), len(y)))
	}
	if len(x) == 0 {
		return 0
	}
	if useAsm {
		return dotAsm(x, y)
	}
	return dotGeneric(x, y)
}

func checkDims(op string, m, n, k int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: %s: negative dimension m = %d, n = %d, k = %d", op, m, n, k))
	}
}

// checkStride panics unless ld is a valid row stride for cols columns.
func checkStride(op, name string, cols, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm: %s: ld%s = %d is less than the %d columns of %s; "+
			"the row stride must be at least max(1, %d)", op, lowerName(name), ld, cols, name, cols))
	}
}

// checkLen panics unless s holds a rows×cols matrix with row stride ld, for
// rows, cols > 0 and a checked stride.
func checkLen(op, name string, rows, cols int, s []float64, ld int) {
	if rows-1 > (maxInt-cols)/ld {
		panic(fmt.Sprintf("gemm: %s: %s is %d×%d with row stride %d, which overflows int", op, name, rows, cols, ld))
	}
	if need := (rows-1)*ld + cols; len(s) < need {
		panic(fmt.Sprintf("gemm: %s: len(%s) = %d, but a %d×%d matrix with row stride %d needs at least %d elements",
			op, lowerName(name), len(s), rows, cols, ld, need))
	}
}

const maxInt = int(^uint(0) >> 1)

func lowerName(name string) string {
	switch name {
	case "A":
		return "a"
	case "B":
		return "b"
	default:
		return "c"
	}
}
