package measure

import (
	"context"
	"errors"
	"math"
	"slices"

	"github.com/freqlens/freqlens/model"
)

// errorQuantileProbs are the probabilities ErrorQuantiles records:
// the ends of the central intervals of 1% to 99%, densest in the tails.
var errorQuantileProbs = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
	0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975, 0.99, 0.995}

// ErrorQuantiles forecasts up to maxWindows samples of src, evenly spaced
// (every one when it holds fewer), and returns the quantiles of their
// errors per horizon step and channel: the model's Meta.ErrorQuantiles,
// where a served model's prediction intervals start. An independent
// model's channels are pooled (model.ErrorQuantiles.Channels is 1).
// Measure them on windows the model was not trained on, in the units a
// server normalises its errors to — z-scores with the training rows'
// statistics: the test split under the standard protocol.
func ErrorQuantiles(ctx context.Context, m *model.Model, src model.Source, maxWindows int) (*model.ErrorQuantiles, error) {
	bt, err := m.NewBatcher(src)
	if err != nil {
		return nil, err
	}
	cfg := m.Config()
	L, H, C := cfg.Lookback, cfg.Horizon, cfg.Channels
	samples := bt.Samples()
	n := min(samples, maxWindows)
	if n < 1 {
		return nil, errors.New("measure: no windows to measure the error quantiles on")
	}
	QC := C // the channels of the quantiles: pooled into one for an independent model
	if cfg.Mode == model.Independent {
		QC = 1
	}
	errs := make([][]float64, H*QC) // per (h, c): the errors
	for i := range errs {
		errs[i] = make([]float64, 0, n*C/QC)
	}
	const batch = 256
	ws := m.NewWorkspace(batch)
	x, y, out := make([]float64, batch*L*C), make([]float64, batch*H*C), make([]float64, batch*H*C)
	tau := make([]float64, batch*C)
	idx := make([]int, 0, batch)
	for lo := 0; lo < n; lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		idx = idx[:0]
		for i := lo; i < min(lo+batch, n); i++ {
			idx = append(idx, int(int64(i)*int64(samples)/int64(n)))
		}
		k := len(idx)
		bt.Fill(x, y, tau, idx)
		bt.Forecast(ws, out[:k*H*C], x[:k*L*C], tau[:k*C], k)
		for j := range k {
			for i := range H * C {
				h, c := i/C, i%C
				if QC == 1 {
					c = 0
				}
				e := y[j*H*C+i] - out[j*H*C+i]
				if !math.IsNaN(e) {
					errs[h*QC+c] = append(errs[h*QC+c], e)
				}
			}
		}
	}
	q := &model.ErrorQuantiles{Probs: slices.Clone(errorQuantileProbs), Horizon: H, Channels: QC, Windows: n,
		Values: make([]float64, len(errorQuantileProbs)*H*QC)}
	if samples > n {
		q.Of = samples
	}
	for i, e := range errs {
		if len(e) == 0 {
			return nil, errors.New("measure: every target is missing; cannot measure the error quantiles")
		}
		slices.Sort(e)
		for k, p := range q.Probs {
			q.Values[k*H*QC+i] = sortedQuantile(e, p)
		}
	}
	return q, nil
}

// sortedQuantile is the p quantile of sorted values, linear between order
// statistics (the usual "type 7" definition).
func sortedQuantile(sorted []float64, p float64) float64 {
	pos := p * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	w := pos - float64(i)
	return (1-w)*sorted[i] + w*sorted[i+1]
}
