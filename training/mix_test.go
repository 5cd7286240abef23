package training

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history"
)

// leadLag returns two hourly sensors with a daily cycle each, where the
// second's departures from its cycle are the first's, lag steps later: a
// front that reaches one station before the other. Only a model that
// reads the first sensor's window can forecast the second's departures.
func leadLag(seed uint64, rows, lag int) *dataset.Frame {
	rng := rand.New(rand.NewPCG(seed, 3))
	ar := make([]float64, rows)
	for i := 1; i < rows; i++ {
		ar[i] = 0.9*ar[i-1] + rng.NormFloat64()
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &dataset.Frame{Name: "stations.csv", Columns: []string{"upwind", "downwind"}, Cadence: time.Hour}
	for i := range rows {
		f.Times = append(f.Times, start.Add(time.Duration(i)*time.Hour))
		day := math.Sin(2 * math.Pi * float64(i) / 24)
		late := 0.0
		if i >= lag {
			late = ar[i-lag]
		}
		f.Values = append(f.Values, 2*day+ar[i], 2*day+late+0.1*rng.NormFloat64())
	}
	return f
}

// TestChannelMixLearnsFromTheOtherChannel: on two stations whose second
// follows the first's departures from the day a horizon later, the model
// with the channel mix forecasts the second station at least 20% better
// than the model without it. K = 1 leaves the window one place, the day's,
// so the heads read only the day's coefficients and the first station's
// departures can reach the second's forecast only through the residual:
// without the mix it reads the second station's own window.
func TestChannelMixLearnsFromTheOtherChannel(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four small models")
	}
	const L, H = 48, 12
	for _, seed := range []uint64{1, 2} {
		d, err := history.FromFrame(leadLag(seed, 3000, H), history.Split{Lookback: L, Horizon: H})
		if err != nil {
			t.Fatal(err)
		}
		downwind := func(mix bool) float64 {
			res, err := Fit(context.Background(), d, L, H, Options{Epochs: 15, Seed: seed, ChannelShuffle: 0.5, ChannelMix: mix, TopK: 1})
			if err != nil {
				t.Fatal(err)
			}
			return res.Test.PerChannelMSE[1]
		}
		without, with := downwind(false), downwind(true)
		t.Logf("seed %d: downwind test MSE %.4f without the mix, %.4f with it", seed, without, with)
		if !(with < 0.8*without) {
			t.Errorf("seed %d: the downwind station's test MSE is %.4f with the mix, %.4f without it; want at least 20%% lower", seed, with, without)
		}
	}
}
