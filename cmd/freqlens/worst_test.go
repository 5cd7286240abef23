package main

import (
	"math"
	"slices"
	"testing"
)

// TestWorstFirst: errors are listed largest first, NaN (a series the model
// could not score) before all, ties in their order.
func TestWorstFirst(t *testing.T) {
	nan := math.NaN()
	got := []float64{0.2, nan, 0.5, math.Inf(1), 0.2, nan, 0}
	slices.SortStableFunc(got, worstFirst)
	want := []float64{nan, nan, math.Inf(1), 0.5, 0.2, 0.2, 0}
	for i := range want {
		if !(got[i] == want[i] || math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Fatalf("sorted %v, want %v", got, want)
		}
	}
}
