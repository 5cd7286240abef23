package gemm_test

import (
	"fmt"

	"github.com/freqlens/freqlens/internal/gemm"
)

// A dense layer's forward pass for a batch of two inputs: Y = X·W + 1·bᵀ,
// with Y cleared first because NN accumulates.
func ExampleNN() {
	x := []float64{ // 2×3 inputs, one row per window
		1, 2, 3,
		4, 5, 6,
	}
	w := []float64{ // 3×2 weights
		1, 0,
		0, 1,
		1, 1,
	}
	bias := []float64{0.5, -0.5}
	y := make([]float64, 2*2)
	for i := 0; i < 2; i++ {
		copy(y[i*2:], bias)
	}
	gemm.NN(2, 2, 3, x, 3, w, 2, y, 2)
	fmt.Println(y)
	// Output: [4.5 4.5 10.5 10.5]
}

// The weight gradient of the same layer is Xᵀ·dY, a TN product summed over
// the batch.
func ExampleTN() {
	x := []float64{1, 2, 3, 4, 5, 6} // 2×3, stored batch-major
	dy := []float64{1, 0, 0, 1}      // 2×2
	dw := make([]float64, 3*2)
	gemm.TN(3, 2, 2, x, 3, dy, 2, dw, 2)
	fmt.Println(dw)
	// Output: [1 4 2 5 3 6]
}

// The input gradient is dY·Wᵀ, an NT product: each element is the dot
// product of a row of dY and a row of W.
func ExampleNT() {
	dy := []float64{1, 0, 0, 1}      // 2×2
	w := []float64{1, 0, 0, 1, 1, 1} // 3×2
	dx := make([]float64, 2*3)
	gemm.NT(2, 3, 2, dy, 2, w, 2, dx, 3)
	fmt.Println(dx)
	// Output: [1 0 1 0 1 1]
}

func ExampleAxpy() {
	y := []float64{1, 1, 1}
	gemm.Axpy(2, []float64{1, 2, 3}, y)
	fmt.Println(y, gemm.Dot(y, []float64{1, 0, 1}))
	// Output: [3 5 7] 10
}

// GELU keeps tanh(u) in t so that the backward pass gets the derivative
// without a second tanh:
//
//	dy/dx = 0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²)
func ExampleGELU() {
	x := []float64{-3, -1, 0, 0.5, 2}
	y, t := make([]float64, len(x)), make([]float64, len(x))
	gemm.GELU(y, t, x)
	for i, xi := range x {
		d := 0.5*(1+t[i]) + 0.5*xi*(1-t[i]*t[i])*0.7978845608028654*(1+3*0.044715*xi*xi)
		fmt.Printf("x = %4.1f   y = %9.6f   dy/dx = %9.6f\n", xi, y[i], d)
	}
	// Output:
	// x = -3.0   y = -0.003637   dy/dx = -0.011584
	// x = -1.0   y = -0.158808   dy/dx = -0.082964
	// x =  0.0   y =  0.000000   dy/dx =  0.500000
	// x =  0.5   y =  0.345714   dy/dx =  0.867370
	// x =  2.0   y =  1.954598   dy/dx =  1.086099
}
