//go:build !purego

package gemm

import "unsafe"

//go:noescape
func adamKernel(p, grad, m, v *float64, n int, k *AdamConsts)

func adamAsm(p, g, m, v []float64, k *AdamConsts) {
	if !useAsm {
		adamGeneric(p, g, m, v, k)
		return
	}
	n4 := len(p) &^ 3
	if n4 > 0 {
		adamKernel(unsafe.SliceData(p), unsafe.SliceData(g), unsafe.SliceData(m), unsafe.SliceData(v), n4, k)
	}
	if n4 < len(p) {
		adamGeneric(p[n4:], g[n4:], m[n4:], v[n4:], k)
	}
}
