package training

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
)

// Train fits m to the train windows with Adam, keeping the parameters of the
// epoch with the lowest validation MSE. progress, if not nil, is called after
// every epoch. The same model, data and cfg.Seed always give the same result.
//
// Before the first step it places the frequencies on the training rows'
// cycles (Config.FrequencyInit); each epoch it shuffles the windows, sets
// what trains (the residual warm-up, placed frequencies' θ, the scorer's
// MLP), takes its steps (model.Stepper) along the cosine schedule of the
// learning rate and the linear one of the Gumbel temperature, and
// validates.
//
// On cancellation Train restores the best epoch so far and returns the
// result with ctx's error.
func Train(ctx context.Context, m *model.Model, train, val model.Source, cfg Config, progress func(EpochStats)) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r, err := newRun(m, train, val, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Checkpoint != "" {
		if err := r.resume(train, val, progress); err != nil {
			return nil, err
		}
		if r.state.stopped != "" {
			return r.finish(r.state.stopped), nil
		}
	}
	return r.epochs(ctx, val, progress)
}

// run is one training run: the model, the Stepper that trains it, the
// Evaluator that validates it, the random generator of its shuffles and
// draws, and the state a checkpoint keeps.
type run struct {
	m     *model.Model
	cfg   Config // defaults filled in
	st    *model.Stepper
	val   *measure.Evaluator // keeps its workspaces from epoch to epoch
	pcg   *rand.PCG          // rng's source, whose state a checkpoint keeps
	rng   *rand.Rand
	steps int // per epoch
	// holdTheta keeps the frequencies placed on the spectrum where it put
	// them (see Config.TrainPlacedFrequencies).
	holdTheta bool
	fp        string // the run's fingerprint, with a checkpoint
	state     runState
}

// newRun places m's frequencies (with InitSpectrum) and readies the run of
// cfg on train, validated on val.
func newRun(m *model.Model, train, val model.Source, cfg Config) (*run, error) {
	res := &Result{BestValMSE: math.Inf(1), Stopped: "epochs"}
	if rows, channels := spectrumRows(train); rows != nil && cfg.FrequencyInit == InitSpectrum {
		pl := m.PlaceOnSpectrum(rows, channels, cfg.FillHarmonics)
		res.Placement = &pl
	}
	samples, err := m.Samples(train)
	if err != nil {
		return nil, err
	}
	if _, err := m.Samples(val); err != nil {
		return nil, err
	}
	B := cfg.BatchSize
	steps := samples / B
	if steps == 0 {
		return nil, fmt.Errorf("train: %d training windows do not fill one batch of %d; use a batch of at most %d (--batch-size) or more data", samples, B, samples)
	}
	if val.Len() == 0 {
		return nil, errors.New("train: the validation split holds no window; early stopping needs one")
	}
	pcg := rand.NewPCG(cfg.Seed, 0xda3e39cb94b95bdb)
	rng := rand.New(pcg)
	st, err := m.NewStepper(train, cfg.step(), rng)
	if err != nil {
		return nil, err
	}
	perm := make([]int, samples)
	for i := range perm {
		perm[i] = i
	}
	return &run{
		m: m, cfg: cfg, st: st, pcg: pcg, rng: rng, steps: steps,
		val:       measure.NewEvaluator(m, measure.Options{Workers: max(cfg.Workers, 1)}),
		holdTheta: res.Placement != nil && !cfg.TrainPlacedFrequencies,
		state:     runState{res: res, best: slices.Clone(m.Params().Data), perm: perm},
	}, nil
}

// spectrumRows returns the rows Train reads the spectrum from, and their
// channels: a SpectrumSource's, a RowSource's, or nil.
func spectrumRows(src model.Source) ([]float64, int) {
	switch s := src.(type) {
	case model.SpectrumSource:
		return s.SpectrumRows()
	case model.RowSource:
		return s.Rows(), s.Channels()
	}
	return nil, 0
}

// epochs runs the epochs from the state's next one until the last, early
// stopping, an error or ctx ends the run, and returns its result.
func (r *run) epochs(ctx context.Context, val model.Source, progress func(EpochStats)) (*Result, error) {
	cfg, st, res := r.cfg, &r.state, r.state.res
	kept := st.nextEpoch // the epoch of the last checkpoint on disk
	for epoch := st.nextEpoch; epoch < cfg.Epochs; epoch++ {
		start := time.Now()
		es, why, err := r.epoch(ctx, val, epoch)
		if err != nil {
			return r.finish(why), err
		}
		if es.ValMSE < res.BestValMSE {
			res.BestValMSE, res.BestEpoch, es.Best, st.bad = es.ValMSE, epoch+1, true, 0
			copy(st.best, r.st.Averaged())
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
			if msg := r.keepCheckpoint(&kept); msg != "" {
				es.CheckpointError = msg
				res.Epochs[len(res.Epochs)-1] = es
			}
		}
		if progress != nil {
			progress(es)
		}
		if stop == "early_stopping" {
			return r.finish(stop), nil
		}
	}
	return r.finish("epochs"), nil
}

// epoch runs epoch (0-based): its steps over the shuffled windows, then
// the validation. On error it also says why the run stops ("canceled",
// "diverged").
func (r *run) epoch(ctx context.Context, val model.Source, epoch int) (EpochStats, string, error) {
	cfg := r.cfg
	tau := cfg.TauStart
	if cfg.Epochs > 1 {
		tau -= (cfg.TauStart - cfg.TauEnd) * float64(epoch) / float64(cfg.Epochs-1) // Gumbel temperature, annealed
	}
	r.freezeFor(epoch)
	perm := r.state.perm
	r.rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	B, steps := cfg.BatchSize, r.steps
	var sum model.Loss
	var lr float64
	for s := range steps {
		if err := ctx.Err(); err != nil {
			return EpochStats{}, "canceled", err
		}
		lr = cosineRate(cfg, epoch*steps+s, cfg.Epochs*steps)
		l, err := r.st.Step(perm[s*B:(s+1)*B], lr, tau)
		if err != nil {
			return EpochStats{}, "diverged", fmt.Errorf("train: epoch %d step %d: %w", epoch+1, s+1, err)
		}
		sum.Add(l)
	}
	// Validate the parameters the steps stand for: the moving average
	// with EMA.
	var valMetrics model.Metrics
	err := r.st.WithAveraged(func() error {
		var err error
		valMetrics, err = r.val.Evaluate(ctx, val)
		return err
	})
	if err != nil {
		return EpochStats{}, "canceled", err
	}
	n := float64(steps)
	return EpochStats{
		Epoch: epoch + 1, Epochs: cfg.Epochs,
		Loss: sum.Total / n, MSE: sum.MSE / n, Div: sum.Div / n, Recon: sum.Recon / n, Sparse: sum.Sparse / n, Var: sum.Var / n,
		ValMSE: valMetrics.MSE, LearningRate: lr, Tau: tau,
	}, "", nil
}

// resume restores the run's state from the checkpoint of the run on train
// and val, when there is one (else the state stays a fresh start), reports
// the epochs it had run to progress, and notes the run's fingerprint.
func (r *run) resume(train, val model.Source, progress func(EpochStats)) error {
	removeStaleTemps(r.cfg.Checkpoint)
	r.fp = r.fingerprint(train, val)
	if _, err := r.loadCheckpoint(r.cfg.Checkpoint); err != nil {
		return err
	}
	if progress != nil {
		for _, e := range r.state.res.Epochs {
			e.Restored = true
			progress(e)
		}
	}
	return nil
}

// freezeFor sets what epoch trains: the residual MLP waits out its
// warm-up, placed frequencies keep their θ (holdTheta), and after the
// warm-up the scorer's MLP stays unless TrainScorerThroughout.
func (r *run) freezeFor(epoch int) {
	cfg := r.cfg
	warm := epoch < cfg.ResidualWarmup
	r.st.Freeze(func(name, component string) bool {
		switch {
		case warm && component == "residual":
			return false
		case r.holdTheta && name == "freq.theta":
			return false
		case !warm && cfg.ResidualWarmup > 0 && !cfg.TrainScorerThroughout && scorerMLP(name):
			return false
		}
		return true
	})
}

// finish restores the best parameters and completes the result.
func (r *run) finish(why string) *Result {
	res := r.state.res
	if res.BestEpoch > 0 {
		copy(r.m.Params().Data, r.state.best)
		r.m.Refresh()
	}
	res.Stopped = why
	return res
}

// scorerMLP reports whether tensor name is a weight of the scorer's MLP
// (not its per-frequency bias).
func scorerMLP(name string) bool {
	return name == "scorer.w1" || name == "scorer.b1" || name == "scorer.w2"
}

// cosineRate is the learning rate of global step s of total.
func cosineRate(cfg Config, s, total int) float64 {
	frac := float64(s) / float64(max(total, 1))
	return cfg.MinLearningRate + (cfg.LearningRate-cfg.MinLearningRate)*(1+math.Cos(math.Pi*frac))/2
}
