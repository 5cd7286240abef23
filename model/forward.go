package model

import (
	"fmt"
	"math"

	"github.com/freqlens/freqlens/internal/gemm"
)

// instanceEps keeps the instance normalisation finite on a flat window.
const instanceEps = 1e-5

// GELU, tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), computed
// by gemm.GELU, which also returns the tanh for the derivative.
const (
	geluC = 0.7978845608028654 // √(2/π)
	geluA = 0.044715
)

// geluGrad returns dGELU/dx at x given t from gelu.
func geluGrad(x, t float64) float64 {
	return 0.5*(1+t) + 0.5*x*(1-t*t)*geluC*(1+3*geluA*x*x)
}

// Forward writes the forecasts of the windows in x to dst and returns dst.
//
// x holds n windows of Lookback×Channels values, row-major (step, then
// channel), back to back; dst receives n forecasts of Horizon×Channels in the
// same layout. A nil or short dst is replaced by a new slice. ends holds the
// time of each window's newest step in Unix nanoseconds; a model that reads
// the time (ReadsTime) needs it, the others ignore it and take nil.
// Frequency selection is the deterministic top-K. After the call ws explains
// each window (Workspace.Attribution).
//
// Forward allocates nothing once ws has held a batch of n windows. It panics
// when len(x) is not a multiple of Lookback×Channels, or when the model
// reads the time and ends does not hold one time per window.
func (m *Model) Forward(ws *Workspace, dst, x []float64, ends []int64) []float64 {
	w := m.cfg.Lookback * m.cfg.Channels
	if len(x)%w != 0 || len(x) == 0 {
		panic(fmt.Sprintf("model: Forward got %d values, not a positive multiple of lookback×channels = %d", len(x), w))
	}
	n := len(x) / w
	out := n * m.cfg.Horizon * m.cfg.Channels
	if cap(dst) < out {
		dst = make([]float64, out)
	}
	dst = dst[:out]
	var tau []float64
	if m.clock.active {
		if len(ends) != n {
			panic(fmt.Sprintf("model: Forward got %d window times for %d windows; this model reads the time of each window", len(ends), n))
		}
		ws.grow(n)
		C := m.cfg.Channels
		tau = ws.tauIn[:n*C]
		for b, t := range ends {
			s := m.clock.steps(t)
			for c := range C {
				tau[b*C+c] = s
			}
		}
	}
	if tau != nil {
		x = m.windowsToWall(ws, x, ends, n)
	}
	m.forward(ws, dst, x, tau, n, nil)
	if tau != nil {
		m.forecastsFromWall(ws, dst, n)
	}
	return dst
}

// ReadsTime reports whether the model's forecasts depend on the time of
// each window (a model with rhythms and a known cadence): then
// Forward and explain.Explainer need the windows' times.
func (m *Model) ReadsTime() bool { return m.clock.active }

// stepDraws are the random draws of a training forward pass for n windows.
type stepDraws struct {
	noise    []float64 // n·N Gumbel draws added to the logits
	tau      float64   // softmax temperature of the straight-through gates
	resMask  []float64 // n·R inverted-dropout mask of the residual hidden layer, nil for none
	headMask []float64 // n·K·E mask of the selected heads' hidden layers by (window, rank), nil for none
	xNoise   []float64 // n·L·C noise added to the normalised windows, nil for none
}

// forward runs the batched forward pass. With draws it takes the training
// path: top-K of the perturbed logits, with the tempered softmax kept for
// the straight-through gradient, and dropout. With nil draws the selection
// is the deterministic top-K of the logits and nothing is dropped.
//
// tau holds, for every window and channel, the time of the window's newest
// step in steps since the Unix epoch (n·C values; channels of a shuffled
// training sample come from different windows); it is read only when the
// model's clock is active.
func (m *Model) forward(ws *Workspace, dst, x, tau []float64, n int, draws *stepDraws) {
	if ws.cfg != m.cfg {
		if !ws.cfg.sameShapes(m.cfg) {
			panic("model: workspace was made for a model with different shapes")
		}
		ws.refit(m.cfg)
	}
	ws.grow(n)
	ws.n, ws.m, ws.walled = n, m, false
	cfg := m.cfg
	L, C := cfg.Lookback, cfg.Channels

	// 1. Normalise each window (or copy it as it is).
	m.normalise(ws, x, n, draws)

	// The clock's terms and what the rhythms leave of the window (the
	// residual's input, and the other frequencies'): fixed by the window
	// and its time, not by the selection.
	if m.clock.active {
		if len(tau) < n*C {
			panic(fmt.Sprintf("model: %d window times for %d windows of %d channels; this model reads the time", len(tau), n, C))
		}
		copy(ws.tau[:n*C], tau[:n*C])
		m.clockForward(ws, n)
	}
	ws.resIn = ws.xn
	if m.hasRhythms() {
		ws.resIn = ws.xr
		m.rhythmLeftover(ws, n)
	}

	// 2–3. The projections onto the atoms and the coefficients.
	m.coefficients(ws, n, draws)

	// 4. Scores, unless the rhythms take every place.
	scores := cfg.competes()
	m.scoreFrequencies(ws, n, scores)

	// 5. The selection.
	m.selectFrequencies(ws, n, draws, scores)
	if m.hasRhythms() {
		m.bandForward(ws, n)
	}

	// The residual MLP's rows: one per window, or one per window and
	// channel (weights shared between channels), read channel by channel.
	ws.resX = ws.resIn
	if pw, _, _ := cfg.residualShape(); pw > 1 {
		ws.resX = ws.resT[:n*L*C]
		transposeWindows(ws.resX, ws.resIn[:n*L*C], n, L, C)
		if cfg.ChannelMix {
			ws.resX = ws.resM[:n*2*L*C]
			m.mixForward(ws, ws.resX, ws.resT, n)
		}
	}

	// 6. Group the selections by head so each head runs one product.
	ws.group(n)

	// 7–8. The heads and the residual MLP, in two split sections.
	ws.draws = draws
	ws.do(secHeadsAndHidden)
	ws.do(secResidualOut)
	ws.draws = nil

	// 9. Fuse, add the clock's terms and the band heads, and undo the
	// normalisation.
	m.fuse(ws, dst, n)
}

// normalise writes the n windows of x to ws.xn, each channel centred and
// scaled by its window mean and deviation (ws.mu, ws.sd) under instance
// normalisation, else as they are (μ = 0, σ = 1), plus the training pass's
// input noise.
func (m *Model) normalise(ws *Workspace, x []float64, n int, draws *stepDraws) {
	L, C := m.cfg.Lookback, m.cfg.Channels
	LC := L * C
	xn, mu, sd := ws.xn[:n*LC], ws.mu[:n*C], ws.sd[:n*C]
	if m.cfg.Norm == NormInstance {
		instanceNorm(xn, mu, sd, x[:n*LC], n, L, C)
	} else {
		copy(xn, x[:n*LC])
		clear(mu)
		for i := range sd {
			sd[i] = 1
		}
	}
	if draws != nil && draws.xNoise != nil {
		for i, v := range draws.xNoise[:n*LC] {
			xn[i] += v
		}
	}
}

// coefficients projects each window onto the atoms, Y_b = Ψ̄·[x̂_b | 1]
// (2N×(C+1)), sets what the coefficients read (ws.yh: Y, or, for the
// frequencies outside the rhythms, the projections of the rhythms'
// leftover u), the windows' energy shares when frequencies compete, and,
// unless the pass is lean, the coefficients Ψ̄·(x̂·W + 1·bᵀ) = Y·W̃ of every
// window at once. The cosine and sine rows of frequency i are adjacent, so
// its coefficient vector c_i = [cos part | sin part] is the contiguous 2d
// at (b·N+i)·2d. A lean pass (see Workspace.lean) skips them: the scorer's
// first layer is folded into W̃, and each head computes c_f for the
// windows that selected it.
func (m *Model) coefficients(ws *Workspace, n int, draws *stepDraws) {
	cfg, p := m.cfg, m.params
	d, N, C1 := cfg.Hidden, cfg.Frequencies, cfg.Channels+1
	M, D := 2*N, 2*d // atoms (a cosine and a sine per frequency), coefficients per frequency
	project(ws.y[:n*M*C1], ws.xn[:n*cfg.Lookback*cfg.Channels], m.basis, n, cfg.Lookback, cfg.Channels)
	ws.yh = ws.y
	if m.freeReadsLeftover() {
		ws.yh = ws.yfree
		m.leftoverProjections(ws, n)
	}
	if cfg.competes() {
		windowEnergy(ws, n)
	}
	ws.lean = draws == nil && 2*C1 < D
	if !ws.lean {
		ws.sizeCoef()
		coef := ws.coef[:n*N*D]
		gemm.NNSet(n*M, d, C1, ws.yh[:n*M*C1], C1, p.Data[:C1*d], d, coef, d)
	}
}

// scoreFrequencies writes each window's selection logits to ws.score:
// logit_i = GELU(c_i·W1 + b1)·w2 + bias_i + log(e_i + energyFloor), or 0
// for all when nothing competes (scores false). c_i·W1 = [y_cos,i |
// y_sin,i]·[W̃·W1_cos ; W̃·W1_sin], and the rows of Y, read 2(C+1) at a
// time, are exactly [y_cos,i | y_sin,i].
func (m *Model) scoreFrequencies(ws *Workspace, n int, scores bool) {
	cfg, p := m.cfg, m.params
	d, N, S, C1 := cfg.Hidden, cfg.Frequencies, cfg.ScorerHidden, cfg.Channels+1
	D, nN := 2*d, n*N
	score := ws.score[:nN]
	if !scores {
		clear(score)
		return
	}
	ws.sizeScorer()
	zpre, zt, z := ws.zpre[:nN*S], ws.ztanh[:nN*S], ws.z[:nN*S]
	for r := range nN {
		copy(zpre[r*S:(r+1)*S], p.ScB1)
	}
	if ws.lean {
		fold(ws.qscore, p.Data[:C1*d], p.ScW1, C1, d, S)
		gemm.NN(nN, S, 2*C1, ws.yh[:n*2*N*C1], 2*C1, ws.qscore, S, zpre, S)
	} else {
		gemm.NN(nN, S, D, ws.coef[:n*N*D], D, p.ScW1, S, zpre, S)
	}
	gemm.GELU(z, zt, zpre)
	for r := range nN {
		score[r] = gemm.Dot(z[r*S:(r+1)*S], p.ScW2) + p.FreqBias[r%N]
	}
	for r, e := range ws.eshare[:nN] {
		score[r] += math.Log(e + energyFloor)
	}
}

// selectFrequencies writes each window's selection to ws.sel: every rhythm
// frequency, then the best of the others for the places left, by the
// logits (perturbed by the training pass's Gumbel noise, whose tempered
// softmax it keeps in ws.tr.prob for the straight-through gradient). A
// rhythm frequency's logit is −∞ to the softmax and the top-K, so it has
// no straight-through gate: it is always in.
func (m *Model) selectFrequencies(ws *Workspace, n int, draws *stepDraws, scores bool) {
	cfg := m.cfg
	N, K, R := cfg.Frequencies, cfg.slots(), cfg.rhythmSlots
	score, sel := ws.score[:n*N], ws.sel[:n*K]
	for b := range n {
		logits := score[b*N : (b+1)*N]
		if draws != nil || R > 0 {
			masked := ws.masked
			if draws != nil {
				masked = ws.tr.noisy[b*N : (b+1)*N]
				for i, g := range draws.noise[b*N : (b+1)*N] {
					masked[i] = logits[i] + g
				}
			} else {
				copy(masked, logits)
			}
			for _, id := range m.clock.ids[:R] {
				masked[id] = math.Inf(-1)
			}
			if draws != nil {
				prob := ws.tr.prob[b*N : (b+1)*N]
				if scores {
					softmax(prob, masked, draws.tau)
				} else {
					clear(prob) // nothing competes (and all may be −∞)
				}
			}
			logits = masked
		}
		dst := sel[b*K : (b+1)*K]
		for j, id := range m.clock.ids[:R] {
			dst[j] = int32(id)
		}
		if len(dst) > R {
			topK(dst[R:], logits, ws.topv)
		}
	}
}

// fuse writes the n forecasts to dst: α·(the selected heads) + (1−α)·(the
// residual MLP), plus the rhythms' clock terms and band heads, mapped back
// through each window's μ and σ.
func (m *Model) fuse(ws *Workspace, dst []float64, n int) {
	cfg := m.cfg
	L, C, H := cfg.Lookback, cfg.Channels, cfg.Horizon
	HC := H * C
	fs, res := ws.freqSum[:n*HC], ws.res[:n*HC]
	mu, sd := ws.mu[:n*C], ws.sd[:n*C]
	band := m.hasRhythms()
	alpha := sigmoid(m.params.Fusion[0])
	for b := range n {
		var qf []float64
		if m.clock.active {
			qf = ws.qprof[(b*(L+H)+L)*C : (b+1)*(L+H)*C]
		}
		for h := range H {
			for c := range C {
				i := b*HC + h*C + c
				yn := alpha*fs[i] + (1-alpha)*res[i]
				if qf != nil {
					yn += qf[h*C+c]
				}
				if band {
					yn += ws.band[i]
				}
				dst[i] = yn*sd[b*C+c] + mu[b*C+c]
			}
		}
	}
}

// headsAndHidden is part's share of the heads, g_f(c_f) = ReLU(c_f·A_f)·B_f
// for the selected f only, and of the residual MLP's hidden layer. Work is
// split between parts by head and by output column, never along a sum, so
// the result does not depend on how many parts run.
func (m *Model) headsAndHidden(ws *Workspace, part int) {
	cfg, p, n := m.cfg, m.params, ws.n
	C, H := cfg.Channels, cfg.Horizon
	d, N, E, R := cfg.Hidden, cfg.Frequencies, cfg.HeadHidden, cfg.ResidualHidden
	D, C1, HC := 2*d, C+1, H*C
	wt, y := p.Data[:C1*d], ws.yh
	var headMask, resMask []float64
	if ws.draws != nil {
		headMask, resMask = ws.draws.headMask, ws.draws.resMask
	}
	fLo, fHi := ws.headRange(part)
	for f := fLo; f < fHi; f++ {
		lo, hi := int(ws.groupStart[f]), int(ws.groupStart[f+1])
		cnt := hi - lo
		if cnt == 0 {
			continue
		}
		A := ws.hidden[lo*E : hi*E]
		// G holds c_f of each window that selected f: copied from the
		// coefficients, or, in a lean pass, computed here as
		// [y_cos·W̃ | y_sin·W̃], one window at a time so that a window's
		// forecast does not depend on the batch it came in.
		G := ws.gcoef[lo*D : hi*D]
		for j := lo; j < hi; j++ {
			r, g := int(ws.groupWin[j])*N+f, G[(j-lo)*D:(j-lo+1)*D]
			if ws.lean {
				gemm.NNSet(2, d, C1, y[r*2*C1:(r+1)*2*C1], C1, wt, d, g, d)
			} else {
				copy(g, ws.coef[r*D:(r+1)*D])
			}
		}
		gemm.NNSet(cnt, E, D, G, D, p.HeadW1[f*D*E:(f+1)*D*E], E, A, E)
		for i, v := range A {
			if v < 0 {
				A[i] = 0
			}
		}
		if headMask != nil {
			for j := range cnt {
				mask := headMask[int(ws.slotSel[lo+j])*E:]
				for e := range E {
					A[j*E+e] *= mask[e]
				}
			}
		}
		O := ws.contrib[lo*HC : hi*HC]
		gemm.NNSet(cnt, HC, E, A, E, p.HeadW2[f*E*HC:(f+1)*E*HC], HC, O, HC)
	}

	pw, in, _ := cfg.residualShape()
	rows := n * pw
	rpre, rt, rh := ws.rpre[:rows*R], ws.rtanh[:rows*R], ws.rh[:rows*R]
	c0, c1 := split(R, part, ws.parts())
	for b := range rows {
		copy(rpre[b*R+c0:b*R+c1], p.ResB1[c0:c1])
	}
	gemm.NN(rows, c1-c0, in, ws.resX, in, p.ResW1[c0:], R, rpre[c0:], R)
	for b := range rows {
		lo, hi := b*R+c0, b*R+c1
		gemm.GELU(rh[lo:hi], rt[lo:hi], rpre[lo:hi])
		if resMask != nil {
			for i := lo; i < hi; i++ {
				rh[i] *= resMask[i]
			}
		}
	}
}

// residualOut is part's share of the residual MLP's output layer and of the
// per-window sums of the selected heads.
func (m *Model) residualOut(ws *Workspace, part int) {
	cfg, p, n := m.cfg, m.params, ws.n
	HC, K, R := cfg.Horizon*cfg.Channels, cfg.slots(), cfg.ResidualHidden
	res, fs := ws.res[:n*HC], ws.freqSum[:n*HC]
	if pw, _, out := cfg.residualShape(); pw > 1 {
		// One row per window and channel: out = H columns, then back to
		// the (window, step, channel) layout with the channel's bias.
		C, rows := cfg.Channels, n*pw
		c0, c1 := split(out, part, ws.parts())
		ro := ws.resOut[:rows*out]
		gemm.NNSet(rows, c1-c0, R, ws.rh, R, p.ResW2[c0:], out, ro[c0:], out)
		for b := range n {
			for c := range C {
				row := ro[(b*C+c)*out:]
				for h := c0; h < c1; h++ {
					res[b*HC+h*C+c] = row[h] + p.ResB2[h*C+c]
				}
			}
		}
	} else {
		c0, c1 := split(HC, part, ws.parts())
		for b := range n {
			copy(res[b*HC+c0:b*HC+c1], p.ResB2[c0:c1])
		}
		gemm.NN(n, c1-c0, R, ws.rh, R, p.ResW2[c0:], HC, res[c0:], HC)
	}
	b0, b1 := split(n, part, ws.parts())
	for b := b0; b < b1; b++ {
		row := fs[b*HC : (b+1)*HC]
		clear(row)
		for k := range K {
			if ws.without != nil && ws.without[ws.sel[b*K+k]] {
				continue
			}
			j := int(ws.pos[b*K+k])
			gemm.Axpy(1, ws.contrib[j*HC:(j+1)*HC], row)
		}
	}
}

// transposeWindows writes n windows of L steps × C channels (step-major)
// channel by channel: dst[(b·C + c)·L + t] = src[b·L·C + t·C + c].
func transposeWindows(dst, src []float64, n, L, C int) {
	for b := range n {
		s, d := src[b*L*C:(b+1)*L*C], dst[b*L*C:(b+1)*L*C]
		for t := range L {
			for c := range C {
				d[c*L+t] = s[t*C+c]
			}
		}
	}
}

// untransposeWindows is the inverse of transposeWindows: dst[b·L·C + t·C + c]
// = src[(b·C + c)·L + t].
func untransposeWindows(dst, src []float64, n, L, C int) {
	for b := range n {
		s, d := src[b*L*C:(b+1)*L*C], dst[b*L*C:(b+1)*L*C]
		for c := range C {
			for t := range L {
				d[t*C+c] = s[c*L+t]
			}
		}
	}
}

// split returns part's share [lo, hi) of n items cut into parts.
func split(n, part, parts int) (lo, hi int) {
	per := (n + parts - 1) / parts
	return min(part*per, n), min((part+1)*per, n)
}

// energyFloor is added to a frequency's energy share before its log
// enters the selection score: shares below about 1% (white noise spreads
// 2/L over each frequency) all count as "nothing here".
const energyFloor = 0.01

// windowEnergy fills, for each of the n windows of the last projection,
// the channel means of x̂ (ws.xc), the energy Σ (x̂ − mean)² (ws.energy) and
// each frequency's share of it (ws.eshare):
//
//	e_i = Σ_{j ∈ {2i, 2i+1}} Σ_c (Y_jc − Y_jC·m_c)² / Σ_{t,c} (x̂_tc − m_c)²
//
// where Y_jC = Σ_t ψ̄_j(t), so Y_jc − Y_jC·m_c is atom j's projection of
// the centred channel. The share is the part of the window that frequency
// i's two atoms capture; the selection score adds its log, so a window's
// strong cycles are picked from the first step on and the learned scorer
// adjusts from there.
func windowEnergy(ws *Workspace, n int) {
	cfg := ws.cfg
	L, C, N := cfg.Lookback, cfg.Channels, cfg.Frequencies
	C1, LC, M := C+1, L*C, 2*cfg.Frequencies
	for b := range n {
		xb, xc := ws.xn[b*LC:(b+1)*LC], ws.xc[b*C:(b+1)*C]
		clear(xc)
		for t := range L {
			for c := range C {
				xc[c] += xb[t*C+c]
			}
		}
		for c := range xc {
			xc[c] /= float64(L)
		}
		en := 0.0
		for t := range L {
			for c := range C {
				v := xb[t*C+c] - xc[c]
				en += v * v
			}
		}
		en = max(en, energyTiny)
		ws.energy[b] = en
		yb := ws.y[b*M*C1 : (b+1)*M*C1]
		for i := range N {
			e := 0.0
			for j := 2 * i; j < 2*i+2; j++ {
				for c := range C {
					v := yb[j*C1+c] - yb[j*C1+C]*xc[c]
					e += v * v
				}
			}
			ws.eshare[b*N+i] = e / en
		}
	}
}

// energyTiny keeps the energy share of a flat window finite.
const energyTiny = 1e-12

// project writes the projections of n windows x (L×C each) onto the atoms,
// Y_b = Ψ̄·[x_b | 1] (2N×(C+1) each), to Y.
func project(Y, x []float64, bs *basis, n, L, C int) {
	C1, M := C+1, len(bs.sum)
	for b := range n {
		yb := Y[b*M*C1 : (b+1)*M*C1]
		gemm.NNSet(M, C, L, bs.psibar, L, x[b*L*C:(b+1)*L*C], C, yb, C1)
		for j := range M {
			yb[j*C1+C] = bs.sum[j]
		}
	}
}

// instanceNorm writes each window's channels with their own mean removed
// and divided by their own standard deviation √(var + ε).
func instanceNorm(xn, mu, sd, x []float64, n, L, C int) {
	for b := range n {
		xb, nb := x[b*L*C:(b+1)*L*C], xn[b*L*C:(b+1)*L*C]
		for c := range C {
			s := 0.0
			for t := range L {
				s += xb[t*C+c]
			}
			mean := s / float64(L)
			v := 0.0
			for t := range L {
				dv := xb[t*C+c] - mean
				v += dv * dv
			}
			std := math.Sqrt(v/float64(L) + instanceEps)
			mu[b*C+c], sd[b*C+c] = mean, std
			inv := 1 / std
			for t := range L {
				nb[t*C+c] = (xb[t*C+c] - mean) * inv
			}
		}
	}
}

// softmax writes softmax(v/τ) to dst.
func softmax(dst, v []float64, tau float64) {
	mx := math.Inf(-1)
	for _, x := range v {
		mx = max(mx, x)
	}
	s := 0.0
	for i, x := range v {
		e := math.Exp((x - mx) / tau)
		dst[i] = e
		s += e
	}
	for i := range dst {
		dst[i] /= s
	}
}

// topK writes the indices of the len(dst) largest values of v to dst, largest
// first; ties go to the lower index. vals is scratch of len(dst).
func topK(dst []int32, v, vals []float64) {
	k, cnt := len(dst), 0
	for i, x := range v {
		if cnt == k && !(x > vals[k-1]) {
			continue
		}
		p := cnt
		if cnt < k {
			cnt++
		} else {
			p = k - 1
		}
		for p > 0 && vals[p-1] < x {
			vals[p], dst[p] = vals[p-1], dst[p-1]
			p--
		}
		vals[p], dst[p] = x, int32(i)
	}
}

// group orders the n·K selections by head: head f's windows occupy grouped
// slots groupStart[f] … groupStart[f+1]−1 in window order.
func (ws *Workspace) group(n int) {
	N, K := ws.cfg.Frequencies, ws.cfg.slots()
	gs := ws.groupStart
	clear(gs)
	sel := ws.sel[:n*K]
	for _, f := range sel {
		gs[f+1]++
	}
	for f := range N {
		gs[f+1] += gs[f]
	}
	copy(ws.cursor, gs[:N])
	// Split the heads between two parts at the frequency that halves the work.
	ws.headSplit = 0
	for f := 1; f <= N; f++ {
		if 2*gs[f] <= gs[N] {
			ws.headSplit = f
		}
	}
	for b := range n {
		for k := range K {
			f := sel[b*K+k]
			j := ws.cursor[f]
			ws.cursor[f]++
			ws.groupWin[j] = int32(b)
			ws.pos[b*K+k] = j
			ws.slotSel[j] = int32(b*K + k)
		}
	}
}

// fold writes q = [W̃·W1[:d] ; W̃·W1[d:]], (2·C1)×cols, where W̃ is C1×d and
// W1 is 2d×cols: a first layer that reads a frequency's coefficients
// c = [y_cos·W̃ | y_sin·W̃] gives c·W1 = [y_cos | y_sin]·q, so a lean pass
// scores a frequency with 2·C1 products a unit instead of 2d.
func fold(q, wt, w1 []float64, C1, d, cols int) {
	q = q[:2*C1*cols]
	gemm.NNSet(C1, cols, d, wt, d, w1[:d*cols], cols, q[:C1*cols], cols)
	gemm.NNSet(C1, cols, d, wt, d, w1[d*cols:2*d*cols], cols, q[C1*cols:], cols)
}
