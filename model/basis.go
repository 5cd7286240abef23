package model

import (
	"math"
	"slices"
)

// basisEps keeps the normalisation of a (near) zero basis vector finite.
const basisEps = 1e-8

// basis is the dictionary derived from θ and φ: for every frequency a
// quadrature pair of atoms, a cosine and a sine, so that a frequency's
// coefficients carry both the amplitude and the phase of its cycle in the
// window. It is recomputed whenever θ or φ change and is read-only
// otherwise, so many workspaces may share one.
//
// Atoms are interleaved: atom 2i is frequency i's cosine, atom 2i+1 its
// sine, so a frequency's coefficients are contiguous wherever the atoms are
// rows.
type basis struct {
	freq   []float64 // N, f_i = fmin + (fmax−fmin)·σ(θ_i), cycles per step
	sig    []float64 // N, σ(θ_i)
	raw    []float64 // 2N×L, ψ_2i(s) = cos(a_i(s)), ψ_2i+1(s) = sin(a_i(s))
	slope  []float64 // 2N×L, ∂ψ/∂a: −sin(a) and cos(a), for the backward pass
	norm   []float64 // 2N, ‖ψ_j‖
	psibar []float64 // 2N×L, ψ̄_j = ψ_j / (‖ψ_j‖ + ε)
	sum    []float64 // 2N, Σ_t ψ̄_j(t): the coefficient of a constant window
	gen    uint64    // counts computes, so a workspace knows when what it derived from ψ̄ is stale
}

func newBasis(cfg Config) *basis {
	N, L := cfg.Frequencies, cfg.Lookback
	return &basis{
		freq:   make([]float64, N),
		sig:    make([]float64, N),
		raw:    make([]float64, 2*N*L),
		slope:  make([]float64, 2*N*L),
		norm:   make([]float64, 2*N),
		psibar: make([]float64, 2*N*L),
		sum:    make([]float64, 2*N),
	}
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// stepFromEnd is the time of window step t measured from the window's last
// step: s = t − (L−1), so s = 0 is the newest reading. Anchoring the phase
// there makes φ and the coefficients describe the cycle where the forecast
// continues it, and keeps that meaning when fine-tuning moves f: with the
// phase anchored at the oldest step instead, a change Δf would turn the
// phase seen at the newest step by 2π·Δf·(L−1), which for 24 → 28 steps
// over L = 96 is more than half a cycle.
func stepFromEnd(t, lookback int) float64 { return float64(t - (lookback - 1)) }

// compute fills b from θ and φ:
//
//	f_i      = fmin + (fmax − fmin)·σ(θ_i)
//	a_i(s)   = 2π f_i s + φ_i,  s = t − (L−1), t = 0 … L−1
//	ψ_2i     = cos a_i,  ψ_2i+1 = sin a_i
//	ψ̄_j      = ψ_j / (‖ψ_j‖₂ + ε)
func (b *basis) compute(theta, phi []float64, lookback int) {
	b.gen++
	fmin, fmax := freqBounds(lookback)
	L := lookback
	for i := range theta {
		s := sigmoid(theta[i])
		b.sig[i] = s
		f := fmin + (fmax-fmin)*s
		b.freq[i] = f
		cos, sin := b.raw[2*i*L:(2*i+1)*L], b.raw[(2*i+1)*L:(2*i+2)*L]
		dcos, dsin := b.slope[2*i*L:(2*i+1)*L], b.slope[(2*i+1)*L:(2*i+2)*L]
		for t := range L {
			sa, ca := math.Sincos(2*math.Pi*f*stepFromEnd(t, L) + phi[i])
			cos[t], sin[t] = ca, sa
			dcos[t], dsin[t] = -sa, ca
		}
	}
	for j := range b.norm {
		raw := b.raw[j*L : (j+1)*L]
		ss := 0.0
		for _, v := range raw {
			ss += v * v
		}
		nrm := math.Sqrt(ss)
		b.norm[j] = nrm
		inv := 1 / (nrm + basisEps)
		bar := b.psibar[j*L : (j+1)*L]
		sum := 0.0
		for t := range bar {
			bar[t] = raw[t] * inv
			sum += bar[t]
		}
		b.sum[j] = sum
	}
}

// backward turns ∂L/∂ψ̄ (2N×L, consumed as scratch) into ∂L/∂θ and ∂L/∂φ,
// added to dTheta and dPhi.
//
// With r = ‖ψ‖ the normalisation has Jacobian
//
//	∂ψ̄_t/∂ψ_s = δ_ts/(r+ε) − ψ_t ψ_s / (r (r+ε)²)
//
// and ∂ψ(t)/∂f = 2πs·∂ψ/∂a, ∂ψ(t)/∂φ = ∂ψ/∂a, ∂f/∂θ = (fmax−fmin)·σ(1−σ),
// summed over the frequency's two atoms.
func (b *basis) backward(dPsibar, dTheta, dPhi []float64, lookback int) {
	fmin, fmax := freqBounds(lookback)
	L := lookback
	for i := range b.freq {
		df, dp := 0.0, 0.0
		for j := 2 * i; j < 2*i+2; j++ {
			g := dPsibar[j*L : (j+1)*L]
			raw := b.raw[j*L : (j+1)*L]
			slope := b.slope[j*L : (j+1)*L]
			r := b.norm[j]
			dot := 0.0
			for t := range g {
				dot += raw[t] * g[t]
			}
			a := 1 / (r + basisEps)
			c := 0.0
			if r > 0 {
				c = dot / (r * (r + basisEps) * (r + basisEps))
			}
			for t := range g {
				dpsi := (g[t]*a - raw[t]*c) * slope[t]
				df += dpsi * 2 * math.Pi * stepFromEnd(t, L)
				dp += dpsi
			}
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
