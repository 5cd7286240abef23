package model

import (
	"math"

	"github.com/freqlens/freqlens/internal/gemm"
)

// The channel mix (Config.ChannelMix): what the residual MLP of a mixed
// model reads of the other channels.
//
// Without it the residual MLP forecasts each channel from that channel's
// own leftover u_c (the window less what the rhythms put there), so a
// weather station's humidity cannot tell its temperature that a front has
// come through. With it channel c's residual reads
//
//	[u_c | Σ_c' W_c,c'(ρ_c)·u_c'],  W(ρ) = M₀ + cos 2πρ·M₁ + sin 2πρ·M₂
//
// its own leftover and a mix of every channel's, through R₁'s two blocks
// (2L inputs), so the shared MLP reads the others on their own terms
// rather than added to the channel's own. ρ_c is the phase of the model's
// first rhythm (the strongest: the day on every benchmark) at the end of
// channel c's window, so how the channels inform each other may change
// with the time of day: TQNet's (ICML'25) periodic queries, as the
// cycle's first harmonic. Without a clock W is M₀. M starts at zero, the
// model without the mix, and trains with the rest (weight decay pulls it
// back there); R₁'s block for the mix starts random, or M would get no
// gradient.
//
// The mix changes only what the residual reads, so the residual's part is
// still one additive part that nothing else depends on: attribution stays
// complete and faithful, and the residual's part now includes what the
// other channels' leftovers say.

// mixTerms is the number of C×C matrices of the mix: M₀, M₁, M₂.
const mixTerms = 3

// mixPhase returns cos 2πρ and sin 2πρ of the first rhythm's phase at the
// end of window b's channel c, and 0, 0 for a model without a clock.
func (m *Model) mixPhase(ws *Workspace, b, c int) (cs, sn float64) {
	if !m.clock.active {
		return 0, 0
	}
	rho := phaseAt(&m.Meta.Rhythms[0], ws.tau[b*m.cfg.Channels+c])
	sn, cs = math.Sincos(2 * math.Pi * rho)
	return cs, sn
}

// mixMatrix writes window b's mixing matrix W (C×C, row c for channel c's
// phase) to dst.
func (m *Model) mixMatrix(ws *Workspace, b int, dst []float64) {
	C := m.cfg.Channels
	mw, CC := m.params.MixW, C*C
	for c := range C {
		cs, sn := m.mixPhase(ws, b, c)
		for i := c * C; i < (c+1)*C; i++ {
			dst[i] = mw[i] + cs*mw[CC+i] + sn*mw[2*CC+i]
		}
	}
}

// mixForward writes the residual's input rows of the n windows with the
// channel mix, [X_c | (W·X)_c] (2L long) for each window and channel, to
// dst, from the rows X (one per window and channel, L long) in src.
func (m *Model) mixForward(ws *Workspace, dst, src []float64, n int) {
	L, C := m.cfg.Lookback, m.cfg.Channels
	LC, w, mixed := L*C, ws.mixW, ws.mixRows
	for b := range n {
		m.mixMatrix(ws, b, w)
		gemm.NNSet(C, L, C, w, C, src[b*LC:(b+1)*LC], L, mixed, L)
		for c := range C {
			row := dst[(b*C+c)*2*L : (b*C+c+1)*2*L]
			copy(row[:L], src[(b*C+c)*L:(b*C+c+1)*L])
			copy(row[L:], mixed[c*L:(c+1)*L])
		}
	}
}

// mixBackward adds the gradient of the mix to ws.tr.grad.MixW, given
// ∂L/∂(the input rows [X | W·X]) of the n windows in dIn (2L a row) and the
// rows X, and, when dX is not nil, writes ∂L/∂X to it: with D the rows'
// second halves,
//
//	∂L/∂X = (first halves) + Wᵀ·D,  ∂L/∂W = D·Xᵀ,
//	∂L/∂M₀ = ∂L/∂W,  ∂L/∂M₁ = cos 2πρ_c·∂L/∂W (row c), ∂L/∂M₂ likewise with sin
func (m *Model) mixBackward(ws *Workspace, dX, dIn, X []float64, n int) {
	L, C := m.cfg.Lookback, m.cfg.Channels
	LC, CC := L*C, C*C
	w, dw, g, D := ws.mixW, ws.tr.dmixW, ws.tr.grad.MixW, ws.mixRows
	for b := range n {
		for c := range C {
			copy(D[c*L:(c+1)*L], dIn[(b*C+c)*2*L+L:(b*C+c+1)*2*L])
		}
		clear(dw)
		gemm.NT(C, C, L, D, L, X[b*LC:(b+1)*LC], L, dw, C)
		for c := range C {
			cs, sn := m.mixPhase(ws, b, c)
			for i := c * C; i < (c+1)*C; i++ {
				g[i] += dw[i]
				g[CC+i] += cs * dw[i]
				g[2*CC+i] += sn * dw[i]
			}
		}
		if dX != nil {
			m.mixMatrix(ws, b, w)
			for c := range C {
				copy(dX[(b*C+c)*L:(b*C+c+1)*L], dIn[(b*C+c)*2*L:(b*C+c)*2*L+L])
			}
			gemm.TN(C, L, C, w, C, D, L, dX[b*LC:(b+1)*LC], L)
		}
	}
}

// mixInputGrad computes ∂L/∂[X | W·X] of the n windows' residual input rows
// from ∂L/∂(the residual's pre-activation) in ws.tr.drh, adds the mix's
// gradient to ws.tr.grad.MixW and, when dX is not nil, writes ∂L/∂X (the
// rows before the mix) to it.
func (m *Model) mixInputGrad(ws *Workspace, n int, dX []float64) {
	pw, in, _ := m.cfg.residualShape()
	R := m.cfg.ResidualHidden
	gin := ws.tr.gMix[:n*pw*in]
	clear(gin)
	gemm.NT(n*pw, in, R, ws.tr.drh[:n*pw*R], R, m.params.ResW1, R, gin, in)
	m.mixBackward(ws, dX, gin, ws.resT, n)
}
