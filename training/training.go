// Package training fits a FreqLens model to data: the training loop, and
// the measured model that `freqlens train` and a `serve` that bootstraps
// its first model share.
//
// Train is the loop: it places the frequencies on the training rows'
// cycles, runs the epochs of optimiser steps (model.Stepper takes each)
// under the schedules of the learning rate and the Gumbel temperature,
// holds back what does not train yet (the residual MLP's warm-up, placed
// frequencies, the scorer's MLP after it), validates, stops early, restores
// the best epoch, and keeps the whole run in a checkpoint file it resumes
// from bit for bit (checkpoint.go). Config says how; the zero value of
// each of its fields means that field's default.
//
// Fit trains on a history.Data (what package history reads from a wide
// benchmark file, long-format files or the input topic, split), scores
// the test split and records in the model's metadata what it learned from
// and how well it forecasts.
//
// It sits above model and history and below cmd and service; model knows
// nothing of it, and online, which fine-tunes a serving model with its own
// few steps, does not import it.
package training

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
)

// Options says how Fit trains.
type Options struct {
	// Epochs, BatchSize, Seed and FrequencyInit are Config's.
	Epochs, BatchSize int
	Seed              uint64
	FrequencyInit     FrequencyInit
	// ChannelShuffle is Config's share of shuffled-channel
	// samples of a mixed model; 0 means the default, a negative value off.
	ChannelShuffle float64
	// TopK is model.Config's K, the frequencies each window selects; 0
	// means the default.
	TopK int
	// ChannelMix is model.Config's: the residual MLP of a mixed model also
	// reads the other channels' leftovers, through a learned mix that
	// follows the strongest rhythm's phase.
	ChannelMix bool
	// Dropout, LearningRate and Patience are Config's; 0 means
	// the default, and a negative Dropout turns dropout off.
	Dropout, LearningRate float64
	Patience              int
	// WeightDecay and InputNoise are Config's; 0 means the default (off).
	WeightDecay, InputNoise float64
	// FillHarmonics is Config's: put a frequency on every
	// missing harmonic up to this one of each cycle; 0 leaves them out.
	FillHarmonics int
	// TimeZone is model.Meta.TimeZone: the IANA zone whose wall clock
	// times the rhythms (empty: UTC).
	TimeZone string
	// Checkpoint is Config's: a file that keeps the run's state
	// after every epoch and resumes it when it exists; empty for none.
	Checkpoint string
	// Start, when set, is called once before the first epoch with a line
	// that says what is trained on what; Epoch after every epoch.
	Start func(what string)
	Epoch func(EpochStats)
}

// FitResult is a trained and measured model.
type FitResult struct {
	Model *model.Model
	Train *Result
	// Test is the model's score on the test windows, and Naive the MSE
	// there of the better of two forecasts without a model (NaiveMSE).
	Test  model.Metrics
	Naive float64
	// Seconds is the training time, Params the parameter count.
	Seconds float64
	Params  int
	// Interrupted says that ctx ended the training after at least one
	// epoch: the model is the best epoch so far.
	Interrupted bool
}

// errorQuantileWindows is how many test windows Fit measures the error
// quantiles on: enough for the 0.5% tails of every step.
const errorQuantileWindows = 4096

// Fit trains a model of lookback L and horizon H on d, scores it on the
// test windows and fills its metadata: the data's channels, cadence and
// normalisation, the test metrics, the attribution shares and where
// served prediction intervals start.
func Fit(ctx context.Context, d *history.Data, lookback, horizon int, o Options) (*FitResult, error) {
	channels := len(d.Columns)
	if d.Mode == model.Independent {
		channels = 1
	}
	if o.ChannelMix && (d.Mode != model.Mixed || channels < 2) {
		return nil, fmt.Errorf("the channel mix mixes the channels of a mixed model; this one is %s with %d channel(s): train it without the mix", d.Mode, channels)
	}
	m, err := model.New(model.Config{Lookback: lookback, Horizon: horizon, Channels: channels, Mode: d.Mode, TopK: o.TopK, ChannelMix: o.ChannelMix}, o.Seed)
	if err != nil {
		return nil, err
	}
	m.Meta = model.Meta{
		ChannelNames: d.Columns, Cadence: d.Cadence, StepAlign: d.StepAlign, Mean: d.Scaler.Mean, Std: d.Scaler.Std,
		DataSHA256: d.SHA256, DataName: d.Name, Seed: o.Seed,
	}
	if err := m.SetTimeZone(o.TimeZone); err != nil {
		return nil, err
	}
	_, params := m.ParamCounts()
	if o.Start != nil {
		o.Start(fmt.Sprintf("training %s on %s: %d windows, %d params", d.Mode, d.Name, d.Train.Len(), params))
	}
	start := time.Now()
	tc := Config{
		Epochs: o.Epochs, BatchSize: o.BatchSize, Seed: o.Seed, FrequencyInit: o.FrequencyInit,
		Dropout: o.Dropout, LearningRate: o.LearningRate, Patience: o.Patience, FillHarmonics: o.FillHarmonics,
		Checkpoint: o.Checkpoint, WeightDecay: o.WeightDecay, InputNoise: o.InputNoise,
	}
	switch {
	case o.ChannelShuffle < 0:
		tc.ChannelShuffle = -1 // off
	case o.ChannelShuffle > 0:
		tc.ChannelShuffle = o.ChannelShuffle
	}
	tr, trainErr := Train(ctx, m, d.Train, d.Val, tc, o.Epoch)
	if trainErr != nil && !(errors.Is(trainErr, context.Canceled) && tr != nil && tr.BestEpoch > 0) {
		return nil, trainErr
	}
	res := &FitResult{Model: m, Train: tr, Seconds: time.Since(start).Seconds(), Params: params, Interrupted: trainErr != nil}

	// Score the best epoch on the test split (not cancellable: it is short,
	// and a model without its test metrics would be misleading).
	if res.Test, err = measure.Evaluate(context.WithoutCancel(ctx), m, d.Test, measure.Options{}); err != nil {
		return nil, err
	}
	met := res.Test
	res.Naive = NaiveMSE(d.Test)
	m.Meta.Metrics = map[string]float64{
		"test_mse": met.MSE, "test_mae": met.MAE, "val_mse": tr.BestValMSE,
		"best_epoch": float64(tr.BestEpoch), "epochs_run": float64(tr.EpochsRun),
		"naive_mse": res.Naive,
	}
	if res.Interrupted {
		// The file holds the best epoch of a run cut short: inspect says
		// so, since its figures are not those of the whole schedule.
		m.Meta.Metrics["interrupted"] = 1
	}
	m.Meta.Selected = met.Selected
	m.Meta.Shares, m.Meta.ResidualShare, m.Meta.RhythmShares = met.Shares, met.ResidualShare, met.RhythmShares
	m.Meta.Training = tc.Settings()
	// Where a served model's prediction intervals start (output.intervals).
	if m.Meta.ErrorQuantiles, err = measure.ErrorQuantiles(context.WithoutCancel(ctx), m, d.Test, errorQuantileWindows); err != nil {
		return nil, err
	}
	return res, nil
}

// NaiveMSE is the MSE on src's windows of the better of two forecasts
// without a model: every step ahead the window's last reading, or the
// window's mean, channel by channel. A model that does no better has
// found nothing to forecast (noise, or a horizon too far for the data);
// train says so. It is NaN for no windows.
func NaiveMSE(src model.Source) float64 {
	n, C := src.Len(), src.Channels()
	if n == 0 || C == 0 {
		return math.NaN()
	}
	var last, mean float64
	count := 0
	for i := range n {
		x, y := src.Input(i), src.Target(i)
		L, H := len(x)/C, len(y)/C
		for c := range C {
			avg := 0.0
			for t := range L {
				avg += x[t*C+c]
			}
			avg /= float64(L)
			end := x[(L-1)*C+c]
			for h := range H {
				v := y[h*C+c]
				last += (v - end) * (v - end)
				mean += (v - avg) * (v - avg)
			}
			count += H
		}
	}
	return min(last, mean) / float64(count)
}
