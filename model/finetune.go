package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// FineTuneConfig sets one round of online fine-tuning: a few Adam steps on
// recent (window, target) pairs that move only the frequency parameters θ
// and φ, the rhythms' clock terms and the fusion weight, and optionally the
// heads. The zero value of
// every field means its default.
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

// ErrDiverged reports a step whose loss or gradient is not finite;
// ErrExploding one whose loss grew beyond FineTuneConfig.MaxLossGrowth times
// the first step's. Both leave the model half-trained: fine-tune a Clone and
// discard it on error.
var (
	ErrDiverged  = errDiverged
	ErrExploding = errors.New("loss exploded; lower the learning rate")
)

// FineTune runs cfg.Steps Adam steps on windows drawn from src, changing
// only θ, φ and the fusion weight (and the heads with cfg.TrainHeads). The
// input projection, scorer and residual MLP stay as they are, so a round is
// a small, guarded change that moves what the model's attributions name:
// its frequencies. The same model, data and seed give the same result.
//
// On error m holds a partial update; callers fine-tune a Clone and keep the
// original unless the round succeeds and the candidate scores at least as
// well on data it was not tuned on.
func FineTune(ctx context.Context, m *Model, src Source, cfg FineTuneConfig) (FineTuneResult, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return FineTuneResult{}, err
	}
	b, err := newBatcher(m, src)
	if err != nil {
		return FineTuneResult{}, err
	}
	samples := b.samples()
	if samples == 0 {
		return FineTuneResult{}, errors.New("fine-tune: no windows to learn from")
	}
	B := min(cfg.BatchSize, samples)
	lambdaDiv := cfg.LambdaDiv
	if lambdaDiv == 0 {
		lambdaDiv = -1 // off; TrainConfig reads 0 as its default
	}
	tc := TrainConfig{
		BatchSize: B, LearningRate: cfg.LearningRate, FreqRateScale: cfg.FreqRateScale, ClipNorm: cfg.ClipNorm,
		LambdaDiv: lambdaDiv, LambdaRecon: -1, LambdaSparse: -1, LambdaVar: -1, Dropout: -1,
		ChannelShuffle: -1, Seed: cfg.Seed, Workers: cfg.Workers,
	}.withDefaults()
	t := newTrainer(m, tc, b)
	// A model whose frequencies sit on the data's cycles keeps θ: the
	// cycles move with the recent spectrum (Model.TrackCycles), which
	// places a period far more finely than this loss can.
	placed := len(m.Meta.Peaks) > 0
	t.opt.freezeExcept(m.cfg, func(tn tensor) bool {
		return fineTuned(cfg.TrainHeads)(tn.component) && !(placed && tn.name == "freq.theta")
	})

	var res FineTuneResult
	idx := make([]int, B)
	for s := range cfg.Steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		for i := range idx {
			idx[i] = t.rng.IntN(samples)
		}
		start := time.Now()
		l, err := t.step(idx, cfg.LearningRate, cfg.Tau)
		if s == 0 {
			res.FirstLoss = l.total
		}
		res.LastLoss = l.total
		if err != nil {
			return res, fmt.Errorf("fine-tune step %d: %w", s+1, err)
		}
		res.Steps = s + 1
		if l.total > cfg.MaxLossGrowth*res.FirstLoss {
			return res, fmt.Errorf("fine-tune step %d: loss %.4g is %.1f× the first step's %.4g: %w",
				s+1, l.total, l.total/res.FirstLoss, res.FirstLoss, ErrExploding)
		}
		if cfg.AfterStep != nil {
			if err := cfg.AfterStep(ctx, time.Since(start)); err != nil {
				return res, err
			}
		}
	}
	return res, nil
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

// Finite reports whether every parameter is a finite number, the check a
// candidate model passes before it may serve.
func (m *Model) Finite() bool {
	for _, v := range m.params.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
