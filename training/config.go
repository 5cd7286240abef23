package training

import (
	"fmt"
	"slices"

	"github.com/freqlens/freqlens/model"
)

// Config sets how Train trains a model. The zero value of every field
// means its default.
type Config struct {
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
	// ClipNorm caps the L2 norm of the whole gradient. A negative value
	// turns the cap off.
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
	// not to biases, θ, φ or the fusion weight. Validation prefers 0.5 on
	// ETTh1 at every horizon and on ETTm1 at 96 and 336 (docs/benchmarks.md,
	// "Weight decay, input noise and the loss"); it stays off by default
	// until the other files are measured with it. A decay also changes the
	// heads no window selects, so the Adam step no longer skips them (an
	// epoch of ETTh1 costs 7% more). A negative value turns it off.
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
	// beyond the training period: validation prefers 0.5 on ETTm1, Weather,
	// ETTm2 and ETTh2 at 336 and 720, and 1 on ETTh1 and ETTh2 at 96
	// (docs/benchmarks.md, "Channel shuffle").
	// Without shuffling a mixed model learns the training period's
	// co-movement within an epoch and overfits. Ignored by independent
	// models. A negative value turns it off.
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
	// cycles.FindPeaks and model.Model.PlaceOnSpectrum) when the training
	// Source is a model.RowSource (or a model.SpectrumSource), and keeps
	// the model's log-uniform grid otherwise; InitGrid
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

// The defaults of the Config settings that the commands offer as flags.
const (
	DefaultLearningRate    = 1e-3
	DefaultMinLearningRate = 1e-6
	DefaultDropout         = 0.1
	DefaultPatience        = 10
)

func (c Config) withDefaults() Config {
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

// step is what each step of a run on c (defaults filled in) does.
func (c Config) step() model.StepConfig {
	return model.StepConfig{
		BatchSize: c.BatchSize, FreqRateScale: c.FreqRateScale, WeightDecay: c.WeightDecay, ClipNorm: c.ClipNorm,
		LambdaDiv: c.LambdaDiv, LambdaRecon: c.LambdaRecon, LambdaSparse: c.LambdaSparse, LambdaVar: c.LambdaVar,
		Dropout: c.Dropout, InputNoise: c.InputNoise, ChannelShuffle: c.ChannelShuffle, EMA: c.EMA, Workers: c.Workers,
	}
}

func (c Config) validate() error {
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

// Result summarises a training run.
type Result struct {
	EpochsRun  int
	BestEpoch  int // 1-based
	BestValMSE float64
	Epochs     []EpochStats
	// Stopped says why training ended: "epochs", "early_stopping", "canceled"
	// or "diverged".
	Stopped string
	// Placement says which frequencies were placed on the training rows'
	// cycles; nil when the frequencies started on the grid.
	Placement *model.Placement
	// ResumedFrom is how many epochs the run's checkpoint had finished
	// when this run resumed it; 0 for a run from the start.
	ResumedFrom int
	// ResumedOn, when set, says that the checkpoint was written with
	// other arithmetic kernels, so that the resumed run is not the
	// uninterrupted one bit for bit.
	ResumedOn string
}

// MedianEpochSeconds returns the median wall time of the epochs run.
func (r *Result) MedianEpochSeconds() float64 {
	s := make([]float64, len(r.Epochs))
	for i, e := range r.Epochs {
		s[i] = e.Seconds
	}
	return median(s)
}

// Settings returns the effective settings (defaults filled in) as numbers,
// for the model file's record of how it was trained.
func (c Config) Settings() map[string]float64 {
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

// median is the middle value of v (the mean of the two middle ones), 0
// for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
