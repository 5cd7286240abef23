package online_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/training"
)

// server is the serving side of a scenario: a model and its version behind
// a lock, swapped by the learner, as pipeline.Pipeline does.
type server struct {
	mu      sync.Mutex
	m       *model.Model
	version int64
}

func (s *server) Model() (*model.Model, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m, s.version
}

func (s *server) SetModel(m *model.Model, v int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m, s.version = m, v
	return nil
}

// scenario is a synthetic feed: series with a daily-like cycle whose period
// is 24 steps until switchAt and 28 steps after (the same if switchAt < 0).
type scenario struct {
	series, steps, switchAt int
	frame                   *dataset.Frame
}

const (
	scL, scH   = 96, 24
	trainSteps = 2000 // rows the base model is trained on
)

func newScenario(t *testing.T, series, steps, switchAt int) *scenario {
	t.Helper()
	cycles := []dataset.Cycle{{PeriodSteps: 24, Amplitude: 10}, {PeriodSteps: 12, Amplitude: 3, Phase: 1}}
	if switchAt >= 0 {
		cycles = []dataset.Cycle{
			{PeriodSteps: 24, Amplitude: 10, UntilStep: switchAt}, {PeriodSteps: 12, Amplitude: 3, Phase: 1, UntilStep: switchAt},
			{PeriodSteps: 28, Amplitude: 10, FromStep: switchAt}, {PeriodSteps: 14, Amplitude: 3, Phase: 1, FromStep: switchAt},
		}
	}
	f, err := dataset.Synthetic(dataset.SyntheticConfig{Series: series, Steps: steps, Level: 100, Cycles: cycles,
		NoiseStd: 1, SeriesJitter: 0.3, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	return &scenario{series: series, steps: steps, switchAt: switchAt, frame: f}
}

// baseModel trains a small independent model on the first trainSteps rows.
func (sc *scenario) baseModel(t *testing.T) *model.Model {
	t.Helper()
	cut := trainSteps * 8 / 10
	tr, err := dataset.NewWindows(sc.frame.Values, sc.series, scL, scH, dataset.Range{Start: 0, End: cut})
	if err != nil {
		t.Fatal(err)
	}
	va, err := dataset.NewWindows(sc.frame.Values, sc.series, scL, scH, dataset.Range{Start: cut - scL, End: trainSteps})
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(model.Config{Lookback: scL, Horizon: scH, Channels: 1, Mode: model.Independent, Frequencies: 16, TopK: 4}, 5)
	if err != nil {
		t.Fatal(err)
	}
	res, err := training.Train(context.Background(), m, tr, va, training.Config{Epochs: 30, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	// The errors on held-out windows, as train records them (in z-scores
	// of each series, the units the online error is normalised to): where
	// the intervals start, so that they are published from the first
	// forecast.
	z := slices.Clone(sc.frame.Values[:trainSteps*sc.series])
	for s := range sc.series {
		var sum, sq float64
		for i := s; i < len(z); i += sc.series {
			sum += z[i]
			sq += z[i] * z[i]
		}
		n := float64(trainSteps)
		mean := sum / n
		std := math.Sqrt(sq/n - mean*mean)
		for i := s; i < len(z); i += sc.series {
			z[i] = (z[i] - mean) / std
		}
	}
	zva, err := dataset.NewWindows(z, sc.series, scL, scH, dataset.Range{Start: cut - scL, End: trainSteps})
	if err != nil {
		t.Fatal(err)
	}
	if m.Meta.ErrorQuantiles, err = measure.ErrorQuantiles(context.Background(), m, zva, 2048); err != nil {
		t.Fatal(err)
	}
	t.Logf("base model: best epoch %d, validation MSE %.4f, fusion α %.3f", res.BestEpoch, res.BestValMSE, m.Alpha())
	return m
}

// run serves rows [trainSteps, steps) through a learner: every step each
// series' window is forecast and observed; every roundEvery steps the
// learner refreshes and (if enabled) runs a round. It returns the learner's
// totals at the switch (or at the start) and at the end.
func (sc *scenario) run(t *testing.T, l *online.Learner, srv *server, roundEvery int, enabled bool) (atSwitch, end online.ErrorTotals) {
	t.Helper()
	S := sc.series
	x := make([]float64, S*scL)
	var ex *explain.Explainer
	var exFor *model.Model
	var expl *explain.Explanation
	var lower, upper [][]float64
	for range l.Levels() {
		lower, upper = append(lower, make([]float64, scH)), append(upper, make([]float64, scH))
	}
	start := trainSteps
	for step := start; step < sc.steps; step++ {
		if step == max(sc.switchAt, start)+scH {
			// From here every forecast's horizon lies after the switch.
			atSwitch = l.Totals()
		}
		m, _ := srv.Model()
		if m != exFor {
			var err error
			if ex, err = explain.New(m, 1); err != nil {
				t.Fatal(err)
			}
			exFor = m
		}
		for s := range S {
			for i := range scL {
				x[s*scL+i] = sc.frame.Values[(step-scL+1+i)*S+s]
			}
		}
		var ends []int64
		if m.ReadsTime() {
			ends = make([]int64, S)
			for s := range ends {
				ends[s] = sc.frame.Times[step].UnixNano()
			}
		}
		y := ex.Forecast(x, ends)
		for s := range S {
			expl = ex.Explain(s, expl)
			l.Observe(&online.Observation{Series: sc.frame.Columns[s], End: sc.frame.Times[step],
				Window: x[s*scL : (s+1)*scL], Forecast: y[s*scH : (s+1)*scH], Contributions: expl.Contributions, Rhythms: expl.Rhythms,
				Lower: lower, Upper: upper})
		}
		if (step-start)%roundEvery == roundEvery-1 {
			l.Refresh(srv)
			if enabled {
				l.Round(context.Background(), srv)
			}
		}
	}
	l.Refresh(srv)
	return atSwitch, l.Totals()
}

// checkCoverage fails unless the published intervals of every level held
// the realised values at their nominal rate, within 3 points, over the
// stretch between two totals.
func checkCoverage(t *testing.T, what string, since, end online.ErrorTotals) {
	t.Helper()
	if len(end.Coverage) == 0 {
		t.Fatalf("%s: no interval levels", what)
	}
	for k, c := range end.Coverage {
		var from online.Coverage
		if k < len(since.Coverage) {
			from = since.Coverage[k]
		}
		rate := c.Rate(from)
		t.Logf("%s: %.0f%% intervals held %.1f%% of %d realised steps", what, 100*c.Level, 100*rate, c.Scored-from.Scored)
		if !(math.Abs(rate-c.Level) <= 0.03) {
			t.Errorf("%s: %.0f%% intervals held %.1f%% of the realised values; want within 3 points", what, 100*c.Level, 100*rate)
		}
	}
}
