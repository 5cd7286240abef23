package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrorQuantiles are quantiles of a model's forecast errors, realised minus
// forecast, per horizon step and model channel, measured on held-out
// windows in the units of the data they were measured on (z-scores under
// the standard protocol). A served model's prediction intervals start from
// them, so that they hold from the first forecast instead of after a
// warm-up on realised values (split conformal prediction; package online
// then adapts them to what it sees).
type ErrorQuantiles struct {
	// Probs are the probabilities, increasing in (0, 1).
	Probs []float64 `json:"probs"`
	// Horizon and Channels are the model's H and C (1 for a model of one
	// channel or an independent one, whose channels are pooled).
	Horizon  int `json:"horizon"`
	Channels int `json:"channels"`
	// Windows is how many (window, channel) samples were measured; Of how
	// many there were, when more (the measured ones are spread evenly over
	// them), 0 when they were all measured or the file does not say.
	Windows int `json:"windows"`
	Of      int `json:"of,omitempty"`
	// Values are len(Probs)×Horizon×Channels: Values[(p·H + h)·C + c] is
	// the Probs[p] quantile of the error at step h (0-based), channel c.
	Values []float64 `json:"values"`
}

// errorQuantileProbs are the probabilities MeasureErrorQuantiles records:
// the ends of the central intervals of 1% to 99%, densest in the tails.
var errorQuantileProbs = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
	0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975, 0.99, 0.995}

// Quantile returns the p quantile of the error at step h, channel c,
// interpolated linearly between the recorded probabilities and clamped to
// the outermost ones.
func (q *ErrorQuantiles) Quantile(p float64, h, c int) float64 {
	at := func(k int) float64 { return q.Values[(k*q.Horizon+h)*q.Channels+c] }
	n := len(q.Probs)
	switch {
	case p <= q.Probs[0]:
		return at(0)
	case p >= q.Probs[n-1]:
		return at(n - 1)
	}
	k, _ := slices.BinarySearch(q.Probs, p) // Probs[k-1] < p <= Probs[k]
	lo, hi := q.Probs[k-1], q.Probs[k]
	w := (p - lo) / (hi - lo)
	return (1-w)*at(k-1) + w*at(k)
}

// check reports quantiles whose shapes disagree with cfg or whose numbers
// are not quantiles.
func (q *ErrorQuantiles) check(cfg Config) error {
	switch {
	case q.Horizon != cfg.Horizon || q.Channels != quantileChannels(cfg):
		return fmt.Errorf("error quantiles of horizon %d × %d channels for a model of horizon %d × %d", q.Horizon, q.Channels, cfg.Horizon, quantileChannels(cfg))
	case len(q.Probs) == 0 || len(q.Values) != len(q.Probs)*q.Horizon*q.Channels:
		return fmt.Errorf("error quantiles: %d values for %d probabilities × %d steps × %d channels", len(q.Values), len(q.Probs), q.Horizon, q.Channels)
	}
	for k, p := range q.Probs {
		if !(p > 0 && p < 1) || k > 0 && !(p > q.Probs[k-1]) {
			return fmt.Errorf("error quantiles: probabilities %v are not increasing in (0, 1)", q.Probs)
		}
	}
	for _, v := range q.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("error quantiles: a value is not finite")
		}
	}
	return nil
}

// quantileChannels is the C of a model's error quantiles: its channels,
// pooled into one for an independent model (which forecasts each channel
// alone, as a series of its own).
func quantileChannels(cfg Config) int {
	if cfg.Mode == Independent {
		return 1
	}
	return cfg.Channels
}

// MeasureErrorQuantiles forecasts up to maxWindows samples of src, evenly
// spaced (every one when it holds fewer), and returns the quantiles of
// their errors per horizon step and channel. Measure them on windows the
// model was not trained on, in the units a server normalises its errors
// to — z-scores with the training rows' statistics: the test split under
// the standard protocol.
func MeasureErrorQuantiles(ctx context.Context, m *Model, src Source, maxWindows int) (*ErrorQuantiles, error) {
	bt, err := newBatcher(m, src)
	if err != nil {
		return nil, err
	}
	L, H, C := m.cfg.Lookback, m.cfg.Horizon, m.cfg.Channels
	samples := bt.samples()
	n := min(samples, maxWindows)
	if n < 1 {
		return nil, errors.New("model: no windows to measure the error quantiles on")
	}
	QC := quantileChannels(m.cfg)
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
		bt.fill(x, y, tau, idx)
		m.forward(ws, out[:k*H*C], x[:k*L*C], tau[:k*C], k, nil)
		bt.forecastsToReal(ws, out[:k*H*C], k)
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
	q := &ErrorQuantiles{Probs: slices.Clone(errorQuantileProbs), Horizon: H, Channels: QC, Windows: n,
		Values: make([]float64, len(errorQuantileProbs)*H*QC)}
	if samples > n {
		q.Of = samples
	}
	for i, e := range errs {
		if len(e) == 0 {
			return nil, errors.New("model: every target is missing; cannot measure the error quantiles")
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
