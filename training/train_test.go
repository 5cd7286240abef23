package training

import (
	"context"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/dataset/datasettest"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
)

func TestTrainLearnsAndIsReproducible(t *testing.T) {
	cfg := model.Config{Lookback: 48, Horizon: 12, Channels: 2, Hidden: 16, Frequencies: 12, TopK: 4}
	train, val := datasettest.Sines(400, 48, 12, 2, 1), datasettest.Sines(100, 48, 12, 2, 2)
	run := func(workers int) (*model.Model, *Result) {
		m, err := model.New(cfg, 7)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Train(context.Background(), m, train, val, Config{Epochs: 4, Seed: 3, Workers: workers}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m, res
	}
	m1, r1 := run(2)
	m2, r2 := run(1)
	if !slices.Equal(m1.Params().Data, m2.Params().Data) {
		t.Error("the same seed gave different models with 1 and 2 workers")
	}
	if r1.BestValMSE != r2.BestValMSE {
		t.Errorf("best validation MSE %v vs %v for the same seed", r1.BestValMSE, r2.BestValMSE)
	}
	untrained, _ := model.New(cfg, 7)
	before, err := measure.Evaluate(context.Background(), untrained, val, measure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := measure.Evaluate(context.Background(), m1, val, measure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if after.MSE > 0.5*before.MSE {
		t.Errorf("validation MSE went from %.4f to %.4f; training should at least halve it on clean sines", before.MSE, after.MSE)
	}
	if after.MSE != r1.BestValMSE {
		t.Errorf("the returned model scores %v, but training reported its best as %v", after.MSE, r1.BestValMSE)
	}
}

func TestTrainStopsOnCancel(t *testing.T) {
	cfg := model.Config{Lookback: 16, Horizon: 4, Channels: 1, Hidden: 8, Frequencies: 6, TopK: 2}
	train, val := datasettest.Sines(200, 16, 4, 1, 1), datasettest.Sines(50, 16, 4, 1, 2)
	m, _ := model.New(cfg, 1)
	ctx, cancel := context.WithCancel(context.Background())
	epochs := 0
	res, err := Train(ctx, m, train, val, Config{Epochs: 50}, func(EpochStats) {
		epochs++
		if epochs == 2 {
			cancel()
		}
	})
	if err == nil || res == nil || res.Stopped != "canceled" || res.EpochsRun != 2 {
		t.Fatalf("Train after cancel: err %v, result %+v; want context.Canceled after 2 epochs", err, res)
	}
}
