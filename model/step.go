package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/freqlens/freqlens/internal/gemm"
)

// parts is the fixed number of parts the parallel sections of a training
// step are cut into, one per core. Sections split work by head, by output
// column or by parameter range, never along a sum, so a seed gives the same
// model on any number of cores.
const parts = 2

// StepConfig sets what an optimiser step does besides fitting the
// forecasts. Every zero means off (none, no cap): model fills in no
// defaults; package training and package online, which run the steps,
// choose them.
type StepConfig struct {
	// BatchSize is the most windows one step takes.
	BatchSize int
	// FreqRateScale multiplies the learning rate of θ and φ (at 0 they
	// do not learn). WeightDecay is AdamW's decoupled weight decay,
	// applied to weights and not to biases, θ, φ or the fusion weight.
	// ClipNorm caps the L2 norm of the whole gradient.
	FreqRateScale, WeightDecay, ClipNorm float64
	// LambdaDiv, LambdaRecon, LambdaSparse and LambdaVar weight the
	// diversity, reconstruction, sparsity and variance-matching terms of
	// the loss.
	LambdaDiv, LambdaRecon, LambdaSparse, LambdaVar float64
	// Dropout is the probability of zeroing a hidden unit of the residual
	// MLP and of the selected heads (inverted dropout). InputNoise is the
	// standard deviation of Gaussian noise added to each normalised
	// window (not to its target). ChannelShuffle is, for a mixed model,
	// the probability that a sample takes each channel's input and target
	// from its own randomly drawn window. EMA is the decay of a moving
	// average of the parameters, updated after every step (Averaged,
	// WithAveraged).
	Dropout, InputNoise, ChannelShuffle, EMA float64
	// Workers: at 2 or more the parallel sections of a step run on two
	// goroutines. Results do not depend on it.
	Workers int
}

// Loss is the loss of one step: Total, the weighted sum that is
// minimised, and its terms unweighted.
type Loss struct{ Total, MSE, Div, Recon, Sparse, Var float64 }

// Add adds o to l term by term, for the means over an epoch.
func (l *Loss) Add(o Loss) {
	l.Total += o.Total
	l.MSE += o.MSE
	l.Div += o.Div
	l.Recon += o.Recon
	l.Sparse += o.Sparse
	l.Var += o.Var
}

// ErrDiverged reports a step whose loss or gradient is not finite. It
// leaves the model half-trained: train a Clone and discard it on error.
var ErrDiverged = errors.New("loss is not finite; lower the learning rate or check the data for extreme values")

// Stepper takes optimiser steps on a model: one Step fills a batch of a
// Source's windows, draws the Gumbel noise, dropout masks and input noise
// from its random generator, runs the forward and backward passes, adds
// the whole-step terms of the loss, clips the gradient and takes one Adam
// step (and updates the moving average). What the steps are for (epochs,
// the learning-rate schedule, early stopping, checkpoints) is its
// caller's: package training's loop and package online's fine-tuning.
//
// A Stepper changes its model's parameters in place: nothing else may use
// the model while it steps. It is not safe for concurrent use.
type Stepper struct {
	m                 *Model
	cfg               StepConfig
	data              *Batcher
	rng               *rand.Rand
	ws                *Workspace
	x, y              []float64 // batch inputs and targets
	tau               []float64 // batch window end times, steps since the epoch (per channel)
	out               []float64 // batch forecasts
	dOut              []float64 // ∂L/∂forecast
	noise             []float64 // Gumbel draws
	resMask, headMask []float64 // dropout masks, nil without dropout
	xNoise            []float64 // input noise, nil without it
	ema, live         *Params   // moving average of the parameters and a scratch copy, nil without EMA
	wwT               []float64
	dPsi              []float64
	qw                []float64 // (C+1)×d: Q·W̃
	draws             stepDraws
	order             []int
	opt               *adam
}

// NewStepper returns a Stepper that trains m on windows of src, drawing
// every random number from rng (which its caller may also use, between
// steps, to pick the windows: the same seed gives the same model). It
// returns the error Samples returns when m cannot train on src.
//
// Make it after the frequencies are placed (PlaceOnSpectrum): it sizes
// its workspace for the model's selection, and the moving average
// starts from the parameters as they are.
func (m *Model) NewStepper(src Source, cfg StepConfig, rng *rand.Rand) (*Stepper, error) {
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("model: a step of batch size %d; use at least 1", cfg.BatchSize)
	}
	b, err := m.NewBatcher(src)
	if err != nil {
		return nil, err
	}
	return newStepper(m, cfg, b, rng), nil
}

// Samples returns how many samples src yields for m, the indices a
// Stepper's Step takes: its windows, or for an independent model each
// channel of each. It returns the error that training or evaluating m on
// src meets instead: windows of another lookback, horizon or width, or
// without the times a model that reads the clock needs.
func (m *Model) Samples(src Source) (int, error) {
	b, err := m.NewBatcher(src)
	if err != nil {
		return 0, err
	}
	return b.Samples(), nil
}

// newStepper returns a Stepper over data; data may be nil for a caller
// that fills the batch itself (the gradient tests).
func newStepper(m *Model, cfg StepConfig, data *Batcher, rng *rand.Rand) *Stepper {
	c := m.cfg
	B, L, H, C, N := cfg.BatchSize, c.Lookback, c.Horizon, c.Channels, c.Frequencies
	if data != nil {
		data.localTargets = true // fit the forecasts on the steps the model makes them on
	}
	t := &Stepper{
		m: m, cfg: cfg, data: data, rng: rng,
		x:     make([]float64, B*L*C),
		y:     make([]float64, B*H*C),
		tau:   make([]float64, B*C),
		out:   make([]float64, B*H*C),
		dOut:  make([]float64, B*H*C),
		noise: make([]float64, B*N),
		wwT:   make([]float64, (C+1)*(C+1)),
		dPsi:  make([]float64, 2*N*L),
		qw:    make([]float64, (C+1)*c.Hidden),
		order: make([]int, N),
		opt:   newAdam(m.cfg, cfg.FreqRateScale, cfg.WeightDecay),
	}
	if cfg.InputNoise > 0 {
		t.xNoise = make([]float64, B*L*C)
	}
	if cfg.EMA > 0 {
		t.ema = m.params.clone(m.cfg)
		t.live = m.params.clone(m.cfg)
	}
	if cfg.Dropout > 0 {
		pw, _, _ := c.residualShape()
		t.resMask = make([]float64, B*pw*c.ResidualHidden)
		t.headMask = make([]float64, B*c.slots()*c.HeadHidden)
	}
	t.ws = m.NewWorkspace(B)
	t.ws.enableTraining()
	if cfg.Workers >= 2 {
		ws := t.ws
		t.ws.par = func(s section) {
			var wg sync.WaitGroup
			wg.Go(func() { ws.run(s, 1) })
			ws.run(s, 0)
			wg.Wait()
		}
	}
	return t
}

// Freeze sets which tensors the following steps change: a tensor (named
// as in the model file, with its component as in ParamCounts) for which
// trainable returns false keeps its values, its gradient cleared before
// clipping. Every tensor trains until the first call.
func (t *Stepper) Freeze(trainable func(name, component string) bool) {
	t.opt.freezeExcept(t.m.cfg, func(tn tensor) bool { return trainable(tn.name, tn.component) })
}

// Step runs one optimiser step on the samples idx (at most BatchSize,
// each below Model.Samples) with learning rate lr and Gumbel temperature tau.
// A loss or gradient that is not finite returns ErrDiverged.
func (t *Stepper) Step(idx []int, lr, tau float64) (Loss, error) {
	B, N := len(idx), t.m.cfg.Frequencies
	t.data.fillShuffled(t.x, t.y, t.tau, idx, t.cfg.ChannelShuffle, t.rng)
	for i := range t.noise[:B*N] {
		u := t.rng.Float64()
		for u == 0 {
			u = t.rng.Float64()
		}
		t.noise[i] = -math.Log(-math.Log(u))
	}
	if t.cfg.Dropout > 0 {
		keep := 1 / (1 - t.cfg.Dropout)
		for _, mask := range [][]float64{t.resMask, t.headMask} {
			for i := range mask {
				mask[i] = 0
				if t.rng.Float64() >= t.cfg.Dropout {
					mask[i] = keep
				}
			}
		}
	}
	for i := range t.xNoise {
		t.xNoise[i] = t.cfg.InputNoise * t.rng.NormFloat64()
	}
	l := t.gradient(B, tau)
	if math.IsNaN(l.Total) || math.IsInf(l.Total, 0) {
		return l, ErrDiverged
	}
	return l, t.apply(lr)
}

// WithAveraged runs f with the parameters the steps so far stand for
// swapped into the model: with EMA the moving average (Averaged), which
// the model keeps no trace of once f returns; without EMA the model's
// own. It returns f's error. It is how the caller scores the averaged
// model between steps, on validation windows (package training's early
// stopping): the Stepper steps, its caller measures. f must not step.
func (t *Stepper) WithAveraged(f func() error) error {
	m := t.m
	if t.ema != nil {
		copy(t.live.Data, m.params.Data)
		copy(m.params.Data, t.ema.Data)
		m.refresh()
	}
	err := f()
	if t.ema != nil {
		copy(m.params.Data, t.live.Data)
		m.refresh()
	}
	return err
}

// Averaged returns the parameters the steps so far stand for: the moving
// average with EMA, else the model's own (Params().Data). The slice is
// the Stepper's or the model's; copy it to keep it.
func (t *Stepper) Averaged() []float64 {
	if t.ema != nil {
		return t.ema.Data
	}
	return t.m.params.Data
}

// StateArrays returns the optimiser's state besides the parameters, what
// a checkpoint keeps so that a resumed run goes on bit for bit: Adam's
// first and second moments and, with EMA, the moving average. They are
// the Stepper's own slices: a checkpoint is restored by copying into
// them (and SetAdamSteps).
//
// The next step reads the moments again to know which parameters have
// any (Adam skips those with none and no gradient), so a caller may write
// them at any time before it.
func (t *Stepper) StateArrays() [][]float64 {
	t.opt.stale = true
	a := [][]float64{t.opt.m, t.opt.v}
	if t.ema != nil {
		a = append(a, t.ema.Data)
	}
	return a
}

// AdamSteps returns how many Adam steps were taken, which sets the bias
// correction of the next; SetAdamSteps restores it from a checkpoint.
func (t *Stepper) AdamSteps() int { return t.opt.t }

// SetAdamSteps sets the count AdamSteps returns.
func (t *Stepper) SetAdamSteps(n int) { t.opt.t = n }

// gradient computes the training loss of the B windows in t.x, t.y with
// Gumbel draws t.noise, and leaves its gradient in t.ws.tr.grad, which must
// be zero on entry (apply clears it).
func (t *Stepper) gradient(B int, tau float64) Loss {
	m, cfg := t.m, t.cfg
	c := m.cfg
	L, H, C, N, d := c.Lookback, c.Horizon, c.Channels, c.Frequencies, c.Hidden
	HC, C1 := H*C, C+1

	wt := m.params.Data[:C1*d]
	clear(t.wwT)
	gemm.NT(C1, C1, d, wt, d, wt, d, t.wwT, C1)
	consts := backwardConsts{batch: B, tau: tau, lambdaSparse: cfg.LambdaSparse, lambdaRecon: cfg.LambdaRecon, wwT: t.wwT}

	ws := t.ws
	draws := &t.draws
	*draws = stepDraws{noise: t.noise[:B*N], tau: tau, resMask: t.resMask, headMask: t.headMask}
	if t.xNoise != nil {
		draws.xNoise = t.xNoise[:B*L*C]
	}
	out, dOut := t.out[:B*HC], t.dOut[:B*HC]
	m.forward(ws, out, t.x[:B*L*C], t.tau[:B*C], B, draws)
	var l Loss
	l.MSE, l.Var = outputLoss(dOut, out, t.y[:B*HC], B, H, C, B, cfg.LambdaVar)
	m.backward(ws, dOut, draws, consts)
	l.Sparse = ws.tr.sparse / float64(B)

	// The whole-step terms: the basis gradient and the reconstruction.
	g := ws.tr.grad
	q := ws.tr.recQ
	copy(t.dPsi, ws.tr.dPsibar)
	for j := range 2 * N {
		a := ws.tr.onesAcc[j]
		row := t.dPsi[j*L : (j+1)*L]
		for j := range row {
			row[j] += a
		}
	}
	if cfg.LambdaRecon != 0 {
		// L_recon = tr(W̃ᵀ Q W̃)/(B·L·d); ∂/∂W̃ = 2·Q·W̃/(B·L·d).
		qw := t.qw
		clear(qw)
		gemm.NN(C1, d, C1, q, C1, wt, d, qw, d)
		for i := range qw {
			l.Recon += qw[i] * wt[i]
		}
		l.Recon /= float64(B * L * d)
		gemm.Axpy(2*cfg.LambdaRecon/float64(B*L*d), qw, g.Data[:C1*d])
	}
	m.basis.backward(t.dPsi, g.Theta, g.Phi, c.Lookback)
	l.Div = m.basis.diversity(cfg.LambdaDiv, g.Theta, c.Lookback, t.order)
	l.Total = l.MSE + cfg.LambdaDiv*l.Div + cfg.LambdaRecon*l.Recon + cfg.LambdaSparse*l.Sparse + cfg.LambdaVar*l.Var
	return l
}

// apply clips the gradient in t.ws.tr.grad, takes one Adam step and clears
// the gradient.
func (t *Stepper) apply(lr float64) error {
	m, cfg := t.m, t.cfg
	g := t.ws.tr.grad
	// Clip and update; the update pass also clears the gradient.
	var sq [parts]float64
	t.parallelParts(len(g.Data), func(part, lo, hi int) {
		t.opt.clearFrozen(g.Data, lo, hi)
		sq[part] = gemm.Dot(g.Data[lo:hi], g.Data[lo:hi])
	})
	norm := math.Sqrt(sq[0] + sq[1])
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return ErrDiverged
	}
	scale := 1.0
	if cfg.ClipNorm > 0 && norm > cfg.ClipNorm {
		scale = cfg.ClipNorm / norm
	}
	t.opt.t++
	if t.opt.stale {
		t.opt.relive()
	}
	t.parallelRange(len(g.Data), func(lo, hi int) {
		t.opt.update(m.params.Data, g.Data, scale, lr, lo, hi)
		if t.ema != nil {
			e, p := t.ema.Data[lo:hi], m.params.Data[lo:hi]
			for i := range e {
				e[i] = cfg.EMA*e[i] + (1-cfg.EMA)*p[i]
			}
		}
	})
	m.refresh()
	return nil
}

// run calls f for every shard, on up to cfg.Workers goroutines, and waits.
func (t *Stepper) run(f func(shard int)) {
	if t.cfg.Workers < 2 {
		for s := range parts {
			f(s)
		}
		return
	}
	var wg sync.WaitGroup
	for s := 1; s < parts; s++ {
		wg.Go(func() { f(s) })
	}
	f(0)
	wg.Wait()
}

// parallelParts splits [0, n) into one contiguous part per shard and calls
// f on each, concurrently when there are workers.
func (t *Stepper) parallelParts(n int, f func(part, lo, hi int)) {
	per := (n + parts - 1) / parts
	t.run(func(s int) { f(s, min(s*per, n), min((s+1)*per, n)) })
}

func (t *Stepper) parallelRange(n int, f func(lo, hi int)) {
	t.parallelParts(n, func(_, lo, hi int) { f(lo, hi) })
}
