package model

import "github.com/freqlens/freqlens/internal/gemm"

// What the rhythms leave of a window: the residual MLP's input and the
// other frequencies', and the rhythms' band heads that read the window
// less the clock.

// rhythmLeftover writes the residual MLP's input of each of the n windows
// of a model with rhythms to ws.xr: the window less its rhythms, so that the
// residual cannot continue a cycle the rhythms carry and the rhythms get
// the credit for them. It takes out what the clock says the rhythms put
// into the window (their usual shape at this time of day, week, …; when
// the model reads the time) and then the window's projection on the
// rhythms' atoms, what this window shows of them:
//
//	x̃ = x̂ − q_past
//	u = x̃ − Σ_{f∈R} Σ_{j ∈ {2f, 2f+1}} ψ̄_j ⊗ Z_j,   Z_j = ψ̄_jᵀ·x̃
//
// with R the rhythms' frequencies, a set fixed by the model: unlike the
// selection it does not depend on the window, so removing a frequency from
// the selection leaves the residual as it is. x̃ is kept in ws.xt and Z in
// ws.zfix for the backward pass.
func (m *Model) rhythmLeftover(ws *Workspace, n int) {
	cfg, ck := m.cfg, m.clock
	L, C, H := cfg.Lookback, cfg.Channels, cfg.Horizon
	LC, M := L*C, len(ck.ids)
	psibar := m.basis.psibar
	xt, u := ws.xt[:n*LC], ws.xr[:n*LC]
	copy(xt, ws.xn[:n*LC])
	if ck.active {
		for b := range n {
			q := ws.qprof[b*(L+H)*C : b*(L+H)*C+LC]
			xb := xt[b*LC : (b+1)*LC]
			for i, v := range q {
				xb[i] -= v
			}
		}
	}
	copy(u, xt)
	// The rhythms' atoms as one 2M×L matrix A: Z = A·x̃, u = x̃ − Aᵀ·Z.
	A := ws.ratoms[:2*M*L]
	for j, id := range ck.ids {
		copy(A[2*j*L:(2*j+2)*L], psibar[2*id*L:(2*id+2)*L])
	}
	z, nz := ws.zfix[:n*2*M*C], ws.zneg[:2*M*C]
	for b := range n {
		xb, ub, zb := xt[b*LC:(b+1)*LC], u[b*LC:(b+1)*LC], z[b*2*M*C:(b+1)*2*M*C]
		gemm.NNSet(2*M, C, L, A, L, xb, C, zb, C)
		for i, v := range zb {
			nz[i] = -v
		}
		gemm.TN(L, C, 2*M, A, L, nz, C, ub, C)
	}
}

// hasRhythms reports whether the model has rhythms: then the residual MLP
// reads the window less its rhythms, and their frequencies have band heads.
func (m *Model) hasRhythms() bool { return len(m.clock.ids) > 0 }

// freeReadsLeftover reports whether the frequencies outside the rhythms
// read what the residual MLP reads, the window less its rhythms, rather
// than the whole window: with rhythms, unless they take every place, so
// that no other frequency is ever read.
func (m *Model) freeReadsLeftover() bool {
	return m.hasRhythms() && m.cfg.competes()
}

// leftoverProjections fills ws.yfree with what the coefficients read: Y's rows for the rhythms'
// frequencies, and for the others the projections of u, the window less
// its rhythms. Rather than projecting u itself (2N·L·C products a window),
// it subtracts from Y what the clock's terms and the rhythms' projection
// put there, through two 2N × 2M matrices that depend on the model alone:
//
//	Ψ̄·u_b = Ψ̄·x̂_b − (Ψ̄·T)·ab_b − (Ψ̄·Aᵀ)·Z_b
//
// with T the clock table's window rows, ab_b the window's clock
// coefficients, A the rhythms' atoms and Z_b = A·x̃_b (rhythmLeftover),
// 2N·2M·C products a window; the matrices' rows of the rhythms' own
// atoms are zero, so those rows stay Y's. The workspace keeps the two matrices until
// the basis or the clock changes (a training step, SetRhythms), so a
// window costs the same alone as in a batch, and the same arithmetic.
func (m *Model) leftoverProjections(ws *Workspace, n int) {
	cfg, ck, psibar := m.cfg, m.clock, m.basis.psibar
	L, C, N := cfg.Lookback, cfg.Channels, cfg.Frequencies
	M, R2, C1 := 2*N, 2*len(ck.ids), C+1
	Y, Yh := ws.y[:n*M*C1], ws.yfree[:n*M*C1]
	copy(Yh, Y)
	decycle := ck.active
	pt, pa := ws.psiTab[:M*R2], ws.psiAtoms[:M*R2]
	if ws.psiBasis != m.basis || ws.psiGen != m.basis.gen || ws.psiClock != ck {
		ws.psiBasis, ws.psiGen, ws.psiClock = m.basis, m.basis.gen, ck
		clear(pt)
		clear(pa)
		if decycle {
			gemm.NN(M, R2, L, psibar, L, ck.tab, R2, pt, R2)
		}
		// The rhythms' atoms, gathered as rhythmLeftover gathers them.
		for j, id := range ck.ids {
			gemm.NT(M, 2, L, psibar, L, psibar[2*id*L:(2*id+2)*L], L, pa[2*j:], R2)
		}
		for i := range pt {
			pt[i], pa[i] = -pt[i], -pa[i]
		}
		// The rhythms' own rows stay Y's: their coefficients read the
		// whole window.
		for _, id := range ck.ids {
			clear(pt[2*id*R2 : (2*id+2)*R2])
			clear(pa[2*id*R2 : (2*id+2)*R2])
		}
	}
	for b := range n {
		yb := Yh[b*M*C1 : (b+1)*M*C1]
		if decycle {
			gemm.NN(M, C, R2, pt, R2, ws.ab[b*R2*C:(b+1)*R2*C], C, yb, C1)
		}
		gemm.NN(M, C, R2, pa, R2, ws.zfix[b*R2*C:(b+1)*R2*C], C, yb, C1)
	}
}

// bandForward writes the band heads' sum into ws.band: for each window b,
// step h and channel c, Σ_j P_j(h)·Z_b,j,c over the rhythm frequencies'
// atoms j, with Z the coefficients rhythmLeftover left in ws.zfix. A
// frequency in ws.without adds nothing.
func (m *Model) bandForward(ws *Workspace, n int) {
	cfg, ck := m.cfg, m.clock
	C, H, M := cfg.Channels, cfg.Horizon, len(ck.ids)
	HC := H * C
	P := ws.pband[:2*M*H]
	for j, id := range ck.ids {
		if ws.without != nil && ws.without[id] {
			clear(P[2*j*H : (2*j+2)*H])
			continue
		}
		copy(P[2*j*H:(2*j+2)*H], m.params.Band[2*id*H:(2*id+2)*H])
	}
	for b := range n {
		out := ws.band[b*HC : (b+1)*HC]
		gemm.TNSet(H, C, 2*M, P, H, ws.zfix[b*2*M*C:(b+1)*2*M*C], C, out, C)
	}
}
