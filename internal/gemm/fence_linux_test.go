package gemm

import (
	"math"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// fenced returns a slice of n float64s that starts right after, or ends right
// before, a page that faults on any access, so that a kernel reading even one
// element outside its matrix crashes the test.
func fenced(t *testing.T, n int, atEnd bool) []float64 {
	t.Helper()
	if n == 0 {
		return nil
	}
	page := os.Getpagesize()
	size := (n*8+page-1)/page*page + 2*page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	off := page
	if atEnd {
		off = size - page - n*8
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&mem[off])), n)
}

// TestKernelsStayInBounds runs every kernel and column tail on matrices of
// the minimum length placed against inaccessible pages.
func TestKernelsStayInBounds(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly kernels on this CPU")
	}
	for _, atEnd := range []bool{false, true} {
		for _, o := range ops {
			for m := 1; m <= 7; m++ {
				for n := 1; n <= 13; n++ {
					for _, k := range []int{1, 2, 3, 5, 8} {
						ar, ac := o.aShape(m, n, k)
						br, bc := o.bShape(m, n, k)
						a, b := fenced(t, ar*ac, atEnd), fenced(t, br*bc, atEnd)
						c, want := fenced(t, m*n, atEnd), make([]float64, m*n)
						for i := range a {
							a[i] = float64(i%7) - 3
						}
						for i := range b {
							b[i] = float64(i%5) - 2
						}
						o.f(m, n, k, a, ac, b, bc, c, n)
						useAsm = false
						o.f(m, n, k, a, ac, b, bc, want, n)
						useAsm = true
						for i := range c {
							if math.Abs(c[i]-want[i]) > 1e-9 {
								t.Fatalf("%s m=%d n=%d k=%d: c[%d] = %v, want %v", o.name, m, n, k, i, c[i], want[i])
							}
						}
					}
				}
			}
		}
		for n := 1; n <= 40; n++ {
			x, y := fenced(t, n, atEnd), fenced(t, n, atEnd)
			Axpy(1, x, y)
			_ = Dot(x, y)
		}
	}
}

// TestGELUStaysInBounds runs GELU on slices of every length up to 40 placed
// against inaccessible pages.
func TestGELUStaysInBounds(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly kernels on this CPU")
	}
	for _, atEnd := range []bool{false, true} {
		for n := 1; n <= 40; n++ {
			x, y, th := fenced(t, n, atEnd), fenced(t, n, atEnd), fenced(t, n, atEnd)
			for i := range x {
				x[i] = float64(i) - 20
			}
			GELU(y, th, x)
			for i := range x {
				if wy, wt, _ := geluRef(x[i]); math.Abs(y[i]-wy) > 1e-15*math.Max(1, math.Abs(x[i])) || math.Abs(th[i]-wt) > 1e-15 {
					t.Fatalf("n=%d: GELU(%v) = (y %v, t %v), want (y %v, t %v)", n, x[i], y[i], th[i], wy, wt)
				}
			}
		}
	}
}
