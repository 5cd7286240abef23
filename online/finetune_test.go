package online

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/dataset/datasettest"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/training"
)

func TestFineTuneChangesOnlyTheFrequencyParameters(t *testing.T) {
	cfg := model.Config{Lookback: 48, Horizon: 12, Channels: 1, Mode: model.Independent, Hidden: 16, Frequencies: 12, TopK: 4}
	src := datasettest.Sines(200, 48, 12, 1, 5)
	for _, heads := range []bool{false, true} {
		m, err := model.New(cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		before := m.Clone()
		if _, err := FineTune(context.Background(), m, src, FineTuneConfig{Steps: 5, TrainHeads: heads, Seed: 1}); err != nil {
			t.Fatal(err)
		}
		trained := fineTuned(heads)
		// Component by component (each a contiguous range of the
		// parameters, in ParamCounts' order): the frozen ones are
		// bit-identical. A model that does not read the time has no clock
		// terms to tune, and one without rhythms no band heads.
		parts, _ := m.ParamCounts()
		off := 0
		for _, c := range parts {
			got, was := m.Params().Data[off:off+c.Params], before.Params().Data[off:off+c.Params]
			off += c.Params
			changed := !slices.Equal(got, was)
			want := trained(c.Component) && (c.Component != "clock" || m.ReadsTime()) &&
				(c.Component != "band heads" || len(m.Meta.Rhythms) > 0)
			if changed != want {
				t.Errorf("heads=%v: component %s changed=%v, want %v", heads, c.Component, changed, want)
			}
		}
		// Within the tuned components every tensor moves.
		p, q := m.Params(), before.Params()
		tuned := map[string][2][]float64{"freq.theta": {p.Theta, q.Theta}, "freq.phi": {p.Phi, q.Phi}, "fusion.w": {p.Fusion, q.Fusion}}
		if heads {
			tuned["heads.w1"], tuned["heads.w2"] = [2][]float64{p.HeadW1, q.HeadW1}, [2][]float64{p.HeadW2, q.HeadW2}
		}
		for name, v := range tuned {
			if slices.Equal(v[0], v[1]) {
				t.Errorf("heads=%v: tensor %s did not change", heads, name)
			}
		}
	}
}

func TestFineTuneFollowsAPeriodChange(t *testing.T) {
	// A model trained on a 24-step cycle, fine-tuned on the same cycle
	// stretched to 28 steps, forecasts the new cycle much better, and the
	// fine-tuning loss falls.
	cfg := model.Config{Lookback: 96, Horizon: 24, Channels: 1, Mode: model.Independent, Hidden: 16, Frequencies: 8, TopK: 3}
	old, fresh := periodSource(600, 96, 24, 24, 1), periodSource(600, 96, 24, 28, 2)
	m, err := model.New(cfg, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := training.Train(context.Background(), m, old, periodSource(100, 96, 24, 24, 3), training.Config{Epochs: 6, Seed: 1}, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := measure.Evaluate(context.Background(), m, fresh, measure.Options{})
	tuned := m.Clone()
	res, err := FineTune(context.Background(), tuned, fresh, FineTuneConfig{Steps: 300, LearningRate: 3e-3, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := measure.Evaluate(context.Background(), tuned, fresh, measure.Options{})
	t.Logf("MSE on the 28-step cycle %.4f → %.4f; loss %.4f → %.4f", before.MSE, after.MSE, res.FirstLoss, res.LastLoss)
	if after.MSE > 0.8*before.MSE || res.LastLoss >= res.FirstLoss {
		t.Errorf("fine-tuning on the new cycle took MSE from %.4f to %.4f (loss %.4f → %.4f); want at least 20%% lower",
			before.MSE, after.MSE, res.FirstLoss, res.LastLoss)
	}
}

func TestFineTuneAbortsOnDivergence(t *testing.T) {
	cfg := model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 8, Frequencies: 6, TopK: 2}
	src := datasettest.Sines(50, 24, 6, 1, 1)
	m, _ := model.New(cfg, 1)
	m.Params().Fusion[0] = math.NaN()
	m.Refresh()
	if m.Finite() {
		t.Error("Finite() = true with a NaN fusion weight")
	}
	if _, err := FineTune(context.Background(), m, src, FineTuneConfig{Steps: 3}); !errors.Is(err, model.ErrDiverged) {
		t.Errorf("fine-tuning a NaN model: error %v, want ErrDiverged", err)
	}
	if _, err := FineTune(context.Background(), m, src, FineTuneConfig{LearningRate: 5}); err == nil {
		t.Error("a learning rate of 5 was accepted")
	}
	ok, _ := model.New(cfg, 1)
	if !ok.Finite() {
		t.Error("Finite() = false for a fresh model")
	}
}

// periodSource cuts windows from a cycle of the given period (a daily-like
// shape with a sharper peak) plus noise.
func periodSource(n, L, H int, period float64, seed uint64) datasettest.Slices {
	s := datasettest.Sines(n, L, H, 1, seed) // for the noise and the layout
	T := n + L + H
	series := make([]float64, T)
	for t := range T {
		ph := 2 * math.Pi * float64(t) / period
		series[t] = math.Sin(ph) + 0.4*math.Sin(2*ph+0.5) + 0.05*math.Cos(float64(t)*1.7)
	}
	for i := range n {
		copy(s.X[i*L:(i+1)*L], series[i:i+L])
		copy(s.Y[i*H:(i+1)*H], series[i+L:i+L+H])
	}
	return s
}
