package measure

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/freqlens/freqlens/model"
)

// PerturbationStep is what removing k frequencies from every window does,
// averaged over the windows (see Perturbation).
type PerturbationStep struct {
	// K is how many frequencies each window lost: its K largest parts by
	// share of the attribution (fewer when it has fewer parts).
	K int `json:"k"`
	// Change is the mean |forecast − forecast without them|, and Parts the
	// mean |Σ of their parts|: equal for an attribution faithful to removal.
	Change float64 `json:"change"`
	Parts  float64 `json:"parts"`
	// Gap is the largest |(forecast − forecast without them) − Σ parts|
	// over every value of every window, relative to that window's largest
	// |forecast|.
	Gap float64 `json:"gap"`
	// MSE is the error of the forecasts without the top K, RandomMSE that
	// without K of the window's parts drawn at random: removing the parts
	// that matter must cost more.
	MSE       float64 `json:"mse"`
	RandomMSE float64 `json:"random_mse"`
}

// PerturbationResult is the perturbation test of a model on a set of
// windows.
type PerturbationResult struct {
	Windows int                `json:"windows"`
	MSE     float64            `json:"mse"` // of the full forecasts
	Steps   []PerturbationStep `json:"steps"`
}

// Perturbation is the paper's perturbation test: for k = 1 … maxK it
// removes from every window of src the k frequencies with the largest
// share of its attribution (model.Workspace.Without: out of the
// selection, not replaced, and without their clock terms), forecasts
// again, and compares the change of the forecast with the sum of the
// removed parts, and the error with that of removing k parts at random.
// Errors are on src's scale (z-scores under the standard protocol), as
// Evaluate's. The random parts are drawn from seed.
//
// A model.Independent model explains each channel of a window on its own,
// so for it a window is one channel of one source window.
func Perturbation(ctx context.Context, m *model.Model, src model.Source, maxK int, seed uint64) (PerturbationResult, error) {
	if maxK < 1 {
		return PerturbationResult{}, errors.New("measure: perturbation needs at least k = 1")
	}
	b, err := m.NewBatcher(src)
	if err != nil {
		return PerturbationResult{}, err
	}
	cfg := m.Config()
	L, H, C := cfg.Lookback, cfg.Horizon, cfg.Channels
	HC := H * C
	n := b.Samples()
	if n == 0 {
		return PerturbationResult{}, errors.New("measure: no windows for the perturbation test")
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	x, y, tau := make([]float64, L*C), make([]float64, HC), make([]float64, C)
	full, part := m.NewWorkspace(1), m.NewWorkspace(1)
	fc, out := make([]float64, HC), make([]float64, HC)
	res := PerturbationResult{Windows: n, Steps: make([]PerturbationStep, maxK)}
	var att *model.Attribution
	var ids []int
	for i := range n {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
		}
		b.Fill(x, y, tau, []int{i})
		b.Forecast(full, fc, x, tau, 1)
		att = full.Attribution(0, att)
		scale := max(maxAbsOf(fc), 1e-12)
		res.MSE += sqErr(fc, y)
		cs := att.Contributions
		order := make([]int, len(cs))
		for j := range order {
			order[j] = j
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cs[b].Share, cs[a].Share) })
		for k := 1; k <= maxK; k++ {
			st := &res.Steps[k-1]
			st.K = k
			kk := min(k, len(cs))
			ids = ids[:0]
			for _, j := range order[:kk] {
				ids = append(ids, cs[j].ID)
			}
			part.Without(ids...)
			b.Forecast(part, out, x, tau, 1)
			change, parts, gap := 0.0, 0.0, 0.0
			for v := range HC {
				sum := 0.0
				for _, j := range order[:kk] {
					sum += cs[j].Values[v]
				}
				d := fc[v] - out[v]
				change += math.Abs(d)
				parts += math.Abs(sum)
				gap = max(gap, math.Abs(d-sum)/scale)
			}
			st.Change += change / float64(HC)
			st.Parts += parts / float64(HC)
			st.Gap = max(st.Gap, gap)
			st.MSE += sqErr(out, y)

			ids = ids[:0]
			for _, j := range rng.Perm(len(cs))[:kk] {
				ids = append(ids, cs[j].ID)
			}
			part.Without(ids...)
			b.Forecast(part, out, x, tau, 1)
			st.RandomMSE += sqErr(out, y)
		}
	}
	res.MSE /= float64(n)
	for k := range res.Steps {
		st := &res.Steps[k]
		st.Change /= float64(n)
		st.Parts /= float64(n)
		st.MSE /= float64(n)
		st.RandomMSE /= float64(n)
	}
	return res, nil
}

func maxAbsOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(x))
	}
	return m
}

// sqErr is the mean squared difference of a forecast and its target.
func sqErr(f, y []float64) float64 {
	s := 0.0
	for i, v := range f {
		d := v - y[i]
		s += d * d
	}
	return s / float64(len(f))
}
