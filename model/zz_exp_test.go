package model

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
)

type expCase struct {
	periods []float64
	amps    []float64
	frame   *dataset.Frame
}

func expFeed(seed uint64, series, steps int, noise float64) expCase {
	rng := rand.New(rand.NewPCG(seed, 77))
	k := 2 + rng.IntN(2)
	var ps, as []float64
	var cyc []dataset.Cycle
	for len(ps) < k {
		p := math.Exp(math.Log(4) + rng.Float64()*(math.Log(96)-math.Log(4)))
		ok := true
		for _, q := range ps {
			if math.Abs(1/p-1/q) < 1.5/96 {
				ok = false
			}
		}
		if !ok {
			continue
		}
		a := 0.5 + 1.5*rng.Float64()
		ps, as = append(ps, p), append(as, a)
		cyc = append(cyc, dataset.Cycle{PeriodSteps: p, Amplitude: a, Phase: 2 * math.Pi * rng.Float64()})
	}
	f, err := dataset.Synthetic(dataset.SyntheticConfig{Series: series, Steps: steps, Level: 10, Cycles: cyc, NoiseStd: noise, SeriesJitter: 0.3, Seed: seed})
	if err != nil {
		panic(err)
	}
	return expCase{ps, as, f}
}

func envInt(k string, d int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return d
}

func TestExpDiscovery(t *testing.T) {
	if os.Getenv("EXP") == "" {
		t.Skip()
	}
	series, steps := envInt("SERIES", 4), envInt("STEPS", 4000)
	L, H := 96, envInt("H", 24)
	for s := range envInt("CASES", 4) {
		seed := uint64(envInt("SEED0", 1) + s)
		c := expFeed(seed, series, steps, 0.3)
		tr, _ := dataset.NewWindows(c.frame.Values, series, L, H, dataset.Range{Start: 0, End: steps * 7 / 10})
		va, _ := dataset.NewWindows(c.frame.Values, series, L, H, dataset.Range{Start: steps*7/10 - L, End: steps * 8 / 10})
		te, _ := dataset.NewWindows(c.frame.Values, series, L, H, dataset.Range{Start: steps*8/10 - L, End: steps})
		m, _ := New(Config{Lookback: L, Horizon: H, Channels: 1, Mode: Independent}, seed)
		st := time.Now()
		var truth []int
		prog := func(es EpochStats) {
			if os.Getenv("EXP_PROG") == "" {
				return
			}
			if truth == nil {
				for _, p := range c.periods {
					best, bi := math.Inf(1), -1
					for i, f := range m.Frequencies() {
						if e := math.Abs(f.PeriodSteps/p - 1); e < best {
							best, bi = e, i
						}
					}
					truth = append(truth, bi)
				}
			}
			mv, _ := Evaluate(context.Background(), m, va, EvalOptions{})
			fmt.Printf("  ep %d loss %.4f val %.4f alpha %.2f sel", es.Epoch, es.MSE, es.ValMSE, m.Alpha())
			for _, i := range truth {
				fmt.Printf(" %.0f%%(b %.1f)", 100*float64(mv.Selected[i])/float64(mv.Windows*series), m.params.FreqBias[i])
			}
			fmt.Println()
		}
		res, err := Train(context.Background(), m, tr, va, TrainConfig{Epochs: envInt("EPOCHS", 30), Seed: seed, FreqRateScale: envF("FRS", 5), LambdaSparse: envF("LSP", 0), ResidualWarmup: envInt("WARM", 0)}, prog)
		if err != nil {
			t.Fatal(err)
		}
		met, _ := Evaluate(context.Background(), m, te, EvalOptions{})
		rs, shares := expShares(m, te, series)
		fmt.Printf("case %d periods %v amps %v: epochs %d best %d %.1fs test MSE %.4f alpha %.2f residual share %.3f\n",
			seed, fmtf(c.periods), fmtf(c.amps), res.EpochsRun, res.BestEpoch, time.Since(st).Seconds(), met.MSE, m.Alpha(), rs)
		fr := m.Frequencies()
		for _, p := range c.periods {
			best, bi := math.Inf(1), -1
			for i, f := range fr {
				if e := math.Abs(f.PeriodSteps/p - 1); e < best {
					best, bi = e, i
				}
			}
			// frequencies within resolution
			var near []string
			for i, f := range fr {
				if math.Abs(f.Frequency-1/p) < 1.0/float64(L) && shares[i] > 0.01 {
					near = append(near, fmt.Sprintf("%.2f(%.0f%%)", f.PeriodSteps, 100*shares[i]))
				}
			}
			fmt.Printf("   sel %.0f%% ", 100*float64(met.Selected[bi])/float64(met.Windows*series))
			fmt.Printf("   true %.2f: nearest %.2f (%.2f%%) share %.1f%%; carriers within 1/L: %v\n", p, fr[bi].PeriodSteps, 100*best, 100*shares[bi], near)
		}
		type kv struct {
			p, s float64
		}
		var all []kv
		for i, f := range fr {
			all = append(all, kv{f.PeriodSteps, shares[i]})
		}
		sort.Slice(all, func(a, b int) bool { return all[a].s > all[b].s })
		fmt.Printf("   top shares:")
		for _, x := range all[:8] {
			fmt.Printf(" %.2f:%.0f%%", x.p, 100*x.s)
		}
		fmt.Println()
	}
}

func fmtf(v []float64) string {
	s := ""
	for _, x := range v {
		s += fmt.Sprintf("%.2f ", x)
	}
	return s
}

// expShares returns the mean residual share and the mean share per frequency over test windows.
func expShares(m *Model, te Source, series int) (float64, []float64) {
	ex, _ := m.NewExplainer(series)
	shares := make([]float64, m.cfg.Frequencies)
	rs, n := 0.0, 0
	var e *Explanation
	for i := 0; i < te.Len(); i += 4 {
		ex.Forecast(te.Input(i))
		e = ex.Explain(0, e)
		// per channel shares: explainer computes over all channels together
		rs += e.ResidualShare
		for _, c := range e.Contributions {
			shares[c.ID] += c.Share
		}
		n++
	}
	for i := range shares {
		shares[i] /= float64(n)
	}
	return rs / float64(n), shares
}

func envF(k string, d float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(k), 64); err == nil {
		return v
	}
	return d
}
