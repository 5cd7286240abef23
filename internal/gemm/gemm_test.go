package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// op names one of the three products under test.
type op struct {
	name string
	f    func(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int)
	// aShape and bShape give the stored rows and columns of A and B.
	aShape, bShape func(m, n, k int) (rows, cols int)
	// at and bt return A(i,l) and B(l,j) of the product as stored.
	at func(a []float64, lda, i, l int) float64
	bt func(b []float64, ldb, l, j int) float64
}

var ops = []op{
	{
		name:   "NN",
		f:      NN,
		aShape: func(m, n, k int) (int, int) { return m, k },
		bShape: func(m, n, k int) (int, int) { return k, n },
		at:     func(a []float64, lda, i, l int) float64 { return a[i*lda+l] },
		bt:     func(b []float64, ldb, l, j int) float64 { return b[l*ldb+j] },
	},
	{
		name:   "TN",
		f:      TN,
		aShape: func(m, n, k int) (int, int) { return k, m },
		bShape: func(m, n, k int) (int, int) { return k, n },
		at:     func(a []float64, lda, i, l int) float64 { return a[l*lda+i] },
		bt:     func(b []float64, ldb, l, j int) float64 { return b[l*ldb+j] },
	},
	{
		name:   "NT",
		f:      NT,
		aShape: func(m, n, k int) (int, int) { return m, k },
		bShape: func(m, n, k int) (int, int) { return n, k },
		at:     func(a []float64, lda, i, l int) float64 { return a[i*lda+l] },
		bt:     func(b []float64, ldb, l, j int) float64 { return b[j*ldb+l] },
	},
}

// guard fills the parts of a backing slice outside a matrix.
var guard = math.Float64frombits(0x7ff8_dead_beef_0001)

// matrix is a rows×cols matrix with row stride ld inside a backing slice
// whose padding holds guard values.
type matrix struct {
	rows, cols, ld int
	data           []float64
}

func newMatrix(rng *rand.Rand, rows, cols, pad int) matrix {
	ld := max(1, cols) + pad
	n := 0
	if rows > 0 {
		n = (rows-1)*ld + cols
	}
	// Some backing slices are longer than the matrix needs, to catch writes
	// past its last element.
	n += rng.IntN(3)
	mt := matrix{rows: rows, cols: cols, ld: ld, data: make([]float64, n)}
	for i := range mt.data {
		mt.data[i] = guard
	}
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			mt.data[i*ld+j] = 2*rng.Float64() - 1
		}
	}
	return mt
}

func (mt matrix) inside(idx int) bool {
	i, j := idx/mt.ld, idx%mt.ld
	return i < mt.rows && j < mt.cols
}

type shape struct{ m, n, k int }

func (s shape) String() string { return fmt.Sprintf("%dx%dx%d", s.m, s.k, s.n) }

// listed are the shapes the forecasting model uses, m×k×n in the names.
var listed = map[string][]shape{
	"NN": {{1, 672, 64}, {1, 128, 672}, {1, 672, 128}, {1, 64, 64}, {8, 672, 64}, {16, 128, 672},
		{16, 672, 128}, {32, 128, 672}, {32, 672, 128}, {1024, 32, 64}, {512, 32, 64}},
	"TN": {{64, 672, 8}, {128, 672, 16}, {672, 128, 16}, {64, 32, 512}},
	"NT": {{8, 64, 672}, {16, 128, 672}, {512, 64, 32}, {16, 128, 2016}},
}

// impls runs f once per implementation that this machine can execute.
func impls(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	saved := useAsm
	defer func() { useAsm = saved }()
	if saved {
		useAsm = true
		t.Run("asm", f)
	}
	useAsm = false
	t.Run("go", f)
}

func checkProduct(t *testing.T, rng *rand.Rand, o op, s shape) {
	t.Helper()
	ar, ac := o.aShape(s.m, s.n, s.k)
	br, bc := o.bShape(s.m, s.n, s.k)
	a := newMatrix(rng, ar, ac, rng.IntN(4))
	b := newMatrix(rng, br, bc, rng.IntN(4))
	c := newMatrix(rng, s.m, s.n, rng.IntN(4))
	a0 := append([]float64(nil), a.data...)
	b0 := append([]float64(nil), b.data...)
	c0 := append([]float64(nil), c.data...)

	o.f(s.m, s.n, s.k, a.data, a.ld, b.data, b.ld, c.data, c.ld)

	for idx := range a.data {
		if math.Float64bits(a.data[idx]) != math.Float64bits(a0[idx]) {
			t.Fatalf("%s %v: a[%d] = %v, want it unmodified (%v)", o.name, s, idx, a.data[idx], a0[idx])
		}
	}
	for idx := range b.data {
		if math.Float64bits(b.data[idx]) != math.Float64bits(b0[idx]) {
			t.Fatalf("%s %v: b[%d] = %v, want it unmodified (%v)", o.name, s, idx, b.data[idx], b0[idx])
		}
	}
	for idx := range c.data {
		if !c.inside(idx) && math.Float64bits(c.data[idx]) != math.Float64bits(guard) {
			t.Fatalf("%s %v: c[%d] outside C = %v, want the guard value untouched", o.name, s, idx, c.data[idx])
		}
	}
	bad := 0
	for i := 0; i < s.m; i++ {
		for j := 0; j < s.n; j++ {
			want, scale := c0[i*c.ld+j], math.Abs(c0[i*c.ld+j])
			for l := 0; l < s.k; l++ {
				p := o.at(a.data, a.ld, i, l) * o.bt(b.data, b.ld, l, j)
				want += p
				scale += math.Abs(p)
			}
			got := c.data[i*c.ld+j]
			if math.Abs(got-want) > 1e-12*scale || math.IsNaN(got) {
				t.Errorf("%s %v: C(%d,%d) = %v, want %v", o.name, s, i, j, got, want)
				if bad++; bad > 5 {
					t.FailNow()
				}
			}
		}
	}
}

func TestProducts(t *testing.T) {
	impls(t, func(t *testing.T) {
		for _, o := range ops {
			t.Run(o.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, 1))
				var shapes []shape
				// Every small shape, so each kernel and each column tail runs.
				for m := 0; m <= 13; m++ {
					for n := 0; n <= 13; n++ {
						for _, k := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9} {
							shapes = append(shapes, shape{m, n, k})
						}
					}
				}
				for range 300 {
					shapes = append(shapes, shape{rng.IntN(41), rng.IntN(41), rng.IntN(41)})
				}
				// Several k blocks, with a short last block.
				shapes = append(shapes, shape{7, 37, 513}, shape{13, 9, 1030}, shape{2, 70, 600}, shape{1, 70, 1100})
				shapes = append(shapes, listed[o.name]...)
				for _, s := range shapes {
					checkProduct(t, rng, o, s)
				}
			})
		}
	})
}

func TestProductsTable(t *testing.T) {
	impls(t, func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			f       func(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int)
			m, n, k int
			a, b, c []float64
			lda     int
			ldb     int
			ldc     int
			want    []float64
		}{
			{
				name: "NN accumulates into C",
				f:    NN, m: 2, n: 2, k: 2,
				a: []float64{1, 2, 3, 4}, lda: 2,
				b: []float64{5, 6, 7, 8}, ldb: 2,
				c: []float64{1, 1, 1, 1}, ldc: 2,
				want: []float64{20, 23, 44, 51},
			},
			{
				name: "TN reads A transposed",
				f:    TN, m: 2, n: 2, k: 2,
				a: []float64{1, 3, 2, 4}, lda: 2,
				b: []float64{5, 6, 7, 8}, ldb: 2,
				c: []float64{0, 0, 0, 0}, ldc: 2,
				want: []float64{19, 22, 43, 50},
			},
			{
				name: "NT reads B transposed",
				f:    NT, m: 2, n: 2, k: 2,
				a: []float64{1, 2, 3, 4}, lda: 2,
				b: []float64{5, 7, 6, 8}, ldb: 2,
				c: []float64{0, 0, 0, 0}, ldc: 2,
				want: []float64{19, 22, 43, 50},
			},
			{
				name: "k = 0 leaves C unchanged",
				f:    NN, m: 2, n: 2, k: 0,
				a: nil, lda: 1,
				b: nil, ldb: 2,
				c: []float64{1, 2, 3, 4}, ldc: 2,
				want: []float64{1, 2, 3, 4},
			},
			{
				name: "NaN in A propagates",
				f:    NN, m: 1, n: 1, k: 1,
				a: []float64{math.NaN()}, lda: 1,
				b: []float64{0}, ldb: 1,
				c: []float64{0}, ldc: 1,
				want: []float64{math.NaN()},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := append([]float64(nil), tc.c...)
				tc.f(tc.m, tc.n, tc.k, tc.a, tc.lda, tc.b, tc.ldb, c, tc.ldc)
				for i := range c {
					if c[i] != tc.want[i] && !(math.IsNaN(c[i]) && math.IsNaN(tc.want[i])) {
						t.Errorf("c = %v, want %v", c, tc.want)
						break
					}
				}
			})
		}
	})
}

func TestVectors(t *testing.T) {
	impls(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(2, 2))
		for n := 0; n <= 70; n++ {
			x := make([]float64, n+2)
			y := make([]float64, n+2)
			for i := range x {
				x[i], y[i] = 2*rng.Float64()-1, 2*rng.Float64()-1
			}
			x[n], y[n], x[n+1], y[n+1] = guard, guard, guard, guard
			y0 := append([]float64(nil), y...)

			var want, scale float64
			for i := 0; i < n; i++ {
				want += x[i] * y[i]
				scale += math.Abs(x[i] * y[i])
			}
			if got := Dot(x[:n], y[:n]); math.Abs(got-want) > 1e-12*scale {
				t.Errorf("Dot(n=%d) = %v, want %v", n, got, want)
			}

			const alpha = -0.75
			Axpy(alpha, x[:n], y[:n])
			for i := 0; i < n; i++ {
				if want := y0[i] + alpha*x[i]; math.Abs(y[i]-want) > 1e-15*(math.Abs(y0[i])+math.Abs(alpha*x[i])) {
					t.Errorf("Axpy(n=%d): y[%d] = %v, want %v", n, i, y[i], want)
				}
			}
			for i := n; i < n+2; i++ {
				if math.Float64bits(y[i]) != math.Float64bits(guard) {
					t.Errorf("Axpy(n=%d): y[%d] past the end = %v, want the guard untouched", n, i, y[i])
				}
			}
		}
	})
}

func TestPanics(t *testing.T) {
	s := func(n int) []float64 { return make([]float64, n) }
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"negative m", func() { NN(-1, 2, 2, s(4), 2, s(4), 2, s(4), 2) }, "negative dimension"},
		{"NN lda < k", func() { NN(2, 2, 3, s(6), 2, s(6), 2, s(4), 2) }, "lda = 2 is less than the 3 columns of A"},
		{"NN ldb < n", func() { NN(2, 3, 2, s(4), 2, s(6), 2, s(6), 3) }, "ldb = 2 is less than the 3 columns of B"},
		{"NN ldc < n", func() { NN(2, 3, 2, s(4), 2, s(6), 3, s(6), 2) }, "ldc = 2 is less than the 3 columns of C"},
		{"NN short a", func() { NN(2, 2, 2, s(3), 2, s(4), 2, s(4), 2) }, "len(a) = 3"},
		{"NN short b", func() { NN(2, 2, 2, s(4), 2, s(3), 2, s(4), 2) }, "len(b) = 3"},
		{"NN short c", func() { NN(2, 2, 2, s(4), 2, s(4), 2, s(3), 2) }, "len(c) = 3"},
		{"TN lda < m", func() { TN(3, 2, 2, s(6), 2, s(4), 2, s(6), 2) }, "lda = 2 is less than the 3 columns of A"},
		{"TN short a", func() { TN(3, 2, 2, s(5), 3, s(4), 2, s(6), 2) }, "len(a) = 5"},
		{"NT ldb < k", func() { NT(2, 2, 3, s(6), 3, s(6), 2, s(4), 2) }, "ldb = 2 is less than the 3 columns of B"},
		{"NT short b", func() { NT(2, 3, 2, s(4), 2, s(5), 2, s(6), 3) }, "len(b) = 5"},
		{"zero stride even when empty", func() { NN(0, 0, 0, nil, 0, nil, 1, nil, 1) }, "lda = 0"},
		{"Axpy lengths", func() { Axpy(1, s(2), s(3)) }, "len(x) = 2 != len(y) = 3"},
		{"Dot lengths", func() { Dot(s(2), s(3)) }, "len(x) = 2 != len(y) = 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.Contains(msg, tc.want) {
					t.Errorf("panic = %v, want a message containing %q", r, tc.want)
				}
			}()
			tc.call()
		})
	}
}

func TestEmptyShapesDoNothing(t *testing.T) {
	// k = 0 reads no slice, C included: a nil C is no error.
	for _, o := range ops {
		o.f(2, 2, 0, nil, 2, nil, 2, nil, 2)
	}
	c := []float64{1, 2, 3, 4}
	for _, tc := range []struct {
		name    string
		m, n, k int
	}{
		{"m = 0", 0, 2, 2},
		{"n = 0", 2, 0, 2},
		{"k = 0", 2, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, o := range ops {
				o.f(tc.m, tc.n, tc.k, nil, 2, nil, 2, c, 2)
				if c[0] != 1 || c[1] != 2 || c[2] != 3 || c[3] != 4 {
					t.Errorf("%s changed C to %v, want [1 2 3 4]", o.name, c)
				}
			}
		})
	}
}

func TestNoAllocations(t *testing.T) {
	impls(t, func(t *testing.T) {
		const m, n, k = 13, 37, 300
		a, b, c := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
		for _, tc := range []struct {
			name string
			f    func()
		}{
			{"NN", func() { NN(m, n, k, a, k, b, n, c, n) }},
			{"TN", func() { TN(m, n, k, a, m, b, n, c, n) }},
			{"NT", func() { NT(m, n, k, a, k, b, k, c, n) }},
			{"NN m=1", func() { NN(1, n, k, a, k, b, n, c, n) }},
			{"Axpy", func() { Axpy(2, b, b) }},
			{"Dot", func() { _ = Dot(a, a) }},
		} {
			if got := testing.AllocsPerRun(20, tc.f); got != 0 {
				t.Errorf("%s: AllocsPerRun = %v, want 0", tc.name, got)
			}
		}
	})
}

// TestSetIsAddingToACleared checks NNSet and TNSet against NN and TN onto a
// cleared C, bit for bit, on every shape TestProducts runs: C starts full of
// NaN, which must never be read, and the elements outside C keep their guard.
func TestSetIsAddingToACleared(t *testing.T) {
	impls(t, func(t *testing.T) {
		for _, c := range []struct {
			name     string
			add, set func(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int)
			trans    bool
		}{
			{"NN", NN, NNSet, false},
			{"TN", TN, TNSet, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3, 3))
				var shapes []shape
				for m := 0; m <= 13; m++ {
					for n := 0; n <= 13; n++ {
						for _, k := range []int{0, 1, 2, 5, 9} {
							shapes = append(shapes, shape{m, n, k})
						}
					}
				}
				for range 200 {
					shapes = append(shapes, shape{rng.IntN(41), rng.IntN(41), rng.IntN(41)})
				}
				shapes = append(shapes, shape{7, 37, 513}, shape{13, 9, 1030}, shape{1, 70, 1100})
				shapes = append(shapes, listed[c.name]...)
				for _, s := range shapes {
					ar, ac := s.m, s.k
					if c.trans {
						ar, ac = s.k, s.m
					}
					a := newMatrix(rng, ar, ac, rng.IntN(3))
					b := newMatrix(rng, s.k, s.n, rng.IntN(3))
					got := newMatrix(rng, s.m, s.n, rng.IntN(3))
					want := matrix{rows: got.rows, cols: got.cols, ld: got.ld, data: append([]float64(nil), got.data...)}
					for idx := range got.data {
						if got.inside(idx) {
							got.data[idx] = math.NaN()
							want.data[idx] = 0
						}
					}
					c.set(s.m, s.n, s.k, a.data, a.ld, b.data, b.ld, got.data, got.ld)
					c.add(s.m, s.n, s.k, a.data, a.ld, b.data, b.ld, want.data, want.ld)
					for idx := range got.data {
						if math.Float64bits(got.data[idx]) != math.Float64bits(want.data[idx]) {
							t.Fatalf("%sSet %v: c[%d] = %v, want %v (%s onto a cleared C; inside C: %v)",
								c.name, s, idx, got.data[idx], want.data[idx], c.name, got.inside(idx))
						}
					}
				}
			})
		}
	})
}
