package model

import (
	"github.com/freqlens/freqlens/internal/gemm"
)

// backwardConsts are the per-step numbers every shard's backward pass shares.
type backwardConsts struct {
	batch        int       // windows in the whole step (losses are means over it)
	tau          float64   // Gumbel temperature of the step
	lambdaSparse float64   // weight of the selection sparsity loss
	lambdaRecon  float64   // weight of the reconstruction loss
	wwT          []float64 // (C+1)×(C+1): W̃·W̃ᵀ, for the reconstruction gradient
}

// backward adds to ws.tr.grad the gradient of the training loss with respect
// to every parameter, given dOut = ∂L/∂ŷ for the n forecasts of the last
// training forward pass. It also leaves, in ws.tr, the parts that need the
// whole step: ∂L/∂Ψ̄ (dPsibar, onesAcc) and Σ_b E_bᵀE_b (recQ) of the
// reconstruction loss, and the sparsity loss (sparse).
//
// The selection is straight-through: the forward pass used gates of exactly
// 1 on the K selected heads; the backward pass treats each gate as the
// tempered softmax p_i of the perturbed logits, so
//
//	∂L/∂u_i = p_i·(∂L/∂p_i − Σ_j p_j ∂L/∂p_j)/τ,
//	∂L/∂p_f = ⟨∂L/∂ŷ_freq, g_f(c_f)⟩ for f selected,
//	∂L/∂p_i = λ_sparse/B for i not selected (L_sparse = mean_b Σ_{i∉S_b} p_bi;
//	left out when the rhythms' frequencies take all K places).
func (m *Model) backward(ws *Workspace, dOut []float64, draws *stepDraws, k backwardConsts) {
	cfg, p, tr, g := m.cfg, m.params, ws.tr, ws.tr.grad
	n := ws.n
	L, C, H := cfg.Lookback, cfg.Channels, cfg.Horizon
	d, N := cfg.Hidden, cfg.Frequencies
	HC, C1, nN := H*C, C+1, n*N
	M, D := 2*N, 2*d // atoms, coefficients per frequency
	alpha := sigmoid(p.Fusion[0])

	// Undo the denormalisation: ŷ = σ·ŷₙ + μ, and μ, σ depend on data only.
	dyn := tr.dyn[:n*HC]
	for b := range n {
		for h := range H {
			for c := range C {
				i := b*HC + h*C + c
				dyn[i] = dOut[i] * ws.sd[b*C+c]
			}
		}
	}

	// The clock's terms enter ŷₙ as they are: their horizon rows get ∂L/∂ŷₙ;
	// their window rows get what the residual's input passes back (below).
	ck := m.clock
	if ck.active {
		dq := tr.dq[:n*(L+H)*C]
		clear(dq)
		for b := range n {
			copy(dq[(b*(L+H)+L)*C:(b+1)*(L+H)*C], dyn[b*HC:(b+1)*HC])
		}
	}

	// Fusion: ŷₙ = α·F + (1−α)·r, α = σ(w).
	fs, res := ws.freqSum[:n*HC], ws.res[:n*HC]
	dalpha := 0.0
	for i, v := range dyn {
		dalpha += v * (fs[i] - res[i])
	}
	g.Fusion[0] += dalpha * alpha * (1 - alpha)

	// Residual MLP and heads, split between parts.
	dr := tr.dr[:n*HC]
	for i, v := range dyn {
		dr[i] = (1 - alpha) * v
	}
	if pw, _, _ := cfg.residualShape(); pw > 1 {
		// One residual row per window and channel: ∂L/∂r channel by channel.
		transposeWindows(tr.drT[:n*HC], dr, n, H, C)
	}
	clear(tr.dcoef[:nN*D])
	ws.draws, ws.bk = draws, k
	ws.do(secBackward)
	ws.draws = nil
	dcoef := tr.dcoef[:nN*D]

	// Straight-through selection and the sparsity loss.
	dscore := tr.dscore[:nN]
	scores := cfg.competes()
	m.selectionBackward(ws, n, k, scores)

	// Scorer, unless the rhythms take every place (the forward pass then
	// scored nothing and every ∂L/∂score is 0).
	if scores {
		m.scorerBackward(ws, n, dcoef)
	}

	// Coefficients: one row of d per atom, c = Yh·W̃, where Yh is Y or, with
	// rhythms, Y's rhythm rows and the projections of u for the others.
	Y, dY := ws.y[:n*M*C1], tr.dY[:n*M*C1]
	gemm.TN(C1, d, n*M, ws.yh[:n*M*C1], C1, dcoef, d, g.Data[:C1*d], d)
	free := m.freeReadsLeftover()
	dYh := dY
	if free {
		dYh = tr.dYh[:n*M*C1]
	}
	clear(dYh)
	gemm.NT(n*M, C1, d, dcoef, d, p.Data[:C1*d], d, dYh, C1)
	if free {
		// The rhythms' rows are Y's; what is left in dYh is ∂L/∂(Ψ̄·[u | 1]),
		// which reaches u (residualInputGrad) and the atoms (below).
		clear(dY)
		for b := range n {
			for _, id := range ck.ids {
				o := (b*M + 2*id) * C1
				copy(dY[o:o+2*C1], dYh[o:o+2*C1])
				clear(dYh[o : o+2*C1])
			}
		}
	}
	if scores {
		energyBackward(ws, n, dscore, dY)
	}

	// Reconstruction ‖Ψ̄ᵀΨ̄·H − H‖² with H = X̃·W̃, through E_b = Ψ̄ᵀY_b − X̃_b.
	clear(tr.recQ)
	clear(tr.dPsibar)
	if k.lambdaRecon != 0 {
		m.reconBackward(ws, n, k, Y, dY)
	}

	if m.hasRhythms() {
		m.rhythmLeftoverBackward(ws, n)
	} else if cfg.ChannelMix {
		// Without rhythms the residual reads x̂, which is data: only the
		// mix itself learns from ∂L/∂(its input rows).
		m.mixInputGrad(ws, n, nil)
	}
	if ck.active {
		m.clockBackward(ws, n)
	}

	// Y_b = Ψ̄·[x̂_b | 1] (and Ψ̄·[u_b | 1] for the frequencies outside the
	// rhythms): the basis gradient.
	clear(tr.onesAcc)
	basisGrad(tr, dY, ws.xn, n, L, C, M)
	if free {
		basisGrad(tr, dYh, ws.xr, n, L, C, M)
	}
}

// basisGrad adds to tr.dPsibar and tr.onesAcc the gradient that reaches the
// atoms through the projections Y_b = Ψ̄·[x_b | 1] of n windows x, given dY
// = ∂L/∂Y.
func basisGrad(tr *trainScratch, dY, x []float64, n, L, C, M int) {
	C1, LC := C+1, L*C
	for b := range n {
		db := dY[b*M*C1 : (b+1)*M*C1]
		gemm.NT(M, L, C, db, C1, x[b*LC:(b+1)*LC], C, tr.dPsibar, L)
		for j := range M {
			tr.onesAcc[j] += db[j*C1+C]
		}
	}
}

// headsAndResidualBackward is part's share of the backward pass through the
// residual MLP (split by output column) and the heads (split by head), given
// ∂L/∂ŷₙ in ws.tr.dyn and (1−α)·∂L/∂ŷₙ in ws.tr.dr.
func (m *Model) headsAndResidualBackward(ws *Workspace, part int) {
	cfg, p, tr, g, n := m.cfg, m.params, ws.tr, ws.tr.grad, ws.n
	C, H := cfg.Channels, cfg.Horizon
	D, N, E, R := 2*cfg.Hidden, cfg.Frequencies, cfg.HeadHidden, cfg.ResidualHidden
	HC := H * C
	alpha := sigmoid(p.Fusion[0])
	pw, in, out := cfg.residualShape()
	rows := n * pw
	dyn, dr, drh := tr.dyn[:n*HC], tr.dr[:n*HC], tr.drh[:rows*R]
	var resMask, headMask []float64
	if ws.draws != nil {
		resMask, headMask = ws.draws.resMask, ws.draws.headMask
	}

	// Residual: output columns of the last layer, hidden columns r0:r1.
	// The rows' output gradient is dr, or drT (one row per channel).
	h0, h1 := split(HC, part, ws.parts())
	for b := range n {
		gemm.Axpy(1, dr[b*HC+h0:b*HC+h1], g.ResB2[h0:h1])
	}
	dro := dr
	if pw > 1 {
		dro = tr.drT[:rows*out]
	}
	o0, o1 := split(out, part, ws.parts())
	gemm.TN(R, o1-o0, rows, ws.rh, R, dro[o0:], out, g.ResW2[o0:], out)
	r0, r1 := split(R, part, ws.parts())
	for b := range rows {
		clear(drh[b*R+r0 : b*R+r1])
	}
	gemm.NT(rows, r1-r0, out, dro, out, p.ResW2[r0*out:], out, drh[r0:], R)
	for b := range rows {
		for i := b*R + r0; i < b*R+r1; i++ {
			drh[i] *= geluGrad(ws.rpre[i], ws.rtanh[i])
			if resMask != nil {
				drh[i] *= resMask[i]
			}
		}
		gemm.Axpy(1, drh[b*R+r0:b*R+r1], g.ResB1[r0:r1])
	}
	gemm.TN(in, r1-r0, rows, ws.resX, in, drh[r0:], R, g.ResW1[r0:], R)

	// Heads, one product per selected head.
	fLo, fHi := ws.headRange(part)
	for f := fLo; f < fHi; f++ {
		lo, hi := int(ws.groupStart[f]), int(ws.groupStart[f+1])
		cnt := hi - lo
		if cnt == 0 {
			continue
		}
		G, A, O := ws.gcoef[lo*D:hi*D], ws.hidden[lo*E:hi*E], ws.contrib[lo*HC:hi*HC]
		dO, dA, dG := tr.dO[lo*HC:hi*HC], tr.dA[lo*E:hi*E], tr.dG[lo*D:hi*D]
		for j := range cnt {
			b := int(ws.groupWin[lo+j])
			row := dO[j*HC : (j+1)*HC]
			for i, v := range dyn[b*HC : (b+1)*HC] {
				row[i] = alpha * v
			}
			tr.dm[lo+j] = gemm.Dot(row, O[j*HC:(j+1)*HC])
		}
		w1, w2 := p.HeadW1[f*D*E:(f+1)*D*E], p.HeadW2[f*E*HC:(f+1)*E*HC]
		gemm.TN(E, HC, cnt, A, E, dO, HC, g.HeadW2[f*E*HC:(f+1)*E*HC], HC)
		clear(dA)
		gemm.NT(cnt, E, HC, dO, HC, w2, HC, dA, E)
		// A holds ReLU outputs after dropout: zero exactly where the unit
		// was inactive or dropped; a kept unit carries its mask factor.
		for i, v := range A {
			if v <= 0 {
				dA[i] = 0
			}
		}
		if headMask != nil {
			for j := range cnt {
				mask := headMask[int(ws.slotSel[lo+j])*E:]
				for e := range E {
					dA[j*E+e] *= mask[e]
				}
			}
		}
		gemm.TN(D, E, cnt, G, D, dA, E, g.HeadW1[f*D*E:(f+1)*D*E], E)
		clear(dG)
		gemm.NT(cnt, D, E, dA, E, w1, E, dG, D)
		for j := range cnt {
			b := int(ws.groupWin[lo+j])
			gemm.Axpy(1, dG[j*D:(j+1)*D], ws.tr.dcoef[(b*N+f)*D:(b*N+f+1)*D])
		}
	}
}

// energyBackward adds to dY the gradient of the selection scores' energy
// term, log(e_i + floor), given ∂L/∂s in dscore (see windowEnergy):
//
//	∂e_i/∂Y_jc = 2·v_jc/E,   ∂e_i/∂Y_jC = −Σ_c 2·v_jc·m_c/E,   v_jc = Y_jc − Y_jC·m_c
//
// for the two atoms j of frequency i; the window's energy E and channel
// means m depend on the data only.
func energyBackward(ws *Workspace, n int, dscore, dY []float64) {
	cfg := ws.cfg
	C, N := cfg.Channels, cfg.Frequencies
	C1, M := C+1, 2*cfg.Frequencies
	for b := range n {
		yb, db, xc := ws.y[b*M*C1:(b+1)*M*C1], dY[b*M*C1:(b+1)*M*C1], ws.xc[b*C:(b+1)*C]
		for i := range N {
			gi := dscore[b*N+i] / (ws.eshare[b*N+i] + energyFloor) * 2 / ws.energy[b]
			for j := 2 * i; j < 2*i+2; j++ {
				ones := 0.0
				for c := range C {
					v := yb[j*C1+c] - yb[j*C1+C]*xc[c]
					db[j*C1+c] += gi * v
					ones -= gi * v * xc[c]
				}
				db[j*C1+C] += ones
			}
		}
	}
}

// rhythmLeftoverBackward adds the gradient that reaches the atoms, the band
// heads and the clock through the residual MLP's input of a model with
// rhythms (see rhythmLeftover), given ∂L/∂(its pre-activation) in
// ws.tr.drh. With G = ∂L/∂u, x̃ = x̂ − q_past (x̂ without a clock) and
// u = x̃ − Σ_{j of R} ψ̄_j ⊗ Z_j, Z_j = ψ̄_jᵀ·x̃, W_j = ψ̄_jᵀ·G:
//
//	∂L/∂ψ̄_j(t) −= Σ_c G_tc·Z_jc + x̃_tc·W_jc,  ∂L/∂x̃ = G − Σ_j ψ̄_j ⊗ W_j,
//	∂L/∂q_past = −∂L/∂x̃
//
// The gradient reaching x̂ itself is not needed: x̂ is data.
func (m *Model) rhythmLeftoverBackward(ws *Workspace, n int) {
	cfg, tr, ck := m.cfg, ws.tr, m.clock
	L, C, H := cfg.Lookback, cfg.Channels, cfg.Horizon
	LC, M := L*C, len(ck.ids)
	G := m.residualInputGrad(ws, n)
	decycle := ck.active
	// A is the rhythms' atoms as the forward pass gathered them (2M×L);
	// W = A·G and ∂L/∂A = −(Z·Gᵀ + W·x̃ᵀ) summed over the windows.
	A, W, nw, dA := ws.ratoms[:2*M*L], tr.dab[:2*M*C], ws.zneg[:2*M*C], tr.dratoms[:2*M*L]
	clear(dA)
	P, dP, dZ := ws.pband[:2*M*H], tr.dpband[:2*M*H], tr.dzband[:2*M*C]
	clear(dP)
	for b := range n {
		gb, xb, zb := G[b*LC:(b+1)*LC], ws.xt[b*LC:(b+1)*LC], ws.zfix[b*2*M*C:(b+1)*2*M*C]
		gemm.NNSet(2*M, C, L, A, L, gb, C, W, C)
		// Z also feeds the band heads: ∂L/∂Z = −W + P·∂L/∂ŷₙ, so W stands
		// for −∂L/∂Z below; ∂L/∂P = Z·∂L/∂ŷₙᵀ.
		dyb := tr.dyn[b*H*C : (b+1)*H*C]
		gemm.NNSet(2*M, C, H, P, H, dyb, C, dZ, C)
		for i, v := range dZ {
			W[i] -= v
		}
		gemm.NT(2*M, H, C, zb, C, dyb, C, dP, H)
		gemm.NT(2*M, L, C, zb, C, gb, C, dA, L)
		gemm.NT(2*M, L, C, W, C, xb, C, dA, L)
		if decycle {
			dxt := tr.dxt[b*LC : (b+1)*LC]
			copy(dxt, gb)
			for i, v := range W {
				nw[i] = -v
			}
			gemm.TN(L, C, 2*M, A, L, nw, C, dxt, C)
			dq := tr.dq[b*(L+H)*C : b*(L+H)*C+LC]
			for i, v := range dxt {
				dq[i] = -v
			}
		}
	}
	for j, id := range ck.ids {
		gemm.Axpy(1, dP[2*j*H:(2*j+2)*H], tr.grad.Band[2*id*H:(2*id+2)*H])
	}
	for j, id := range ck.ids {
		d := tr.dPsibar[2*id*L : (2*id+2)*L]
		for i, v := range dA[2*j*L : (2*j+2)*L] {
			d[i] -= v
		}
	}
}

// residualInputGrad returns ∂L/∂(the residual MLP's input) of the n
// windows, in the window layout (step, then channel), from ∂L/∂(its
// pre-activation) in ws.tr.drh: drh·R₁ᵀ, row by row.
func (m *Model) residualInputGrad(ws *Workspace, n int) []float64 {
	cfg, tr := m.cfg, ws.tr
	L, C, R := cfg.Lookback, cfg.Channels, cfg.ResidualHidden
	pw, in, _ := cfg.residualShape()
	G := tr.dxr[:n*L*C]
	gt := G
	if pw > 1 {
		gt = tr.gT[:n*L*C]
	}
	if cfg.ChannelMix {
		m.mixInputGrad(ws, n, gt)
	} else {
		clear(gt)
		gemm.NT(n*pw, in, R, tr.drh[:n*pw*R], R, m.params.ResW1, R, gt, in)
	}
	if pw > 1 {
		untransposeWindows(G, gt, n, L, C)
	}
	if m.freeReadsLeftover() {
		// The other frequencies read u too: ∂L/∂u_b += Ψ̄ᵀ·∂L/∂(Ψ̄·u_b).
		M, C1 := 2*cfg.Frequencies, C+1
		for b := range n {
			gemm.TN(L, C, M, m.basis.psibar, L, tr.dYh[b*M*C1:(b+1)*M*C1], C1, G[b*L*C:(b+1)*L*C], C)
		}
	}
	return G
}

// selectionBackward writes ∂L/∂(each window's logits) to ws.tr.dscore
// through the straight-through gates and the sparsity loss (none when
// nothing competes), and sums the sparsity loss into ws.tr.sparse.
func (m *Model) selectionBackward(ws *Workspace, n int, k backwardConsts, scores bool) {
	tr := ws.tr
	N, K := m.cfg.Frequencies, m.cfg.slots()
	dscore := tr.dscore[:n*N]
	sparseGrad := k.lambdaSparse / float64(k.batch)
	if !scores {
		sparseGrad = 0 // no place is left to the others: L_sparse is left out
	}
	tr.sparse = 0
	for b := range n {
		prob, ds := tr.prob[b*N:(b+1)*N], dscore[b*N:(b+1)*N]
		for i := range ds {
			ds[i] = sparseGrad
		}
		outside := 1.0
		for kk := range K {
			f := ws.sel[b*K+kk]
			ds[f] = tr.dm[ws.pos[b*K+kk]]
			outside -= prob[f]
		}
		if scores {
			// With no place left to the others the mass outside is all
			// of it, a constant, which the loss leaves out.
			tr.sparse += outside
		}
		s := 0.0
		for i, v := range ds {
			s += prob[i] * v
		}
		for i := range ds {
			ds[i] = prob[i] * (ds[i] - s) / k.tau
		}
	}
}

// scorerBackward adds the scorer's gradient, given ∂L/∂(the logits) in
// ws.tr.dscore, and adds what reaches the coefficients to dcoef.
func (m *Model) scorerBackward(ws *Workspace, n int, dcoef []float64) {
	cfg, p, tr, g := m.cfg, m.params, ws.tr, ws.tr.grad
	N, S, D := cfg.Frequencies, cfg.ScorerHidden, 2*cfg.Hidden
	nN := n * N
	dscore, dz := tr.dscore[:nN], tr.dz[:nN*S]
	for r := range nN {
		gs := dscore[r]
		g.FreqBias[r%N] += gs
		gemm.Axpy(gs, ws.z[r*S:(r+1)*S], g.ScW2)
		row := dz[r*S : (r+1)*S]
		for j := range row {
			row[j] = gs * p.ScW2[j] * geluGrad(ws.zpre[r*S+j], ws.ztanh[r*S+j])
		}
		gemm.Axpy(1, row, g.ScB1)
	}
	gemm.TN(D, S, nN, ws.coef, D, dz, S, g.ScW1, S)
	gemm.NT(nN, D, S, dz, S, p.ScW1, S, dcoef, D)
}

// reconBackward adds the reconstruction loss's gradient ‖Ψ̄ᵀΨ̄·H − H‖²
// (H = X̃·W̃, through E_b = Ψ̄ᵀY_b − X̃_b) to dY and ws.tr.dPsibar, and
// Σ_b E_bᵀE_b to ws.tr.recQ, for the projections Y of the n windows.
func (m *Model) reconBackward(ws *Workspace, n int, k backwardConsts, Y, dY []float64) {
	cfg, tr, bs := m.cfg, ws.tr, m.basis
	L, C, d := cfg.Lookback, cfg.Channels, cfg.Hidden
	C1, LC, M := C+1, L*C, 2*cfg.Frequencies
	scale := 2 * k.lambdaRecon / float64(k.batch*L*d)
	E, Gb := tr.recE, tr.recG
	for b := range n {
		yb, xb := Y[b*M*C1:(b+1)*M*C1], ws.xn[b*LC:(b+1)*LC]
		gemm.TNSet(L, C1, M, bs.psibar, L, yb, C1, E, C1)
		for t := range L {
			for c := range C {
				E[t*C1+c] -= xb[t*C+c]
			}
			E[t*C1+C] -= 1
		}
		gemm.TN(C1, C1, L, E, C1, E, C1, tr.recQ, C1)
		gemm.NNSet(L, C1, C1, E, C1, k.wwT, C1, Gb, C1)
		for i := range Gb {
			Gb[i] *= scale
		}
		gemm.NN(M, C1, L, bs.psibar, L, Gb, C1, dY[b*M*C1:(b+1)*M*C1], C1)
		gemm.NT(M, L, C1, yb, C1, Gb, C1, tr.dPsibar, L)
	}
}
