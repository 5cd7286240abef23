package online

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopNKeepsTheFirst: on random inputs with ties, topN keeps exactly
// the first n of the sorted input, in order.
func TestTopNKeepsTheFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		vals := make([]int, rng.IntN(60))
		for i := range vals {
			vals[i] = rng.IntN(20)
		}
		n := rng.IntN(10) - 1 // −1 and 0 keep every item
		top := newTopN(n, cmp.Compare[int])
		for _, v := range vals {
			top.add(v)
		}
		want := slices.Sorted(slices.Values(vals))
		if n > 0 {
			want = want[:min(n, len(want))]
		}
		if !slices.Equal(top.items, want) && !(len(want) == 0 && len(top.items) == 0) {
			t.Fatalf("top %d of %v = %v, want %v", n, vals, top.items, want)
		}
	}
}
