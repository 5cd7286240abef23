package model

import (
	"fmt"
	"math"
)

// Attribution splits one forecast into its parts:
//
//	ŷ = Σ_{f∈S} α·σ·g_f(c_f) + ((1−α)·σ·r(x̂) + μ)
//
// where S is the selected set, g_f frequency f's bias-free head, c_f its
// coefficients, r the residual MLP, and μ, σ the window's per-channel mean
// and standard deviation restored by instance normalisation (μ = 0, σ = 1
// without it). The contributions and the residual add up to the forecast
// exactly, up to floating-point rounding.
//
// Because the frequency part is a plain sum, each contribution is that
// frequency's Shapley value among the selected frequencies; a frequency with
// zero coefficients contributes exactly zero (its head has no bias).
type Attribution struct {
	// Alpha is α, the fusion weight of the frequency part.
	Alpha float64
	// Forecast is ŷ, Horizon×Channels row-major.
	Forecast []float64
	// Residual is (1−α)·σ·r(x̂) + μ: everything not credited to a frequency,
	// the window level included. Horizon×Channels.
	Residual []float64
	// Level is μ, the per-channel window mean inside Residual.
	Level []float64
	// Contributions has one entry per selected frequency, highest selection
	// score first.
	Contributions []Contribution
}

// Contribution is one selected frequency's part of a forecast.
type Contribution struct {
	Frequency
	// Score is the selection logit that chose this frequency.
	Score float64
	// Values is α·σ·g_f(c_f), Horizon×Channels, in the forecast's units.
	Values []float64
	// Share is this frequency's part of the total absolute attribution:
	// Σ|Values| over Σ|Values| of all frequencies plus Σ|Residual − Level|.
	Share float64
}

// Attribution writes the attribution of window i of the last Forward call to
// dst (a nil dst is allocated; its slices are reused when large enough) and
// returns it. It panics if i is outside the last batch.
func (ws *Workspace) Attribution(i int, dst *Attribution) *Attribution {
	if i < 0 || i >= ws.n {
		panic(fmt.Sprintf("model: Attribution(%d) outside the last batch of %d windows", i, ws.n))
	}
	if dst == nil {
		dst = new(Attribution)
	}
	m := ws.m
	cfg := m.cfg
	H, C, K := cfg.Horizon, cfg.Channels, cfg.TopK
	HC := H * C
	alpha := sigmoid(m.params.Fusion[0])
	dst.Alpha = alpha
	dst.Forecast = resize(dst.Forecast, HC)
	dst.Residual = resize(dst.Residual, HC)
	dst.Level = resize(dst.Level, C)
	if cap(dst.Contributions) < K {
		dst.Contributions = make([]Contribution, K)
	}
	dst.Contributions = dst.Contributions[:K]

	mu, sd := ws.mu[i*C:(i+1)*C], ws.sd[i*C:(i+1)*C]
	copy(dst.Level, mu)
	fs, res := ws.freqSum[i*HC:(i+1)*HC], ws.res[i*HC:(i+1)*HC]
	total := 0.0
	for j := range HC {
		c := j % C
		dst.Forecast[j] = (alpha*fs[j]+(1-alpha)*res[j])*sd[c] + mu[c]
		r := (1 - alpha) * res[j] * sd[c]
		dst.Residual[j] = r + mu[c]
		total += math.Abs(r)
	}
	for k := range K {
		f := int(ws.sel[i*K+k])
		slot := int(ws.pos[i*K+k])
		ct := &dst.Contributions[k]
		ct.Frequency = m.frequency(f)
		ct.Score = ws.score[i*cfg.Frequencies+f]
		ct.Values = resize(ct.Values, HC)
		g := ws.contrib[slot*HC : (slot+1)*HC]
		abs := 0.0
		for j := range HC {
			v := alpha * g[j] * sd[j%C]
			ct.Values[j] = v
			abs += math.Abs(v)
		}
		ct.Share = abs
		total += abs
	}
	for k := range dst.Contributions {
		if total > 0 {
			dst.Contributions[k].Share /= total
		} else {
			dst.Contributions[k].Share = 0
		}
	}
	return dst
}

// resize returns s with length n, reusing its storage when it is large enough.
func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}
