package explain_test

import (
	"math"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/dataset/datasettest"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/internal/modeltest"
	"github.com/freqlens/freqlens/model"
)

// TestExplainerCompleteInInputUnits: for mixed models with training
// statistics and for independent models serving several fields, the
// forecast equals residual plus contributions in the window's own units,
// and equals the Forecast output.
func TestExplainerCompleteInInputUnits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      model.Config
		channels int
		zscore   bool
	}{
		{"mixed with z-score", model.Config{Lookback: 24, Horizon: 6, Channels: 3, Hidden: 8, Frequencies: 6, TopK: 3}, 3, true},
		{"mixed", model.Config{Lookback: 24, Horizon: 6, Channels: 2, Hidden: 8, Frequencies: 6, TopK: 3}, 2, false},
		{"independent serving 4 fields", model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 8, Frequencies: 6, TopK: 3}, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := modeltest.RandomModel(t, tc.cfg, 31)
			if tc.zscore {
				m.Meta.Mean = make([]float64, tc.channels)
				m.Meta.Std = make([]float64, tc.channels)
				for c := range tc.channels {
					m.Meta.Mean[c], m.Meta.Std[c] = 100*float64(c+1), 0.5+float64(c)
				}
			}
			e, err := explain.New(m, tc.channels)
			if err != nil {
				t.Fatal(err)
			}
			src := datasettest.Sines(5, tc.cfg.Lookback, tc.cfg.Horizon, tc.channels, 3)
			x := make([]float64, 0, 5*tc.cfg.Lookback*tc.channels)
			for i := range 5 {
				for _, v := range src.Input(i) {
					x = append(x, 1000+250*v) // far from the training scale
				}
			}
			y := e.Forecast(x, nil)
			HC := tc.cfg.Horizon * tc.channels
			var ex *explain.Explanation
			for i := range 5 {
				ex = e.Explain(i, ex)
				share := ex.ResidualShare
				for j := range HC {
					sum := ex.Residual[j]
					for _, c := range ex.Contributions {
						sum += c.Values[j]
					}
					if d := math.Abs(sum - ex.Forecast[j]); d > 1e-9*math.Abs(ex.Forecast[j]) {
						t.Fatalf("window %d value %d: residual + contributions = %v, forecast %v", i, j, sum, ex.Forecast[j])
					}
					if d := math.Abs(ex.Forecast[j] - y[i*HC+j]); d > 1e-9*math.Abs(y[i*HC+j]) {
						t.Fatalf("window %d value %d: Explain says %v, Forecast said %v", i, j, ex.Forecast[j], y[i*HC+j])
					}
				}
				for k, c := range ex.Contributions {
					share += c.Share
					if k > 0 && c.Share > ex.Contributions[k-1].Share {
						t.Errorf("contributions not ordered by share")
					}
				}
				if math.Abs(share-1) > 1e-12 {
					t.Errorf("shares sum to %v, want 1", share)
				}
			}
		})
	}
}

// TestExplainerIndependentMatchesSingleChannel: an independent model's
// forecast of field c equals forecasting that field's window alone.
func TestExplainerIndependentMatchesSingleChannel(t *testing.T) {
	cfg := model.Config{Lookback: 16, Horizon: 4, Channels: 1, Mode: model.Independent, Hidden: 8, Frequencies: 6, TopK: 2}
	m := modeltest.RandomModel(t, cfg, 5)
	e, _ := explain.New(m, 3)
	src := datasettest.Sines(1, 16, 4, 3, 9)
	y := append([]float64(nil), e.Forecast(src.Input(0), nil)...)
	for c := range 3 {
		one := make([]float64, 16)
		for t := range 16 {
			one[t] = src.Input(0)[t*3+c]
		}
		alone := m.Forward(m.NewWorkspace(1), nil, one, nil)
		for h := range 4 {
			if y[h*3+c] != alone[h] {
				t.Fatalf("field %d step %d: %v in the 3-field window, %v alone", c, h, y[h*3+c], alone[h])
			}
		}
	}
}

func TestExplainerAllocatesNothing(t *testing.T) {
	m := modeltest.RandomModel(t, model.Config{Horizon: 96, Channels: 1, Mode: model.Independent}, 2)
	e, _ := explain.New(m, 2)
	x, _ := modeltest.RandomBatch(model.Config{Lookback: 96, Horizon: 96, Channels: 2}, 8, 3)
	e.Forecast(x, nil)
	ex := e.Explain(7, nil)
	if allocs := testing.AllocsPerRun(10, func() {
		e.Forecast(x, nil)
		for i := range 8 {
			ex = e.Explain(i, ex)
		}
	}); allocs != 0 {
		t.Errorf("Forecast + Explain allocate %v times per batch, want 0", allocs)
	}
}

func TestExplainerRejectsWrongWidth(t *testing.T) {
	m, _ := model.New(model.Config{Horizon: 4, Channels: 3}, 1)
	if _, err := explain.New(m, 2); err == nil {
		t.Error("a 3-channel mixed model accepted 2-field windows")
	}
}

// TestExplainIntoMatchesExplain: explanations written into storage the
// caller hands out (filled with garbage, as a reused arena is) equal
// Explain's bit for bit, and a later explanation never writes into an
// earlier one's storage.
func TestExplainIntoMatchesExplain(t *testing.T) {
	for _, tc := range fullConfigs {
		t.Run(tc.name, func(t *testing.T) {
			m := caseModel(t, tc.cfg, tc.rhythms, tc.clock, 21)
			C := m.Channels()
			const n = 5
			x, _ := modeltest.RandomBatch(m.Config(), n, 22)
			ends := make([]int64, n)
			for i := range ends {
				ends[i] = int64(i+1) * 3600e9
			}
			a, _ := explain.New(m, C)
			b, _ := explain.New(m, C)
			a.Forecast(x, ends)
			b.Forecast(x, ends)
			var arena []float64
			alloc := func(k int) []float64 {
				s := make([]float64, k)
				for i := range s {
					s[i] = math.NaN()
				}
				arena = append(arena, s...) // the test's record, not storage
				return s
			}
			var want, got *explain.Explanation
			var kept [][]float64 // every slice ExplainInto returned so far, and a copy
			var copies [][]float64
			for i := range n {
				want = a.Explain(i, want)
				got = b.ExplainInto(i, got, alloc)
				same := func(what string, w, g []float64) {
					t.Helper()
					if len(w) != len(g) {
						t.Fatalf("window %d %s: %d numbers, want %d", i, what, len(g), len(w))
					}
					for j := range w {
						if math.Float64bits(w[j]) != math.Float64bits(g[j]) {
							t.Fatalf("window %d %s[%d] = %v, Explain says %v", i, what, j, g[j], w[j])
						}
					}
					kept = append(kept, g)
					copies = append(copies, append([]float64(nil), g...))
				}
				same("forecast", want.Forecast, got.Forecast)
				same("residual", want.Residual, got.Residual)
				if len(want.Contributions) != len(got.Contributions) || len(want.Rhythms) != len(got.Rhythms) {
					t.Fatalf("window %d: %d contributions and %d rhythms, want %d and %d", i,
						len(got.Contributions), len(got.Rhythms), len(want.Contributions), len(want.Rhythms))
				}
				for k := range want.Contributions {
					same("contribution", want.Contributions[k].Values, got.Contributions[k].Values)
				}
				for r := range want.Rhythms {
					same("rhythm", want.Rhythms[r].Values, got.Rhythms[r].Values)
				}
			}
			for k := range kept {
				for j := range kept[k] {
					if math.Float64bits(kept[k][j]) != math.Float64bits(copies[k][j]) {
						t.Fatalf("a later explanation wrote into an earlier one's numbers")
					}
				}
			}
			if len(arena) == 0 {
				t.Fatal("ExplainInto took nothing from alloc")
			}
		})
	}
}

// TestExplainKeepsEarlierExplanations: explanations into different dsts
// share no storage, so a later one never changes an earlier one's numbers,
// even after a dst's storage was reused; into the same dst, Explain
// allocates nothing once warm.
func TestExplainKeepsEarlierExplanations(t *testing.T) {
	for _, tc := range fullConfigs {
		t.Run(tc.name, func(t *testing.T) {
			m := caseModel(t, tc.cfg, tc.rhythms, tc.clock, 23)
			const n = 4
			x, _ := modeltest.RandomBatch(m.Config(), n, 24)
			ends := make([]int64, n)
			for i := range ends {
				ends[i] = int64(i+1) * 3600e9
			}
			ex, _ := explain.New(m, m.Channels())
			ex.Forecast(x, ends)
			numbers := func(e *explain.Explanation) []float64 {
				out := append(append([]float64(nil), e.Forecast...), e.Residual...)
				for _, c := range e.Contributions {
					out = append(out, c.Values...)
				}
				return out
			}
			var kept [n]*explain.Explanation
			var want [n][]float64
			for i := range n {
				kept[i] = ex.Explain(i, nil)
				want[i] = numbers(kept[i])
			}
			// kept[1] is reused for window 0; then more explanations into
			// dsts of their own.
			kept[1] = ex.Explain(0, kept[1])
			want[1] = want[0]
			for i := range 2 * n {
				ex.Explain(i%n, new(explain.Explanation))
			}
			for i := range n {
				sameBits := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
				if got := numbers(kept[i]); !slices.EqualFunc(got, want[i], sameBits) {
					t.Fatalf("a later explanation changed the numbers of the one in dst %d", i)
				}
			}
			dst := ex.Explain(0, nil)
			if allocs := testing.AllocsPerRun(20, func() { ex.Explain(1, dst) }); allocs != 0 {
				t.Errorf("Explain into a warm dst allocates %v times", allocs)
			}
		})
	}
}

// fullConfigs are the default shapes for both modes (model's tests have the
// same).
var fullConfigs = []struct {
	name           string
	cfg            model.Config
	rhythms, clock bool
}{
	{"mixed C=7 H=96, rhythms and clock", model.Config{Horizon: 96, Channels: 7}, true, true},
	{"mixed C=3 H=192 no norm", model.Config{Horizon: 192, Channels: 3, Norm: model.NormNone}, false, false},
	{"independent H=96, rhythms and clock", model.Config{Horizon: 96, Channels: 1, Mode: model.Independent}, true, true},
}

// caseModel returns a random model of cfg, with rhythms (and the clock)
// when asked.
func caseModel(t testing.TB, cfg model.Config, rhythms, clock bool, seed uint64) *model.Model {
	t.Helper()
	m := modeltest.RandomModel(t, cfg, seed)
	if rhythms {
		modeltest.WithRhythms(m, clock)
	}
	return m
}
