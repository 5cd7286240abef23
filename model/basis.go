package model

import (
	"math"
	"slices"
)

// basisEps keeps the normalisation of a (near) zero basis vector finite.
const basisEps = 1e-8

// basis is the cosine dictionary derived from θ and φ. It is recomputed
// whenever θ or φ change and is read-only otherwise, so many workspaces may
// share one.
type basis struct {
	freq   []float64 // N, f_i = fmin + (fmax−fmin)·σ(θ_i), cycles per step
	sig    []float64 // N, σ(θ_i)
	raw    []float64 // N×L, ψ_i(t) = cos(2π f_i t + φ_i)
	sin    []float64 // N×L, sin(2π f_i t + φ_i), for the backward pass
	norm   []float64 // N, ‖ψ_i‖
	psibar []float64 // N×L, ψ̄_i = ψ_i / (‖ψ_i‖ + ε)
	sum    []float64 // N, Σ_t ψ̄_i(t): the coefficient of a constant window
}

func newBasis(cfg Config) *basis {
	N, L := cfg.Frequencies, cfg.Lookback
	return &basis{
		freq:   make([]float64, N),
		sig:    make([]float64, N),
		raw:    make([]float64, N*L),
		sin:    make([]float64, N*L),
		norm:   make([]float64, N),
		psibar: make([]float64, N*L),
		sum:    make([]float64, N),
	}
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// compute fills b from θ and φ:
//
//	f_i    = fmin + (fmax − fmin)·σ(θ_i)
//	ψ_i(t) = cos(2π f_i t + φ_i),  t = 0 … L−1
//	ψ̄_i    = ψ_i / (‖ψ_i‖₂ + ε)
func (b *basis) compute(theta, phi []float64, lookback int) {
	fmin, fmax := freqBounds(lookback)
	L := lookback
	for i := range theta {
		s := sigmoid(theta[i])
		b.sig[i] = s
		f := fmin + (fmax-fmin)*s
		b.freq[i] = f
		raw := b.raw[i*L : (i+1)*L]
		sn := b.sin[i*L : (i+1)*L]
		ss := 0.0
		for t := range raw {
			a := 2*math.Pi*f*float64(t) + phi[i]
			sa, ca := math.Sincos(a)
			raw[t], sn[t] = ca, sa
			ss += ca * ca
		}
		nrm := math.Sqrt(ss)
		b.norm[i] = nrm
		inv := 1 / (nrm + basisEps)
		bar := b.psibar[i*L : (i+1)*L]
		sum := 0.0
		for t := range bar {
			bar[t] = raw[t] * inv
			sum += bar[t]
		}
		b.sum[i] = sum
	}
}

// backward turns ∂L/∂ψ̄ (N×L, consumed as scratch) into ∂L/∂θ and ∂L/∂φ,
// added to dTheta and dPhi.
//
// With r = ‖ψ‖ the normalisation has Jacobian
//
//	∂ψ̄_t/∂ψ_s = δ_ts/(r+ε) − ψ_t ψ_s / (r (r+ε)²)
//
// and ∂ψ(t)/∂f = −2πt·sin(·), ∂ψ(t)/∂φ = −sin(·), ∂f/∂θ = (fmax−fmin)·σ(1−σ).
func (b *basis) backward(dPsibar, dTheta, dPhi []float64, lookback int) {
	fmin, fmax := freqBounds(lookback)
	L := lookback
	for i := range b.freq {
		g := dPsibar[i*L : (i+1)*L]
		raw := b.raw[i*L : (i+1)*L]
		sn := b.sin[i*L : (i+1)*L]
		r := b.norm[i]
		dot := 0.0
		for t := range g {
			dot += raw[t] * g[t]
		}
		a := 1 / (r + basisEps)
		c := 0.0
		if r > 0 {
			c = dot / (r * (r + basisEps) * (r + basisEps))
		}
		df, dp := 0.0, 0.0
		for t := range g {
			dpsi := g[t]*a - raw[t]*c
			df -= dpsi * sn[t] * 2 * math.Pi * float64(t)
			dp -= dpsi * sn[t]
		}
		s := b.sig[i]
		dTheta[i] += df * (fmax - fmin) * s * (1 - s)
		dPhi[i] += dp
	}
}

// diversityEps keeps the log-barrier finite when two frequencies meet.
const diversityEps = 1e-8

// diversity returns the log-barrier on the gaps between sorted
// log-frequencies and adds scale times its gradient to dTheta:
//
//	L_div = −1/(N−1) · Σ_i log(Δ_i + ε),  Δ_i = log f_(i+1) − log f_(i)
//
// It keeps frequencies from collapsing onto each other. order is scratch of
// length N.
func (b *basis) diversity(scale float64, dTheta []float64, lookback int, order []int) float64 {
	N := len(b.freq)
	if N < 2 {
		return 0
	}
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int {
		switch {
		case b.freq[x] < b.freq[y]:
			return -1
		case b.freq[x] > b.freq[y]:
			return 1
		}
		return 0
	})
	fmin, fmax := freqBounds(lookback)
	loss := 0.0
	k := 1 / float64(N-1)
	for j := 0; j+1 < N; j++ {
		lo, hi := order[j], order[j+1]
		gap := math.Log(b.freq[hi]) - math.Log(b.freq[lo])
		loss -= k * math.Log(gap+diversityEps)
		if dTheta == nil {
			continue
		}
		// ∂L/∂gap = −k/(gap+ε); ∂gap/∂f_hi = 1/f_hi, ∂gap/∂f_lo = −1/f_lo.
		dg := -k / (gap + diversityEps) * scale
		for _, e := range []struct {
			i    int
			sign float64
		}{{hi, 1}, {lo, -1}} {
			s := b.sig[e.i]
			dTheta[e.i] += dg * e.sign / b.freq[e.i] * (fmax - fmin) * s * (1 - s)
		}
	}
	return loss
}
