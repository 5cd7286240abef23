package online_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/freqlens/freqlens/internal/longtest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
)

// TestIntervalCoverageThroughBursts: on feeds whose errors come in bursts
// shared by every series (weather fronts, incidents: the noise 2.5–6.5
// times larger for hours, every two to seven days), what is published over
// 3,000 steps holds the realised values within 3 points of 80%, misses at
// most twice the 5% a 95% band may miss, and scores at most 5% above the
// static band of the run's own error quantiles per horizon step (a band
// that knows the whole run in hindsight, but not when the bursts come).
// Bands issued before a burst cannot know it: where bursts fill a quarter
// of the time the 95% band is short by up to 5 points over such a run,
// and the pooled correction's slow step (interval_pooled.go) closes the gap
// only over longer runs. Without the correction the criteria fail (seed 6,
// and the 95% band's correction stays at 1).
func TestIntervalCoverageThroughBursts(t *testing.T) {
	const (
		L, H   = 96, 24
		series = 6
		steps  = 3000
	)
	ref, err := model.New(model.Config{Lookback: L, Horizon: H, Channels: 1, Mode: model.Independent, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref.Meta.Cadence = time.Hour
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	levels := []float64{0.8, 0.95}
	for _, seed := range longtest.Cases([]uint64{1, 2, 3, 4, 5, 6}, []uint64{7, 8, 9, 10, 11, 12, 13, 14, 15, 16}) {
		rng := rand.New(rand.NewPCG(seed, 91))
		f := burstyFeed(rng, series, steps)
		name := fmt.Sprintf("seed %d (bursts every %.0f steps for %.0f, ×%.1f)", seed, f.every, f.length, f.factor)
		l, err := online.New(configWith(func(c *online.Config) { c.Intervals, c.TrackSeries = levels, series }), ref)
		if err != nil {
			t.Fatal(err)
		}
		lower := [][]float64{make([]float64, H), make([]float64, H)}
		upper := [][]float64{make([]float64, H), make([]float64, H)}
		fc := make([]float64, H)
		var errs [H][]float64        // forecast errors (realised − forecast) per step
		var held, n [2]float64       // of published intervals, over every step
		var score [2]float64         // their summed interval score
		var pubFc, pubY [][H]float64 // published forecasts and their realised values
		for step := L - 1; step < steps; step++ {
			for s := range series {
				x := f.values[s][step-L+1 : step+1]
				for h := range H {
					fc[h] = f.signal[s][step+1+h] // the forecaster knows the signal, not the noise
				}
				if !l.Observe(&online.Observation{Series: fmt.Sprint("s", s), End: t0.Add(time.Duration(step) * time.Hour),
					Window: x, Forecast: fc, Lower: lower, Upper: upper}) || step+H >= steps {
					continue
				}
				// The feed's future is known: each band is scored as it is
				// published.
				var pf, py [H]float64
				for h := range H {
					y := f.values[s][step+1+h]
					errs[h] = append(errs[h], y-fc[h])
					pf[h], py[h] = fc[h], y
					for j, lv := range levels {
						n[j]++
						if y >= lower[j][h] && y <= upper[j][h] {
							held[j]++
						}
						score[j] += online.IntervalScore(lower[j][h], upper[j][h], y, 1-lv)
					}
				}
				pubFc, pubY = append(pubFc, pf), append(pubY, py)
			}
		}
		if n[0] == 0 {
			t.Fatalf("%s: no forecast was published with intervals", name)
		}
		for k, c := range l.Totals().Coverage {
			// The bursts' misses widen what the calm thresholds publish at
			// 95% (at 80% a burst's misses are a smaller part of α).
			t.Logf("%s: %.0f%% pooled correction %.3f below, %.3f above", name, 100*c.Level, c.Correction[0], c.Correction[1])
			for _, g := range c.Correction {
				if !(g >= 1/1.5 && g <= 1.5) || (k == 1 && !(g > 1)) {
					t.Errorf("%s: the %.0f%% band's pooled correction is %v; want it to widen the bands (above 1), within its cap 1.5", name, 100*c.Level, c.Correction)
				}
			}
		}
		for j, lv := range levels {
			// The static band: the run's own error quantiles per step.
			var static float64
			for h := range H {
				e := slices.Clone(errs[h])
				slices.Sort(e)
				lo, hi := stat.Quantile((1-lv)/2, stat.LinInterp, e, nil), stat.Quantile((1+lv)/2, stat.LinInterp, e, nil)
				for i := range pubFc {
					static += online.IntervalScore(pubFc[i][h]+lo, pubFc[i][h]+hi, pubY[i][h], 1-lv)
				}
			}
			rate := held[j] / n[j]
			t.Logf("%s: %.0f%% held %.1f%%, score %.3f, static band of the run's quantiles %.3f", name, 100*lv, 100*rate, score[j]/n[j], static/n[j])
			if (lv == 0.8 && math.Abs(rate-lv) > 0.03) || 1-rate > 2*(1-lv) {
				t.Errorf("%s: %.0f%% intervals held %.1f%% of the realised values; want within 3 points at 80%%, at most twice α missed", name, 100*lv, 100*rate)
			}
			if score[j] > 1.05*static {
				t.Errorf("%s: %.0f%% intervals score %.3f, more than 5%% above the hindsight static band's %.3f", name, 100*lv, score[j]/n[j], static/n[j])
			}
		}
	}
}

// bursty is a feed of a few series whose noise comes in bursts.
type bursty struct {
	signal, values        [][]float64
	every, length, factor float64
}

func burstyFeed(rng *rand.Rand, series, steps int) bursty {
	f := bursty{every: 40 + 120*rng.Float64(), length: 4 + 20*rng.Float64(), factor: 2.5 + 4*rng.Float64()}
	period := 24.0
	// The bursts are shared by the series (a storm reaches every sensor
	// of a city), their sizes drawn per burst.
	size := make([]float64, steps+H2)
	for t := 0; t < len(size); {
		gap := int(rng.ExpFloat64() * f.every)
		t += gap
		d, k := int(1+rng.ExpFloat64()*f.length), f.factor*(0.5+rng.Float64())
		for i := t; i < min(t+d, len(size)); i++ {
			size[i] = k
		}
		t += d
	}
	for s := range series {
		level, amp, sd := 10*rng.NormFloat64(), 1+2*rng.Float64(), 0.2+0.5*rng.Float64()
		sig, val := make([]float64, steps+H2), make([]float64, steps+H2)
		for t := range sig {
			sig[t] = level + amp*math.Sin(2*math.Pi*float64(t)/period+float64(s))
			k := 1.0
			if size[t] > 0 {
				k = size[t]
			}
			val[t] = sig[t] + k*sd*rng.NormFloat64()
		}
		f.signal, f.values = append(f.signal, sig), append(f.values, val)
	}
	return f
}

// H2 is room beyond a feed's steps for the last forecast's targets.
const H2 = 96
