package model

import (
	"math"
	"testing"
)

// TestExplainerCompleteInInputUnits: for mixed models with training
// statistics and for independent models serving several fields, the
// forecast equals residual plus contributions in the window's own units,
// and equals the Forecast output.
func TestExplainerCompleteInInputUnits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		channels int
		zscore   bool
	}{
		{"mixed with z-score", Config{Lookback: 24, Horizon: 6, Channels: 3, Hidden: 8, Frequencies: 6, TopK: 3}, 3, true},
		{"mixed", Config{Lookback: 24, Horizon: 6, Channels: 2, Hidden: 8, Frequencies: 6, TopK: 3}, 2, false},
		{"independent serving 4 fields", Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: Independent, Hidden: 8, Frequencies: 6, TopK: 3}, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := randomModel(t, tc.cfg, 31)
			if tc.zscore {
				m.Meta.Mean = make([]float64, tc.channels)
				m.Meta.Std = make([]float64, tc.channels)
				for c := range tc.channels {
					m.Meta.Mean[c], m.Meta.Std[c] = 100*float64(c+1), 0.5+float64(c)
				}
			}
			e, err := m.NewExplainer(tc.channels)
			if err != nil {
				t.Fatal(err)
			}
			src := sineSource(5, tc.cfg.Lookback, tc.cfg.Horizon, tc.channels, 3)
			x := make([]float64, 0, 5*tc.cfg.Lookback*tc.channels)
			for i := range 5 {
				for _, v := range src.Input(i) {
					x = append(x, 1000+250*v) // far from the training scale
				}
			}
			y := e.Forecast(x, nil)
			HC := tc.cfg.Horizon * tc.channels
			var ex *Explanation
			for i := range 5 {
				ex = e.Explain(i, ex)
				share := ex.ResidualShare
				for j := range HC {
					sum := ex.Residual[j]
					for _, c := range ex.Contributions {
						sum += c.Values[j]
					}
					if d := math.Abs(sum - ex.Forecast[j]); d > 1e-9*math.Abs(ex.Forecast[j]) {
						t.Fatalf("window %d value %d: residual + contributions = %v, forecast %v", i, j, sum, ex.Forecast[j])
					}
					if d := math.Abs(ex.Forecast[j] - y[i*HC+j]); d > 1e-9*math.Abs(y[i*HC+j]) {
						t.Fatalf("window %d value %d: Explain says %v, Forecast said %v", i, j, ex.Forecast[j], y[i*HC+j])
					}
				}
				for k, c := range ex.Contributions {
					share += c.Share
					if k > 0 && c.Share > ex.Contributions[k-1].Share {
						t.Errorf("contributions not ordered by share")
					}
				}
				if math.Abs(share-1) > 1e-12 {
					t.Errorf("shares sum to %v, want 1", share)
				}
			}
		})
	}
}

// TestExplainerIndependentMatchesSingleChannel: an independent model's
// forecast of field c equals forecasting that field's window alone.
func TestExplainerIndependentMatchesSingleChannel(t *testing.T) {
	cfg := Config{Lookback: 16, Horizon: 4, Channels: 1, Mode: Independent, Hidden: 8, Frequencies: 6, TopK: 2}
	m := randomModel(t, cfg, 5)
	e, _ := m.NewExplainer(3)
	src := sineSource(1, 16, 4, 3, 9)
	y := append([]float64(nil), e.Forecast(src.Input(0), nil)...)
	for c := range 3 {
		one := make([]float64, 16)
		for t := range 16 {
			one[t] = src.Input(0)[t*3+c]
		}
		alone := m.Forward(m.NewWorkspace(1), nil, one, nil)
		for h := range 4 {
			if y[h*3+c] != alone[h] {
				t.Fatalf("field %d step %d: %v in the 3-field window, %v alone", c, h, y[h*3+c], alone[h])
			}
		}
	}
}

func TestExplainerAllocatesNothing(t *testing.T) {
	m := randomModel(t, Config{Horizon: 96, Channels: 1, Mode: Independent}, 2)
	e, _ := m.NewExplainer(2)
	x, _ := randomBatch(Config{Lookback: 96, Horizon: 96, Channels: 2}, 8, 3)
	e.Forecast(x, nil)
	ex := e.Explain(7, nil)
	if allocs := testing.AllocsPerRun(10, func() {
		e.Forecast(x, nil)
		for i := range 8 {
			ex = e.Explain(i, ex)
		}
	}); allocs != 0 {
		t.Errorf("Forecast + Explain allocate %v times per batch, want 0", allocs)
	}
}

func TestExplainerRejectsWrongWidth(t *testing.T) {
	m, _ := New(Config{Horizon: 4, Channels: 3}, 1)
	if _, err := m.NewExplainer(2); err == nil {
		t.Error("a 3-channel mixed model accepted 2-field windows")
	}
}
