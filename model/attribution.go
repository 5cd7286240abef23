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
	// Per output position: α·σ for the heads, σ and μ.
	hs, sr, lv := ws.attrHead[:HC], ws.attrSD[:HC], ws.attrLevel[:HC]
	for h := range H {
		for c := range C {
			hs[h*C+c], sr[h*C+c], lv[h*C+c] = alpha*sd[c], sd[c], mu[c]
		}
	}
	// The same expressions as the forward pass, so that with every
	// contribution zero the residual is the forecast to the last bit.
	fc, rd := dst.Forecast[:HC], dst.Residual[:HC]
	fs, res = fs[:HC], res[:HC]
	total := 0.0
	for j := range fc {
		fc[j] = (alpha*fs[j]+(1-alpha)*res[j])*sr[j] + lv[j]
		r := (1 - alpha) * res[j] * sr[j]
		rd[j] = r + lv[j]
		total += math.Abs(r)
	}
	for k := range K {
		f := int(ws.sel[i*K+k])
		slot := int(ws.pos[i*K+k])
		ct := &dst.Contributions[k]
		ct.Frequency = m.frequency(f)
		ct.Score = ws.score[i*cfg.Frequencies+f]
		ct.Values = resize(ct.Values, HC)
		vals := ct.Values[:HC]
		ct.Share = scaleAbsSum(vals, ws.contrib[slot*HC:(slot+1)*HC], hs)
		total += ct.Share
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

// addShares adds window i's attribution shares of the last Forward call to
// acc (N, by frequency id) and returns the residual's share: the same
// shares as Attribution gives, without building the contributions.
func (ws *Workspace) addShares(i int, acc []float64) float64 {
	m := ws.m
	cfg := m.cfg
	H, C, K := cfg.Horizon, cfg.Channels, cfg.TopK
	HC := H * C
	alpha := sigmoid(m.params.Fusion[0])
	sd, res := ws.sd[i*C:(i+1)*C], ws.res[i*HC:(i+1)*HC]
	resid := 0.0
	for j, v := range res {
		resid += math.Abs((1 - alpha) * v * sd[j%C])
	}
	// Two passes over the selected heads: the total first, then the shares,
	// so nothing is allocated for any K.
	total := resid
	for k := range K {
		total += ws.headAbs(i, k, alpha)
	}
	if total <= 0 {
		return 0
	}
	for k := range K {
		acc[ws.sel[i*K+k]] += ws.headAbs(i, k, alpha) / total
	}
	return resid / total
}

// headAbs is Σ|α·σ·g_f| of window i's rank-k selection.
func (ws *Workspace) headAbs(i, k int, alpha float64) float64 {
	C, K, HC := ws.cfg.Channels, ws.cfg.TopK, ws.cfg.Horizon*ws.cfg.Channels
	sd := ws.sd[i*C : (i+1)*C]
	slot := int(ws.pos[i*K+k])
	a := 0.0
	for j, v := range ws.contrib[slot*HC : (slot+1)*HC] {
		a += math.Abs(alpha * v * sd[j%C])
	}
	return a
}

// resize returns s with length n, reusing its storage when it is large enough.
func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// scaleAbsSum writes dst[j] = g[j]·s[j] and returns Σ|dst[j]|, four
// positions at a time so the additions overlap.
func scaleAbsSum(dst, g, s []float64) float64 {
	g, s = g[:len(dst)], s[:len(dst)]
	var a0, a1, a2, a3 float64
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		v0, v1, v2, v3 := g[i]*s[i], g[i+1]*s[i+1], g[i+2]*s[i+2], g[i+3]*s[i+3]
		dst[i], dst[i+1], dst[i+2], dst[i+3] = v0, v1, v2, v3
		a0 += math.Abs(v0)
		a1 += math.Abs(v1)
		a2 += math.Abs(v2)
		a3 += math.Abs(v3)
	}
	for ; i < len(dst); i++ {
		dst[i] = g[i] * s[i]
		a0 += math.Abs(dst[i])
	}
	return (a0 + a1) + (a2 + a3)
}
