package training

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/internal/longtest"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
)

// discoveryCase is a periodic feed drawn at random: two or three cycles
// with periods log-uniform between 4 steps and the lookback (sometimes up
// to twice it), amplitudes a factor of four apart, random phases, Gaussian
// noise, and series that differ in level, scale and phase.
type discoveryCase struct {
	seed    uint64
	periods []float64
	amps    []float64
	noise   float64
	frame   *dataset.Frame
}

func newDiscoveryCase(t testing.TB, seed uint64, series, steps, lookback int) discoveryCase {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 2024))
	c := discoveryCase{seed: seed, noise: 0.1 + 0.4*rng.Float64()}
	hi := float64(lookback)
	if rng.IntN(4) == 0 {
		hi *= 2
	}
	var cycles []dataset.Cycle
	for range 2 + rng.IntN(2) {
		var p float64
		for {
			p = math.Exp(math.Log(4) + rng.Float64()*(math.Log(hi)-math.Log(4)))
			// Two cycles closer than the rows can separate are one cycle.
			if !slices.ContainsFunc(c.periods, func(q float64) bool { return math.Abs(1/p-1/q) < 12/float64(steps) }) {
				break
			}
		}
		a := 0.5 + 1.5*rng.Float64()
		c.periods, c.amps = append(c.periods, p), append(c.amps, a)
		cycles = append(cycles, dataset.Cycle{PeriodSteps: p, Amplitude: a, Phase: 2 * math.Pi * rng.Float64()})
	}
	f, err := dataset.Synthetic(dataset.SyntheticConfig{Series: series, Steps: steps, Level: 10, Cycles: cycles,
		NoiseStd: c.noise, SeriesJitter: 0.3, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	c.frame = f
	return c
}

func (c discoveryCase) String() string {
	s := fmt.Sprintf("seed %d, noise %.2f, cycles", c.seed, c.noise)
	for i, p := range c.periods {
		s += fmt.Sprintf(" %.2f steps (amplitude %.2f)", p, c.amps[i])
	}
	return s
}

// discoveryResult is what a trained model says of a case's test windows.
type discoveryResult struct {
	periodErr     []float64 // per true cycle: relative error of the nearest learned period
	nearest       []int     // per true cycle: the id of that frequency
	split         []float64 // per true cycle: share of other frequencies within 1/L, over the nearest's share
	residualShare float64
	shares        []float64
	testMSE       float64
}

// discoveryVariant changes one step of discovery, to measure what it buys.
type discoveryVariant struct {
	name string
	// untimed trains on windows without timestamps (a model that cannot
	// read the time).
	untimed bool
	model   func(*model.Config)
	train   func(*Config)
}

// trainDiscovery trains an independent model with default settings (but
// for the epochs, and what variant v changes) on the first 70% of the rows
// and scores the last 20%.
func trainDiscovery(t testing.TB, c discoveryCase, lookback, horizon, epochs int, v discoveryVariant) discoveryResult {
	t.Helper()
	S, T := c.frame.Channels(), c.frame.Rows()
	times := make([]int64, T)
	for i, ts := range c.frame.Times {
		times[i] = ts.UnixNano()
	}
	win := func(lo, hi int) *dataset.Windows {
		w, err := dataset.NewWindows(c.frame.Values, S, lookback, horizon, dataset.Range{Start: lo, End: hi})
		if err == nil && !v.untimed {
			w, err = w.WithTimes(times)
		}
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	tr, va, te := win(0, T*7/10), win(T*7/10-lookback, T*8/10), win(T*8/10-lookback, T)
	cfg := model.Config{Lookback: lookback, Horizon: horizon, Channels: 1, Mode: model.Independent}
	tc := Config{Epochs: epochs, Seed: c.seed}
	if v.model != nil {
		v.model(&cfg)
	}
	if v.train != nil {
		v.train(&tc)
	}
	m, err := model.New(cfg, c.seed)
	if err != nil {
		t.Fatal(err)
	}
	if !v.untimed {
		m.Meta.Cadence = c.frame.Cadence
	}
	if _, err := Train(context.Background(), m, tr, va, tc, nil); err != nil {
		t.Fatal(err)
	}
	met, err := measure.Evaluate(context.Background(), m, te, measure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := discoveryResult{residualShare: met.ResidualShare, shares: met.Shares, testMSE: met.MSE}
	t.Logf("DEBUG rhythms %s peaks %+v alpha %.3f", fmt.Sprint(m.Meta.Rhythms), m.Meta.Peaks, m.Alpha())
	fs := m.Frequencies()
	onCycle := func(f model.Frequency) bool {
		return slices.ContainsFunc(c.periods, func(p float64) bool { return math.Abs(f.PeriodSteps/p-1) < 0.01 })
	}
	for _, p := range c.periods {
		best := 0
		for i, f := range fs {
			if math.Abs(f.PeriodSteps/p-1) < math.Abs(fs[best].PeriodSteps/p-1) {
				best = i
			}
		}
		other := 0.0
		for i, f := range fs {
			if i != best && !onCycle(f) && math.Abs(f.Frequency-1/p) < 1/float64(lookback) {
				other += met.Shares[i]
			}
		}
		r.nearest = append(r.nearest, best)
		r.periodErr = append(r.periodErr, math.Abs(fs[best].PeriodSteps/p-1))
		r.split = append(r.split, other/math.Max(met.Shares[best], 1e-12))
	}
	return r
}

// TestDiscoveryOnRandomCycles is the discovery property: on periodic feeds
// drawn at random, default training gives every true cycle one learned
// frequency within 1% of its period; that frequency carries the cycle (no
// neighbour within the window's resolution 1/L carries more than a quarter
// as much); and the residual MLP's share of the attribution (level
// excluded) is at most 0.30 on the test windows.
func TestDiscoveryOnRandomCycles(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models; skipped in -short mode")
	}
	const L, H, epochs = 96, 24, 12
	for _, seed := range longtest.Cases([]uint64{1, 4}, []uint64{2, 3, 5, 6}) {
		c := newDiscoveryCase(t, seed, 2, 3000, L)
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			r := trainDiscovery(t, c, L, H, epochs, discoveryVariant{})
			for i, p := range c.periods {
				if r.periodErr[i] > 0.01 {
					t.Errorf("%v: the learned period nearest %.2f steps is %.2f%% off", c, p, 100*r.periodErr[i])
				}
				if r.split[i] > 0.25 {
					t.Errorf("%v: the cycle of %.2f steps is split: neighbours within 1/L carry %.0f%% of its frequency's share",
						c, p, 100*r.split[i])
				}
			}
			if r.residualShare > 0.30 {
				t.Errorf("%v: the residual MLP carries %.2f of the attribution, want at most 0.30", c, r.residualShare)
			}
			t.Logf("%v: period errors %.3f%%, residual share %.3f, test MSE %.4f", c, pct(r.periodErr), r.residualShare, r.testMSE)
		})
	}
}

func pct(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Round(1e5*x) / 1e3
	}
	return out
}

// BenchmarkDiscovery trains default models on many random cycle sets (the
// property test's generator, 4 series, 30 epochs) and reports the worst
// period error, the mean and worst residual share and the mean test MSE,
// for the defaults and for each step of training's discovery taken away in
// turn:
//
//	go test -run '^$' -bench Discovery -benchtime 1x ./training/
func BenchmarkDiscovery(b *testing.B) {
	const L, H, epochs, cases = 96, 24, 30, 8
	for _, v := range []discoveryVariant{
		{name: "defaults"},
		{name: "grid start (no spectral placement)", train: func(tc *Config) { tc.FrequencyInit = InitGrid }},
		{name: "placed θ trained at 5x", train: func(tc *Config) { tc.TrainPlacedFrequencies = true }},
		{name: "scorer trained throughout", train: func(tc *Config) { tc.TrainScorerThroughout = true }},
		{name: "no residual warm-up", train: func(tc *Config) { tc.ResidualWarmup = -1 }},
	} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				worstErr, sumRes, worstRes, sumMSE, within := 0.0, 0.0, 0.0, 0.0, 0
				cycles := 0
				for seed := range uint64(cases) {
					c := newDiscoveryCase(b, 100+seed, 4, 4000, L)
					r := trainDiscovery(b, c, L, H, epochs, v)
					for _, e := range r.periodErr {
						worstErr = math.Max(worstErr, e)
						if e <= 0.01 {
							within++
						}
						cycles++
					}
					sumRes += r.residualShare
					worstRes = math.Max(worstRes, r.residualShare)
					sumMSE += r.testMSE
				}
				b.ReportMetric(100*worstErr, "worst_period_err_%")
				b.ReportMetric(float64(within)/float64(cycles), "cycles_within_1%")
				b.ReportMetric(sumRes/cases, "mean_residual_share")
				b.ReportMetric(worstRes, "worst_residual_share")
				b.ReportMetric(sumMSE/cases, "mean_test_mse")
			}
		})
	}
}
