package online_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/freqlens/freqlens/internal/longtest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
)

// newIndependent returns an untrained independent model of one channel
// with an hourly cadence: the learner needs only its shapes.
func newIndependent(t testing.TB, L, H int) *model.Model {
	t.Helper()
	m, err := model.New(model.Config{Lookback: L, Horizon: H, Channels: 1, Mode: model.Independent, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	return m
}

// TestTrackedSeriesBytes measures what one more tracked series costs the
// learner at L = H = 96, one channel, two interval levels: its values, its
// sampled forecasts and bounds, its thresholds and its place in the map,
// after the full tier (the first 64 series, which keep more) is taken.
// The budget is 8 KB; scoring every step of every forecast cost 147 KB.
func TestTrackedSeriesBytes(t *testing.T) {
	const L, H, series = 96, 96, 10_000
	l, err := online.New(configWith(func(c *online.Config) { c.Intervals = []float64{0.8, 0.95} }), newIndependent(t, L, H))
	if err != nil {
		t.Fatal(err)
	}
	x, fc := make([]float64, L), make([]float64, H)
	for i := range x {
		x[i] = float64(i % 24)
	}
	for i := range fc {
		fc[i] = float64(i % 24)
	}
	o := &online.Observation{End: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), Window: x, Forecast: fc,
		Lower: [][]float64{make([]float64, H), make([]float64, H)}, Upper: [][]float64{make([]float64, H), make([]float64, H)}}
	for s := range 64 {
		o.Series = fmt.Sprint("full-", s)
		l.Observe(o)
	}
	names := make([]string, series)
	for s := range names {
		names[s] = fmt.Sprintf("sensor-%06d", s)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, name := range names {
		o.Series = name
		l.Observe(o)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / series
	t.Logf("a tracked series costs %.0f bytes (L = H = 96, one channel, two interval levels)", per)
	if per > 8192 {
		t.Errorf("a tracked series costs %.0f bytes; want at most 8192", per)
	}
	if got := l.Totals(); got.Count != 0 {
		t.Errorf("%d errors scored from first forecasts; want none", got.Count)
	}
	runtime.KeepAlive(l)
}

// TestEverySeriesCalibrated: 3,000 tracked series (10,000 with
// FREQLENS_LONG=1) whose forecasters err by
// amounts a hundredfold apart (each with a bias of up to half its error's
// std: an interval always holds its forecast, so a forecaster biased by
// more than a side's quantile over-covers that side), on a seeded feed,
// each get their own
// intervals: at most 1% of the series' own coverages are more than 3.3
// binomial standard deviations off a level, at most 0.1% more than 4.4 and
// none more than 5.5 (the spread of an 80% coverage over the series' scored
// steps, which it has even when its thresholds are its errors' true
// quantiles: over the 1,900 steps of the default run σ is 0.92 points, so
// these are 3, 4 and 5 points; over the 1,100 of -short 1.2 points, and
// among thousands of series a few pass four σ),
// the quietest series' intervals are much narrower than the
// noisiest's,
// and the coverage a consumer measures on every step of every forecast of
// a sample of series (not only the steps the learner scores) is nominal.
func TestEverySeriesCalibrated(t *testing.T) {
	const L, H = 24, 12
	series, steps := 3000, 1000
	if longtest.Enabled() {
		series = 10_000
	} else if testing.Short() {
		series, steps = 2000, 600
	}
	levels := []float64{0.8, 0.95}
	l, err := online.New(configWith(func(c *online.Config) { c.Intervals = levels }), newIndependent(t, L, H))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(20, 26))
	sensors := make([]roadSensor, series)
	for s := range sensors {
		noise := math.Exp(math.Log(0.05) + rng.Float64()*math.Log(100)) // 0.05 … 5
		sensors[s] = roadSensor{name: fmt.Sprintf("road-%05d", s), phase: 2 * math.Pi * rng.Float64(), level: 100 * rng.Float64(),
			bias: noise * (rng.Float64() - 0.5), noise: noise, x: make([]float64, L)}
	}
	w := newWatchedSeries(steps + L)
	halfWidth := observeRoads(l, sensors, rng, w, steps, H)
	held, checked := w.held(len(levels), H)

	checkEachSeriesCovered(t, l, series, levels)
	for k, level := range levels {
		rate := float64(held[k]) / float64(checked)
		t.Logf("every step of %d series' forecasts: %.0f%% intervals held %.1f%% of %d values", watchedRoads, 100*level, 100*rate, checked)
		if math.Abs(rate-level) > 0.02 {
			t.Errorf("every step of %d series' forecasts: %.0f%% intervals held %.1f%% of %d values; want within 2 points",
				watchedRoads, 100*level, 100*rate, checked)
		}
	}
	// Own widths: the quietest tenth against the noisiest tenth.
	order := make([]int, series)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmpFloat(sensors[a].noise, sensors[b].noise) })
	tenth := series / 10
	var quiet, noisy float64
	for i := range tenth {
		quiet += halfWidth[order[i]] / float64(tenth)
		noisy += halfWidth[order[series-1-i]] / float64(tenth)
	}
	t.Logf("80%% half-width at the first step: quietest tenth %.3f, noisiest tenth %.3f", quiet, noisy)
	if !(noisy > 20*quiet) {
		t.Errorf("the noisiest tenth's 80%% intervals (%.3f) are not much wider than the quietest's (%.3f); every series should have its own",
			noisy, quiet)
	}
}

// roadSensor is a series of TestEverySeriesCalibrated: a daily sine at
// its level and phase plus noise, forecast with a bias.
type roadSensor struct {
	name               string
	phase, level, bias float64
	noise              float64 // the std of the forecaster's error
	x                  []float64
}

// signal is the sensor's noiseless value at step t.
func (s *roadSensor) signal(t int) float64 {
	return s.level + 10*math.Sin(2*math.Pi*float64(t)/24+s.phase)
}

// watchedRoads is how many series (the first) the consumer's check of
// TestEverySeriesCalibrated watches.
const watchedRoads = 50

// watchedSeries is the consumer's check: every bound of every forecast of
// a sample of series, against the realised value.
type watchedSeries struct {
	// queue holds per watched series the bands it was issued.
	queue [][]issuedBands
	// realised holds per watched series its value at each step.
	realised [][]float64
}

// issuedBands are the lower and upper bounds, per level, of the forecast
// issued at step.
type issuedBands struct {
	step   int
	lo, hi [][]float64
}

// newWatchedSeries returns a check of the watched series over steps
// steps.
func newWatchedSeries(steps int) *watchedSeries {
	w := &watchedSeries{queue: make([][]issuedBands, watchedRoads), realised: make([][]float64, watchedRoads)}
	for s := range w.realised {
		w.realised[s] = make([]float64, steps)
	}
	return w
}

// observeRoads runs every sensor for steps steps after its first window
// of L, drawing its noise from rng, and has l observe each window with a
// forecast of H steps; the watched sensors' values and bands go to w. It
// returns each sensor's half-width of its 80% interval at the first step
// of the horizon, at the end.
func observeRoads(l *online.Learner, sensors []roadSensor, rng *rand.Rand, w *watchedSeries, steps, H int) []float64 {
	L := len(sensors[0].x)
	fc := make([]float64, H)
	lower := [][]float64{make([]float64, H), make([]float64, H)}
	upper := [][]float64{make([]float64, H), make([]float64, H)}
	o := &online.Observation{Forecast: fc, Lower: lower, Upper: upper}
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	halfWidth := make([]float64, len(sensors)) // at the first step, of the 80% interval, at the end
	for step := range steps + L {
		for s := range sensors {
			sn := &sensors[s]
			copy(sn.x, sn.x[1:])
			sn.x[L-1] = sn.signal(step) + sn.noise*rng.NormFloat64()
			if s < watchedRoads {
				w.realised[s][step] = sn.x[L-1]
			}
			if step < L-1 {
				continue
			}
			for h := range H {
				fc[h] = sn.signal(step+1+h) + sn.bias
			}
			o.Series, o.End, o.Window = sn.name, t0.Add(time.Duration(step)*time.Hour), sn.x
			if !l.Observe(o) {
				continue
			}
			halfWidth[s] = (upper[0][0] - lower[0][0]) / 2
			if s < watchedRoads && step >= L+100 {
				w.queue[s] = append(w.queue[s], issuedBands{step: step, lo: [][]float64{slices.Clone(lower[0]), slices.Clone(lower[1])},
					hi: [][]float64{slices.Clone(upper[0]), slices.Clone(upper[1])}})
			}
		}
	}
	return halfWidth
}

// held returns, per each of the levels, how many realised values within
// the run the watched series' bands (of H steps) held, and how many
// values were checked.
func (w *watchedSeries) held(levels, H int) (held []int, checked int) {
	held = make([]int, levels)
	for s, q := range w.queue {
		for _, is := range q {
			for h := range H {
				at := is.step + 1 + h
				if at >= len(w.realised[s]) {
					continue
				}
				v := w.realised[s][at]
				checked++
				for k := range levels {
					if is.lo[k][h] <= v && v <= is.hi[k][h] {
						held[k]++
					}
				}
			}
		}
	}
	return held, checked
}

// checkEachSeriesCovered checks l's own coverage of every one of series
// series: none beyond 5.5σ of the levels' binomial spread, at most 1%
// beyond 3.3σ and 0.1% (or one) beyond 4.4σ.
func checkEachSeriesCovered(t *testing.T, l *online.Learner, series int, levels []float64) {
	t.Helper()
	cal := l.Calibration(0, 1)
	if len(cal) != series {
		t.Fatalf("%d series have their own coverage; want all %d", len(cal), series)
	}
	worst := cal[0]
	t.Logf("%d series: the worst calibrated, %s, held %.1f%% and %.1f%% of %d scored steps", series, worst.Series,
		100*worst.Coverage[0], 100*worst.Coverage[1], worst.Scored)
	beyond3, beyond4 := 0, 0
	for _, c := range cal {
		sd := math.Sqrt(0.8 * 0.2 / float64(c.Scored)) // the 80% coverage's binomial spread
		if c.Deviation > 3.3*sd {
			beyond3++
		}
		if c.Deviation > 4.4*sd {
			beyond4++
			t.Logf("series %s held %.1f%% and %.1f%% of its %d scored steps", c.Series, 100*c.Coverage[0], 100*c.Coverage[1], c.Scored)
		}
		if c.Deviation > 5.5*sd {
			t.Errorf("series %s held %.1f%% and %.1f%% of its %d scored steps; want within %.1f points (5.5σ) of %v",
				c.Series, 100*c.Coverage[0], 100*c.Coverage[1], c.Scored, 100*5.5*sd, levels)
		}
	}
	t.Logf("%d of %d series are more than 3.3σ off a level, %d more than 4.4σ", beyond3, series, beyond4)
	if beyond3 > series/100 {
		t.Errorf("%d of %d series are more than 3.3σ off a level; want at most 1%%", beyond3, series)
	}
	if beyond4 > max(1, series/1000) {
		t.Errorf("%d of %d series are more than 4.4σ off a level; want at most 0.1%%", beyond4, series)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
