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
		l, err := online.New(online.Config{Intervals: levels, TrackSeries: series}, ref)
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
