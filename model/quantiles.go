package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrorQuantiles are quantiles of a model's forecast errors, realised minus
// forecast, per horizon step and model channel, measured on held-out
// windows (package measure's ErrorQuantiles) in the units of the data
// they were measured on (z-scores under the standard protocol). A served model's prediction intervals start from
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
