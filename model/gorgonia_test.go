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
			tr := newGradTrainer(t, m, x, y, noise, n, TrainConfig{Dropout: 0.2})
			hand := tr.gradient(n, tau)
			got := slices.Clone(tr.ws.tr.grad.Data)
			fix := selectionOf(tr, n)

			want, loss := gorgoniaGradient(t, m, x, y, tr.tau, n, noise, tau, fix, tr.cfg)
			if !close(hand.total, loss, 1e-10) {
				t.Errorf("loss: hand-written %.15g, gorgonia %.15g", hand.total, loss)
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
func gorgoniaGradient(t *testing.T, m *Model, x, y, steps []float64, n int, noise []float64, tau float64, fix refSelection, tc TrainConfig) ([]float64, float64) {
	t.Helper()
	cfg, p := m.cfg, m.params
	L, C, H := cfg.Lookback, cfg.Channels, cfg.Horizon
	d, N, S, E, R := cfg.Hidden, cfg.Frequencies, cfg.ScorerHidden, cfg.HeadHidden, cfg.ResidualHidden
	HC, C1 := H*C, C+1
	g := G.NewGraph()
	must := func(nd *G.Node, err error) *G.Node {
		t.Helper()
		if err != nil {
			t.Fatalf("%v\n%s", err, debug.Stack())
		}
		return nd
	}
	dense := func(v []float64, shape ...int) *gt.Dense {
		return gt.New(gt.WithShape(shape...), gt.WithBacking(slices.Clone(v)))
	}
	param := func(name string, v []float64, shape ...int) *G.Node {
		if len(shape) == 1 {
			return G.NewVector(g, gt.Float64, G.WithShape(shape...), G.WithName(name), G.WithValue(dense(v, shape...)))
		}
		return G.NewMatrix(g, gt.Float64, G.WithShape(shape...), G.WithName(name), G.WithValue(dense(v, shape...)))
	}
	// Gorgonia hash-conses nodes: constants need distinct names, or two
	// windows' inputs of the same shape would become one node.
	consts := 0
	constant := func(name string, v []float64, shape ...int) *G.Node {
		consts++
		return G.NewConstant(dense(v, shape...), G.WithName(fmt.Sprintf("%s#%d", name, consts)))
	}
	scalar := func(v float64) *G.Node {
		consts++
		return G.NewConstant(v, G.WithName(fmt.Sprintf("c#%d", consts)))
	}

	// input is a value node that is not differentiated. The dropout masks
	// are inputs rather than constants: as constants, gorgonia's element-wise
	// product gave wrong values (it may reuse an operand's storage).
	input := func(name string, v []float64, shape ...int) *G.Node {
		return G.NewMatrix(g, gt.Float64, G.WithShape(shape...), G.WithName(name), G.WithValue(dense(v, shape...)))
	}

	// Parameters. The heads become one node per head so unselected heads
	// can be left out of the graph (their gradient is zero). Like the
	// constants, every node needs its own name: same-named nodes of the same
	// shape would be merged.
	inW := param("inW", p.InW, C, d)
	inB := param("inB", p.InB, d)
	theta := param("theta", p.Theta, N)
	phi := param("phi", p.Phi, N)
	scW1 := param("scW1", p.ScW1, 2*d, S)
	scB1 := param("scB1", p.ScB1, S)
	scW2 := param("scW2", p.ScW2, S)
	freqBias := param("freqBias", p.FreqBias, N)
	if !m.ReadsTime() {
		t.Fatal("the gorgonia oracle builds the maths of a model that reads the time")
	}
	resW1 := param("resW1", p.ResW1, L, R)
	resB1 := param("resB1", p.ResB1, R)
	resW2 := param("resW2", p.ResW2, R, H)
	resB2 := param("resB2", p.ResB2, H, C)
	clockW := param("clock", p.Clock, 2*N, C)
	bandW := param("band", p.Band, 2*N, H)
	fusion := G.NewScalar(g, gt.Float64, G.WithName("fusion"), G.WithValue(p.Fusion[0]))
	headW1 := make([]*G.Node, N)
	headW2 := make([]*G.Node, N)
	used := make([]bool, N)
	for _, sel := range fix.sel {
		for _, f := range sel {
			used[f] = true
		}
	}
	for f := range N {
		if used[f] {
			headW1[f] = param(fmt.Sprintf("headW1_%d", f), p.HeadW1[f*2*d*E:(f+1)*2*d*E], 2*d, E)
			headW2[f] = param(fmt.Sprintf("headW2_%d", f), p.HeadW2[f*E*HC:(f+1)*E*HC], E, HC)
		}
	}

	gelu := func(v *G.Node) *G.Node {
		inner := must(G.Add(v, must(G.Mul(scalar(geluA), must(G.Cube(v))))))
		th := must(G.Tanh(must(G.Mul(scalar(geluC), inner))))
		return must(G.Mul(scalar(0.5), must(G.HadamardProd(v, must(G.Add(scalar(1), th))))))
	}

	// Atoms: ψ̄ = cos(2π f sᵀ + φ) / (‖·‖ + ε) and the same with sin, where
	// s = t − (L−1) counts steps back from the window's last reading.
	fmin, fmax := freqBounds(L)
	freq := must(G.Add(scalar(fmin), must(G.Mul(scalar(fmax-fmin), must(G.Sigmoid(theta))))))
	ts := make([]float64, L)
	for i := range ts {
		ts[i] = 2 * math.Pi * float64(i-(L-1))
	}
	angle := must(G.Mul(must(G.Reshape(freq, gt.Shape{N, 1})), constant("t", ts, 1, L)))
	angle = must(G.BroadcastAdd(angle, must(G.Reshape(phi, gt.Shape{N, 1})), nil, []byte{1}))
	unit := func(psi *G.Node) *G.Node {
		norm := must(G.Sqrt(must(G.Sum(must(G.Square(psi)), 1))))
		norm = must(G.Add(norm, scalar(basisEps)))
		return must(G.BroadcastHadamardDiv(psi, must(G.Reshape(norm, gt.Shape{N, 1})), nil, []byte{1}))
	}
	psibarCos, psibarSin := unit(must(G.Cos(angle))), unit(must(G.Sin(angle)))
	wTilde := must(G.Concat(0, inW, must(G.Reshape(inB, gt.Shape{1, d}))))

	alpha := must(G.Sigmoid(fusion))
	oneMinusAlpha := must(G.Sub(scalar(1), alpha))
	var mse, recon, sparse, vr *G.Node
	acc := func(sum **G.Node, v *G.Node) {
		if *sum == nil {
			*sum = v
		} else {
			*sum = must(G.Add(*sum, v))
		}
	}
	var members []int // the rhythms' frequencies
	for _, r := range m.Meta.Rhythms {
		members = append(members, r.Frequencies...)
	}
	for b := range n {
		// Normalisation depends on data only: computed here, as inputs.
		xb := x[b*L*C : (b+1)*L*C]
		mu, sd := make([]float64, C), make([]float64, C)
		xn := make([]float64, L*C)
		if cfg.Norm == NormInstance {
			instanceNorm(xn, mu, sd, xb, 1, L, C)
		} else {
			copy(xn, xb)
			for c := range sd {
				sd[c] = 1
			}
		}
		xt := make([]float64, L*C1)
		for tt := range L {
			copy(xt[tt*C1:tt*C1+C], xn[tt*C:(tt+1)*C])
			xt[tt*C1+C] = 1
		}
		// The clock: per channel, the rhythm frequencies' cos/sin at each
		// step of the window and the horizon (constants of the window's
		// time) times that channel's column of the clock weights.
		var qPast, qFut []*G.Node
		for c := range C {
			bp, bf := make([]float64, L*2*N), make([]float64, H*2*N)
			for _, r := range m.Meta.Rhythms {
				for j, id := range r.Frequencies {
					k := float64(r.Harmonics[j])
					rho := r.AnchorPhase + (steps[b*C+c]-r.AnchorStep)/r.PeriodSteps
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
			col := must(G.Reshape(must(G.Slice(clockW, nil, G.S(c))), gt.Shape{2 * N, 1}))
			qPast = append(qPast, must(G.Mul(constant("bpast", bp, L, 2*N), col))) // L×1
			qFut = append(qFut, must(G.Mul(constant("bfut", bf, H, 2*N), col)))    // H×1
		}
		qf := qFut[0]
		if C > 1 {
			qf = must(G.Concat(1, qFut...))
		}
		// The residual reads the window less its rhythms, channel by
		// channel with shared weights.
		var resCols, bandCols, ucs []*G.Node
		for c := range C {
			xcol := make([]float64, L)
			for tt := range L {
				xcol[tt] = xn[tt*C+c]
			}
			// x̃ = x̂ − q_past, less its projection on the rhythms' atoms.
			xt := must(G.Sub(constant("xcol", xcol, L, 1), qPast[c])) // L×1
			uc := xt
			var bandCol *G.Node // H×1: the band heads of channel c
			for _, r := range m.Meta.Rhythms {
				for _, id := range r.Frequencies {
					for a, atoms := range []*G.Node{psibarCos, psibarSin} {
						row := must(G.Reshape(must(G.Slice(atoms, G.S(id))), gt.Shape{1, L}))
						proj := must(G.Mul(row, xt))                                    // 1×1
						uc = must(G.Sub(uc, must(G.Mul(must(G.Transpose(row)), proj)))) // L×1
						w := must(G.Reshape(must(G.Slice(bandW, G.S(2*id+a))), gt.Shape{H, 1}))
						acc(&bandCol, must(G.Mul(w, proj)))
					}
				}
			}
			if bandCol != nil {
				bandCols = append(bandCols, bandCol)
			}
			ucs = append(ucs, uc)
		}
		for c, uc := range ucs {
			uc = must(G.Reshape(uc, gt.Shape{1, L}))
			rh := gelu(must(G.Add(must(G.Mul(uc, resW1)), must(G.Reshape(resB1, gt.Shape{1, R})))))
			if fix.resMask != nil {
				rh = must(G.HadamardProd(rh, input(fmt.Sprintf("rmask_%d_%d", b, c), fix.resMask[b*C+c], 1, R)))
			}
			rc := must(G.Mul(rh, resW2))
			rc = must(G.Add(must(G.Reshape(rc, gt.Shape{H, 1})), must(G.Reshape(must(G.Slice(resB2, nil, G.S(c))), gt.Shape{H, 1}))))
			resCols = append(resCols, rc)
		}
		hid := must(G.Mul(constant("xt", xt, L, C1), wTilde))                        // L×d
		coefCos, coefSin := must(G.Mul(psibarCos, hid)), must(G.Mul(psibarSin, hid)) // N×d each
		coef := must(G.Concat(1, coefCos, coefSin))                                  // N×2d
		// What the heads and the scorer read: a frequency outside the
		// rhythms reads the coefficients of u, the window less its rhythms
		// (the residual's input).
		cols := append(slices.Clone(ucs), constant("ones", slices.Repeat([]float64{1}, L), L, 1))
		hidU := must(G.Mul(must(G.Concat(1, cols...)), wTilde)) // L×d
		coefU := must(G.Concat(1, must(G.Mul(psibarCos, hidU)), must(G.Mul(psibarSin, hidU))))
		rows := make([]*G.Node, N)
		for i := range N {
			src := coefU
			if slices.Contains(members, i) {
				src = coef
			}
			rows[i] = must(G.Reshape(must(G.Slice(src, G.S(i))), gt.Shape{1, 2 * d}))
		}
		head := must(G.Concat(0, rows...))
		rec := must(G.Add(must(G.Mul(must(G.Transpose(psibarCos)), coefCos)), must(G.Mul(must(G.Transpose(psibarSin)), coefSin))))
		rec = must(G.Sub(rec, hid))
		acc(&recon, must(G.Sum(must(G.Square(rec)))))

		z := gelu(must(G.BroadcastAdd(must(G.Mul(head, scW1)), must(G.Reshape(scB1, gt.Shape{1, S})), nil, []byte{0})))
		score := must(G.Add(must(G.Mul(z, scW2)), freqBias))
		// Each frequency's share of the centred window's energy.
		xc := make([]float64, L*C)
		den := 0.0
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
		xcN := constant("xc", xc, L, C)
		pc, ps := must(G.Mul(psibarCos, xcN)), must(G.Mul(psibarSin, xcN)) // N×C each
		e := must(G.Add(must(G.Sum(must(G.Square(pc)), 1)), must(G.Sum(must(G.Square(ps)), 1))))
		e = must(G.Add(must(G.Mul(e, scalar(1/max(den, energyTiny)))), scalar(energyFloor)))
		score = must(G.Add(score, must(G.Log(e))))
		// Every rhythm frequency is selected outside the softmax.
		perturb := slices.Clone(noise[b*N : (b+1)*N])
		var rhythmIDs []int
		for _, r := range m.Meta.Rhythms {
			rhythmIDs = append(rhythmIDs, r.Frequencies...)
		}
		for _, id := range rhythmIDs {
			perturb[id] = -1e300
		}
		u := must(G.Add(score, constant("noise", perturb, N)))
		prob := must(G.SoftMax(must(G.Mul(u, scalar(1/tau)))))

		var yfreq *G.Node
		inside := scalar(0)
		for k, f := range fix.sel[b] {
			pf := must(G.Slice(prob, G.S(f)))
			inside = must(G.Add(inside, pf))
			gate := must(G.Add(pf, scalar(1-fix.pbar[b][k])))
			cf := must(G.Reshape(must(G.Slice(head, G.S(f))), gt.Shape{1, 2 * d}))
			a := must(G.Rectify(must(G.Mul(cf, headW1[f]))))
			if fix.headMask != nil {
				a = must(G.HadamardProd(a, input(fmt.Sprintf("hmask_%d_%d", b, k), fix.headMask[b][k], 1, E)))
			}
			out := must(G.Mul(must(G.Mul(a, headW2[f])), gate))
			acc(&yfreq, out)
		}
		if len(fix.sel[b]) > len(rhythmIDs) {
			// The term is left out when the rhythms take every place.
			acc(&sparse, must(G.Sub(scalar(1), inside)))
		}

		res := resCols[0]
		if C > 1 {
			res = must(G.Concat(1, resCols...))
		}
		res = must(G.Reshape(res, gt.Shape{1, HC}))

		yn := must(G.Add(must(G.Mul(yfreq, alpha)), must(G.Mul(res, oneMinusAlpha))))
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
		yhat := must(G.Add(must(G.HadamardProd(yn, constant("sd", sdRow, 1, HC))), constant("mu", muRow, 1, HC)))
		target := y[b*HC : (b+1)*HC]
		acc(&mse, must(G.Sum(must(G.Square(must(G.Sub(yhat, constant("y", target, 1, HC))))))))

		// Variance matching per channel over the horizon.
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
		acc(&vr, must(G.Sum(must(G.Square(must(G.Sub(sdp, constant("sdt", sdt, C))))))))
	}

	// Diversity: log-barrier on gaps of the sorted log-frequencies. The
	// sorting permutation is piecewise constant, so it is an input.
	order := make([]int, N)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case m.basis.freq[a] < m.basis.freq[b]:
			return -1
		case m.basis.freq[a] > m.basis.freq[b]:
			return 1
		}
		return 0
	})
	diffM := make([]float64, (N-1)*N)
	for j := 0; j+1 < N; j++ {
		diffM[j*N+order[j+1]] = 1
		diffM[j*N+order[j]] = -1
	}
	gaps := must(G.Mul(constant("diff", diffM, N-1, N), must(G.Log(freq))))
	div := must(G.Mul(scalar(-1/float64(N-1)), must(G.Sum(must(G.Log(must(G.Add(gaps, scalar(diversityEps)))))))))

	B := float64(n)
	total := must(G.Mul(mse, scalar(1/(B*float64(HC)))))
	total = must(G.Add(total, must(G.Mul(div, scalar(tc.LambdaDiv)))))
	total = must(G.Add(total, must(G.Mul(recon, scalar(tc.LambdaRecon/(B*float64(L*d)))))))
	if sparse != nil {
		total = must(G.Add(total, must(G.Mul(sparse, scalar(tc.LambdaSparse/B)))))
	}
	total = must(G.Add(total, must(G.Mul(vr, scalar(tc.LambdaVar/(B*float64(C)))))))

	wrt := []*G.Node{inW, inB, theta, phi, scW1, scB1, scW2, freqBias, resW1, resB1, resW2, resB2, fusion, clockW, bandW}
	for f := range N {
		if used[f] {
			wrt = append(wrt, headW1[f], headW2[f])
		}
	}
	if _, err := G.Grad(total, wrt...); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	grad := newParams(cfg)
	read := func(nd *G.Node, dst []float64) {
		t.Helper()
		gv, err := nd.Grad()
		if err != nil {
			t.Fatalf("%s: %v", nd.Name(), err)
		}
		switch v := gv.(type) {
		case *gt.Dense:
			copy(dst, v.Float64s())
		case *G.F64:
			dst[0] = float64(*v)
		default:
			t.Fatalf("%s: gradient of type %T", nd.Name(), gv)
		}
	}
	for _, e := range []struct {
		nd  *G.Node
		dst []float64
	}{
		{inW, grad.InW}, {inB, grad.InB}, {theta, grad.Theta}, {phi, grad.Phi},
		{scW1, grad.ScW1}, {scB1, grad.ScB1}, {scW2, grad.ScW2}, {freqBias, grad.FreqBias},
		{resW1, grad.ResW1}, {resB1, grad.ResB1}, {resW2, grad.ResW2}, {resB2, grad.ResB2},
		{fusion, grad.Fusion}, {clockW, grad.Clock}, {bandW, grad.Band},
	} {
		read(e.nd, e.dst)
	}
	for f := range N {
		if used[f] {
			read(headW1[f], grad.HeadW1[f*2*d*E:(f+1)*2*d*E])
			read(headW2[f], grad.HeadW2[f*E*HC:(f+1)*E*HC])
		}
	}
	lv, ok := total.Value().Data().(float64)
	if !ok {
		t.Fatalf("loss value of type %T", total.Value().Data())
	}
	return grad.Data, lv
}
