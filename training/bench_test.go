package training_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/training"
)

// loadETT prepares a benchmark file under the standard protocol, or skips.
func loadETT(b *testing.B, name string, horizon int) *dataset.Benchmark {
	b.Helper()
	path := filepath.Join("..", "..", "shared", "data", name)
	if name == "ETTh1.csv" {
		path = filepath.Join("..", "testdata", name) // shipped in the repository
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("benchmark data %s is absent (%v); it lives in ../shared/data beside the repository", path, err)
	}
	f, err := dataset.LoadCSV(path)
	if err != nil {
		b.Fatal(err)
	}
	bm, err := dataset.Standard(f, 96, horizon)
	if err != nil {
		b.Fatal(err)
	}
	return bm
}

// BenchmarkTrainEpoch times one training epoch (all steps plus the
// validation pass) on ETTh1, H=96, in both modes and with the channel mix:
// an epoch in which every parameter trains (no residual warm-up), the
// costliest kind, including the placement of the frequencies on the
// training spectrum.
func BenchmarkTrainEpoch(b *testing.B) {
	bm := loadETT(b, "ETTh1.csv", 96)
	for _, c := range []struct {
		name string
		cfg  model.Config
	}{
		{"mixed", model.Config{Horizon: 96, Mode: model.Mixed}},
		{"mixed, channel mix", model.Config{Horizon: 96, Mode: model.Mixed, ChannelMix: true}},
		{"independent", model.Config{Horizon: 96, Mode: model.Independent}},
	} {
		for _, batch := range []int{32, 128} {
			name := c.name
			if batch != 32 {
				name += fmt.Sprintf("/batch %d", batch)
			}
			b.Run(name, func(b *testing.B) {
				cfg := c.cfg
				cfg.Channels = bm.Train.Channels()
				if cfg.Mode == model.Independent {
					cfg.Channels = 1
				}
				for b.Loop() {
					m, err := model.New(cfg, 42)
					if err != nil {
						b.Fatal(err)
					}
					m.Meta.Cadence = bm.Frame.Cadence // the clock runs, as in train
					tc := training.Config{Epochs: 1, BatchSize: batch, Seed: 42, ResidualWarmup: -1}
					if _, err := training.Train(context.Background(), m, bm.Train, bm.Val, tc, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/epoch")
			})
		}
	}
}

// BenchmarkETTh1 is the full standard-protocol run behind docs/benchmarks.md's
// headline figure: defaults, seed 42, H=96, early stopping, then the test
// split. Run it alone: go test -run '^$' -bench ETTh1 -benchtime 1x ./training/
func BenchmarkETTh1(b *testing.B) {
	bm := loadETT(b, "ETTh1.csv", 96)
	for b.Loop() {
		m, err := model.New(model.Config{Horizon: 96, Channels: bm.Train.Channels()}, 42)
		if err != nil {
			b.Fatal(err)
		}
		m.Meta.Cadence = bm.Frame.Cadence
		res, err := training.Train(context.Background(), m, bm.Train, bm.Val, training.Config{Seed: 42, BatchSize: 128}, nil)
		if err != nil {
			b.Fatal(err)
		}
		met, err := measure.Evaluate(context.Background(), m, bm.Test, measure.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(met.MSE, "test_mse")
		b.ReportMetric(met.MAE, "test_mae")
		b.ReportMetric(res.MedianEpochSeconds(), "s/epoch")
		b.ReportMetric(float64(res.BestEpoch), "best_epoch")
		fmt.Fprintf(os.Stderr, "ETTh1 H=96: test MSE %.4f MAE %.4f, best epoch %d of %d, median epoch %.2fs\n",
			met.MSE, met.MAE, res.BestEpoch, res.EpochsRun, res.MedianEpochSeconds())
	}
}
