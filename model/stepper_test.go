package model

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/dataset/datasettest"
)

// trainingStep is a step with package training's default loss terms
// (training.Config's defaults) on batches of batch windows.
func trainingStep(batch int, dropout float64) StepConfig {
	return StepConfig{
		BatchSize: batch, FreqRateScale: 5, ClipNorm: 1,
		LambdaDiv: 0.01, LambdaRecon: 0.1, LambdaSparse: 0.01, LambdaVar: 0.1,
		Dropout: dropout, ChannelShuffle: 1, Workers: 2,
	}
}

// trainBriefly gives the tests of the model's identities a model that has
// learned its data: it places m's frequencies on the spectrum of train's
// rows, as training does, and takes epochs passes of steps over the
// shuffled windows, with θ and the residual MLP held (training's warm-up)
// and the Gumbel temperature annealed from 1 to 0.1. No validation, no
// early stopping: the loop itself is package training's, and tested
// there.
func trainBriefly(t testing.TB, m *Model, train *dataset.Windows, epochs int, seed uint64) {
	t.Helper()
	m.PlaceOnSpectrum(train.Rows(), train.Channels(), 0)
	const batch = 32
	rng := rand.New(rand.NewPCG(seed, 1))
	st, err := m.NewStepper(train, trainingStep(batch, 0.1), rng)
	if err != nil {
		t.Fatal(err)
	}
	st.Freeze(func(name, component string) bool { return component != "residual" && name != "freq.theta" })
	n, err := m.Samples(train)
	if err != nil {
		t.Fatal(err)
	}
	perm := rng.Perm(n)
	for epoch := range epochs {
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		tau := 1 - 0.9*float64(epoch)/float64(max(epochs-1, 1))
		for s := range n / batch {
			if _, err := st.Step(perm[s*batch:(s+1)*batch], 1e-3, tau); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestStepperFreezes: the tensors a Stepper holds back are bit-identical
// after its steps, and every other one moves (but the clock terms of a
// model that does not read the time, and the band heads of one without
// rhythms, which no loss reaches).
func TestStepperFreezes(t *testing.T) {
	cfg := Config{Lookback: 48, Horizon: 12, Channels: 1, Mode: Independent, Hidden: 16, Frequencies: 12, TopK: 4}
	src := datasettest.Sines(200, 48, 12, 1, 5)
	for _, heads := range []bool{false, true} {
		m, err := New(cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		before := m.Clone()
		trained := func(_, component string) bool {
			return component == "frequencies" || component == "fusion" || component == "clock" ||
				heads && (component == "heads" || component == "band heads")
		}
		st, err := m.NewStepper(src, StepConfig{BatchSize: 32, FreqRateScale: 5, ClipNorm: 1, LambdaDiv: 0.01, Workers: 2},
			rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		st.Freeze(trained)
		for s := range 5 {
			idx := make([]int, 32)
			for i := range idx {
				idx[i] = (7*s + 13*i) % 200
			}
			if _, err := st.Step(idx, 1e-3, 0.1); err != nil {
				t.Fatal(err)
			}
		}
		for _, tn := range tensors(cfg) {
			got, was := *tn.view(m.params), *tn.view(before.params)
			changed := !slices.Equal(got, was)
			want := trained(tn.name, tn.component) && (tn.component != "clock" || m.ReadsTime()) &&
				(tn.component != "band heads" || len(m.Meta.Rhythms) > 0)
			if changed != want {
				t.Errorf("heads=%v: tensor %s (%s) changed=%v, want %v", heads, tn.name, tn.component, changed, want)
			}
		}
	}
}

// TestStepperStopsOnANaN: a step of a model with a NaN parameter returns
// ErrDiverged.
func TestStepperStopsOnANaN(t *testing.T) {
	cfg := Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: Independent, Hidden: 8, Frequencies: 6, TopK: 2}
	m, _ := New(cfg, 1)
	m.params.Fusion[0] = math.NaN()
	m.refresh()
	st, err := m.NewStepper(datasettest.Sines(50, 24, 6, 1, 1), trainingStep(8, 0), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Step([]int{0, 1, 2, 3}, 1e-3, 0.1); !errors.Is(err, ErrDiverged) {
		t.Errorf("a step of a NaN model: error %v, want ErrDiverged", err)
	}
}

func TestFinite(t *testing.T) {
	cfg := Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: Independent, Hidden: 8, Frequencies: 6, TopK: 2}
	ok, _ := New(cfg, 1)
	if !ok.Finite() {
		t.Error("Finite() = false for a fresh model")
	}
	m := ok.Clone()
	m.params.Fusion[0] = math.NaN()
	m.refresh()
	if m.Finite() {
		t.Error("Finite() = true with a NaN fusion weight")
	}
}

// TestWithAveragedSwapsTheAverage: with EMA, WithAveraged runs f on the
// moving average of the parameters (what Averaged returns), returns f's
// error, and leaves the model's own as they were. (That an evaluation
// inside it scores the average is measure's TestEvaluatorScoresTheAverage.)
func TestWithAveragedSwapsTheAverage(t *testing.T) {
	cfg := Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: Independent, Hidden: 8, Frequencies: 6, TopK: 2}
	src := datasettest.Sines(64, 24, 6, 1, 3)
	m, _ := New(cfg, 2)
	sc := trainingStep(16, 0)
	sc.EMA = 0.5
	st, err := m.NewStepper(src, sc, rand.New(rand.NewPCG(4, 5)))
	if err != nil {
		t.Fatal(err)
	}
	for s := range 3 {
		if _, err := st.Step([]int{s, s + 10, s + 20, s + 30}, 1e-2, 0.5); err != nil {
			t.Fatal(err)
		}
	}
	live := slices.Clone(m.params.Data)
	if slices.Equal(st.Averaged(), live) {
		t.Fatal("the moving average equals the parameters after three steps")
	}
	avg := m.Clone()
	copy(avg.params.Data, st.Averaged())
	avg.refresh()
	x, _ := randomBatch(cfg, 3, 6)
	want := avg.Forward(avg.NewWorkspace(3), nil, x, nil)
	stop := errors.New("stop")
	err = st.WithAveraged(func() error {
		if !slices.Equal(m.params.Data, st.Averaged()) {
			t.Error("inside WithAveraged the parameters are not the moving average")
		}
		if got := m.Forward(m.NewWorkspace(3), nil, x, nil); !slices.Equal(got, want) {
			t.Error("inside WithAveraged the model does not forecast as the moving average")
		}
		return stop
	})
	if err != stop {
		t.Errorf("WithAveraged returned %v, want f's error", err)
	}
	if !slices.Equal(m.params.Data, live) {
		t.Error("WithAveraged changed the model's parameters")
	}
}

// TestStepperRereadsRestoredMoments: moments written into StateArrays (a
// checkpoint restored) are read before the next step, so every parameter
// with moments steps, even where this step's gradient is zero (the heads
// of frequencies no window of the batch selected).
func TestStepperRereadsRestoredMoments(t *testing.T) {
	cfg := Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: Independent, Hidden: 8, Frequencies: 12, TopK: 2}
	m, _ := New(cfg, 1)
	st, err := m.NewStepper(datasettest.Sines(50, 24, 6, 1, 1), trainingStep(4, 0), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	arrays := st.StateArrays()
	for _, a := range arrays[:2] {
		for i := range a {
			a[i] = 1e-4
		}
	}
	before := slices.Clone(m.params.Data)
	if _, err := st.Step([]int{0, 1, 2, 3}, 1e-3, 0.1); err != nil {
		t.Fatal(err)
	}
	for i, v := range m.params.Data {
		if v == before[i] {
			t.Fatalf("parameter %d has moments but did not move in the step after they were restored", i)
		}
	}
}
