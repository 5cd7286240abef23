package model

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/internal/longtest"
)

// The rhythm property: on seeded feeds drawn at random from two kinds of
// generator, a model trained as the service trains it (timestamps, an
// independent model) reports exactly the generator's rhythms, each within
// 1% of its period, no other rhythm with more than 3% of the attribution,
// and a residual share of at most 0.30.
//
//   - Traffic-like: a daily shape of random bumps (hours, widths and heights
//     drawn), weekends with a shape of their own, so the week is a rhythm
//     a 96-step window cannot see; the weekly rhythm's share must rise with
//     the weekday/weekend difference. Hourly, and every 10 minutes, where
//     the day spans 1.5 windows and the week 10.5.
//   - A cycle 1.5–3× the lookback, of a non-sinusoidal shape (harmonics of
//     random amplitude and phase), with a shorter cycle beside it half the
//     time, at a 10-minute cadence.

// bump is a Gaussian in the time of day.
type bump struct{ hour, width, height float64 }

func bumpsAt(bs []bump, hour float64) float64 {
	v := 0.0
	for _, b := range bs {
		d := math.Mod(hour-b.hour+36, 24) - 12
		v += b.height * math.Exp(-d*d/(2*b.width*b.width))
	}
	return v
}

func randomBumps(rng *rand.Rand, n int) []bump {
	bs := make([]bump, n)
	for i := range bs {
		bs[i] = bump{hour: 24 * rng.Float64(), width: 1 + 3*rng.Float64(), height: 0.5 + rng.Float64()}
	}
	return bs
}

// weeklyFrame is traffic from series sensors over weeks at a cadence:
// weekdays follow one random daily shape, weekends a mix of it and another
// by diff (0: the same shape every day).
func weeklyFrame(seed uint64, diff float64, series, weeks int, cadence time.Duration) *dataset.Frame {
	return trafficFrame(seed, diff, series, weeks, cadence, false)
}

// trafficFrame is weeklyFrame, or with own set, sensors that each have a
// weekday and a weekend shape of their own (rush hours at other times,
// other heights), as the two directions of a road or a city's and a
// suburb's sensors have: a model shared by the series then meets days that
// differ in phase and shape from series to series.
func trafficFrame(seed uint64, diff float64, series, weeks int, cadence time.Duration, own bool) *dataset.Frame {
	rng := rand.New(rand.NewPCG(seed, 77))
	weekday, weekend := make([][]bump, series), make([][]bump, series)
	for s := range series {
		if s == 0 || own {
			weekday[s], weekend[s] = randomBumps(rng, 2+rng.IntN(3)), randomBumps(rng, 1+rng.IntN(3))
		} else {
			weekday[s], weekend[s] = weekday[0], weekend[0]
		}
	}
	noise := 0.05 + 0.1*rng.Float64()
	steps := int(time.Duration(weeks) * 7 * 24 * time.Hour / cadence)
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // a Monday
	f := &dataset.Frame{Name: "weekly", Cadence: cadence, Times: make([]time.Time, steps), Values: make([]float64, steps*series)}
	scale := make([]float64, series)
	for s := range series {
		f.Columns = append(f.Columns, fmt.Sprint("s-", s))
		scale[s] = 1 + 0.4*(rng.Float64()-0.5)
	}
	for t := range steps {
		ts := start.Add(time.Duration(t) * cadence)
		f.Times[t] = ts
		h := float64(ts.Hour()) + float64(ts.Minute())/60
		weekendDay := ts.Weekday() == time.Saturday || ts.Weekday() == time.Sunday
		for s := range series {
			v := bumpsAt(weekday[s], h)
			if weekendDay {
				v = (1-diff)*v + diff*bumpsAt(weekend[s], h)
			}
			f.Values[t*series+s] = 10 + scale[s]*(v+noise*rng.NormFloat64())
		}
	}
	return f
}

// longCycleFrame has a cycle of period (steps) 1.5–3× lookback with 1–3
// harmonics, and half the time a shorter cycle, at a 10-minute cadence.
// It returns the frame and the generator's periods.
func longCycleFrame(seed uint64, lookback, series, steps int) (*dataset.Frame, []float64) {
	rng := rand.New(rand.NewPCG(seed, 78))
	long := float64(lookback) * (1.5 + 1.5*rng.Float64())
	periods := []float64{long}
	type part struct{ period, amp, phase float64 }
	var parts []part
	for k := 1; k <= 1+rng.IntN(3); k++ {
		parts = append(parts, part{long / float64(k), (0.6 + 0.6*rng.Float64()) / float64(k), 2 * math.Pi * rng.Float64()})
	}
	if rng.IntN(2) == 0 {
		short := 6 + 30*rng.Float64()
		periods = append(periods, short)
		parts = append(parts, part{short, 0.5 + 0.5*rng.Float64(), 2 * math.Pi * rng.Float64()})
	}
	noise := 0.1 + 0.2*rng.Float64()
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	f := &dataset.Frame{Name: "long", Cadence: 10 * time.Minute, Times: make([]time.Time, steps), Values: make([]float64, steps*series)}
	for s := range series {
		f.Columns = append(f.Columns, fmt.Sprint("s-", s))
	}
	for t := range steps {
		f.Times[t] = start.Add(time.Duration(t) * 10 * time.Minute)
		v := 0.0
		for _, p := range parts {
			v += p.amp * math.Sin(2*math.Pi*float64(t)/p.period+p.phase)
		}
		for s := range series {
			f.Values[t*series+s] = 5 + float64(s) + (1+0.2*float64(s))*(v+noise*rng.NormFloat64())
		}
	}
	return f, periods
}

// hourlyPair is a frame of two series read every hour from March 2026: at
// step t series s reads reading(s, signal(t)), called in that order.
func hourlyPair(name string, steps int, signal func(t int) float64, reading func(s int, v float64) float64) *dataset.Frame {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	f := &dataset.Frame{Name: name, Cadence: time.Hour, Columns: []string{"a", "b"},
		Times: make([]time.Time, steps), Values: make([]float64, 2*steps)}
	for t := range steps {
		f.Times[t] = start.Add(time.Duration(t) * time.Hour)
		v := signal(t)
		for s := range 2 {
			f.Values[2*t+s] = reading(s, v)
		}
	}
	return f
}

// rhythmResult is what a model trained on a feed reports of its test split.
type rhythmResult struct {
	rhythms  []RhythmShare
	residual float64
	mse      float64
}

func (r rhythmResult) String() string {
	var b strings.Builder
	for _, rs := range r.rhythms {
		fmt.Fprintf(&b, "%.2f steps %.1f%% (ids %v k %v); ", rs.PeriodSteps, 100*rs.Share, rs.Frequencies, rs.Harmonics)
	}
	fmt.Fprintf(&b, "residual %.3f, test MSE %.4f", r.residual, r.mse)
	return b.String()
}

// trainOnFrame trains an independent model with timestamps on the first 70%
// of f's rows (validation the next 10%) and counts the shares on the last
// 20%.
func trainOnFrame(t *testing.T, f *dataset.Frame, lookback, horizon, epochs int, seed uint64) rhythmResult {
	t.Helper()
	m, met := trainWithTimes(t, f, lookback, horizon, epochs, seed)
	if !m.ReadsTime() {
		t.Fatalf("the model does not read the time: rhythms %v", fmt.Sprint(m.Meta.Rhythms))
	}
	return rhythmResult{rhythms: m.RhythmShares(met.Shares, met.RhythmShares), residual: met.ResidualShare, mse: met.MSE}
}

// checkRhythms requires exactly the rhythms of periods (each reported
// within 1%, with at least 1% of the attribution), no other rhythm above
// 3%, and a residual share of at most 0.30.
func checkRhythms(t *testing.T, r rhythmResult, periods []float64) {
	t.Helper()
	for _, p := range periods {
		if !slices.ContainsFunc(r.rhythms, func(rs RhythmShare) bool {
			return math.Abs(rs.PeriodSteps/p-1) <= 0.01 && rs.Share >= MinCycleShare
		}) {
			t.Errorf("no rhythm within 1%% of the generator's %.2f steps carries 1%% of the attribution: %v", p, r)
		}
	}
	for _, rs := range r.rhythms {
		if slices.ContainsFunc(periods, func(p float64) bool { return math.Abs(rs.PeriodSteps/p-1) <= 0.01 }) {
			continue
		}
		if rs.Share > 0.03 {
			t.Errorf("a rhythm of %.2f steps that the generator does not have carries %.1f%% of the attribution: %v", rs.PeriodSteps, 100*rs.Share, r)
		}
	}
	if r.residual > 0.30 {
		t.Errorf("the residual MLP carries %.2f of the attribution, want at most 0.30: %v", r.residual, r)
	}
}

func shareOf(r rhythmResult, period float64) float64 {
	for _, rs := range r.rhythms {
		if math.Abs(rs.PeriodSteps/period-1) <= 0.01 {
			return rs.Share
		}
	}
	return 0
}

func TestRhythmsOfTrafficWeeks(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models; skipped in -short mode")
	}
	const L, H, epochs = 96, 24, 10
	// Hourly: the week is 1.75 windows. Every 10 minutes: the day is 1.5
	// windows, the week 10.5, and every weekly line lies within 1/L of a
	// daily one (calendarSidebands); every 15 minutes the day is a window.
	type feed struct {
		seed    uint64
		cadence time.Duration
		weeks   int
		diffs   []float64
	}
	// go test ./... trains on seven weeks of hourly traffic, whose
	// training rows hold the week 4.9 times, below the spectrum's floor of
	// eight cycles (TestWeekFoundFromFewWeeks tests discovery there on many
	// more feeds); FREQLENS_LONG=1 adds fourteen weeks of hourly traffic
	// at three weekday/weekend differences, eight weeks every 10 minutes
	// and seven every 15 minutes.
	for _, tc := range longtest.Cases([]feed{{14, time.Hour, 7, []float64{0.5, 1}}},
		[]feed{{11, time.Hour, 14, []float64{0.25, 0.5, 1}}, {12, time.Hour, 14, []float64{0.25, 0.5, 1}},
			{13, 10 * time.Minute, 8, []float64{0.5, 1}}, {15, 15 * time.Minute, 7, []float64{0.5, 1}}}) {
		steps := float64(24*time.Hour) / float64(tc.cadence)
		t.Run(fmt.Sprintf("seed %d cadence %v", tc.seed, tc.cadence), func(t *testing.T) {
			t.Parallel()
			var weekly []float64
			for _, diff := range tc.diffs {
				r := trainOnFrame(t, weeklyFrame(tc.seed, diff, 3, tc.weeks, tc.cadence), L, H, epochs, tc.seed)
				checkRhythms(t, r, []float64{steps, 7 * steps})
				weekly = append(weekly, shareOf(r, 7*steps))
				t.Logf("weekday/weekend difference %.2f: %v", diff, r)
			}
			// On seven weeks the training rows hold the week 4.9 times: the
			// model finds it, but how much of the difference it takes from
			// the residual varies with the lines placed. Counted by the
			// week's summed part (its lines partly cancel), seed 14's week
			// carries 46.6% at 0.5 and 43.4% at 1, the residual 12% and 19%;
			// the rise is asserted from eight weeks, the spectrum's floor.
			if tc.weeks >= 8 && !slices.IsSorted(weekly) {
				t.Errorf("the weekly rhythm's share does not rise with the weekday/weekend difference %v: %.3f", tc.diffs, weekly)
			}
		})
	}
}

// TestRhythmsOfSensorsWithDaysOfTheirOwn: the rhythm property where every
// sensor has its own weekday and weekend shapes, so the model shared by the
// series (one clock term per frequency) meets days that differ in phase and
// shape from series to series: the band heads must carry each sensor's own
// day, or the residual takes it. Seeds 101 and 102 gave the week 58% and
// 46%, the day 32% and 39%, the residual 0.10 and 0.15 when this test was
// written (two more seeds of a like generator: the residual 0.12–0.15).
func TestRhythmsOfSensorsWithDaysOfTheirOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models; skipped in -short mode")
	}
	const L, H, epochs = 96, 24, 10
	for _, seed := range longtest.Cases([]uint64{101}, []uint64{102}) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			r := trainOnFrame(t, trafficFrame(seed, 0.7, 4, 14, time.Hour, true), L, H, epochs, seed)
			checkRhythms(t, r, []float64{24, 168})
			t.Logf("%v", r)
		})
	}
}

// discovered returns the rhythms training finds (Model.discover) in the
// first rows rows of f, for an independent model of L = 96, H = 24.
func discovered(t *testing.T, f *dataset.Frame, rows int, seed uint64) []cycles.Rhythm {
	t.Helper()
	m, err := New(Config{Lookback: 96, Horizon: 24, Channels: 1, Mode: Independent}, seed)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = f.Cadence
	_, _, _, rhythms, _ := m.discover(f.Values[:rows*f.Channels()], f.Channels())
	return rhythms
}

// TestWeekFoundFromFewWeeks: six or seven weeks of weekly traffic hold the
// week only 4.2 or 4.9 times in their training rows, below the spectrum's
// floor of eight cycles. Discovery (no training) must still group a weekly
// rhythm on most seeded feeds, hourly and every 15 minutes, the
// weekday/weekend difference drawn from 0.5 to 1. Measured: 22 and 30 of
// 32 feeds; 10 and 23 without testing the calendar's periods below the
// floor.
func TestWeekFoundFromFewWeeks(t *testing.T) {
	for _, tc := range []struct{ weeks, want int }{{6, 18}, {7, 28}} {
		found, n := 0, 0
		var missed []string
		for seed := uint64(31); seed < 47; seed++ {
			for _, cadence := range []time.Duration{time.Hour, 15 * time.Minute} {
				diff := 0.5 + 0.5*float64(seed%5)/4
				f := weeklyFrame(seed, diff, 3, tc.weeks, cadence)
				rhythms := discovered(t, f, f.Rows()*7/10, seed)
				week := float64(7*24*time.Hour) / float64(cadence)
				n++
				if slices.ContainsFunc(rhythms, func(r cycles.Rhythm) bool { return r.PeriodSteps == week }) {
					found++
				} else {
					missed = append(missed, fmt.Sprintf("seed %d %v: %s", seed, cadence, fmt.Sprint(rhythms)))
				}
			}
		}
		if found < tc.want {
			t.Errorf("%d weeks: the week found on %d of %d feeds, want at least %d; missed:\n%s", tc.weeks, found, n, tc.want, strings.Join(missed, "\n"))
		}
	}
}

// TestDayFoundFromAWeek: a week of 5-minute readings holds the day 4.9
// times in its training rows, below the spectrum's floor of eight cycles.
// Discovery must still group the daily rhythm on most seeded feeds (a
// random daily shape, no weekly difference). Measured: 9 of 10 at 6, 7 and 8
// days; 0 of 10 without testing the calendar's periods below the floor.
func TestDayFoundFromAWeek(t *testing.T) {
	const cadence = 5 * time.Minute
	day := float64(24*time.Hour) / float64(cadence)
	for _, days := range []int{6, 7, 8} {
		found := 0
		var missed []string
		for seed := uint64(1); seed <= 10; seed++ {
			f := weeklyFrame(seed, 0, 3, 2, cadence)
			rhythms := discovered(t, f, days*int(day)*7/10, seed)
			if slices.ContainsFunc(rhythms, func(r cycles.Rhythm) bool { return r.PeriodSteps == day }) {
				found++
			} else {
				missed = append(missed, fmt.Sprintf("seed %d: %s", seed, fmt.Sprint(rhythms)))
			}
		}
		if found < 8 {
			t.Errorf("%d days: the day found on %d of 10 feeds, want at least 8; missed:\n%s", days, found, strings.Join(missed, "\n"))
		}
	}
}

func TestRhythmsLongerThanTheWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models; skipped in -short mode")
	}
	const L, H, epochs = 96, 24, 10
	for _, seed := range longtest.Cases([]uint64{21}, []uint64{22, 23}) {
		f, periods := longCycleFrame(seed, L, 2, 4000)
		t.Run(fmt.Sprintf("seed %d periods %.1f", seed, periods), func(t *testing.T) {
			t.Parallel()
			r := trainOnFrame(t, f, L, H, epochs, seed)
			checkRhythms(t, r, periods)
			t.Logf("%v", r)
		})
	}
}

// trainWithTimes trains an independent model with timestamps on the first
// 70% of f's rows (validation the next 10%) and evaluates it on the last 20%.
func trainWithTimes(t *testing.T, f *dataset.Frame, lookback, horizon, epochs int, seed uint64) (*Model, Metrics) {
	t.Helper()
	S, T := f.Channels(), f.Rows()
	times := make([]int64, T)
	for i, ts := range f.Times {
		times[i] = ts.UnixNano()
	}
	win := func(lo, hi int) *dataset.Windows {
		w, err := dataset.NewWindows(f.Values, S, lookback, horizon, dataset.Range{Start: lo, End: hi})
		if err == nil {
			w, err = w.WithTimes(times)
		}
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	tr, va, te := win(0, T*7/10), win(T*7/10-lookback, T*8/10), win(T*8/10-lookback, T)
	m, err := New(Config{Lookback: lookback, Horizon: horizon, Channels: 1, Mode: Independent}, seed)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = f.Cadence
	if _, err := Train(context.Background(), m, tr, va, TrainConfig{Epochs: epochs, Seed: seed}, nil); err != nil {
		t.Fatal(err)
	}
	met, err := Evaluate(context.Background(), m, te, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m, met
}
