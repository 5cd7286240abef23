package backtest

import (
	"math"
	"time"
)

// grid holds each series' realised values on the windows' steps, what a
// forecast is scored against: the last reading of a step, as the windows
// keep it, and NaN for a step without one (a gap the windows filled is no
// realised value).
type grid struct {
	cadMs, alignMs int64
	C              int
	first          []int64     // per series: the step of values[0]
	values         [][]float64 // per series: steps × C, NaN where missing
	// scale is per series and channel the unit errors are counted in.
	scale [][]float64
	// lo and hi are per series the running minimum and maximum of each
	// channel up to each step (steps × C): how far the series has moved.
	lo, hi [][]float64
}

// newGrid puts h's readings on steps of cadence, aligned as align (the
// milliseconds added before flooring: window.AlignOffset). std, when set,
// is the scale of every series' channels (a mixed model's training
// standard deviations); else each series' channels are scaled by their
// own standard deviation over the history.
func newGrid(h *History, cadence, align time.Duration, std []float64) *grid {
	h.sort()
	C := len(h.Fields)
	g := &grid{cadMs: cadence.Milliseconds(), alignMs: align.Milliseconds(), C: C}
	S := len(h.Series)
	first, last := make([]int64, S), make([]int64, S)
	for i := range first {
		first[i], last[i] = math.MaxInt64, math.MinInt64
	}
	for _, r := range h.rows {
		k := g.step(r.ms)
		first[r.series] = min(first[r.series], k)
		last[r.series] = max(last[r.series], k)
	}
	g.first = first
	g.values = make([][]float64, S)
	for s := range S {
		if first[s] > last[s] {
			continue
		}
		v := make([]float64, int(last[s]-first[s]+1)*C)
		for i := range v {
			v[i] = math.NaN()
		}
		g.values[s] = v
	}
	for _, r := range h.rows {
		i := int(g.step(r.ms) - first[r.series])
		copy(g.values[r.series][i*C:(i+1)*C], h.valuesOf(r))
	}
	g.scale = make([][]float64, S)
	g.lo, g.hi = make([][]float64, S), make([][]float64, S)
	for s := range S {
		g.scale[s] = make([]float64, C)
		v := g.values[s]
		n := len(v) / C
		lo, hi := make([]float64, len(v)), make([]float64, len(v))
		for c := range C {
			var sum, sq, cnt float64
			mn, mx := math.Inf(1), math.Inf(-1)
			for t := range n {
				x := v[t*C+c]
				if !math.IsNaN(x) {
					sum, sq, cnt = sum+x, sq+x*x, cnt+1
					mn, mx = min(mn, x), max(mx, x)
				}
				lo[t*C+c], hi[t*C+c] = mn, mx
			}
			sd := 1.0
			if cnt > 1 {
				mean := sum / cnt
				sd = math.Sqrt(max(sq/cnt-mean*mean, 0) * cnt / (cnt - 1))
			}
			if len(std) == C {
				sd = std[c]
			}
			if !(sd > 1e-12) {
				sd = 1
			}
			g.scale[s][c] = sd
		}
		g.lo[s], g.hi[s] = lo, hi
	}
	return g
}

// step returns the step a reading at ms belongs to.
func (g *grid) step(ms int64) int64 {
	ms += g.alignMs
	k := ms / g.cadMs
	if ms%g.cadMs < 0 {
		k--
	}
	return k
}

// at returns series s's realised values at step k, nil when it has none.
func (g *grid) at(s int, k int64) []float64 {
	i := k - g.first[s]
	v := g.values[s]
	if i < 0 || int(i+1)*g.C > len(v) {
		return nil
	}
	return v[int(i)*g.C : int(i+1)*g.C]
}

// moved returns how far channel c of series s had moved by step k: its
// largest minus its smallest value so far (0 before any).
func (g *grid) moved(s int, k int64, c int) float64 {
	i := k - g.first[s]
	n := int64(len(g.values[s]) / g.C)
	if i < 0 {
		return 0
	}
	i = min(i, n-1)
	lo, hi := g.lo[s][int(i)*g.C+c], g.hi[s][int(i)*g.C+c]
	if math.IsInf(lo, 0) {
		return 0
	}
	return hi - lo
}
