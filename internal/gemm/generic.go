package gemm

// The pure-Go kernels below are used when the CPU lacks AVX2 or FMA, on
// other architectures, and under the purego build tag. They assume shapes
// have been checked and m, n, k > 0.

func nnGeneric(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		ai := a[i*lda : i*lda+k]
		l := 0
		for ; l+4 <= k; l += 4 {
			axpy4(ai[l], ai[l+1], ai[l+2], ai[l+3],
				b[l*ldb:l*ldb+n], b[(l+1)*ldb:(l+1)*ldb+n],
				b[(l+2)*ldb:(l+2)*ldb+n], b[(l+3)*ldb:(l+3)*ldb+n], ci)
		}
		for ; l < k; l++ {
			axpyGeneric(ai[l], b[l*ldb:l*ldb+n], ci)
		}
	}
}

func tnGeneric(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		l := 0
		for ; l+4 <= k; l += 4 {
			axpy4(a[l*lda+i], a[(l+1)*lda+i], a[(l+2)*lda+i], a[(l+3)*lda+i],
				b[l*ldb:l*ldb+n], b[(l+1)*ldb:(l+1)*ldb+n],
				b[(l+2)*ldb:(l+2)*ldb+n], b[(l+3)*ldb:(l+3)*ldb+n], ci)
		}
		for ; l < k; l++ {
			axpyGeneric(a[l*lda+i], b[l*ldb:l*ldb+n], ci)
		}
	}
}

func ntGeneric(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	for i := 0; i < m; i++ {
		ai := a[i*lda : i*lda+k]
		ci := c[i*ldc : i*ldc+n]
		for j := range ci {
			ci[j] += dotGeneric(ai, b[j*ldb:j*ldb+k])
		}
	}
}

// axpy4 computes y += a0·x0 + a1·x1 + a2·x2 + a3·x3, reading and writing y
// once for four rows of B.
func axpy4(a0, a1, a2, a3 float64, x0, x1, x2, x3, y []float64) {
	x0 = x0[:len(y)]
	x1 = x1[:len(y)]
	x2 = x2[:len(y)]
	x3 = x3[:len(y)]
	for j, v := range y {
		y[j] = v + a0*x0[j] + a1*x1[j] + a2*x2[j] + a3*x3[j]
	}
}

// axpyGeneric computes y += alpha·x for len(y) ≥ len(x).
func axpyGeneric(alpha float64, x, y []float64) {
	y = y[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		xs := x[i : i+4 : i+4]
		ys := y[i : i+4 : i+4]
		ys[0] += alpha * xs[0]
		ys[1] += alpha * xs[1]
		ys[2] += alpha * xs[2]
		ys[3] += alpha * xs[3]
	}
	for ; i < len(x); i++ {
		y[i] += alpha * x[i]
	}
}

// dotGeneric returns x·y for len(y) ≥ len(x), with four partial sums.
func dotGeneric(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		xs := x[i : i+4 : i+4]
		ys := y[i : i+4 : i+4]
		s0 += xs[0] * ys[0]
		s1 += xs[1] * ys[1]
		s2 += xs[2] * ys[2]
		s3 += xs[3] * ys[3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}
