// Package scratch holds the few slice helpers that model and explain both
// use to build attributions in storage they reuse: growing a slice by one
// element it may already hold, resizing without reallocating, and the
// element-wise sums their parts add up with. It imports nothing of ours.
package scratch

import "math"

// Grow1 extends *s by one element and returns it: the one the slice's
// storage held there before, when it has room, so that its own slices are
// reused, else a zero one.
func Grow1[T any](s *[]T) *T {
	k := len(*s)
	if cap(*s) > k {
		*s = (*s)[:k+1]
	} else {
		var zero T
		*s = append(*s, zero)
	}
	return &(*s)[k]
}

// Resize returns s with length n, reusing its storage when it is large
// enough.
func Resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// Storage returns n numbers: new ones from alloc, or old's storage resized
// when alloc is nil.
func Storage(alloc func(n int) []float64, old []float64, n int) []float64 {
	if alloc != nil {
		return alloc(n)[:n]
	}
	return Resize(old, n)
}

// AddTo adds src to dst, element by element.
func AddTo(dst, src []float64) {
	src = src[:len(dst)]
	for j, v := range src {
		dst[j] += v
	}
}

// AbsSum returns Σ|v[j]|, in order.
func AbsSum(v []float64) float64 {
	a := 0.0
	for _, x := range v {
		a += math.Abs(x)
	}
	return a
}
