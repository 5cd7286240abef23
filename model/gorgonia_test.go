package model

import (
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	gt "gorgonia.org/tensor"
)

// TestGradientMatchesGorgonia builds the same training loss as a gorgonia
// graph on the full-size model (L=96, H=96, C=7, d=64, N=32, K=8), lets
// gorgonia differentiate it, and requires the hand-written gradient of every
// parameter tensor to agree to 1e-8 relative. Gorgonia is an independent
// implementation of automatic differentiation: it shares no code with the
// backward pass it checks.
//
// As in the finite-difference test, the selected sets are inputs and each
// straight-through gate is p + (1 − p̄) with p̄ the constant value of p, so
// the forward value is the hard gate 1 and the gradient is that of the
// tempered softmax. Dropout masks are inputs too.
func TestGradientMatchesGorgonia(t *testing.T) {
	if testing.Short() {
		t.Skip("gorgonia oracle on the full-size model is skipped in -short mode")
	}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"mixed C=7 instance norm, rhythms and clock", Config{Horizon: 96, Channels: 7}},
		{"independent no norm, rhythms and clock", Config{Horizon: 96, Channels: 1, Mode: Independent, Norm: NormNone}},
		{"mixed C=3, K below the rhythms' 4 frequencies", Config{Horizon: 24, Channels: 3, TopK: 3}},
		{"mixed C=7, channel mix", Config{Horizon: 48, Channels: 7, ChannelMix: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := withRhythms(randomModel(t, tc.cfg, 21), true)
			// Keep the scale of the full model's activations moderate.
			for i := range m.params.Data {
				m.params.Data[i] *= 0.2
			}
			m.refresh()
			const n, tau = 3, 0.6
			x, y := randomBatch(m.cfg, n, 22)
			noise := gumbel(n*m.cfg.Frequencies, 23)
			tr := newGradTrainer(t, m, x, y, noise, n, 0.2)
			hand := tr.gradient(n, tau)
			got := slices.Clone(tr.ws.tr.grad.Data)
			fix := selectionOf(tr, n)

			want, loss := gorgoniaGradient(t, m, x, y, tr.tau, n, noise, tau, fix, tr.cfg)
			if !close(hand.Total, loss, 1e-10) {
				t.Errorf("loss: hand-written %.15g, gorgonia %.15g", hand.Total, loss)
			}
			checkGradient(t, m.cfg, got, want, 1e-8)
		})
	}
}

// gorgoniaGradient returns gorgonia's gradient of the training loss with
// respect to every parameter, laid out like Params.Data, and the loss.
//
// The model reads the time: steps holds each
// window's (and channel's) end time in steps since the epoch.
func gorgoniaGradient(t *testing.T, m *Model, x, y, steps []float64, n int, noise []float64, tau float64, fix refSelection, tc StepConfig) ([]float64, float64) {
	t.Helper()
	o := &oracle{t: t, g: G.NewGraph(), m: m}
	pr := o.params(fix)
	sh := o.shared(pr)
	for _, r := range m.Meta.Rhythms {
		o.members = append(o.members, r.Frequencies...)
	}
	for b := range n {
		o.window(b, x, y, steps, noise, tau, fix, pr, sh)
	}
	total := o.total(n, sh.freq, tc)
	return o.run(total, pr)
}

// oracle builds the training loss of one model as a gorgonia graph. It
// holds the graph, the count that keeps the constants' names distinct,
// the rhythms' frequencies and the loss terms summed so far over the
// windows.
type oracle struct {
	t      *testing.T
	g      *G.ExprGraph
	m      *Model
	consts int
	// members are the rhythms' frequencies.
	members []int
	// mse, recon, sparse and vr are the unweighted loss terms' sums over
	// the windows added so far (nil before the first).
	mse, recon, sparse, vr *G.Node
}

// oracleParams are the parameter nodes: the heads are one node per head
// and only the heads of used (selected in some window) frequencies are in
// the graph, since the others' gradient is zero.
type oracleParams struct {
	inW, inB, theta, phi, scW1, scB1, scW2, freqBias *G.Node
	resW1, resB1, resW2, resB2, clockW, bandW        *G.Node
	mix                                              *G.Node // [M₀; M₁; M₂], 3C×C, nil without the channel mix
	fusion                                           *G.Node
	headW1, headW2                                   []*G.Node
	used                                             []bool
}

// oracleShared are the nodes every window reads: the frequencies, the
// cosine and sine atoms (N×L each), the input weights with their bias as
// a last row, and the fusion weight α and 1 − α.
type oracleShared struct {
	freq, psibarCos, psibarSin, wTilde *G.Node
	alpha, oneMinusAlpha               *G.Node
}

// must fails the test on err, with the stack of the graph's construction,
// and returns nd otherwise.
func (o *oracle) must(nd *G.Node, err error) *G.Node {
	o.t.Helper()
	if err != nil {
		o.t.Fatalf("%v\n%s", err, debug.Stack())
	}
	return nd
}

// oracleDense returns a tensor of the shape over a copy of v.
func oracleDense(v []float64, shape ...int) *gt.Dense {
	return gt.New(gt.WithShape(shape...), gt.WithBacking(slices.Clone(v)))
}

// param returns a differentiable vector or matrix node holding a copy of v.
func (o *oracle) param(name string, v []float64, shape ...int) *G.Node {
	if len(shape) == 1 {
		return G.NewVector(o.g, gt.Float64, G.WithShape(shape...), G.WithName(name), G.WithValue(oracleDense(v, shape...)))
	}
	return G.NewMatrix(o.g, gt.Float64, G.WithShape(shape...), G.WithName(name), G.WithValue(oracleDense(v, shape...)))
}

// constant returns a constant node holding a copy of v. Gorgonia
// hash-conses nodes: constants need distinct names, or two windows' inputs
// of the same shape would become one node.
func (o *oracle) constant(name string, v []float64, shape ...int) *G.Node {
	o.consts++
	return G.NewConstant(oracleDense(v, shape...), G.WithName(fmt.Sprintf("%s#%d", name, o.consts)))
}

// scalar returns a constant scalar node, named apart from every other.
func (o *oracle) scalar(v float64) *G.Node {
	o.consts++
	return G.NewConstant(v, G.WithName(fmt.Sprintf("c#%d", o.consts)))
}

// input returns a value node that is not differentiated. The dropout masks
// are inputs rather than constants: as constants, gorgonia's element-wise
// product gave wrong values (it may reuse an operand's storage).
func (o *oracle) input(name string, v []float64, shape ...int) *G.Node {
	return G.NewMatrix(o.g, gt.Float64, G.WithShape(shape...), G.WithName(name), G.WithValue(oracleDense(v, shape...)))
}

// gelu returns the tanh approximation of GELU of v, element-wise.
func (o *oracle) gelu(v *G.Node) *G.Node {
	inner := o.must(G.Add(v, o.must(G.Mul(o.scalar(geluA), o.must(G.Cube(v))))))
	th := o.must(G.Tanh(o.must(G.Mul(o.scalar(geluC), inner))))
	return o.must(G.Mul(o.scalar(0.5), o.must(G.HadamardProd(v, o.must(G.Add(o.scalar(1), th))))))
}

// acc adds v to the sum *sum, which starts as v.
func (o *oracle) acc(sum **G.Node, v *G.Node) {
	if *sum == nil {
		*sum = v
	} else {
		*sum = o.must(G.Add(*sum, v))
	}
}

// params returns the parameter nodes of the model, with the heads of the
// frequencies some window of fix selects. Like the constants, every node
// needs its own name: same-named nodes of the same shape would be merged.
func (o *oracle) params(fix refSelection) oracleParams {
	cfg, p := o.m.cfg, o.m.params
	C, H := cfg.Channels, cfg.Horizon
	d, N, S, E, R := cfg.Hidden, cfg.Frequencies, cfg.ScorerHidden, cfg.HeadHidden, cfg.ResidualHidden
	HC := H * C
	var pr oracleParams
	pr.inW = o.param("inW", p.InW, C, d)
	pr.inB = o.param("inB", p.InB, d)
	pr.theta = o.param("theta", p.Theta, N)
	pr.phi = o.param("phi", p.Phi, N)
	pr.scW1 = o.param("scW1", p.ScW1, 2*d, S)
	pr.scB1 = o.param("scB1", p.ScB1, S)
	pr.scW2 = o.param("scW2", p.ScW2, S)
	pr.freqBias = o.param("freqBias", p.FreqBias, N)
	if !o.m.ReadsTime() {
		o.t.Fatal("the gorgonia oracle builds the maths of a model that reads the time")
	}
	_, rin, _ := cfg.residualShape()
	pr.resW1 = o.param("resW1", p.ResW1, rin, R)
	pr.resB1 = o.param("resB1", p.ResB1, R)
	pr.resW2 = o.param("resW2", p.ResW2, R, H)
	pr.resB2 = o.param("resB2", p.ResB2, H, C)
	if cfg.ChannelMix {
		pr.mix = o.param("mix", p.MixW, 3*C, C)
	}
	pr.clockW = o.param("clock", p.Clock, 2*N, C)
	pr.bandW = o.param("band", p.Band, 2*N, H)
	pr.fusion = G.NewScalar(o.g, gt.Float64, G.WithName("fusion"), G.WithValue(p.Fusion[0]))
	pr.headW1 = make([]*G.Node, N)
	pr.headW2 = make([]*G.Node, N)
	pr.used = make([]bool, N)
	for _, sel := range fix.sel {
		for _, f := range sel {
			pr.used[f] = true
		}
	}
	for f := range N {
		if pr.used[f] {
			pr.headW1[f] = o.param(fmt.Sprintf("headW1_%d", f), p.HeadW1[f*2*d*E:(f+1)*2*d*E], 2*d, E)
			pr.headW2[f] = o.param(fmt.Sprintf("headW2_%d", f), p.HeadW2[f*E*HC:(f+1)*E*HC], E, HC)
		}
	}
	return pr
}

// shared returns the nodes every window reads. The atoms are ψ̄ =
// cos(2π f sᵀ + φ) / (‖·‖ + ε) and the same with sin, where s = t − (L−1)
// counts steps back from the window's last reading.
func (o *oracle) shared(pr oracleParams) oracleShared {
	cfg := o.m.cfg
	L, d, N := cfg.Lookback, cfg.Hidden, cfg.Frequencies
	must, scalar := o.must, o.scalar
	var sh oracleShared
	fmin, fmax := freqBounds(L)
	sh.freq = must(G.Add(scalar(fmin), must(G.Mul(scalar(fmax-fmin), must(G.Sigmoid(pr.theta))))))
	ts := make([]float64, L)
	for i := range ts {
		ts[i] = 2 * math.Pi * float64(i-(L-1))
	}
	angle := must(G.Mul(must(G.Reshape(sh.freq, gt.Shape{N, 1})), o.constant("t", ts, 1, L)))
	angle = must(G.BroadcastAdd(angle, must(G.Reshape(pr.phi, gt.Shape{N, 1})), nil, []byte{1}))
	unit := func(psi *G.Node) *G.Node {
		norm := must(G.Sqrt(must(G.Sum(must(G.Square(psi)), 1))))
		norm = must(G.Add(norm, scalar(basisEps)))
		return must(G.BroadcastHadamardDiv(psi, must(G.Reshape(norm, gt.Shape{N, 1})), nil, []byte{1}))
	}
	sh.psibarCos, sh.psibarSin = unit(must(G.Cos(angle))), unit(must(G.Sin(angle)))
	sh.wTilde = must(G.Concat(0, pr.inW, must(G.Reshape(pr.inB, gt.Shape{1, d}))))
	sh.alpha = must(G.Sigmoid(pr.fusion))
	sh.oneMinusAlpha = must(G.Sub(scalar(1), sh.alpha))
	return sh
}

// window adds window b's terms to the loss sums: its squared error,
// reconstruction error, sparsity and variance terms.
func (o *oracle) window(b int, x, y, steps, noise []float64, tau float64, fix refSelection, pr oracleParams, sh oracleShared) {
	cfg := o.m.cfg
	L, C, HC, N := cfg.Lookback, cfg.Channels, cfg.Horizon*cfg.Channels, cfg.Frequencies
	xn, mu, sd, xt := oracleNormalise(cfg, x[b*L*C:(b+1)*L*C])
	qPast, qf := o.clockTerms(steps[b*C:(b+1)*C], pr.clockW)
	ucs, bandCols := o.leftover(xn, qPast, pr.bandW, sh)
	resCols := o.residual(b, ucs, steps[b*C:(b+1)*C], pr, fix)
	head := o.coefficients(xt, ucs, sh)
	score := o.scores(head, xn, pr, sh)
	prob := o.selection(score, noise[b*N:(b+1)*N], tau)
	yfreq := o.heads(b, prob, head, pr, fix)
	yhat := o.forecast(yfreq, resCols, qf, bandCols, mu, sd, sh)
	o.outputLosses(yhat, y[b*HC:(b+1)*HC])
}

// oracleNormalise returns window xb normalised (instance normalisation or
// none, by cfg.Norm: it depends on data only, so it is computed outside
// the graph), its per-channel means and deviations, and the normalised
// window with a column of ones appended (L×(C+1)).
func oracleNormalise(cfg Config, xb []float64) (xn, mu, sd, xt []float64) {
	L, C := cfg.Lookback, cfg.Channels
	C1 := C + 1
	mu, sd = make([]float64, C), make([]float64, C)
	xn = make([]float64, L*C)
	if cfg.Norm == NormInstance {
		instanceNorm(xn, mu, sd, xb, 1, L, C)
	} else {
		copy(xn, xb)
		for c := range sd {
			sd[c] = 1
		}
	}
	xt = make([]float64, L*C1)
	for tt := range L {
		copy(xt[tt*C1:tt*C1+C], xn[tt*C:(tt+1)*C])
		xt[tt*C1+C] = 1
	}
	return xn, mu, sd, xt
}

// clockTerms returns the clock's terms of a window whose channels end at
// steps: per channel, the rhythm frequencies' cos/sin at each step of the
// window and the horizon (constants of the window's time) times that
// channel's column of the clock weights. qPast holds one L×1 node a
// channel, qf the horizon's terms as H×C.
func (o *oracle) clockTerms(steps []float64, clockW *G.Node) (qPast []*G.Node, qf *G.Node) {
	cfg := o.m.cfg
	L, C, H, N := cfg.Lookback, cfg.Channels, cfg.Horizon, cfg.Frequencies
	var qFut []*G.Node
	for c := range C {
		bp, bf := oracleClockBasis(o.m, steps[c])
		col := o.must(G.Reshape(o.must(G.Slice(clockW, nil, G.S(c))), gt.Shape{2 * N, 1}))
		qPast = append(qPast, o.must(G.Mul(o.constant("bpast", bp, L, 2*N), col))) // L×1
		qFut = append(qFut, o.must(G.Mul(o.constant("bfut", bf, H, 2*N), col)))    // H×1
	}
	qf = qFut[0]
	if C > 1 {
		qf = o.must(G.Concat(1, qFut...))
	}
	return qPast, qf
}

// oracleClockBasis returns the cos/sin of every rhythm frequency at each
// step of a window ending at step and of its horizon (L×2N and H×2N),
// each less its mean over the window under instance normalisation.
func oracleClockBasis(m *Model, step float64) (bp, bf []float64) {
	cfg := m.cfg
	L, H, N := cfg.Lookback, cfg.Horizon, cfg.Frequencies
	bp, bf = make([]float64, L*2*N), make([]float64, H*2*N)
	for _, r := range m.Meta.Rhythms {
		for j, id := range r.Frequencies {
			k := float64(r.Harmonics[j])
			rho := r.AnchorPhase + (step-r.AnchorStep)/r.PeriodSteps
			rho -= math.Floor(rho)
			for st := -(L - 1); st <= H; st++ {
				sn, cs := math.Sincos(2 * math.Pi * k * (rho + float64(st)/r.PeriodSteps))
				if st <= 0 {
					bp[(st+L-1)*2*N+2*id], bp[(st+L-1)*2*N+2*id+1] = cs, sn
				} else {
					bf[(st-1)*2*N+2*id], bf[(st-1)*2*N+2*id+1] = cs, sn
				}
			}
		}
	}
	if cfg.Norm == NormInstance {
		// Each term less its mean over the window.
		for j := range 2 * N {
			mean := 0.0
			for tt := range L {
				mean += bp[tt*2*N+j] / float64(L)
			}
			for tt := range L {
				bp[tt*2*N+j] -= mean
			}
			for h := range H {
				bf[h*2*N+j] -= mean
			}
		}
	}
	return bp, bf
}

// leftover returns, per channel, what the rhythms leave of the normalised
// window xn (L×1 each: x̃ = x̂ − q_past less its projection on the
// rhythms' atoms), which the residual reads, and the channels' band heads
// (H×1 each; none without rhythms).
func (o *oracle) leftover(xn []float64, qPast []*G.Node, bandW *G.Node, sh oracleShared) (ucs, bandCols []*G.Node) {
	cfg := o.m.cfg
	L, C, H := cfg.Lookback, cfg.Channels, cfg.Horizon
	must := o.must
	for c := range C {
		xcol := make([]float64, L)
		for tt := range L {
			xcol[tt] = xn[tt*C+c]
		}
		xt := must(G.Sub(o.constant("xcol", xcol, L, 1), qPast[c])) // L×1
		uc := xt
		var bandCol *G.Node // H×1: the band heads of channel c
		for _, r := range o.m.Meta.Rhythms {
			for _, id := range r.Frequencies {
				for a, atoms := range []*G.Node{sh.psibarCos, sh.psibarSin} {
					row := must(G.Reshape(must(G.Slice(atoms, G.S(id))), gt.Shape{1, L}))
					proj := must(G.Mul(row, xt))                                    // 1×1
					uc = must(G.Sub(uc, must(G.Mul(must(G.Transpose(row)), proj)))) // L×1
					w := must(G.Reshape(must(G.Slice(bandW, G.S(2*id+a))), gt.Shape{H, 1}))
					o.acc(&bandCol, must(G.Mul(w, proj)))
				}
			}
		}
		if bandCol != nil {
			bandCols = append(bandCols, bandCol)
		}
		ucs = append(ucs, uc)
	}
	return ucs, bandCols
}

// residual returns the residual's forecast of window b, one H×1 node a
// channel: one MLP with shared weights reads each channel's leftover,
// with its dropout mask from fix.
func (o *oracle) residual(b int, ucs []*G.Node, steps []float64, pr oracleParams, fix refSelection) (resCols []*G.Node) {
	cfg := o.m.cfg
	L, C, H, R := cfg.Lookback, cfg.Channels, cfg.Horizon, cfg.ResidualHidden
	must := o.must
	resW1 := pr.resW1
	var mixed []*G.Node
	if pr.mix != nil {
		// The input is [u_c | mix_c]: one block of R₁ for each half.
		mixed = o.mix(ucs, steps, pr.mix)
		resW1 = must(G.Slice(pr.resW1, G.S(0, L)))
	}
	for c, uc := range ucs {
		uc = must(G.Reshape(uc, gt.Shape{1, L}))
		pre := must(G.Mul(uc, resW1))
		if mixed != nil {
			mc := must(G.Reshape(mixed[c], gt.Shape{1, L}))
			pre = must(G.Add(pre, must(G.Mul(mc, must(G.Slice(pr.resW1, G.S(L, 2*L)))))))
		}
		rh := o.gelu(must(G.Add(pre, must(G.Reshape(pr.resB1, gt.Shape{1, R})))))
		if fix.resMask != nil {
			rh = must(G.HadamardProd(rh, o.input(fmt.Sprintf("rmask_%d_%d", b, c), fix.resMask[b*C+c], 1, R)))
		}
		rc := must(G.Mul(rh, pr.resW2))
		rc = must(G.Add(must(G.Reshape(rc, gt.Shape{H, 1})), must(G.Reshape(must(G.Slice(pr.resB2, nil, G.S(c))), gt.Shape{H, 1}))))
		resCols = append(resCols, rc)
	}
	return resCols
}

// mix returns the channels' mix of their leftovers, the second half of
// the residual's input: channel c's is Σ_c' w_cc'·u_c', w_cc' = M₀[c, c'] + cos 2πρ_c·M₁[c, c'] + sin 2πρ_c·M₂[c, c'],
// ρ_c the first rhythm's phase at the end of channel c's window. It sums
// scaled leftovers rather than multiplying a matrix of them: the nodes
// keep the shapes the rest of the graph gives them.
func (o *oracle) mix(ucs []*G.Node, steps []float64, mix *G.Node) []*G.Node {
	C := o.m.cfg.Channels
	must := o.must
	rh := &o.m.Meta.Rhythms[0]
	out := make([]*G.Node, C)
	for c := range ucs {
		sn, cs := math.Sincos(2 * math.Pi * phaseAt(rh, steps[c]))
		var sum *G.Node
		for c2, u2 := range ucs {
			w := must(G.Slice(mix, G.S(c), G.S(c2)))
			w = must(G.Add(w, must(G.Mul(o.scalar(cs), must(G.Slice(mix, G.S(C+c), G.S(c2)))))))
			w = must(G.Add(w, must(G.Mul(o.scalar(sn), must(G.Slice(mix, G.S(2*C+c), G.S(c2)))))))
			term := must(G.Mul(w, u2))
			if sum == nil {
				sum = term
			} else {
				sum = must(G.Add(sum, term))
			}
		}
		out[c] = sum
	}
	return out
}

// coefficients adds the window's reconstruction error from all 2N atoms
// to the sum and returns what the heads and the scorer read (N×2d): a
// rhythm frequency reads the coefficients of the window xt (with its
// column of ones), a frequency outside the rhythms those of u, the window
// less its rhythms (the residual's input ucs).
func (o *oracle) coefficients(xt []float64, ucs []*G.Node, sh oracleShared) *G.Node {
	cfg := o.m.cfg
	L, C, d, N := cfg.Lookback, cfg.Channels, cfg.Hidden, cfg.Frequencies
	must := o.must
	hid := must(G.Mul(o.constant("xt", xt, L, C+1), sh.wTilde))                        // L×d
	coefCos, coefSin := must(G.Mul(sh.psibarCos, hid)), must(G.Mul(sh.psibarSin, hid)) // N×d each
	coef := must(G.Concat(1, coefCos, coefSin))                                        // N×2d
	cols := append(slices.Clone(ucs), o.constant("ones", slices.Repeat([]float64{1}, L), L, 1))
	hidU := must(G.Mul(must(G.Concat(1, cols...)), sh.wTilde)) // L×d
	coefU := must(G.Concat(1, must(G.Mul(sh.psibarCos, hidU)), must(G.Mul(sh.psibarSin, hidU))))
	rows := make([]*G.Node, N)
	for i := range N {
		src := coefU
		if slices.Contains(o.members, i) {
			src = coef
		}
		rows[i] = must(G.Reshape(must(G.Slice(src, G.S(i))), gt.Shape{1, 2 * d}))
	}
	head := must(G.Concat(0, rows...))
	rec := must(G.Add(must(G.Mul(must(G.Transpose(sh.psibarCos)), coefCos)), must(G.Mul(must(G.Transpose(sh.psibarSin)), coefSin))))
	rec = must(G.Sub(rec, hid))
	o.acc(&o.recon, must(G.Sum(must(G.Square(rec)))))
	return head
}

// scores returns the frequencies' scores (N): the scorer's MLP on head
// plus the frequency bias and the log of each frequency's share of the
// centred window's energy.
func (o *oracle) scores(head *G.Node, xn []float64, pr oracleParams, sh oracleShared) *G.Node {
	cfg := o.m.cfg
	L, C, S := cfg.Lookback, cfg.Channels, cfg.ScorerHidden
	must, scalar := o.must, o.scalar
	z := o.gelu(must(G.BroadcastAdd(must(G.Mul(head, pr.scW1)), must(G.Reshape(pr.scB1, gt.Shape{1, S})), nil, []byte{0})))
	score := must(G.Add(must(G.Mul(z, pr.scW2)), pr.freqBias))
	xc, den := oracleCentred(xn, L, C)
	xcN := o.constant("xc", xc, L, C)
	pc, ps := must(G.Mul(sh.psibarCos, xcN)), must(G.Mul(sh.psibarSin, xcN)) // N×C each
	e := must(G.Add(must(G.Sum(must(G.Square(pc)), 1)), must(G.Sum(must(G.Square(ps)), 1))))
	e = must(G.Add(must(G.Mul(e, scalar(1/max(den, energyTiny)))), scalar(energyFloor)))
	return must(G.Add(score, must(G.Log(e))))
}

// oracleCentred returns the L×C window xn with each channel less its mean,
// and the sum of the squares of what that leaves.
func oracleCentred(xn []float64, L, C int) (xc []float64, den float64) {
	xc = make([]float64, L*C)
	for c := range C {
		mean := 0.0
		for tt := range L {
			mean += xn[tt*C+c] / float64(L)
		}
		for tt := range L {
			xc[tt*C+c] = xn[tt*C+c] - mean
			den += xc[tt*C+c] * xc[tt*C+c]
		}
	}
	return xc, den
}

// selection returns the tempered softmax (at tau) of the scores perturbed
// by the window's noise. Every rhythm frequency is selected outside the
// softmax, so its logit is pushed to nothing.
func (o *oracle) selection(score *G.Node, noise []float64, tau float64) *G.Node {
	perturb := slices.Clone(noise)
	for _, id := range o.members {
		perturb[id] = -1e300
	}
	u := o.must(G.Add(score, o.constant("noise", perturb, o.m.cfg.Frequencies)))
	return o.must(G.SoftMax(o.must(G.Mul(u, o.scalar(1/tau)))))
}

// heads returns the sum (1×HC) of window b's selected heads, each times
// its straight-through gate p + (1 − p̄) and with its dropout mask from
// fix, and adds the window's sparsity term 1 − Σ p to its sum unless the
// rhythms take every place.
func (o *oracle) heads(b int, prob, head *G.Node, pr oracleParams, fix refSelection) *G.Node {
	d, E := o.m.cfg.Hidden, o.m.cfg.HeadHidden
	must, scalar := o.must, o.scalar
	var yfreq *G.Node
	inside := scalar(0)
	for k, f := range fix.sel[b] {
		pf := must(G.Slice(prob, G.S(f)))
		inside = must(G.Add(inside, pf))
		gate := must(G.Add(pf, scalar(1-fix.pbar[b][k])))
		cf := must(G.Reshape(must(G.Slice(head, G.S(f))), gt.Shape{1, 2 * d}))
		a := must(G.Rectify(must(G.Mul(cf, pr.headW1[f]))))
		if fix.headMask != nil {
			a = must(G.HadamardProd(a, o.input(fmt.Sprintf("hmask_%d_%d", b, k), fix.headMask[b][k], 1, E)))
		}
		out := must(G.Mul(must(G.Mul(a, pr.headW2[f])), gate))
		o.acc(&yfreq, out)
	}
	if len(fix.sel[b]) > len(o.members) {
		// The term is left out when the rhythms take every place.
		o.acc(&o.sparse, must(G.Sub(scalar(1), inside)))
	}
	return yfreq
}

// forecast returns the window's forecast in the data's units (1×HC): the
// heads and the residual mixed by α, plus the clock's and the band heads'
// terms, scaled back by the window's sd and mu.
func (o *oracle) forecast(yfreq *G.Node, resCols []*G.Node, qf *G.Node, bandCols []*G.Node, mu, sd []float64, sh oracleShared) *G.Node {
	C, HC := o.m.cfg.Channels, o.m.cfg.Horizon*o.m.cfg.Channels
	must := o.must
	res := resCols[0]
	if C > 1 {
		res = must(G.Concat(1, resCols...))
	}
	res = must(G.Reshape(res, gt.Shape{1, HC}))

	yn := must(G.Add(must(G.Mul(yfreq, sh.alpha)), must(G.Mul(res, sh.oneMinusAlpha))))
	yn = must(G.Add(yn, must(G.Reshape(qf, gt.Shape{1, HC}))))
	if len(bandCols) > 0 {
		band := bandCols[0]
		if C > 1 {
			band = must(G.Concat(1, bandCols...))
		}
		yn = must(G.Add(yn, must(G.Reshape(band, gt.Shape{1, HC}))))
	}
	sdRow, muRow := make([]float64, HC), make([]float64, HC)
	for j := range HC {
		sdRow[j], muRow[j] = sd[j%C], mu[j%C]
	}
	return must(G.Add(must(G.HadamardProd(yn, o.constant("sd", sdRow, 1, HC))), o.constant("mu", muRow, 1, HC)))
}

// outputLosses adds the window's squared error against target and its
// variance-matching term (per channel over the horizon) to their sums.
func (o *oracle) outputLosses(yhat *G.Node, target []float64) {
	C, H, HC := o.m.cfg.Channels, o.m.cfg.Horizon, o.m.cfg.Horizon*o.m.cfg.Channels
	must, scalar := o.must, o.scalar
	o.acc(&o.mse, must(G.Sum(must(G.Square(must(G.Sub(yhat, o.constant("y", target, 1, HC))))))))

	ym := must(G.Reshape(yhat, gt.Shape{H, C}))
	centred := must(G.BroadcastSub(ym, must(G.Reshape(must(G.Mean(ym, 0)), gt.Shape{1, C})), nil, []byte{0}))
	sdp := must(G.Sqrt(must(G.Add(must(G.Mean(must(G.Square(centred)), 0)), scalar(varEps)))))
	sdt := make([]float64, C)
	for c := range C {
		mt, vt := 0.0, 0.0
		for h := range H {
			mt += target[h*C+c] / float64(H)
		}
		for h := range H {
			vt += (target[h*C+c] - mt) * (target[h*C+c] - mt) / float64(H)
		}
		sdt[c] = math.Sqrt(vt + varEps)
	}
	o.acc(&o.vr, must(G.Sum(must(G.Square(must(G.Sub(sdp, o.constant("sdt", sdt, C))))))))
}

// total returns the weighted training loss of n windows: the sums of the
// windows' terms scaled as the Stepper scales them, plus the diversity
// term of the frequencies freq.
func (o *oracle) total(n int, freq *G.Node, tc StepConfig) *G.Node {
	cfg := o.m.cfg
	L, C, HC, d := cfg.Lookback, cfg.Channels, cfg.Horizon*cfg.Channels, cfg.Hidden
	must, scalar := o.must, o.scalar
	div := o.diversity(freq)
	B := float64(n)
	total := must(G.Mul(o.mse, scalar(1/(B*float64(HC)))))
	total = must(G.Add(total, must(G.Mul(div, scalar(tc.LambdaDiv)))))
	total = must(G.Add(total, must(G.Mul(o.recon, scalar(tc.LambdaRecon/(B*float64(L*d)))))))
	if o.sparse != nil {
		total = must(G.Add(total, must(G.Mul(o.sparse, scalar(tc.LambdaSparse/B)))))
	}
	return must(G.Add(total, must(G.Mul(o.vr, scalar(tc.LambdaVar/(B*float64(C)))))))
}

// diversity returns the log-barrier on the gaps of the sorted
// log-frequencies. The sorting permutation is piecewise constant, so it is
// an input, read from the model's basis.
func (o *oracle) diversity(freq *G.Node) *G.Node {
	N := o.m.cfg.Frequencies
	must, scalar := o.must, o.scalar
	order := make([]int, N)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case o.m.basis.freq[a] < o.m.basis.freq[b]:
			return -1
		case o.m.basis.freq[a] > o.m.basis.freq[b]:
			return 1
		}
		return 0
	})
	diffM := make([]float64, (N-1)*N)
	for j := 0; j+1 < N; j++ {
		diffM[j*N+order[j+1]] = 1
		diffM[j*N+order[j]] = -1
	}
	gaps := must(G.Mul(o.constant("diff", diffM, N-1, N), must(G.Log(freq))))
	return must(G.Mul(scalar(-1/float64(N-1)), must(G.Sum(must(G.Log(must(G.Add(gaps, scalar(diversityEps)))))))))
}

// run differentiates total with respect to every parameter node, runs the
// graph, and returns the gradient laid out like Params.Data and the loss.
func (o *oracle) run(total *G.Node, pr oracleParams) ([]float64, float64) {
	t := o.t
	t.Helper()
	cfg := o.m.cfg
	N, d, E, HC := cfg.Frequencies, cfg.Hidden, cfg.HeadHidden, cfg.Horizon*cfg.Channels
	wrt := []*G.Node{pr.inW, pr.inB, pr.theta, pr.phi, pr.scW1, pr.scB1, pr.scW2, pr.freqBias, pr.resW1, pr.resB1, pr.resW2, pr.resB2, pr.fusion, pr.clockW, pr.bandW}
	if pr.mix != nil {
		wrt = append(wrt, pr.mix)
	}
	for f := range N {
		if pr.used[f] {
			wrt = append(wrt, pr.headW1[f], pr.headW2[f])
		}
	}
	if _, err := G.Grad(total, wrt...); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(o.g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	grad := newParams(cfg)
	for _, e := range []struct {
		nd  *G.Node
		dst []float64
	}{
		{pr.inW, grad.InW}, {pr.inB, grad.InB}, {pr.theta, grad.Theta}, {pr.phi, grad.Phi},
		{pr.scW1, grad.ScW1}, {pr.scB1, grad.ScB1}, {pr.scW2, grad.ScW2}, {pr.freqBias, grad.FreqBias},
		{pr.resW1, grad.ResW1}, {pr.resB1, grad.ResB1}, {pr.resW2, grad.ResW2}, {pr.resB2, grad.ResB2},
		{pr.fusion, grad.Fusion}, {pr.clockW, grad.Clock}, {pr.bandW, grad.Band},
	} {
		o.readGrad(e.nd, e.dst)
	}
	if pr.mix != nil {
		o.readGrad(pr.mix, grad.MixW)
	}
	for f := range N {
		if pr.used[f] {
			o.readGrad(pr.headW1[f], grad.HeadW1[f*2*d*E:(f+1)*2*d*E])
			o.readGrad(pr.headW2[f], grad.HeadW2[f*E*HC:(f+1)*E*HC])
		}
	}
	lv, ok := total.Value().Data().(float64)
	if !ok {
		t.Fatalf("loss value of type %T", total.Value().Data())
	}
	return grad.Data, lv
}

// readGrad copies the gradient of node nd, once the graph has run, into dst.
func (o *oracle) readGrad(nd *G.Node, dst []float64) {
	o.t.Helper()
	gv, err := nd.Grad()
	if err != nil {
		o.t.Fatalf("%s: %v", nd.Name(), err)
	}
	switch v := gv.(type) {
	case *gt.Dense:
		copy(dst, v.Float64s())
	case *G.F64:
		dst[0] = float64(*v)
	default:
		o.t.Fatalf("%s: gradient of type %T", nd.Name(), gv)
	}
}
