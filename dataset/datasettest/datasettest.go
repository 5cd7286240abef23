// Package datasettest makes the synthetic data of the tests of the
// packages that train and read models (model, training, online): plain
// windows of sines, and frames of known rhythms (traffic weeks, cycles
// longer than a window, hourly pairs of series). Each is drawn from its
// seed, so a test's numbers do not change from run to run.
package datasettest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/freqlens/freqlens/dataset"
)

// Slices is n windows held in two slices, row-major: window i's input is
// X[i·L·C : (i+1)·L·C] and its target Y[i·H·C : (i+1)·H·C]. It is a
// model.Source and no RowSource, so training keeps a model's grid of
// frequencies on it.
type Slices struct {
	X, Y       []float64
	N, L, H, C int
}

// Len returns the number of windows.
func (s Slices) Len() int { return s.N }

// Channels returns the values per step.
func (s Slices) Channels() int { return s.C }

// Input returns window i.
func (s Slices) Input(i int) []float64 { return s.X[i*s.L*s.C : (i+1)*s.L*s.C] }

// Target returns window i's target.
func (s Slices) Target(i int) []float64 { return s.Y[i*s.H*s.C : (i+1)*s.H*s.C] }

// Sines cuts n stride-1 windows from a noisy sum of two cycles per channel.
func Sines(n, L, H, C int, seed uint64) Slices {
	rng := rand.New(rand.NewPCG(seed, 1))
	T := n + L + H
	series := make([]float64, T*C)
	for c := range C {
		for t := range T {
			series[t*C+c] = math.Sin(2*math.Pi*float64(t)/24+float64(c)) + 0.5*math.Sin(2*math.Pi*float64(t)/8) + 0.1*rng.NormFloat64()
		}
	}
	s := Slices{N: n, L: L, H: H, C: C, X: make([]float64, n*L*C), Y: make([]float64, n*H*C)}
	for i := range n {
		copy(s.X[i*L*C:(i+1)*L*C], series[i*C:(i+L)*C])
		copy(s.Y[i*H*C:(i+1)*H*C], series[(i+L)*C:(i+L+H)*C])
	}
	return s
}

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

// Weekly is traffic from series sensors over weeks at a cadence:
// weekdays follow one random daily shape, weekends a mix of it and another
// by diff (0: the same shape every day).
func Weekly(seed uint64, diff float64, series, weeks int, cadence time.Duration) *dataset.Frame {
	return Traffic(seed, diff, series, weeks, cadence, false)
}

// Traffic is Weekly, or with own set, sensors that each have a
// weekday and a weekend shape of their own (rush hours at other times,
// other heights), as the two directions of a road or a city's and a
// suburb's sensors have: a model shared by the series then meets days that
// differ in phase and shape from series to series.
func Traffic(seed uint64, diff float64, series, weeks int, cadence time.Duration, own bool) *dataset.Frame {
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

// LongCycle has a cycle of period (steps) 1.5–3× lookback with 1–3
// harmonics, and half the time a shorter cycle, at a 10-minute cadence.
// It returns the frame and the generator's periods.
func LongCycle(seed uint64, lookback, series, steps int) (*dataset.Frame, []float64) {
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

// HourlyPair is a frame of two series read every hour from March 2026: at
// step t series s reads reading(s, signal(t)), called in that order.
func HourlyPair(name string, steps int, signal func(t int) float64, reading func(s int, v float64) float64) *dataset.Frame {
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
