package training

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/dataset/datasettest"
	"github.com/freqlens/freqlens/internal/longtest"
	"gonum.org/v1/gonum/stat"
)

// cycleFrame is a single cycle of a random period (12–40 steps, not a
// calendar period), of a random shape (1–3 harmonics of random amplitude and
// phase), with noise, hourly, on two series of their own level and scale:
// everything a forecast can know of it is that one rhythm. It returns the
// frame and the period.
func cycleFrame(seed uint64, steps int) (*dataset.Frame, float64) {
	rng := rand.New(rand.NewPCG(seed, 79))
	period := 12 + 28*rng.Float64()
	type part struct{ k, amp, phase float64 }
	var parts []part
	for k := 1; k <= 1+rng.IntN(3); k++ {
		parts = append(parts, part{float64(k), (0.5 + rng.Float64()) / float64(k), 2 * math.Pi * rng.Float64()})
	}
	noise := 0.05 + 0.15*rng.Float64()
	f := datasettest.HourlyPair("cycle", steps, func(t int) float64 {
		v := 0.0
		for _, p := range parts {
			v += p.amp * math.Sin(2*math.Pi*p.k*float64(t)/period+p.phase)
		}
		return v
	}, func(s int, v float64) float64 {
		return 3*float64(s) + (1+float64(s))*(v+noise*rng.NormFloat64())
	})
	return f, period
}

// TestOtherFrequenciesLeaveACycleToItsRhythm: on data that is one cycle and
// noise, the forecast's parts must name that cycle. The frequencies outside
// the rhythm read the window less its rhythms, so none of them can
// carry the cycle under its own period: over seeded cycles (two in go test,
// four with FREQLENS_LONG=1) they keep at most 5% of the attribution on
// average and 10% on any one, and the rhythm at least 85% on each. Measured: 2.4–4.6% (mean 3.3%), and on eight other
// seeds 1.4–8.1% (mean 3.6%; the 8.1% where discovery missed a harmonic).
// Other frequencies that read the whole window fail it: a 39h line's head
// turns a pure 24h sine's leakage into a 24h wave, and they keep 6.3–18%
// (mean 10.9%; measured by the build of format 6, whose frequencies did).
func TestOtherFrequenciesLeaveACycleToItsRhythm(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models; skipped in -short mode")
	}
	const L, H, epochs = 96, 24, 10
	seeds := longtest.Cases([]uint64{2, 4}, []uint64{1, 3})
	free := make([]float64, len(seeds))
	t.Run("cycles", func(t *testing.T) {
		for i, seed := range seeds {
			f, period := cycleFrame(seed, 24*100)
			t.Run(fmt.Sprintf("seed %d period %.2f", seed, period), func(t *testing.T) {
				t.Parallel()
				m, met := trainWithTimes(t, f, L, H, epochs, seed)
				for id, s := range met.Shares {
					if !slices.ContainsFunc(m.Meta.Rhythms, func(r cycles.Rhythm) bool { return slices.Contains(r.Frequencies, id) }) {
						free[i] += s
					}
				}
				cycle := 0.0
				for j, r := range m.Meta.Rhythms {
					if math.Abs(r.PeriodSteps/period-1) <= 0.01 {
						cycle += met.RhythmShares[j]
					}
				}
				t.Logf("the cycle %.1f%%, other frequencies %.1f%%, residual %.1f%%, test MSE %.4f; rhythms %s",
					100*cycle, 100*free[i], 100*met.ResidualShare, met.MSE, fmt.Sprint(m.Meta.Rhythms))
				if free[i] > 0.10 {
					t.Errorf("the other frequencies carry %.1f%% of a forecast of one cycle and noise, want at most 10%%", 100*free[i])
				}
				if cycle < 0.85 {
					t.Errorf("the generator's cycle of %.2f steps carries %.1f%%, want at least 85%%", period, 100*cycle)
				}
			})
		}
	})
	if mean := stat.Mean(free, nil); mean > 0.05 {
		t.Errorf("the other frequencies carry %.1f%% of the attribution on average over the cycles %.3f, want at most 5%%", 100*mean, free)
	}
}
