//go:build !amd64 || purego

package gemm

// useAsm is false without the amd64 kernels; tests may not set it to true.
var useAsm = false

func nnAsm(over bool, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	panic("gemm: no assembly kernels in this build")
}

func tnAsm(over bool, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	panic("gemm: no assembly kernels in this build")
}

func ntAsm(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	ntGeneric(m, n, k, a, lda, b, ldb, c, ldc)
}

func axpyAsm(alpha float64, x, y []float64) { axpyGeneric(alpha, x, y) }

func dotAsm(x, y []float64) float64 { return dotGeneric(x, y) }

func adamAsm(p, g, m, v []float64, k *AdamConsts) { adamGeneric(p, g, m, v, k) }

func geluAsm(y, t, x []float64) { geluGeneric(y, t, x) }
