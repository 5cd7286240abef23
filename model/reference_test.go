package model

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/freqlens/freqlens/cycles"
)

// This file holds a second, deliberately plain implementation of the
// training loss: explicit loops over every index, no gemm, no grouping, no
// shards. The tests compare the fast forward pass with it and check the
// hand-written gradients against its finite differences.

// refSelection fixes what the loss treats as constant: the selected set of
// every window and the softmax probabilities p̄ of the straight-through
// gates (gate = 1 + p − p̄, which is exactly 1 at the evaluation point and
// has the gradient of p).
type refSelection struct {
	sel  [][]int
	pbar [][]float64
	// resMask (window → R) and headMask (window → rank → E) are the dropout
	// masks; nil means no dropout.
	resMask  [][]float64
	headMask [][][]float64
}

// refLosses are the unweighted terms and the weighted total of the loss.
type refLosses struct {
	mse, div, recon, sparse, vr, total float64
	forecast                           []float64
	// selected is, per window, the set the reference itself selects at its
	// evaluation point (ascending ids): the rhythms' frequencies
	// and then the highest scores. The loss uses fix.sel, held constant for
	// finite differences; the tests check the two agree at the model's own
	// parameters.
	selected [][]int
}

// refClock is what the reference needs of a model's rhythms: the rhythms,
// whether the clock's terms are in use, and each window's (and channel's)
// end time in steps since the epoch.
type refClock struct {
	rhythms []cycles.Rhythm
	active  bool
	steps   []float64
}

func clockOf(m *Model, steps []float64) refClock {
	return refClock{rhythms: m.Meta.Rhythms, active: m.clock.active, steps: steps}
}

// refLoss evaluates the training loss of params p (shapes cfg) on n windows.
func refLoss(cfg Config, p *Params, rc refClock, x, y []float64, n int, noise []float64, tau float64, fix refSelection, tc StepConfig) refLosses {
	L, C, H := cfg.Lookback, cfg.Channels, cfg.Horizon
	d, N := cfg.Hidden, cfg.Frequencies
	HC := H * C
	r := refModel{cfg: cfg, p: p, rc: rc}
	r.freq, r.psibar = refAtoms(cfg, p)
	for _, rh := range rc.rhythms {
		r.members = append(r.members, rh.Frequencies...)
	}

	var out refLosses
	out.forecast = make([]float64, n*HC)
	alpha := 1 / (1 + math.Exp(-p.Fusion[0]))
	for b := range n {
		xn, mu, sd := r.normalise(x[b*L*C : (b+1)*L*C])
		qpast, qfut := r.clockTerms(rc.steps[b*C : (b+1)*C])
		xr, band := r.leftover(xn, qpast)
		hid, coef, head := r.coefficients(xn, xr)
		r.addRecon(&out.recon, hid, coef)
		u := r.scores(head, xn, noise[b*N:(b+1)*N])
		out.selected = append(out.selected, r.selection(u))
		prob := refSoftmax(u, tau)
		if sparse, ok := r.sparse(prob, fix.sel[b]); ok {
			out.sparse += sparse
		}
		yfreq := r.heads(b, head, prob, fix)
		res := r.residual(b, xr, fix, rc.steps[b*C:(b+1)*C])
		for o := range HC {
			c := o % C
			out.forecast[b*HC+o] = (alpha*yfreq[o]+(1-alpha)*res[o]+qfut[o]+band[o])*sd[c] + mu[c]
		}
		r.addOutputLosses(&out, out.forecast[b*HC:(b+1)*HC], y[b*HC:(b+1)*HC])
	}
	B := float64(n)
	out.mse /= B * float64(HC)
	out.vr /= B * float64(C)
	out.recon /= B * float64(L*d)
	out.sparse /= B
	out.div = refDiversity(r.freq)
	out.total = out.mse + tc.LambdaDiv*out.div + tc.LambdaRecon*out.recon + tc.LambdaSparse*out.sparse + tc.LambdaVar*out.vr
	return out
}

// refModel is what every window of the reference reads: the shapes, the
// parameters and the clock, the frequencies, their atoms, and the
// rhythms' frequencies.
type refModel struct {
	cfg Config
	p   *Params
	rc  refClock
	// freq holds the frequencies; psibar[2i] and psibar[2i+1] are
	// frequency i's cosine and sine atoms.
	freq    []float64
	psibar  [][]float64
	members []int
}

// refAtoms returns the frequencies of p and atoms 2i and 2i+1: frequency
// i's cosine and sine, phase anchored at the window's last step, each of
// unit norm (up to basisEps).
func refAtoms(cfg Config, p *Params) (freq []float64, psibar [][]float64) {
	L, N := cfg.Lookback, cfg.Frequencies
	fmin, fmax := freqBounds(L)
	freq = make([]float64, N)
	psibar = make([][]float64, 2*N)
	for i := range N {
		freq[i] = fmin + (fmax-fmin)/(1+math.Exp(-p.Theta[i]))
		for q, wave := range []func(float64) float64{math.Cos, math.Sin} {
			psi := make([]float64, L)
			nrm := 0.0
			for t := range L {
				psi[t] = wave(2*math.Pi*freq[i]*float64(t-L+1) + p.Phi[i])
				nrm += psi[t] * psi[t]
			}
			nrm = math.Sqrt(nrm)
			for t := range L {
				psi[t] /= nrm + basisEps
			}
			psibar[2*i+q] = psi
		}
	}
	return freq, psibar
}

// refGelu is the tanh approximation of GELU.
func refGelu(v float64) float64 {
	return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
}

// normalise returns window xb normalised per channel (instance
// normalisation, or none by cfg.Norm) and each channel's mean and
// deviation.
func (r *refModel) normalise(xb []float64) (xn, mu, sd []float64) {
	L, C := r.cfg.Lookback, r.cfg.Channels
	mu, sd = make([]float64, C), make([]float64, C)
	xn = make([]float64, L*C)
	for c := range C {
		if r.cfg.Norm == NormNone {
			sd[c] = 1
		} else {
			for t := range L {
				mu[c] += xb[t*C+c] / float64(L)
			}
			for t := range L {
				sd[c] += (xb[t*C+c] - mu[c]) * (xb[t*C+c] - mu[c]) / float64(L)
			}
			sd[c] = math.Sqrt(sd[c] + instanceEps)
		}
		for t := range L {
			xn[t*C+c] = (xb[t*C+c] - mu[c]) / sd[c]
		}
	}
	return xn, mu, sd
}

// clockTerms returns the clock's terms over a window whose channels end
// at steps (L×C) and over its horizon (H×C), straight from their
// definition: a·cos(2πk(ρ + s/P)) + b·sin(2πk(ρ + s/P)). With instance
// normalisation a term is its excess over its mean in the window.
func (r *refModel) clockTerms(steps []float64) (qpast, qfut []float64) {
	L, C, H := r.cfg.Lookback, r.cfg.Channels, r.cfg.Horizon
	p, rc := r.p, r.rc
	qpast, qfut = make([]float64, L*C), make([]float64, H*C)
	for _, rh := range rc.rhythms {
		for j, id := range rh.Frequencies {
			if !rc.active {
				continue
			}
			k := float64(rh.Harmonics[j])
			for c := range C {
				rho := rh.AnchorPhase + (steps[c]-rh.AnchorStep)/rh.PeriodSteps
				rho -= math.Floor(rho) // the phase, in cycles: its whole cycles are nothing
				for st := -(L - 1); st <= H; st++ {
					ang := 2 * math.Pi * k * (rho + float64(st)/rh.PeriodSteps)
					v := p.Clock[2*id*C+c]*math.Cos(ang) + p.Clock[(2*id+1)*C+c]*math.Sin(ang)
					if st <= 0 {
						qpast[(st+L-1)*C+c] += v
					} else {
						qfut[(st-1)*C+c] += v
					}
				}
			}
		}
	}
	if rc.active && r.cfg.Norm == NormInstance {
		for c := range C {
			mean := 0.0
			for t := range L {
				mean += qpast[t*C+c] / float64(L)
			}
			for t := range L {
				qpast[t*C+c] -= mean
			}
			for h := range H {
				qfut[h*C+c] -= mean
			}
		}
	}
	return qpast, qfut
}

// leftover returns what the rhythms leave of the normalised window xn
// (the window less the clock's terms qpast and its projections on the
// rhythms' atoms: the residual's input and the other frequencies') and
// the band heads' sum (H×C).
func (r *refModel) leftover(xn, qpast []float64) (xr, band []float64) {
	L, C, H := r.cfg.Lookback, r.cfg.Channels, r.cfg.Horizon
	xr = slices.Clone(xn)
	// removeOn takes from channel c of xr its projection on atom psi
	// measured in from, and returns that projection.
	removeOn := func(psi, from []float64, c int) float64 {
		proj := 0.0
		for t := range L {
			proj += psi[t] * from[t*C+c]
		}
		for t := range L {
			xr[t*C+c] -= psi[t] * proj
		}
		return proj
	}
	band = make([]float64, H*C)
	if len(r.members) > 0 {
		if r.rc.active {
			for i := range xr {
				xr[i] -= qpast[i]
			}
		}
		xt := slices.Clone(xr)
		for _, f := range r.members {
			for a, psi := range r.psibar[2*f : 2*f+2] {
				for c := range C {
					proj := removeOn(psi, xt, c)
					for h := range H {
						band[h*C+c] += r.p.Band[(2*f+a)*H+h] * proj
					}
				}
			}
		}
	}
	return xr, band
}

// hidden returns the hidden rows (L×d) of the L×C window x.
func (r *refModel) hidden(x []float64) [][]float64 {
	L, C, d := r.cfg.Lookback, r.cfg.Channels, r.cfg.Hidden
	hid := make([][]float64, L)
	for t := range L {
		hid[t] = make([]float64, d)
		for j := range d {
			v := r.p.InB[j]
			for c := range C {
				v += x[t*C+c] * r.p.InW[c*d+j]
			}
			hid[t][j] = v
		}
	}
	return hid
}

// coefOf returns frequency i's 2d coefficients of hidden rows hid: cosine
// part, sine part.
func (r *refModel) coefOf(i int, hid [][]float64) []float64 {
	L, d := r.cfg.Lookback, r.cfg.Hidden
	ci := make([]float64, 2*d)
	for q := range 2 {
		for j := range d {
			for t := range L {
				ci[q*d+j] += r.psibar[2*i+q][t] * hid[t][j]
			}
		}
	}
	return ci
}

// coefficients returns the hidden rows of the window xn and, per
// frequency i, coef[i], its coefficients of the window, and head[i], what
// its head and score read: the coefficients of the rhythms' leftover xr
// for a frequency outside them.
func (r *refModel) coefficients(xn, xr []float64) (hid, coef, head [][]float64) {
	N := r.cfg.Frequencies
	hid = r.hidden(xn)
	coef, head = make([][]float64, N), make([][]float64, N)
	hidU := r.hidden(xr)
	for i := range N {
		coef[i] = r.coefOf(i, hid)
		head[i] = coef[i]
		if len(r.members) > 0 && !slices.Contains(r.members, i) {
			head[i] = r.coefOf(i, hidU)
		}
	}
	return hid, coef, head
}

// addRecon adds to *recon the squared error of the reconstruction of the
// hidden rows hid from all 2N atoms and their coefficients coef.
func (r *refModel) addRecon(recon *float64, hid, coef [][]float64) {
	L, d, N := r.cfg.Lookback, r.cfg.Hidden, r.cfg.Frequencies
	for t := range L {
		for j := range d {
			rec := 0.0
			for i := range N {
				rec += r.psibar[2*i][t]*coef[i][j] + r.psibar[2*i+1][t]*coef[i][d+j]
			}
			*recon += (rec - hid[t][j]) * (rec - hid[t][j])
		}
	}
}

// scores returns the perturbed logits (N): each frequency's score from
// the scorer's MLP on head, its bias and the log of its share of the
// window's energy, plus the window's noise. Every rhythm frequency is
// selected outside the softmax (its gate is exactly 1), so its logit is
// −∞.
func (r *refModel) scores(head [][]float64, xn, noise []float64) []float64 {
	L, C, d, N, S := r.cfg.Lookback, r.cfg.Channels, r.cfg.Hidden, r.cfg.Frequencies, r.cfg.ScorerHidden
	p := r.p
	u := make([]float64, N)
	for i := range N {
		s := p.FreqBias[i]
		for k := range S {
			v := p.ScB1[k]
			for j := range 2 * d {
				v += head[i][j] * p.ScW1[j*S+k]
			}
			s += refGelu(v) * p.ScW2[k]
		}
		s += math.Log(refEnergyShare(r.psibar, xn, i, L, C) + energyFloor)
		u[i] = s + noise[i]
	}
	for _, id := range r.members {
		u[id] = math.Inf(-1)
	}
	return u
}

// selection returns the set the reference selects on logits u (ascending
// ids): the rhythms' frequencies and then the highest scores.
func (r *refModel) selection(u []float64) []int {
	slots, own := max(r.cfg.TopK, len(r.members)), slices.Clone(r.members)
	byScore := make([]int, r.cfg.Frequencies)
	for i := range byScore {
		byScore[i] = i
	}
	slices.SortStableFunc(byScore, func(i, j int) int { return cmp.Compare(u[j], u[i]) })
	for _, i := range byScore {
		if len(own) < slots && !slices.Contains(own, i) {
			own = append(own, i)
		}
	}
	slices.Sort(own)
	return own
}

// refSoftmax returns the softmax of logits u tempered by tau.
func refSoftmax(u []float64, tau float64) []float64 {
	mx := slices.Max(u)
	prob := make([]float64, len(u))
	z := 0.0
	for i := range u {
		prob[i] = math.Exp((u[i] - mx) / tau)
		z += prob[i]
	}
	for i := range u {
		prob[i] /= z
	}
	return prob
}

// sparse returns the window's sparsity term, 1 less the probabilities of
// its selected set sel, and whether the term counts: it does unless no
// selected frequency won a place in the softmax.
func (r *refModel) sparse(prob []float64, sel []int) (float64, bool) {
	sparse := 1.0
	free := 0 // selected frequencies that won a place in the softmax
	for _, f := range sel {
		sparse -= prob[f]
		if !slices.Contains(r.members, f) {
			free++
		}
	}
	return sparse, free > 0
}

// heads returns the sum (H×C) of window b's selected heads, each with its
// straight-through gate and its dropout mask from fix.
func (r *refModel) heads(b int, head [][]float64, prob []float64, fix refSelection) []float64 {
	d, E, HC := r.cfg.Hidden, r.cfg.HeadHidden, r.cfg.Horizon*r.cfg.Channels
	p := r.p
	yfreq := make([]float64, HC)
	for k, f := range fix.sel[b] {
		gate := 1 + prob[f] - fix.pbar[b][k]
		a := make([]float64, E)
		for e := range E {
			for j := range 2 * d {
				a[e] += head[f][j] * p.HeadW1[f*2*d*E+j*E+e]
			}
			a[e] = math.Max(a[e], 0)
			if fix.headMask != nil {
				a[e] *= fix.headMask[b][k][e]
			}
		}
		for o := range HC {
			v := 0.0
			for e := range E {
				v += a[e] * p.HeadW2[f*E*HC+e*HC+o]
			}
			yfreq[o] += gate * v
		}
	}
	return yfreq
}

// residual returns the residual's forecast (H×C) of window b from the
// rhythms' leftover xr: one MLP, shared by the channels, with the dropout
// masks of fix.
func (r *refModel) residual(b int, xr []float64, fix refSelection, steps []float64) []float64 {
	L, C, H, R := r.cfg.Lookback, r.cfg.Channels, r.cfg.Horizon, r.cfg.ResidualHidden
	p := r.p
	res := make([]float64, H*C)
	var mixed []float64
	if r.cfg.ChannelMix {
		mixed = r.mix(xr, steps)
	}
	for c := range C {
		rh := make([]float64, R)
		for k := range R {
			v := p.ResB1[k]
			for t := range L {
				v += xr[t*C+c] * p.ResW1[t*R+k]
			}
			if mixed != nil {
				for t := range L {
					v += mixed[t*C+c] * p.ResW1[(L+t)*R+k]
				}
			}
			rh[k] = refGelu(v)
			if fix.resMask != nil {
				rh[k] *= fix.resMask[b*C+c][k]
			}
		}
		for h := range H {
			v := p.ResB2[h*C+c]
			for k := range R {
				v += rh[k] * p.ResW2[k*H+h]
			}
			res[h*C+c] = v
		}
	}
	return res
}

// mix returns the channels' mix of the leftover (step-major, L×C) of a
// model with Config.ChannelMix, the second half of the residual's input:
// channel c reads Σ_c' W_cc'·u_c', W = M₀ +
// cos 2πρ_c·M₁ + sin 2πρ_c·M₂ with ρ_c the first rhythm's phase at the
// end of channel c's window (steps), M₀ alone without a clock.
func (r *refModel) mix(xr, steps []float64) []float64 {
	L, C := r.cfg.Lookback, r.cfg.Channels
	mw := r.p.MixW
	out := make([]float64, L*C)
	for c := range C {
		cs, sn := 0.0, 0.0
		if r.rc.active {
			rh := r.rc.rhythms[0]
			ph := rh.AnchorPhase + (steps[c]-rh.AnchorStep)/rh.PeriodSteps
			sn, cs = math.Sincos(2 * math.Pi * (ph - math.Floor(ph)))
		}
		for t := range L {
			v := 0.0
			for c2 := range C {
				w := mw[c*C+c2] + cs*mw[C*C+c*C+c2] + sn*mw[2*C*C+c*C+c2]
				v += w * xr[t*C+c2]
			}
			out[t*C+c] = v
		}
	}
	return out
}

// addOutputLosses adds to out's sums a window's squared error of forecast
// fb against target tb and its variance-matching term: per channel, the
// squared difference of their deviations over the horizon.
func (r *refModel) addOutputLosses(out *refLosses, fb, tb []float64) {
	C, H := r.cfg.Channels, r.cfg.Horizon
	for o := range H * C {
		out.mse += (fb[o] - tb[o]) * (fb[o] - tb[o])
	}
	for c := range C {
		std := func(v []float64) float64 {
			m, s := 0.0, 0.0
			for h := range H {
				m += v[h*C+c] / float64(H)
			}
			for h := range H {
				s += (v[h*C+c] - m) * (v[h*C+c] - m) / float64(H)
			}
			return math.Sqrt(s + varEps)
		}
		dd := std(fb) - std(tb)
		out.vr += dd * dd
	}
}

// refDiversity returns the diversity term of frequencies freq: the mean
// log-barrier on the gaps of the sorted log-frequencies, negated.
func refDiversity(freq []float64) float64 {
	N := len(freq)
	div := 0.0
	logf := slices.Clone(freq)
	for i := range logf {
		logf[i] = math.Log(logf[i])
	}
	slices.Sort(logf)
	for i := 0; i+1 < N; i++ {
		div -= math.Log(logf[i+1]-logf[i]+diversityEps) / float64(N-1)
	}
	return div
}

// refEnergyShare is frequency i's share of the window's energy: the
// squared projections of each centred channel on its two atoms over
// Σ (x̂ − mean)².
func refEnergyShare(psibar [][]float64, xn []float64, i, L, C int) float64 {
	num, den := 0.0, 0.0
	for c := range C {
		mean := 0.0
		for t := range L {
			mean += xn[t*C+c] / float64(L)
		}
		for t := range L {
			den += (xn[t*C+c] - mean) * (xn[t*C+c] - mean)
		}
		for _, psi := range psibar[2*i : 2*i+2] {
			proj := 0.0
			for t := range L {
				proj += psi[t] * (xn[t*C+c] - mean)
			}
			num += proj * proj
		}
	}
	return num / max(den, energyTiny)
}

// randomModel returns a model whose every parameter is drawn at a scale
// where all paths matter (the real initialisation keeps heads small).
func randomModel(t testing.TB, cfg Config, seed uint64) *Model {
	t.Helper()
	m, err := New(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range m.params.Data {
		m.params.Data[i] = 0.5 * rng.NormFloat64()
	}
	for i := range m.params.Theta {
		m.params.Theta[i] = 3 * (2*rng.Float64() - 1)
		m.params.Phi[i] = math.Pi * (2*rng.Float64() - 1)
	}
	m.refresh()
	return m
}

// withRhythms gives m two rhythms over its first frequencies, one shorter
// than the window and one longer (with a phase anchor), and with clock a
// cadence so the clock's terms are used.
func withRhythms(m *Model, clock bool) *Model {
	L := float64(m.cfg.Lookback)
	rs := []cycles.Rhythm{{PeriodSteps: L / 2.3, Frequencies: []int{0, 2}, Harmonics: []int{1, 2}}}
	if m.cfg.Frequencies >= 4 {
		rs = append(rs, cycles.Rhythm{PeriodSteps: 3.1 * L, Frequencies: []int{1, 3}, Harmonics: []int{2, 5}, AnchorStep: 4.9e5 + 17, AnchorPhase: 0.3})
	}
	if clock {
		m.Meta.Cadence = time.Hour
	}
	m.SetRhythms(rs)
	return m
}

// randomBatch returns n windows and targets with per-channel levels and
// scales, so instance normalisation has work to do.
func randomBatch(cfg Config, n int, seed uint64) (x, y []float64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	L, H, C := cfg.Lookback, cfg.Horizon, cfg.Channels
	x = make([]float64, n*L*C)
	y = make([]float64, n*H*C)
	for b := range n {
		for c := range C {
			level, scale := 3*rng.NormFloat64(), 0.5+2*rng.Float64()
			period := 3 + 10*rng.Float64()
			for t := range L + H {
				v := level + scale*(math.Sin(2*math.Pi*float64(t)/period)+0.3*rng.NormFloat64())
				if t < L {
					x[(b*L+t)*C+c] = v
				} else {
					y[(b*H+t-L)*C+c] = v
				}
			}
		}
	}
	return x, y
}

// gumbel returns n Gumbel(0, 1) draws.
func gumbel(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 13))
	g := make([]float64, n)
	for i := range g {
		g[i] = -math.Log(-math.Log(rng.Float64()*(1-2e-12) + 1e-12))
	}
	return g
}

// newGradTrainer returns a Stepper holding batch x, y and noise, ready for
// t.gradient, with training's default loss terms and the given dropout.
func newGradTrainer(t testing.TB, m *Model, x, y, noise []float64, n int, dropout float64) *Stepper {
	t.Helper()
	tc := trainingStep(n, dropout)
	tr := newStepper(m, tc, nil, nil)
	copy(tr.x, x)
	copy(tr.y, y)
	copy(tr.noise, noise)
	// Window end times around 2026, each channel its own (as a shuffled
	// mixed sample's are), in steps of the cadence.
	trng := rand.New(rand.NewPCG(uint64(n), 19))
	for i := range tr.tau {
		tr.tau[i] = 4.9e5 + 1000*trng.Float64()
	}
	rng := rand.New(rand.NewPCG(uint64(n), 17))
	for _, mask := range [][]float64{tr.resMask, tr.headMask} {
		for i := range mask {
			if rng.Float64() >= tc.Dropout {
				mask[i] = 1 / (1 - tc.Dropout)
			}
		}
	}
	return tr
}

// sameSelection fails t unless every window's selection in fix (what the
// model selected) is the set the reference selects on its own.
func sameSelection(t testing.TB, fix refSelection, ref refLosses) {
	t.Helper()
	for b, sel := range fix.sel {
		got := slices.Sorted(slices.Values(sel))
		if !slices.Equal(got, ref.selected[b]) {
			t.Fatalf("window %d: the model selected %v, the reference %v", b, got, ref.selected[b])
		}
	}
}

// selectionOf reads back the selections and probabilities the Stepper's
// shards used, per window of the whole batch.
func selectionOf(tr *Stepper, n int) refSelection {
	K, N := tr.m.cfg.slots(), tr.m.cfg.Frequencies
	var fix refSelection
	for b := range n {
		ws, j := tr.ws, b
		sel := make([]int, K)
		pbar := make([]float64, K)
		for k := range K {
			f := int(ws.sel[j*K+k])
			sel[k] = f
			pbar[k] = ws.tr.prob[j*N+f]
		}
		fix.sel = append(fix.sel, sel)
		fix.pbar = append(fix.pbar, pbar)
	}
	if tr.resMask != nil {
		R, E := tr.m.cfg.ResidualHidden, tr.m.cfg.HeadHidden
		pw, _, _ := tr.m.cfg.residualShape()
		for r := range n * pw {
			fix.resMask = append(fix.resMask, tr.resMask[r*R:(r+1)*R])
		}
		for b := range n {
			var heads [][]float64
			for k := range K {
				heads = append(heads, tr.headMask[(b*K+k)*E:(b*K+k+1)*E])
			}
			fix.headMask = append(fix.headMask, heads)
		}
	}
	return fix
}
