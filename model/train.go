package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/internal/gemm"
)

// parts is the fixed number of parts the parallel sections of a training
// step are cut into, one per core. Sections split work by head, by output
// column or by parameter range, never along a sum, so a seed gives the same
// model on any number of cores.
const parts = 2

// TrainConfig sets how a model is trained. The zero value of every field
// means its default.
type TrainConfig struct {
	// Epochs is the most passes over the training windows.
	//
	// Default: 50
	Epochs int
	// BatchSize is the windows per optimiser step.
	//
	// Default: 32
	BatchSize int
	// LearningRate is Adam's base step size, annealed along a cosine to
	// MinLearningRate over all epochs.
	//
	// Default: 1e-3
	LearningRate float64
	// FreqRateScale multiplies the learning rate of θ and φ.
	//
	// Default: 5
	FreqRateScale float64
	// MinLearningRate is where the cosine schedule ends.
	//
	// Default: 1e-6
	MinLearningRate float64
	// ClipNorm caps the L2 norm of the whole gradient.
	//
	// Default: 1.0
	ClipNorm float64
	// TauStart and TauEnd are the Gumbel temperatures of the first and last
	// epoch, annealed linearly.
	//
	// Default: 1.0 and 0.1
	TauStart, TauEnd float64
	// Patience is how many epochs without a better validation MSE end
	// training; the best epoch's parameters are restored.
	//
	// Default: 10
	Patience int
	// Seed drives shuffling and the Gumbel noise.
	Seed uint64
	// LambdaDiv, LambdaRecon, LambdaSparse and LambdaVar weight the
	// diversity, reconstruction, sparsity and variance-matching losses. A
	// negative value turns a term off.
	//
	// Default: 0.01, 0.1, 0.01, 0.1
	LambdaDiv, LambdaRecon, LambdaSparse, LambdaVar float64
	// Dropout is the probability of zeroing a hidden unit of the residual
	// MLP and of the selected heads during training (inverted dropout; the
	// forecasts and attributions of a trained model never drop anything).
	// A negative value turns it off.
	//
	// Default: 0.1
	Dropout float64
	// WeightDecay is AdamW's decoupled weight decay, applied to weights and
	// not to biases, θ, φ or the fusion weight. A negative value turns it off.
	//
	// Default: 0
	WeightDecay float64
	// InputNoise is the standard deviation of Gaussian noise added to each
	// normalised training window (not to its target). For the linear parts
	// of the model it acts like a ridge penalty. A negative value turns it off.
	//
	// Default: 0 (off)
	InputNoise float64
	// ChannelShuffle is, for a mixed model, the probability that a training
	// sample takes each channel's input and target from its own randomly
	// drawn window. The channels keep their identity and their own
	// history→future pairs but not their co-occurrence. At 1 the model
	// learns every channel from its own history with channel-specific
	// weights and treats the other channels as uninformative; lower values
	// let it learn cross-channel relations, which pays only where they hold
	// beyond the training period. On ETTh1 (H=96) a mixed model without
	// shuffling overfits after one epoch (test MSE 0.42); with 1 it trains
	// ~30 epochs and scores 0.392–0.397 over four seeds; 0.75 gives
	// 0.394–0.404. Ignored by independent models. A negative value turns it
	// off.
	//
	// Default: 1
	ChannelShuffle float64
	// EMA is the decay of an exponential moving average of the parameters,
	// updated after every step; validation, early stopping and the returned
	// model use the average. It smooths out the noise of high learning-rate
	// steps. A negative value turns it off.
	//
	// Default: 0 (off)
	EMA float64
	// Workers is how many goroutines run the parallel sections of a step and the
	// evaluation; results do not depend on it.
	//
	// Default: 2
	Workers int
	// ResidualWarmup is how many epochs the residual MLP stays as it was
	// initialised (near zero) while the frequency path learns alone: the
	// heads learn the cycles and the scorer learns to select them before
	// the residual MLP, which can continue any sinusoid by itself, starts
	// to learn what they leave. After the warm-up the scorer's MLP stays
	// as it is (its per-frequency bias still learns) unless
	// TrainScorerThroughout is set. A negative value turns the warm-up off.
	//
	// Default: 5
	ResidualWarmup int
	// TrainScorerThroughout keeps training the scorer's MLP after the
	// residual warm-up, as the reference code does. Off by default: the
	// straight-through gradient credits only selected frequencies, so once
	// the residual MLP learns to carry a cycle in the windows where it was
	// not selected, dropping it costs nothing and the scorer learns to
	// drop it more often. Measured on random two- and three-cycle feeds:
	// selection of the true cycles fell from 100% to 56–89% of windows and
	// the residual's share rose from 0.12 to 0.18 (worst case 0.21 → 0.26)
	// at the same MSE.
	TrainScorerThroughout bool
	// TrainPlacedFrequencies also trains θ after FrequencyInit placed the
	// frequencies on the spectrum. By default θ then stays where the
	// spectrum put it and only φ and the other weights learn: the
	// periodogram of the training rows locates a cycle to a small fraction
	// of 1/T, while the forecast loss cannot tell a frequency within about
	// ½/L of a cycle from the cycle itself (its head absorbs the offset),
	// so the gradient through a window only adds noise. At the reference's
	// 5× rate that noise walked placed frequencies 3–26% off their cycles
	// at unchanged test MSE. Online fine-tuning trains θ either way.
	TrainPlacedFrequencies bool
	// FillHarmonics places, after the spectrum's peaks, a frequency on
	// each missing harmonic k ≤ FillHarmonics of every rhythm of more than
	// one line (within the cap of N/2 placed frequencies), so that a
	// rhythm's clock term can follow the shape of its cycle. 0 leaves
	// them out.
	//
	// Default: 0
	FillHarmonics int
	// FrequencyInit says where the frequencies start. InitSpectrum places
	// one frequency on each cycle of the training rows' spectrum (see
	// FindPeaks and Model.PlaceFrequencies) when the training Source is a
	// RowSource, and keeps the model's log-uniform grid otherwise; InitGrid
	// always keeps the grid, as the reference code does.
	//
	// Default: InitSpectrum
	FrequencyInit FrequencyInit
	// Checkpoint, when set, is a file Train keeps the run's whole state in
	// after every epoch (replaced atomically), and resumes from when it
	// exists: a run stopped by a crash, a kill or a cancellation goes on
	// from its last finished epoch and ends with the same model bit for bit
	// as one that never stopped. A checkpoint of another run (other data,
	// settings, seed or model shape) is an error wrapping
	// ErrCheckpointMismatch. Train leaves the file in place; delete it once
	// the model is saved.
	Checkpoint string
}

// FrequencyInit names where training starts the frequencies.
type FrequencyInit string

const (
	// InitSpectrum places frequencies on the peaks of the training rows'
	// periodogram before the first step.
	InitSpectrum FrequencyInit = "spectrum"
	// InitGrid keeps the log-uniform grid a new model starts with.
	InitGrid FrequencyInit = "grid"
)

// The defaults of the TrainConfig settings that the commands offer as flags.
const (
	DefaultLearningRate    = 1e-3
	DefaultMinLearningRate = 1e-6
	DefaultDropout         = 0.1
	DefaultPatience        = 10
)

func (c TrainConfig) withDefaults() TrainConfig {
	def := func(v *float64, d float64) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0
		}
	}
	if c.Epochs == 0 {
		c.Epochs = 50
	}
	if c.BatchSize == 0 {
		c.BatchSize = 32
	}
	def(&c.LearningRate, DefaultLearningRate)
	def(&c.FreqRateScale, 5)
	def(&c.MinLearningRate, DefaultMinLearningRate)
	def(&c.ClipNorm, 1)
	def(&c.TauStart, 1)
	def(&c.TauEnd, 0.1)
	if c.Patience == 0 {
		c.Patience = DefaultPatience
	}
	def(&c.LambdaDiv, 0.01)
	def(&c.LambdaRecon, 0.1)
	def(&c.LambdaSparse, 0.01)
	def(&c.LambdaVar, 0.1)
	def(&c.Dropout, DefaultDropout)
	if c.WeightDecay < 0 {
		c.WeightDecay = 0
	}
	if c.EMA < 0 {
		c.EMA = 0
	}
	def(&c.ChannelShuffle, 1)
	if c.InputNoise < 0 {
		c.InputNoise = 0
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	switch {
	case c.ResidualWarmup == 0:
		c.ResidualWarmup = 5
	case c.ResidualWarmup < 0:
		c.ResidualWarmup = 0
	}
	if c.FrequencyInit == "" {
		c.FrequencyInit = InitSpectrum
	}
	return c
}

func (c TrainConfig) validate() error {
	switch {
	case c.FrequencyInit != InitSpectrum && c.FrequencyInit != InitGrid:
		return fmt.Errorf("train: frequency init %q is unknown; use %q or %q", c.FrequencyInit, InitSpectrum, InitGrid)
	case c.Epochs < 1:
		return fmt.Errorf("train: epochs = %d; use at least 1", c.Epochs)
	case c.BatchSize < 1:
		return fmt.Errorf("train: batch size %d; use at least 1", c.BatchSize)
	case c.Patience < 1:
		return fmt.Errorf("train: patience = %d; use at least 1", c.Patience)
	case c.ChannelShuffle > 1:
		return fmt.Errorf("train: channel shuffle %g is not a probability; use a value from 0 to 1", c.ChannelShuffle)
	case c.Dropout >= 1:
		return fmt.Errorf("train: dropout %g drops every unit; use a probability below 1 such as 0.1", c.Dropout)
	case c.LearningRate > 1:
		return fmt.Errorf("train: learning rate %g is far too large for Adam; try 1e-3", c.LearningRate)
	}
	return nil
}

// EpochStats reports one finished epoch.
type EpochStats struct {
	Epoch, Epochs int // 1-based epoch and the most there can be
	// Loss is the mean total training loss; the other fields break it down
	// (unweighted means over the epoch's steps).
	Loss, MSE, Div, Recon, Sparse, Var float64
	ValMSE                             float64
	Best                               bool // this epoch is the best so far
	LearningRate, Tau                  float64
	Seconds                            float64 // wall time of the epoch, validation included
	// Restored says that the epoch ran before the run was resumed from its
	// checkpoint; Train reports those epochs first.
	Restored bool
	// CheckpointError, when set, says that the checkpoint could not be
	// written after this epoch, and what is kept instead; training goes on.
	CheckpointError string
}

// TrainResult summarises a training run.
type TrainResult struct {
	EpochsRun  int
	BestEpoch  int // 1-based
	BestValMSE float64
	Epochs     []EpochStats
	// Stopped says why training ended: "epochs", "early_stopping", "canceled"
	// or "diverged".
	Stopped string
	// Placement says which frequencies were placed on the training rows'
	// cycles; nil when the frequencies started on the grid.
	Placement *Placement
	// ResumedFrom is how many epochs the run's checkpoint had finished
	// when this run resumed it; 0 for a run from the start.
	ResumedFrom int
	// ResumedOn, when set, says that the checkpoint was written with
	// other arithmetic kernels, so that the resumed run is not the
	// uninterrupted one bit for bit.
	ResumedOn string
}

// MedianEpochSeconds returns the median wall time of the epochs run.
func (r *TrainResult) MedianEpochSeconds() float64 {
	s := make([]float64, len(r.Epochs))
	for i, e := range r.Epochs {
		s[i] = e.Seconds
	}
	return median(s)
}

// spectrumRows returns the rows Train reads the spectrum from, and their
// channels: a SpectrumSource's, a RowSource's, or nil.
func spectrumRows(src Source) ([]float64, int) {
	switch s := src.(type) {
	case SpectrumSource:
		return s.SpectrumRows()
	case RowSource:
		return s.Rows(), s.Channels()
	}
	return nil, 0
}

// discover finds the peaks of the spectrum of rows (channels values a row),
// the calendar's periods at m's cadence among them, places m's frequencies
// on them and groups them into rhythms: the start of Train.
func (m *Model) discover(rows []float64, channels int) ([]cycles.Peak, cycles.RhythmOptions, Placement, []cycles.Rhythm, []bool) {
	fmin, _ := freqBounds(m.cfg.Lookback)
	peaks := cycles.FindPeaks(rows, channels, cycles.PeakOptions{MinFrequency: fmin, Calendar: cycles.CalendarFrequencies(m.Meta.Cadence)})
	ropts := cycles.RhythmOptions{Rows: len(rows) / max(channels, 1), Cadence: m.Meta.Cadence}
	pl, rhythms, sidebands := m.placeRhythms(peaks, ropts)
	return peaks, ropts, pl, rhythms, sidebands
}

// Train fits m to the train windows with Adam, keeping the parameters of the
// epoch with the lowest validation MSE. progress, if not nil, is called after
// every epoch. The same model, data and cfg.Seed always give the same result.
//
// On cancellation Train restores the best epoch so far and returns the
// result with ctx's error.
func Train(ctx context.Context, m *Model, train, val Source, cfg TrainConfig, progress func(EpochStats)) (*TrainResult, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	res := &TrainResult{BestValMSE: math.Inf(1), Stopped: "epochs"}
	if rows, channels := spectrumRows(train); rows != nil && cfg.FrequencyInit == InitSpectrum {
		pl := m.placeOnSpectrum(rows, channels, cfg.FillHarmonics)
		res.Placement = &pl
	}
	tb, err := newBatcher(m, train)
	if err != nil {
		return nil, err
	}
	if _, err := newBatcher(m, val); err != nil {
		return nil, err
	}
	B := cfg.BatchSize
	samples := tb.samples()
	steps := samples / B
	if steps == 0 {
		return nil, fmt.Errorf("train: %d training windows do not fill one batch of %d; use a batch of at most %d (--batch-size) or more data", samples, B, samples)
	}
	if val.Len() == 0 {
		return nil, errors.New("train: the validation split holds no window; early stopping needs one")
	}
	t := newTrainer(m, cfg, tb)
	// Frequencies placed on the spectrum stay there (see TrainPlacedFrequencies).
	holdTheta := res.Placement != nil && !cfg.TrainPlacedFrequencies

	best := m.params.clone(m.cfg)
	totalSteps := cfg.Epochs * steps
	perm := make([]int, samples)
	for i := range perm {
		perm[i] = i
	}
	st := runState{res: res, best: best, perm: perm}
	var fp string
	if cfg.Checkpoint != "" {
		if fp, err = t.resume(train, val, &st, progress); err != nil {
			return nil, err
		}
		if st.stopped != "" {
			return t.finish(res, best, st.stopped), nil
		}
	}
	kept := st.nextEpoch // the epoch of the last checkpoint on disk
	for epoch := st.nextEpoch; epoch < cfg.Epochs; epoch++ {
		start := time.Now()
		tau := cfg.TauStart
		if cfg.Epochs > 1 {
			tau -= (cfg.TauStart - cfg.TauEnd) * float64(epoch) / float64(cfg.Epochs-1) // Gumbel temperature, annealed
		}
		t.freezeFor(epoch, holdTheta)
		t.rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		var sum stepLoss
		var lr float64
		for s := range steps {
			if err := ctx.Err(); err != nil {
				return t.finish(res, best, "canceled"), err
			}
			lr = cosineRate(cfg, epoch*steps+s, totalSteps)
			l, err := t.step(perm[s*B:(s+1)*B], lr, tau)
			if err != nil {
				return t.finish(res, best, "diverged"), fmt.Errorf("train: epoch %d step %d: %w", epoch+1, s+1, err)
			}
			sum.add(l)
		}
		valMetrics, err := t.validate(ctx, val)
		if err != nil {
			return t.finish(res, best, "canceled"), err
		}
		es := EpochStats{
			Epoch: epoch + 1, Epochs: cfg.Epochs,
			Loss: sum.total / float64(steps), MSE: sum.mse / float64(steps), Div: sum.div / float64(steps),
			Recon: sum.recon / float64(steps), Sparse: sum.sparse / float64(steps), Var: sum.vr / float64(steps),
			ValMSE: valMetrics.MSE, LearningRate: lr, Tau: tau,
		}
		if valMetrics.MSE < res.BestValMSE {
			res.BestValMSE, res.BestEpoch, es.Best, st.bad = valMetrics.MSE, epoch+1, true, 0
			if t.ema != nil {
				copy(best.Data, t.ema.Data)
			} else {
				copy(best.Data, m.params.Data)
			}
		} else {
			st.bad++
		}
		es.Seconds = time.Since(start).Seconds()
		res.Epochs = append(res.Epochs, es)
		res.EpochsRun = epoch + 1
		stop := ""
		switch {
		case st.bad >= cfg.Patience:
			stop = "early_stopping"
		case epoch+1 == cfg.Epochs:
			stop = "epochs"
		}
		if cfg.Checkpoint != "" {
			st.nextEpoch, st.stopped = epoch+1, stop
			if msg := t.keepCheckpoint(fp, st, &kept); msg != "" {
				es.CheckpointError = msg
				res.Epochs[len(res.Epochs)-1] = es
			}
		}
		if progress != nil {
			progress(es)
		}
		if stop == "early_stopping" {
			return t.finish(res, best, stop), nil
		}
	}
	return t.finish(res, best, "epochs"), nil
}

// resume restores the run's state st from the checkpoint of the run on
// train and val, when there is one (else st stays a fresh start), reports
// the epochs it had run to progress, and returns the run's fingerprint.
func (t *trainer) resume(train, val Source, st *runState, progress func(EpochStats)) (string, error) {
	removeStaleTemps(t.cfg.Checkpoint)
	fp := t.fingerprint(train, val)
	if _, err := t.loadCheckpoint(t.cfg.Checkpoint, fp, st); err != nil {
		return "", err
	}
	if progress != nil {
		for _, e := range st.res.Epochs {
			e.Restored = true
			progress(e)
		}
	}
	return fp, nil
}

// freezeFor sets what epoch trains: the residual MLP waits out its
// warm-up, placed frequencies keep their θ (holdTheta), and after the
// warm-up the scorer's MLP stays unless TrainScorerThroughout.
func (t *trainer) freezeFor(epoch int, holdTheta bool) {
	cfg := t.cfg
	warm := epoch < cfg.ResidualWarmup
	t.opt.freezeExcept(t.m.cfg, func(tn tensor) bool {
		switch {
		case warm && tn.component == "residual":
			return false
		case holdTheta && tn.name == "freq.theta":
			return false
		case !warm && cfg.ResidualWarmup > 0 && !cfg.TrainScorerThroughout && scorerMLP(tn.name):
			return false
		}
		return true
	})
}

// validate returns the metrics on val of the model, or of its moving
// average of the parameters with EMA, which the model then keeps no trace of.
func (t *trainer) validate(ctx context.Context, val Source) (Metrics, error) {
	m := t.m
	if t.ema != nil {
		copy(t.live.Data, m.params.Data)
		copy(m.params.Data, t.ema.Data)
		m.refresh()
	}
	met, err := evaluate(ctx, m, val, t.cfg.Workers, 256, nil, &t.evalWS)
	if t.ema != nil {
		copy(m.params.Data, t.live.Data)
		m.refresh()
	}
	return met, err
}

// Settings returns the effective settings (defaults filled in) as numbers,
// for the model file's record of how it was trained.
func (c TrainConfig) Settings() map[string]float64 {
	c = c.withDefaults()
	return map[string]float64{
		"epochs": float64(c.Epochs), "batch_size": float64(c.BatchSize), "learning_rate": c.LearningRate,
		"freq_rate_scale": c.FreqRateScale, "min_learning_rate": c.MinLearningRate, "clip_norm": c.ClipNorm,
		"tau_start": c.TauStart, "tau_end": c.TauEnd, "patience": float64(c.Patience), "seed": float64(c.Seed),
		"lambda_div": c.LambdaDiv, "lambda_recon": c.LambdaRecon, "lambda_sparse": c.LambdaSparse, "lambda_var": c.LambdaVar,
		"dropout": c.Dropout, "weight_decay": c.WeightDecay, "input_noise": c.InputNoise,
		"channel_shuffle": c.ChannelShuffle, "ema": c.EMA, "residual_warmup": float64(c.ResidualWarmup),
		"fill_harmonics": float64(c.FillHarmonics),
	}
}

// scorerMLP reports whether tensor name is a weight of the scorer's MLP
// (not its per-frequency bias).
func scorerMLP(name string) bool {
	return name == "scorer.w1" || name == "scorer.b1" || name == "scorer.w2"
}

// cosineRate is the learning rate of global step s of total.
func cosineRate(cfg TrainConfig, s, total int) float64 {
	frac := float64(s) / float64(max(total, 1))
	return cfg.MinLearningRate + (cfg.LearningRate-cfg.MinLearningRate)*(1+math.Cos(math.Pi*frac))/2
}

// stepLoss is the loss of one step, by term (unweighted).
type stepLoss struct{ total, mse, div, recon, sparse, vr float64 }

func (s *stepLoss) add(o stepLoss) {
	s.total += o.total
	s.mse += o.mse
	s.div += o.div
	s.recon += o.recon
	s.sparse += o.sparse
	s.vr += o.vr
}

// trainer holds the state of one training run.
type trainer struct {
	m                 *Model
	cfg               TrainConfig
	data              *batcher
	pcg               *rand.PCG // rng's source, whose state a checkpoint keeps
	rng               *rand.Rand
	ws                *Workspace
	evalWS            []*Workspace
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

func newTrainer(m *Model, cfg TrainConfig, data *batcher) *trainer {
	c := m.cfg
	B, L, H, C, N := cfg.BatchSize, c.Lookback, c.Horizon, c.Channels, c.Frequencies
	if data != nil {
		data.localTargets = true // fit the forecasts on the steps the model makes them on
	}
	t := &trainer{
		m: m, cfg: cfg, data: data,
		pcg:   rand.NewPCG(cfg.Seed, 0xda3e39cb94b95bdb),
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
	t.rng = rand.New(t.pcg)
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

// finish restores the best parameters and completes the result.
func (t *trainer) finish(res *TrainResult, best *Params, why string) *TrainResult {
	if res.BestEpoch > 0 {
		copy(t.m.params.Data, best.Data)
		t.m.refresh()
	}
	res.Stopped = why
	return res
}

// errDiverged reports a step whose loss or gradient is not finite.
var errDiverged = errors.New("loss is not finite; lower the learning rate or check the data for extreme values")

// step runs one optimiser step on the samples idx.
func (t *trainer) step(idx []int, lr, tau float64) (stepLoss, error) {
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
	if math.IsNaN(l.total) || math.IsInf(l.total, 0) {
		return l, errDiverged
	}
	return l, t.apply(lr)
}

// gradient computes the training loss of the B windows in t.x, t.y with
// Gumbel draws t.noise, and leaves its gradient in t.ws.tr.grad, which must
// be zero on entry (apply clears it).
func (t *trainer) gradient(B int, tau float64) stepLoss {
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
	var l stepLoss
	l.mse, l.vr = outputLoss(dOut, out, t.y[:B*HC], B, H, C, B, cfg.LambdaVar)
	m.backward(ws, dOut, draws, consts)
	l.sparse = ws.tr.sparse / float64(B)

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
			l.recon += qw[i] * wt[i]
		}
		l.recon /= float64(B * L * d)
		gemm.Axpy(2*cfg.LambdaRecon/float64(B*L*d), qw, g.Data[:C1*d])
	}
	m.basis.backward(t.dPsi, g.Theta, g.Phi, c.Lookback)
	l.div = m.basis.diversity(cfg.LambdaDiv, g.Theta, c.Lookback, t.order)
	l.total = l.mse + cfg.LambdaDiv*l.div + cfg.LambdaRecon*l.recon + cfg.LambdaSparse*l.sparse + cfg.LambdaVar*l.vr
	return l
}

// apply clips the gradient in t.ws.tr.grad, takes one Adam step and clears
// the gradient.
func (t *trainer) apply(lr float64) error {
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
		return errDiverged
	}
	scale := 1.0
	if norm > cfg.ClipNorm {
		scale = cfg.ClipNorm / norm
	}
	t.opt.t++
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
func (t *trainer) run(f func(shard int)) {
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
func (t *trainer) parallelParts(n int, f func(part, lo, hi int)) {
	per := (n + parts - 1) / parts
	t.run(func(s int) { f(s, min(s*per, n), min((s+1)*per, n)) })
}

func (t *trainer) parallelRange(n int, f func(lo, hi int)) {
	t.parallelParts(n, func(_, lo, hi int) { f(lo, hi) })
}
