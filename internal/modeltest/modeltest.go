// Package modeltest makes models and windows for the tests and benchmarks
// of the packages around model (explain, measure, modelfile): through
// model's exported API, the same models of the same seeds as package
// model's own tests make.
package modeltest

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/model"
)

// RandomModel returns a model of cfg whose every parameter is drawn at a
// scale where all paths matter (the real initialisation keeps heads small).
func RandomModel(t testing.TB, cfg model.Config, seed uint64) *model.Model {
	t.Helper()
	m, err := model.New(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	p := m.Params()
	for i := range p.Data {
		p.Data[i] = 0.5 * rng.NormFloat64()
	}
	for i := range p.Theta {
		p.Theta[i] = 3 * (2*rng.Float64() - 1)
		p.Phi[i] = math.Pi * (2*rng.Float64() - 1)
	}
	m.Refresh()
	return m
}

// WithRhythms gives m two rhythms over its first frequencies, one shorter
// than the window and one longer (with a phase anchor), and with clock a
// cadence so the clock's terms are used.
func WithRhythms(m *model.Model, clock bool) *model.Model {
	cfg := m.Config()
	L := float64(cfg.Lookback)
	rs := []cycles.Rhythm{{PeriodSteps: L / 2.3, Frequencies: []int{0, 2}, Harmonics: []int{1, 2}}}
	if cfg.Frequencies >= 4 {
		rs = append(rs, cycles.Rhythm{PeriodSteps: 3.1 * L, Frequencies: []int{1, 3}, Harmonics: []int{2, 5}, AnchorStep: 4.9e5 + 17, AnchorPhase: 0.3})
	}
	if clock {
		m.Meta.Cadence = time.Hour
	}
	m.SetRhythms(rs)
	return m
}

// RandomBatch returns n windows and targets with per-channel levels and
// scales, so instance normalisation has work to do.
func RandomBatch(cfg model.Config, n int, seed uint64) (x, y []float64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	L, H, C := cfg.Lookback, cfg.Horizon, cfg.Channels
	x = make([]float64, n*L*C)
	y = make([]float64, n*H*C)
	for b := range n {
		for c := range C {
			level, scale := 3*rng.NormFloat64(), 0.5+2*rng.Float64()
			period := 3 + 10*rng.Float64()
			for t := range L + H {
				v := level + scale*(math.Sin(2*math.Pi*float64(t)/period)+0.3*rng.NormFloat64())
				if t < L {
					x[(b*L+t)*C+c] = v
				} else {
					y[(b*H+t-L)*C+c] = v
				}
			}
		}
	}
	return x, y
}

// DayOfEight is a daily rhythm of K = 8 frequencies, as a model trained on
// ETTh1 has (harmonics 1, 2, 3, 4, 5, 7, 8 and 11 of 24 hourly steps).
var DayOfEight = []cycles.Rhythm{{PeriodSteps: 24, Frequencies: []int{10, 15, 17, 20, 22, 25, 27, 30}, Harmonics: []int{1, 2, 3, 4, 5, 7, 8, 11}}}

// BenchModel returns a freshly initialised model of hourly steps with the
// given rhythms (so the clock runs as it does in service), n random
// windows and their end times.
func BenchModel(b testing.TB, cfg model.Config, n int, rhythms []cycles.Rhythm) (*model.Model, []float64, []int64) {
	b.Helper()
	m, err := model.New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	m.SetRhythms(rhythms)
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, n*m.Lookback()*m.Channels())
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	ends := make([]int64, n)
	for i := range ends {
		ends[i] = time.Date(2026, 3, 1, i%24, 0, 0, 0, time.UTC).UnixNano()
	}
	return m, x, ends
}
