package online

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/freqlens/freqlens/model"
)

// FineTuneConfig sets one round of online fine-tuning: a few Adam steps on
// recent (window, target) pairs that move only the frequency parameters θ
// and φ, the rhythms' clock terms and the fusion weight, and optionally the
// heads. The zero value of every field means its default.
type FineTuneConfig struct {
	// Steps is the number of Adam steps.
	//
	// Default: 50
	Steps int
	// BatchSize is the windows per step, capped by the windows available.
	//
	// Default: 32
	BatchSize int
	// LearningRate is Adam's step size for the fusion weight and heads; θ
	// and φ use it times FreqRateScale, as in training.
	//
	// Default: 1e-3
	LearningRate float64
	// FreqRateScale multiplies the learning rate of θ and φ.
	//
	// Default: 5
	FreqRateScale float64
	// TrainHeads also fine-tunes the per-frequency heads and the rhythm
	// frequencies' band heads.
	TrainHeads bool
	// LambdaDiv weights the diversity regulariser that keeps the frequencies
	// apart. A negative value turns it off.
	//
	// Default: 0.01
	LambdaDiv float64
	// Tau is the Gumbel temperature, the end temperature of training.
	//
	// Default: 0.1
	Tau float64
	// ClipNorm caps the L2 norm of the gradient of the trained parameters.
	// A negative value turns the cap off.
	//
	// Default: 1.0
	ClipNorm float64
	// MaxLossGrowth aborts the round with ErrExploding when a step's loss
	// exceeds this multiple of the first step's.
	//
	// Default: 10
	MaxLossGrowth float64
	// Seed drives sampling and the Gumbel noise.
	Seed uint64
	// Workers is how many goroutines run the parallel sections of a step;
	// results do not depend on it.
	//
	// Default: 2
	Workers int
	// AfterStep, if set, is called after every step with the step's wall
	// time; an error ends the round with that error. A service uses it to
	// pace a round so that serving keeps its cores.
	AfterStep func(ctx context.Context, took time.Duration) error
}

func (c FineTuneConfig) withDefaults() FineTuneConfig {
	if c.Steps == 0 {
		c.Steps = 50
	}
	if c.BatchSize == 0 {
		c.BatchSize = 32
	}
	if c.LearningRate == 0 {
		c.LearningRate = 1e-3
	}
	if c.FreqRateScale == 0 {
		c.FreqRateScale = 5
	}
	switch {
	case c.LambdaDiv == 0:
		c.LambdaDiv = 0.01
	case c.LambdaDiv < 0:
		c.LambdaDiv = 0
	}
	if c.Tau == 0 {
		c.Tau = 0.1
	}
	if c.ClipNorm == 0 {
		c.ClipNorm = 1
	}
	if c.MaxLossGrowth == 0 {
		c.MaxLossGrowth = 10
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	return c
}

func (c FineTuneConfig) validate() error {
	switch {
	case c.Steps < 1:
		return fmt.Errorf("fine-tune: steps = %d; use at least 1", c.Steps)
	case c.BatchSize < 1:
		return fmt.Errorf("fine-tune: batch size %d; use at least 1", c.BatchSize)
	case !(c.LearningRate > 0 && c.LearningRate <= 1):
		return fmt.Errorf("fine-tune: learning rate %g; use a small positive rate such as 1e-3", c.LearningRate)
	case !(c.Tau > 0):
		return fmt.Errorf("fine-tune: Gumbel temperature %g; use a positive value such as 0.1", c.Tau)
	case !(c.MaxLossGrowth > 1):
		return fmt.Errorf("fine-tune: max loss growth %g; use a factor above 1 such as 10", c.MaxLossGrowth)
	}
	return nil
}

// FineTuneResult reports a fine-tuning round.
type FineTuneResult struct {
	Steps int
	// FirstLoss and LastLoss are the training loss (MSE plus the weighted
	// diversity term) of the first and last step.
	FirstLoss, LastLoss float64
}

// ErrExploding reports a step whose loss grew beyond
// FineTuneConfig.MaxLossGrowth times the first step's. Like
// model.ErrDiverged (a step whose loss or gradient is not finite), it
// leaves the model half-trained: fine-tune a Clone and discard it on
// error.
var ErrExploding = errors.New("loss exploded; lower the learning rate")

// FineTune runs cfg.Steps Adam steps (model.Stepper) on windows drawn from
// src, changing only θ, φ and the fusion weight (and the heads with
// cfg.TrainHeads). The input projection, scorer and residual MLP stay as
// they are, so a round is a small, guarded change that moves what the
// model's attributions name: its frequencies. The same model, data and
// seed give the same result.
//
// On error m holds a partial update; callers fine-tune a Clone and keep the
// original unless the round succeeds and the candidate scores at least as
// well on data it was not tuned on.
func FineTune(ctx context.Context, m *model.Model, src model.Source, cfg FineTuneConfig) (FineTuneResult, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return FineTuneResult{}, err
	}
	samples, err := m.Samples(src)
	if err != nil {
		return FineTuneResult{}, err
	}
	if samples == 0 {
		return FineTuneResult{}, errors.New("fine-tune: no windows to learn from")
	}
	B := min(cfg.BatchSize, samples)
	// The seed's stream is the one training's steps draw from (package
	// training seeds it alike): one generator picks the windows and draws
	// the Gumbel noise.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xda3e39cb94b95bdb))
	st, err := m.NewStepper(src, cfg.step(B), rng)
	if err != nil {
		return FineTuneResult{}, err
	}
	// A model whose frequencies sit on the data's cycles keeps θ: the
	// cycles move with the recent spectrum (Model.TrackCycles), which
	// places a period far more finely than this loss can.
	placed := len(m.Meta.Peaks) > 0
	trained := fineTuned(cfg.TrainHeads)
	st.Freeze(func(name, component string) bool {
		return trained(component) && !(placed && name == "freq.theta")
	})

	var res FineTuneResult
	idx := make([]int, B)
	for s := range cfg.Steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		for i := range idx {
			idx[i] = rng.IntN(samples)
		}
		start := time.Now()
		l, err := st.Step(idx, cfg.LearningRate, cfg.Tau)
		if s == 0 {
			res.FirstLoss = l.Total
		}
		res.LastLoss = l.Total
		if err != nil {
			return res, fmt.Errorf("fine-tune step %d: %w", s+1, err)
		}
		res.Steps = s + 1
		if l.Total > cfg.MaxLossGrowth*res.FirstLoss {
			return res, fmt.Errorf("fine-tune step %d: loss %.4g is %.1f× the first step's %.4g: %w",
				s+1, l.Total, l.Total/res.FirstLoss, res.FirstLoss, ErrExploding)
		}
		if cfg.AfterStep != nil {
			if err := cfg.AfterStep(ctx, time.Since(start)); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// step is what each step of a round of cfg (defaults filled in) on
// batches of B windows does: no term but the forecast loss and the
// diversity, no dropout, noise, shuffling or moving average. A negative
// rate scale stops θ and φ and a negative clip norm turns the cap off, as
// they do in training.
func (cfg FineTuneConfig) step(B int) model.StepConfig {
	return model.StepConfig{
		BatchSize: B, FreqRateScale: max(cfg.FreqRateScale, 0), ClipNorm: max(cfg.ClipNorm, 0),
		LambdaDiv: cfg.LambdaDiv, Workers: cfg.Workers,
	}
}

// fineTuned returns which components a fine-tuning round changes.
func fineTuned(heads bool) func(component string) bool {
	return func(component string) bool {
		switch component {
		case "frequencies", "fusion", "clock":
			return true
		case "heads", "band heads":
			return heads
		}
		return false
	}
}
