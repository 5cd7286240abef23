package online

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/freqlens/freqlens/model"
)

// The feed the calibration tests (a restart, a rebalance) run learners on.
// It is exported for the external test package too, as test code only.

// UnitErrorQuantiles are held-out error quantiles of one normalised unit's
// Gaussian spread at each of H steps, one channel: where every series'
// intervals start.
func UnitErrorQuantiles(H int) *model.ErrorQuantiles {
	q := &model.ErrorQuantiles{Probs: []float64{0.025, 0.1, 0.5, 0.9, 0.975}, Horizon: H, Channels: 1, Windows: 1000}
	for _, z := range []float64{-1.96, -1.28, 0, 1.28, 1.96} {
		for range H {
			q.Values = append(q.Values, z)
		}
	}
	return q
}

// CalibrationFeed is series hourly sensors of a 24-step cycle whose noise
// lies a hundredfold apart between sensors, each forecast by the cycle
// itself, so that every series' calibrated band has its own width.
type CalibrationFeed struct {
	L, H    int
	Sensors []FeedSensor
	rng     *rand.Rand
	fc      []float64
	t0      time.Time
}

// FeedSensor is one series of a CalibrationFeed, with its current window.
type FeedSensor struct {
	Name         string
	phase, noise float64
	x            []float64
}

// NewCalibrationFeed makes a feed of series sensors with windows of L
// steps and forecasts of H, drawing from rng.
func NewCalibrationFeed(L, H, series int, rng *rand.Rand) *CalibrationFeed {
	f := &CalibrationFeed{L: L, H: H, rng: rng, fc: make([]float64, H), t0: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)}
	f.Sensors = make([]FeedSensor, series)
	for s := range f.Sensors {
		f.Sensors[s] = FeedSensor{Name: fmt.Sprintf("road-%03d", s), phase: 2 * math.Pi * rng.Float64(),
			noise: math.Exp(math.Log(0.05) + rng.Float64()*math.Log(100)), x: make([]float64, L)}
	}
	return f
}

func (f *CalibrationFeed) signal(s *FeedSensor, step int) float64 {
	return 50 + 10*math.Sin(2*math.Pi*float64(step)/24+s.phase)
}

// Observe moves the windows of Sensors[from:to] to step (unless again: the
// last window again, as a replica reads it after a restart or a move) and
// gives each learner their forecasts; it returns the width of each one's
// 80% band at the horizon's end (NaN when not published), series by series.
func (f *CalibrationFeed) Observe(step, from, to int, again bool, ls ...*Learner) [][]float64 {
	L, H := f.L, f.H
	widths := make([][]float64, len(ls))
	for s := from; s < to; s++ {
		sn := &f.Sensors[s]
		if !again {
			copy(sn.x, sn.x[1:])
			sn.x[L-1] = f.signal(sn, step) + sn.noise*f.rng.NormFloat64()
		}
		for h := range H {
			f.fc[h] = f.signal(sn, step+1+h)
		}
		for i, l := range ls {
			lower := [][]float64{make([]float64, H), make([]float64, H)}
			upper := [][]float64{make([]float64, H), make([]float64, H)}
			o := &Observation{Series: sn.Name, End: f.t0.Add(time.Duration(step) * time.Hour), Window: sn.x, Forecast: f.fc, Lower: lower, Upper: upper}
			w := math.NaN()
			if l.Observe(o) {
				w = upper[0][H-1] - lower[0][H-1]
			}
			widths[i] = append(widths[i], w)
		}
	}
	return widths
}
