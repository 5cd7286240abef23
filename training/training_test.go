package training

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/model"
)

// TestFitRecordsWhatItLearned: a fitted model carries the data's channels,
// cadence and normalisation, its test metrics, attribution shares and
// error quantiles, and Fit reports the epochs it ran.
func TestFitRecordsWhatItLearned(t *testing.T) {
	frame, err := dataset.Synthetic(dataset.SyntheticConfig{Series: 2, Steps: 600, Cycles: []dataset.Cycle{{Period: 24 * time.Hour, Amplitude: 3}}, NoiseStd: 0.3, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	frame.Name = "plant.csv"
	for _, mode := range []model.Mode{"", model.Independent} {
		d, err := history.FromFrame(frame, history.Split{Lookback: 48, Horizon: 12, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		var epochs int
		started := ""
		res, err := Fit(context.Background(), d, 48, 12, Options{Epochs: 2, Seed: 1, Start: func(s string) { started = s }, Epoch: func(EpochStats) { epochs++ }})
		if err != nil {
			t.Fatal(err)
		}
		m := res.Model
		wantMode := model.Mixed
		if mode != "" {
			wantMode = mode
		}
		switch {
		case m.Config().Mode != wantMode || d.Protocol != string(dataset.ProtocolRatio):
			t.Errorf("mode %q, protocol %s; want %s under the ratio protocol", m.Config().Mode, d.Protocol, wantMode)
		case epochs != 2 || res.Train.EpochsRun != 2 || started == "":
			t.Errorf("%d epochs reported, %d run, start %q; want 2 and a start line", epochs, res.Train.EpochsRun, started)
		case m.Meta.Cadence != time.Hour || m.Meta.DataName != "plant.csv" || len(m.Meta.ChannelNames) != 2 || len(m.Meta.Std) != 2:
			t.Errorf("meta %+v does not describe the data", m.Meta)
		case !(m.Meta.Metrics["test_mse"] > 0) || m.Meta.Metrics["test_mse"] != res.Test.MSE || math.IsNaN(m.Meta.ResidualShare):
			t.Errorf("metrics %v, residual share %v; want the test MSE %v", m.Meta.Metrics, m.Meta.ResidualShare, res.Test.MSE)
		case m.Meta.ErrorQuantiles == nil:
			t.Error("no error quantiles: served intervals would have nowhere to start")
		}
	}
}

// windowsOf is a Source of fixed windows (one channel).
type windowsOf struct{ in, tgt [][]float64 }

func (w windowsOf) Len() int               { return len(w.in) }
func (w windowsOf) Channels() int          { return 1 }
func (w windowsOf) Input(i int) []float64  { return w.in[i] }
func (w windowsOf) Target(i int) []float64 { return w.tgt[i] }

// TestNaiveMSE: the better of holding the last reading and holding the
// window's mean, over every window and step.
func TestNaiveMSE(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  windowsOf
		want float64
	}{
		// A flat continuation of the last reading: holding it is exact.
		{"last", windowsOf{[][]float64{{0, 0, 4}}, [][]float64{{4, 4}}}, 0},
		// Alternating readings about 1: the mean (1) misses by 1 each
		// step (MSE 1), the last reading (2) by 2 and 0 (MSE 2).
		{"alternating", windowsOf{[][]float64{{0, 2, 0, 2}}, [][]float64{{0, 2}}}, 1},
		// Two windows: the last reading misses by 0 and 1 (MSE 1/2), the
		// mean by 1 and 1 (MSE 1).
		{"mean", windowsOf{[][]float64{{1, 3}, {0, 0}}, [][]float64{{3}, {1}}}, 0.5},
	} {
		if got := NaiveMSE(tc.src); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: NaiveMSE %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := NaiveMSE(windowsOf{}); !math.IsNaN(got) {
		t.Errorf("no windows: NaiveMSE %v, want NaN", got)
	}
}
