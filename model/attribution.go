package model

import (
	"fmt"
	"math"

	"github.com/freqlens/freqlens/internal/scratch"
)

// Attribution splits one forecast into its parts:
//
//	ŷ = Σ_f σ·(α·1[f∈S]·g_f(c_f) + q_f(τ) + b_f(z_f)) + ((1−α)·σ·r(u) + μ)
//
// where S is the selected set, g_f frequency f's bias-free head, c_f its
// coefficients, q_f its clock term (a frequency of a rhythm, phased by the
// window's time τ; zero for the others), b_f its band head (a frequency of
// a rhythm, linear in z_f, its coefficients of the window less the clock;
// zero for the others), r the residual MLP
// reading u, the window less its rhythms, and μ, σ the window's per-channel
// mean and standard deviation restored by instance normalisation (μ = 0,
// σ = 1 without it). The contributions and the residual add up to the
// forecast exactly, up to floating-point rounding.
//
// Nothing in a frequency's part depends on which other frequencies take
// part, and nothing else depends on it: the forecast is
// an additive game over the frequencies, so each contribution is that
// frequency's Shapley value, removing it moves the forecast by exactly its
// contribution (Workspace.Without), a frequency whose part is zero for
// every window contributes zero, and twin frequencies contribute alike.
type Attribution struct {
	// Alpha is α, the fusion weight of the frequency heads.
	Alpha float64
	// Forecast is ŷ, Horizon×Channels row-major.
	Forecast []float64
	// Residual is (1−α)·σ·r(u) + μ: everything not credited to a frequency,
	// the window level included. Horizon×Channels.
	Residual []float64
	// Level is μ, the per-channel window mean inside Residual.
	Level []float64
	// Contributions has one entry per selected frequency: the rhythms'
	// first, by id, then the others, highest selection score first.
	Contributions []Contribution
	// ResidualShare is the residual's part (Residual − Level) of the total
	// absolute attribution at the level of cycles (see Contribution.Share).
	ResidualShare float64
	// RhythmShares holds, per rhythm (in the order of Model.Meta.Rhythms),
	// its summed part's share: Σ|Σ of its frequencies' Values| over the
	// same total. The rhythms', the free frequencies' and the residual's
	// shares sum to 1.
	RhythmShares []float64
}

// Contribution is one frequency's part of a forecast.
type Contribution struct {
	Frequency
	// Score is the frequency's selection logit. A rhythm's frequency is
	// selected whatever its score, and a model whose rhythms take all K
	// places scores nothing (0).
	Score float64
	// Values is σ·(α·g_f(c_f) + q_f + b_f), Horizon×Channels, in the
	// forecast's units.
	Values []float64
	// Share is Σ|Values| over the total absolute attribution at the level
	// of cycles: Σ|Residual − Level|, plus Σ|Values| of each frequency of
	// no rhythm, plus, for each rhythm, Σ|the sum of its frequencies'
	// Values|. A rhythm's lines can partly cancel (a week's sidebands
	// around the day), so a rhythm counts by what it adds up to, not by
	// its lines' sizes: its frequencies' shares can sum to more than its
	// own (Attribution.RhythmShares). Without rhythms this is the plain
	// total and all the shares sum to 1.
	Share float64
}

// Attribution writes the attribution of window i of the last Forward call to
// dst (a nil dst is allocated; its slices are reused when large enough) and
// returns it. It panics if i is outside the last batch.
func (ws *Workspace) Attribution(i int, dst *Attribution) *Attribution {
	return ws.AttributionInto(i, dst, nil)
}

// AttributionInto is Attribution with the forecast's, the residual's and
// each contribution's numbers in new storage that alloc(n) returns (n
// numbers, their contents any) instead of dst's, when alloc is not nil: the
// caller keeps those numbers without copying them, as explain.Explainer's
// ExplainInto hands them to the pipeline's arena. A nil alloc is
// Attribution.
func (ws *Workspace) AttributionInto(i int, dst *Attribution, alloc func(n int) []float64) *Attribution {
	if i < 0 || i >= ws.n {
		panic(fmt.Sprintf("model: Attribution(%d) outside the last batch of %d windows", i, ws.n))
	}
	if dst == nil {
		dst = new(Attribution)
	}
	m := ws.m
	cfg := m.cfg
	L, H, C, K := cfg.Lookback, cfg.Horizon, cfg.Channels, cfg.slots()
	HC := H * C
	alpha := sigmoid(m.params.Fusion[0])
	dst.Alpha = alpha
	dst.Forecast = scratch.Storage(alloc, dst.Forecast, HC)
	dst.Residual = scratch.Storage(alloc, dst.Residual, HC)
	dst.Level = scratch.Resize(dst.Level, C)
	dst.Contributions = dst.Contributions[:0]

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
	var qf, band []float64
	if m.clock.active {
		qf = ws.qprof[(i*(L+H)+L)*C : (i+1)*(L+H)*C]
	}
	if m.hasRhythms() {
		band = ws.band[i*HC : (i+1)*HC]
	}
	// The same expressions as the forward pass, so that with every
	// contribution zero the residual is the forecast to the last bit.
	fc, rd := dst.Forecast[:HC], dst.Residual[:HC]
	fs, res = fs[:HC], res[:HC]
	total := 0.0
	for j := range fc {
		yn := alpha*fs[j] + (1-alpha)*res[j]
		if qf != nil {
			yn += qf[j]
		}
		if band != nil {
			yn += band[j]
		}
		fc[j] = yn*sr[j] + lv[j]
		r := (1 - alpha) * res[j] * sr[j]
		rd[j] = r + lv[j]
		total += math.Abs(r)
	}
	resTotal := total
	add := func(f int) *Contribution {
		ct := scratch.Grow1(&dst.Contributions)
		ct.Frequency = m.frequency(f)
		ct.Score = ws.score[i*cfg.Frequencies+f]
		ct.Values = scratch.Storage(alloc, ct.Values, HC)
		return ct
	}
	clk := ws.attrClock[:HC]
	// Each contribution's Share holds Σ|Values| until the total is known.
	for k := range K {
		f := int(ws.sel[i*K+k])
		if ws.without != nil && ws.without[f] {
			continue
		}
		slot := int(ws.pos[i*K+k])
		ct := add(f)
		vals, head := ct.Values[:HC], ws.contrib[slot*HC:(slot+1)*HC]
		if ws.rhythmTerm(i, f, clk) {
			ct.Share = scaleAddAbsSum(vals, head, hs, clk, sr)
		} else {
			ct.Share = scaleAbsSum(vals, head, hs)
		}
	}
	if ws.partsFromWall(i, dst) {
		resTotal = 0
		for j := range rd {
			resTotal += math.Abs(rd[j] - lv[j])
		}
		for k := range dst.Contributions {
			ct := &dst.Contributions[k]
			ct.Share = 0
			for _, v := range ct.Values[:HC] {
				ct.Share += math.Abs(v)
			}
		}
	}
	total = resTotal + ws.cycleTotals(dst.Contributions, dst)
	for k := range dst.Contributions {
		if total > 0 {
			dst.Contributions[k].Share /= total
		} else {
			dst.Contributions[k].Share = 0
		}
	}
	dst.ResidualShare = 0
	for r := range dst.RhythmShares {
		if total > 0 {
			dst.RhythmShares[r] /= total
		} else {
			dst.RhythmShares[r] = 0
		}
	}
	if total > 0 {
		dst.ResidualShare = resTotal / total
	}
	return dst
}

// Without removes the frequencies ids from every following pass with ws:
// their heads are dropped from the selection (not replaced by the next
// best) and their clock terms and band heads are zero, so the forecast is
// the model's forecast without them. It differs from the full forecast by
// exactly the removed frequencies' contributions. Without()
// with no ids restores the full model. It allocates only on its first use.
func (ws *Workspace) Without(ids ...int) {
	if len(ids) == 0 {
		ws.without = nil
		return
	}
	if cap(ws.withoutBuf) < ws.cfg.Frequencies {
		ws.withoutBuf = make([]bool, ws.cfg.Frequencies)
	}
	ws.without = ws.withoutBuf[:ws.cfg.Frequencies]
	clear(ws.without)
	for _, id := range ids {
		if id >= 0 && id < len(ws.without) {
			ws.without[id] = true
		}
	}
}

// cycleTotals returns the attribution's total at the level of cycles
// without the residual's part, given cs with each Share holding its
// contribution's Σ|Values|: the free frequencies' sums plus, per rhythm,
// Σ|the sum of its frequencies' Values|, which it also writes to
// dst.RhythmShares (one per rhythm of the model, 0 for one without parts).
func (ws *Workspace) cycleTotals(cs []Contribution, dst *Attribution) float64 {
	m := ws.m
	R := len(m.Meta.Rhythms)
	dst.RhythmShares = scratch.Resize(dst.RhythmShares, R)
	clear(dst.RhythmShares)
	total := 0.0
	if R == 0 {
		for k := range cs {
			total += cs[k].Share
		}
		return total
	}
	HC := ws.cfg.Horizon * ws.cfg.Channels
	ws.attrRhythm = scratch.Resize(ws.attrRhythm, R*HC)
	sums := ws.attrRhythm
	clear(sums)
	for k := range cs {
		r := m.clock.rhythmOfID(cs[k].ID)
		if r < 0 {
			total += cs[k].Share
			continue
		}
		scratch.AddTo(sums[r*HC:(r+1)*HC], cs[k].Values)
	}
	for r := range R {
		dst.RhythmShares[r] = scratch.AbsSum(sums[r*HC : (r+1)*HC])
		total += dst.RhythmShares[r]
	}
	return total
}

// AddShares adds window i's attribution shares of the last pass to acc
// (N, by frequency id) and racc (one per rhythm of the model, in the
// order of Meta.Rhythms) and returns the residual's share: the same
// shares as Attribution gives, without building the contributions, so
// that a measurement over many windows (their mean shares, the model
// file's Metrics.Shares) allocates nothing per window.
func (ws *Workspace) AddShares(i int, acc, racc []float64) float64 {
	if ws.walled && ws.wallOn[i] {
		// Read on wall-clock steps: the shares are those of the parts put
		// back on the real steps, which Attribution computes.
		a := ws.AttributionInto(i, &ws.wallAttr, nil)
		for _, ct := range a.Contributions {
			acc[ct.ID] += ct.Share
		}
		for r, v := range a.RhythmShares {
			racc[r] += v
		}
		return a.ResidualShare
	}
	m := ws.m
	cfg := m.cfg
	H, C, K := cfg.Horizon, cfg.Channels, cfg.slots()
	HC := H * C
	R := len(m.Meta.Rhythms)
	alpha := sigmoid(m.params.Fusion[0])
	sd, res := ws.sd[i*C:(i+1)*C], ws.res[i*HC:(i+1)*HC]
	resid := 0.0
	for j, v := range res {
		resid += math.Abs((1 - alpha) * v * sd[j%C])
	}
	// The parts: the selected frequencies' (the rhythms' among them).
	type part struct{ f, k int }
	each := func(fn func(p part)) {
		for k := range K {
			fn(part{int(ws.sel[i*K+k]), k})
		}
	}
	// Two passes over the parts: the total first (a rhythm by its summed
	// part), then the shares, so nothing is allocated for any K.
	ws.attrRhythm = scratch.Resize(ws.attrRhythm, R*HC)
	sums := ws.attrRhythm
	clear(sums)
	total := resid
	each(func(p part) {
		if r := m.clock.rhythmOfID(p.f); r >= 0 {
			ws.partAdd(i, p.f, p.k, alpha, sums[r*HC:(r+1)*HC])
		} else {
			total += ws.partAdd(i, p.f, p.k, alpha, nil)
		}
	})
	for r := range R {
		total += scratch.AbsSum(sums[r*HC : (r+1)*HC])
	}
	if total <= 0 {
		return 0
	}
	each(func(p part) {
		acc[p.f] += ws.partAdd(i, p.f, p.k, alpha, nil) / total
	})
	for r := range R {
		racc[r] += scratch.AbsSum(sums[r*HC:(r+1)*HC]) / total
	}
	return resid / total
}

// partAdd returns Σ|σ·(α·g_f + q_f + b_f)| of frequency f in window i, with
// its head the rank-k selection, and adds the part to dst (H·C) unless dst
// is nil.
func (ws *Workspace) partAdd(i, f, k int, alpha float64, dst []float64) float64 {
	C, K, HC := ws.cfg.Channels, ws.cfg.slots(), ws.cfg.Horizon*ws.cfg.Channels
	sd := ws.sd[i*C : (i+1)*C]
	clk := ws.attrClock[:HC]
	hasClock := ws.rhythmTerm(i, f, clk)
	slot := int(ws.pos[i*K+k])
	head := ws.contrib[slot*HC : (slot+1)*HC]
	a := 0.0
	for j := range HC {
		v := alpha * head[j]
		if hasClock {
			v += clk[j]
		}
		v *= sd[j%C]
		a += math.Abs(v)
		if dst != nil {
			dst[j] += v
		}
	}
	return a
}

// scaleAddAbsSum writes dst[j] = g[j]·s[j] + q[j]·t[j] and returns
// Σ|dst[j]|, four positions at a time.
func scaleAddAbsSum(dst, g, s, q, t []float64) float64 {
	g, s, q, t = g[:len(dst)], s[:len(dst)], q[:len(dst)], t[:len(dst)]
	var a0, a1, a2, a3 float64
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		v0, v1 := g[i]*s[i]+q[i]*t[i], g[i+1]*s[i+1]+q[i+1]*t[i+1]
		v2, v3 := g[i+2]*s[i+2]+q[i+2]*t[i+2], g[i+3]*s[i+3]+q[i+3]*t[i+3]
		dst[i], dst[i+1], dst[i+2], dst[i+3] = v0, v1, v2, v3
		a0 += math.Abs(v0)
		a1 += math.Abs(v1)
		a2 += math.Abs(v2)
		a3 += math.Abs(v3)
	}
	for ; i < len(dst); i++ {
		dst[i] = g[i]*s[i] + q[i]*t[i]
		a0 += math.Abs(dst[i])
	}
	return (a0 + a1) + (a2 + a3)
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

// MaxContributions is the most contributions an Attribution of one model
// window holds: the selected frequencies (every rhythm frequency among
// them).
func (m *Model) MaxContributions() int { return m.cfg.slots() }
