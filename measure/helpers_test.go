package measure

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/model"
)

// The helpers below give the tests models through model's exported API,
// as package model's own tests make them.

// smallConfigs are small shapes covering both normalisations, both modes
// and odd sizes (package model's gradient-check shapes).
var smallConfigs = []struct {
	name string
	cfg  model.Config
}{
	{"mixed instance-norm, rhythms and clock", model.Config{Lookback: 12, Horizon: 5, Channels: 2, Hidden: 4, Frequencies: 9, TopK: 6, ScorerHidden: 3, HeadHidden: 4, ResidualHidden: 5}},
	{"mixed no norm, rhythms without the time", model.Config{Lookback: 10, Horizon: 3, Channels: 3, Hidden: 5, Frequencies: 8, TopK: 5, ScorerHidden: 2, HeadHidden: 3, ResidualHidden: 4, Norm: model.NormNone}},
	{"independent, rhythms and clock", model.Config{Lookback: 16, Horizon: 7, Channels: 1, Hidden: 3, Frequencies: 10, TopK: 7, ScorerHidden: 4, HeadHidden: 5, ResidualHidden: 3, Mode: model.Independent}},
	{"independent, no rhythms", model.Config{Lookback: 16, Horizon: 7, Channels: 1, Hidden: 3, Frequencies: 7, TopK: 4, ScorerHidden: 4, HeadHidden: 5, ResidualHidden: 3, Mode: model.Independent}},
	{"mixed, no rhythms", model.Config{Lookback: 12, Horizon: 5, Channels: 2, Hidden: 4, Frequencies: 6, TopK: 3, ScorerHidden: 3, HeadHidden: 4, ResidualHidden: 5}},
	{"independent no norm, rhythms without the time", model.Config{Lookback: 16, Horizon: 7, Channels: 1, Hidden: 3, Frequencies: 10, TopK: 7, ScorerHidden: 4, HeadHidden: 5, ResidualHidden: 3, Mode: model.Independent, Norm: model.NormNone}},
	{"mixed, K below the rhythms' 4 frequencies (no place left to the others)", model.Config{Lookback: 12, Horizon: 5, Channels: 2, Hidden: 4, Frequencies: 9, TopK: 3, ScorerHidden: 3, HeadHidden: 4, ResidualHidden: 5}},
}

// trainingStep is a step with package training's default loss terms
// (training.Config's defaults) on batches of batch windows.
func trainingStep(batch int, dropout float64) model.StepConfig {
	return model.StepConfig{
		BatchSize: batch, FreqRateScale: 5, ClipNorm: 1,
		LambdaDiv: 0.01, LambdaRecon: 0.1, LambdaSparse: 0.01, LambdaVar: 0.1,
		Dropout: dropout, ChannelShuffle: 1, Workers: 2,
	}
}

// trainBriefly gives a model that has learned its data: it places m's
// frequencies on the spectrum of train's rows, as training does, and
// takes epochs passes of steps over the shuffled windows, with θ and the
// residual MLP held (training's warm-up) and the Gumbel temperature
// annealed from 1 to 0.1.
func trainBriefly(t testing.TB, m *model.Model, train *dataset.Windows, epochs int, seed uint64) {
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

// trainedTimedModel trains a small independent model for a few epochs on a
// timed feed with a daily and a weekly rhythm and returns it with its test
// windows.
func trainedTimedModel(t *testing.T, seed uint64) (*model.Model, *dataset.Windows) {
	t.Helper()
	f, err := dataset.Synthetic(dataset.Traffic(3, 24*7*14, time.Hour, seed))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.FillMissing(); err != nil {
		t.Fatal(err)
	}
	bm, err := dataset.Standard(f, 48, 24)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(model.Config{Lookback: 48, Horizon: 24, Channels: 1, Mode: model.Independent, Hidden: 16, HeadHidden: 16, Frequencies: 16, TopK: 4}, seed)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = f.Cadence
	trainBriefly(t, m, bm.Train, 3, seed)
	if !m.ReadsTime() {
		t.Fatalf("a model trained on a timed traffic feed does not read the time (rhythms %v)", m.Meta.Rhythms)
	}
	return m, bm.Test
}

// pickSource is the windows idx of src.
type pickSource struct {
	src model.Source
	idx []int
}

func (p pickSource) Len() int               { return len(p.idx) }
func (p pickSource) Channels() int          { return p.src.Channels() }
func (p pickSource) Input(i int) []float64  { return p.src.Input(p.idx[i]) }
func (p pickSource) Target(i int) []float64 { return p.src.Target(p.idx[i]) }

func close(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
