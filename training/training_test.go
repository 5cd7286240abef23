package training

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
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
		d, err := FromFrame(frame, Split{Lookback: 48, Horizon: 12, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		var epochs int
		started := ""
		res, err := Fit(context.Background(), d, 48, 12, Options{Epochs: 2, Seed: 1, Start: func(s string) { started = s }, Epoch: func(model.EpochStats) { epochs++ }})
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

// TestFromWideCSVSaysFilledSteps: a file refused as too short whose missing
// steps were filled says so, since the rows it counts include them.
func TestFromWideCSVSaysFilledSteps(t *testing.T) {
	var b strings.Builder
	b.WriteString("date,a\n")
	for r := range 80 {
		if r < 30 || r >= 35 {
			fmt.Fprintf(&b, "%s,%d\n", time.Date(2024, 1, 1, r, 0, 0, 0, time.UTC).Format(time.DateTime), r%7)
		}
	}
	path := filepath.Join(t.TempDir(), "short.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := FromWideCSV(path, Split{Lookback: 96, Horizon: 24})
	if err == nil || !strings.Contains(err.Error(), "5 missing steps in 1 gap") || !strings.Contains(err.Error(), "--lookback") {
		t.Errorf("err %v; want the too-short advice and the filled steps", err)
	}
}
