package online_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
)

// TestIntervalCoverageOnRandomFeeds: on seeded random feeds the published
// intervals hold the realised values at their nominal rate, within 3
// points, whatever the forecaster gets wrong. Each feed has a few series of
// two or three cycles of random periods, amplitudes and phases, a level
// that shifts once, and noise whose scale jumps once (×0.3 to ×3); the
// forecaster repeats the window's last P steps for a P that is the feed's
// main period or a wrong guess, so it is biased, misses cycles and is
// surprised by the shifts. Levels are drawn too. Conformal calibration
// needs no trained model: the Learner only needs the shapes.
func TestIntervalCoverageOnRandomFeeds(t *testing.T) {
	const (
		L, H   = 96, 24
		series = 6
		steps  = 2500
	)
	ref, err := model.New(model.Config{Lookback: L, Horizon: H, Channels: 1, Mode: model.Independent, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref.Meta.Cadence = time.Hour
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(intervalSeeds) {
		rng := rand.New(rand.NewPCG(seed, 77))
		levels := []float64{0.5 + 0.3*rng.Float64(), 0.85 + 0.13*rng.Float64()}
		feed := randomFeed(rng, series, steps)
		period := int(math.Round(feed.mainPeriod))
		if rng.IntN(2) == 0 {
			period = 4 + rng.IntN(L-4) // a wrong guess
		}
		name := fmt.Sprintf("seed %d (levels %.3f, %.3f; periods %v; forecaster period %d; noise ×%.2f at %d, level %+.1f at %d)",
			seed, levels[0], levels[1], feed.periods, period, feed.noiseJump, feed.noiseAt, feed.shift, feed.shiftAt)
		l, err := online.New(configWith(func(c *online.Config) { c.Intervals, c.TrackSeries = levels, series }), ref)
		if err != nil {
			t.Fatal(err)
		}
		lower := [][]float64{make([]float64, H), make([]float64, H)}
		upper := [][]float64{make([]float64, H), make([]float64, H)}
		fc := make([]float64, H)
		published := 0
		for step := L - 1; step < steps; step++ {
			for s := range series {
				x := feed.values[s][step-L+1 : step+1]
				for h := range H {
					fc[h] = x[L-period+h%period]
				}
				if l.Observe(&online.Observation{Series: fmt.Sprint("s", s), End: t0.Add(time.Duration(step) * time.Hour),
					Window: x, Forecast: fc, Lower: lower, Upper: upper}) {
					published++
					for h := range H {
						if !(lower[1][h] <= lower[0][h] && upper[0][h] <= upper[1][h]) {
							t.Fatalf("%s: step %d: the %.3f interval [%g, %g] is not inside the %.3f interval [%g, %g]",
								name, h, levels[0], lower[0][h], upper[0][h], levels[1], lower[1][h], upper[1][h])
						}
					}
				}
			}
		}
		if published == 0 {
			t.Fatalf("%s: no forecast was published with intervals", name)
		}
		for _, c := range l.Totals().Coverage {
			rate := c.Rate(online.Coverage{})
			t.Logf("%s: %.1f%% intervals held %.1f%% of %d steps", name, 100*c.Level, 100*rate, c.Scored)
			if !(math.Abs(rate-c.Level) <= 0.03) {
				t.Errorf("%s: %.1f%% intervals held %.1f%% of the realised values; want within 3 points", name, 100*c.Level, 100*rate)
			}
		}
	}
}

// intervalSeeds is how many random feeds TestIntervalCoverageOnRandomFeeds
// draws.
var intervalSeeds = 6

// feed is a random multi-series feed for the interval tests.
type feed struct {
	values           [][]float64
	periods          []float64
	mainPeriod       float64
	noiseAt, shiftAt int
	noiseJump, shift float64
	noiseStd         float64
}

func randomFeed(rng *rand.Rand, series, steps int) feed {
	f := feed{noiseAt: steps/5 + rng.IntN(steps/2), shiftAt: steps/5 + rng.IntN(steps/2)}
	f.noiseJump = math.Exp(math.Log(0.3) + rng.Float64()*(math.Log(3)-math.Log(0.3)))
	f.noiseStd = 0.1 + 0.9*rng.Float64()
	f.shift = (rng.Float64()*2 - 1) * 5
	type cycle struct{ period, amp, phase float64 }
	var cycles []cycle
	mainAmp := 0.0
	for range 2 + rng.IntN(2) {
		p := math.Exp(math.Log(4) + rng.Float64()*(math.Log(96)-math.Log(4)))
		c := cycle{period: p, amp: 0.5 + 1.5*rng.Float64(), phase: 2 * math.Pi * rng.Float64()}
		cycles = append(cycles, c)
		f.periods = append(f.periods, math.Round(p*10)/10)
		if c.amp > mainAmp {
			f.mainPeriod, mainAmp = p, c.amp
		}
	}
	slices.Sort(f.periods)
	for s := range series {
		level, scale := 10*rng.NormFloat64(), 0.5+rng.Float64()
		v := make([]float64, steps)
		for t := range v {
			x := level
			for _, c := range cycles {
				x += scale * c.amp * math.Sin(2*math.Pi*float64(t)/c.period+c.phase+float64(s))
			}
			sd := f.noiseStd
			if t >= f.noiseAt {
				sd *= f.noiseJump
			}
			if t >= f.shiftAt {
				x += f.shift
			}
			v[t] = x + sd*rng.NormFloat64()
		}
		f.values = append(f.values, v)
	}
	return f
}

// TestIntervalsFromTheFirstForecast: with the error quantiles a model
// records at training, a series' first forecast carries intervals, their
// bounds those quantiles times the series' scale (an independent model:
// the std of the values seen), and a model without them publishes none
// until a series has warmed up.
func TestIntervalsFromTheFirstForecast(t *testing.T) {
	const L, H = 24, 3
	ref, err := model.New(model.Config{Lookback: L, Horizon: H, Channels: 1, Mode: model.Independent, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref.Meta.Cadence = time.Hour
	x, fc := make([]float64, L), []float64{10, 10, 10}
	for i := range x {
		x[i] = 10 + float64(i%2) // std 0.5107 (n − 1)
	}
	var w welfordStd
	for _, v := range x {
		w.add(v)
	}
	sd := w.std()
	levels := []float64{0.5, 0.9}
	observe := func(l *online.Learner) (bool, [][]float64, [][]float64) {
		lower := [][]float64{make([]float64, H), make([]float64, H)}
		upper := [][]float64{make([]float64, H), make([]float64, H)}
		ok := l.Observe(&online.Observation{Series: "s", End: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC),
			Window: x, Forecast: fc, Lower: lower, Upper: upper})
		return ok, lower, upper
	}
	l, err := online.New(configWith(func(c *online.Config) { c.Intervals = levels }), ref)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := observe(l); ok {
		t.Error("a model without error quantiles published intervals with its first forecast; want them after a warm-up")
	}

	// Quantiles at 0.05, 0.25, 0.75, 0.95 of −2h−2, −h−1, h+1, 2h+2 (h = 0 … 2).
	q := &model.ErrorQuantiles{Probs: []float64{0.05, 0.25, 0.75, 0.95}, Horizon: H, Channels: 1, Windows: 100,
		Values: []float64{-2, -4, -6, -1, -2, -3, 1, 2, 3, 2, 4, 6}}
	ref.Meta.ErrorQuantiles = q
	l, err = online.New(configWith(func(c *online.Config) { c.Intervals = levels }), ref)
	if err != nil {
		t.Fatal(err)
	}
	ok, lower, upper := observe(l)
	if !ok {
		t.Fatal("the first forecast of a model with error quantiles has no intervals")
	}
	for h := range H {
		want := []float64{float64(h + 1), 2 * float64(h+1)} // the 50% and 90% quantiles' distances
		for k := range levels {
			if lo, hi := fc[h]-want[k]*sd, fc[h]+want[k]*sd; math.Abs(lower[k][h]-lo) > 1e-5 || math.Abs(upper[k][h]-hi) > 1e-5 {
				t.Errorf("step %d, level %v: [%v, %v], want [%v, %v]", h, levels[k], lower[k][h], upper[k][h], lo, hi)
			}
		}
	}
}

type welfordStd struct{ n, mean, m2 float64 }

func (w *welfordStd) add(v float64) {
	w.n++
	d := v - w.mean
	w.mean += d / w.n
	w.m2 += d * (v - w.mean)
}

func (w *welfordStd) std() float64 { return math.Sqrt(w.m2 / (w.n - 1)) }

// TestIntervalCoverageMultichannel: a mixed model's intervals are
// calibrated per channel. Three channels whose noise differs a
// hundredfold, normalised by a training std that is wrong for all of them,
// still hold each level within 3 points, channel by channel.
func TestIntervalCoverageMultichannel(t *testing.T) {
	const (
		L, H, C = 48, 12, 3
		series  = 4
		steps   = 2000
	)
	ref, err := model.New(model.Config{Lookback: L, Horizon: H, Channels: C, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref.Meta.Cadence = time.Hour
	ref.Meta.Mean, ref.Meta.Std = []float64{0, 0, 0}, []float64{1, 1, 1}
	levels := []float64{0.8, 0.95}
	l, err := online.New(configWith(func(c *online.Config) { c.Intervals = levels }), ref)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	noise := []float64{0.05, 0.5, 5}
	values := make([][]float64, series) // steps×C per series
	for s := range values {
		v := make([]float64, steps*C)
		for i := range steps {
			for c := range C {
				v[i*C+c] = 3*math.Sin(2*math.Pi*float64(i)/24+float64(s+c)) + noise[c]*rng.NormFloat64()
			}
		}
		values[s] = v
	}
	lower := [][]float64{make([]float64, H*C), make([]float64, H*C)}
	upper := [][]float64{make([]float64, H*C), make([]float64, H*C)}
	fc := make([]float64, H*C)
	held := make([][]int, len(levels)) // per level, per channel
	for k := range held {
		held[k] = make([]int, C)
	}
	scored := make([]int, C)
	type pending struct {
		step   int
		series int
		lo, hi [][]float64
	}
	var queue []pending
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for step := L - 1; step < steps; step++ {
		for s := range series {
			x := values[s][(step-L+1)*C : (step+1)*C]
			for h := range H {
				for c := range C {
					fc[h*C+c] = x[(L-24+h%24)*C+c] // the value one day before
				}
			}
			if l.Observe(&online.Observation{Series: fmt.Sprint("s", s), End: t0.Add(time.Duration(step) * time.Hour),
				Window: x, Forecast: fc, Lower: lower, Upper: upper}) && step >= steps/4 {
				p := pending{step: step, series: s}
				for k := range levels {
					p.lo, p.hi = append(p.lo, slices.Clone(lower[k])), append(p.hi, slices.Clone(upper[k]))
				}
				queue = append(queue, p)
			}
		}
	}
	for _, p := range queue {
		for h := range H {
			at := p.step + 1 + h
			if at >= steps {
				continue
			}
			for c := range C {
				v := values[p.series][at*C+c]
				scored[c]++
				for k := range levels {
					if p.lo[k][h*C+c] <= v && v <= p.hi[k][h*C+c] {
						held[k][c]++
					}
				}
			}
		}
	}
	for k, level := range levels {
		for c := range C {
			rate := float64(held[k][c]) / float64(scored[c])
			t.Logf("channel %d (noise %.2f): %.0f%% intervals held %.1f%%", c, noise[c], 100*level, 100*rate)
			if scored[c] < 10000 || !(math.Abs(rate-level) <= 0.03) {
				t.Errorf("channel %d (noise %.2f): %.0f%% intervals held %.1f%% of %d realised values; want within 3 points of at least 10,000",
					c, noise[c], 100*level, 100*rate, scored[c])
			}
		}
	}
}
