package measure

import (
	"context"
	"math"
	"testing"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/internal/modeltest"
	"github.com/freqlens/freqlens/model"
)

// TestErrorQuantiles: the recorded quantiles are those of the
// errors the model makes on the windows, per step and channel: for every
// recorded probability p, a fraction p of the errors (to one sample) lies
// at or below the p quantile, and the quantiles increase with p. An
// independent model pools its channels.
func TestErrorQuantiles(t *testing.T) {
	f, err := dataset.Synthetic(dataset.SyntheticConfig{Series: 2, Steps: 400, Level: 5,
		Cycles: []dataset.Cycle{{PeriodSteps: 12, Amplitude: 2}}, NoiseStd: 0.5, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range smallConfigs {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			channels := 2
			if cfg.Mode != model.Independent {
				cfg.Channels = 2
			}
			w, err := dataset.NewWindows(f.Values, channels, cfg.Lookback, cfg.Horizon, dataset.Range{Start: 0, End: 400})
			if err != nil {
				t.Fatal(err)
			}
			m := modeltest.RandomModel(t, cfg, 4)
			const max = 300
			q, err := ErrorQuantiles(context.Background(), m, w, max)
			if err != nil {
				t.Fatal(err)
			}
			qc := cfg.Channels
			samples := w.Len()
			if cfg.Mode == model.Independent {
				qc, samples = 1, w.Len()*channels
			}
			if q.Horizon != cfg.Horizon || q.Channels != qc || q.Windows != min(max, samples) {
				t.Fatalf("shape %d×%d over %d windows, want %d×%d over %d", q.Horizon, q.Channels, q.Windows, cfg.Horizon, qc, min(max, samples))
			}
			if wantOf := map[bool]int{true: samples, false: 0}[samples > max]; q.Of != wantOf {
				t.Errorf("measured %d of %d samples, want of %d", q.Windows, q.Of, wantOf)
			}
			if err := (model.Meta{ErrorQuantiles: q}).Check(m.Config()); err != nil {
				t.Fatalf("the quantiles fail the model file's check: %v", err)
			}
			// The errors again, the same way: forecast the same samples.
			bt, _ := m.NewBatcher(w)
			L, H, C := cfg.Lookback, cfg.Horizon, cfg.Channels
			n := q.Windows
			x, y := make([]float64, n*L*C), make([]float64, n*H*C)
			idx := make([]int, n)
			for i := range idx {
				idx[i] = i * bt.Samples() / n
			}
			bt.Fill(x, y, nil, idx)
			out := m.Forward(m.NewWorkspace(n), nil, x, nil)
			for h := range H {
				for c := range qc {
					for k, p := range q.Probs {
						v := q.Values[(k*H+h)*qc+c]
						if k > 0 && v < q.Values[((k-1)*H+h)*qc+c] {
							t.Fatalf("step %d channel %d: quantile %v < quantile %v", h, c, p, q.Probs[k-1])
						}
						below, all := 0, 0
						for j := range n {
							for cc := range C {
								if qc > 1 && cc != c {
									continue
								}
								i := j*H*C + h*C + cc
								all++
								if y[i]-out[i] <= v+1e-12 {
									below++
								}
							}
						}
						if frac := float64(below) / float64(all); math.Abs(frac-p) > 1.0/float64(all)+1e-9 && !(k == 0 && frac >= p) {
							t.Fatalf("step %d channel %d: %.3f of the errors are at or below the %v quantile %v", h, c, frac, p, v)
						}
					}
				}
			}
			if got := q.Quantile(q.Probs[3], 1, 0); got != q.Values[(3*H+1)*qc] {
				t.Errorf("Quantile at a recorded probability = %v, want the recorded %v", got, q.Values[(3*H+1)*qc])
			}
			mid := (q.Probs[3] + q.Probs[4]) / 2
			if got, want := q.Quantile(mid, 1, 0), (q.Values[(3*H+1)*qc]+q.Values[(4*H+1)*qc])/2; math.Abs(got-want) > 1e-12 {
				t.Errorf("Quantile between two recorded probabilities = %v, want the midpoint %v", got, want)
			}
			if got := q.Quantile(0.9999, 0, 0); got != q.Values[((len(q.Probs)-1)*H)*qc] {
				t.Errorf("Quantile beyond the last probability = %v, want the last recorded", got)
			}
		})
	}
}
