package measure

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/dataset/datasettest"
	"github.com/freqlens/freqlens/internal/modeltest"
	"github.com/freqlens/freqlens/model"
)

// TestEvaluateScoresEachGroup: each group's errors are the errors of
// evaluating its windows alone, for a mixed model and for an independent
// one serving every channel, with groups of random sizes (one empty), and
// the groups' errors weighted by their windows give the overall error.
func TestEvaluateScoresEachGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  model.Config
		C    int
	}{
		{"mixed", model.Config{Lookback: 24, Horizon: 6, Channels: 3, Hidden: 8, Frequencies: 6, TopK: 3}, 3},
		{"independent serving 3 channels", model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 8, Frequencies: 6, TopK: 3}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := modeltest.RandomModel(t, tc.cfg, 4)
			src := datasettest.Sines(97, tc.cfg.Lookback, tc.cfg.Horizon, tc.C, 5)
			rng := rand.New(rand.NewPCG(6, 7))
			const G = 5 // group 3 gets no window
			groups := make([]int, src.Len())
			members := make([][]int, G)
			for i := range groups {
				g := rng.IntN(G - 1)
				if g == 3 {
					g = 4
				}
				groups[i] = g
				members[g] = append(members[g], i)
			}
			met, err := Evaluate(context.Background(), m, src, Options{BatchSize: 10, Groups: groups})
			if err != nil {
				t.Fatal(err)
			}
			if len(met.GroupMSE) != G {
				t.Fatalf("%d groups scored, want %d", len(met.GroupMSE), G)
			}
			weighted := 0.0
			for g := range G {
				if met.GroupWindows[g] != len(members[g]) {
					t.Errorf("group %d: %d windows, want %d", g, met.GroupWindows[g], len(members[g]))
				}
				if len(members[g]) == 0 {
					if met.GroupMSE[g] != 0 {
						t.Errorf("empty group %d: MSE %v, want 0", g, met.GroupMSE[g])
					}
					continue
				}
				alone, err := Evaluate(context.Background(), m, pickSource{src, members[g]}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(met.GroupMSE[g] - alone.MSE); d > 1e-12*alone.MSE {
					t.Errorf("group %d: MSE %v, its windows alone %v", g, met.GroupMSE[g], alone.MSE)
				}
				if d := math.Abs(met.GroupMAE[g] - alone.MAE); d > 1e-12*alone.MAE {
					t.Errorf("group %d: MAE %v, its windows alone %v", g, met.GroupMAE[g], alone.MAE)
				}
				weighted += met.GroupMSE[g] * float64(met.GroupWindows[g])
			}
			if d := math.Abs(weighted/float64(src.Len()) - met.MSE); d > 1e-12*met.MSE {
				t.Errorf("groups' MSE weighted by windows %v, overall %v", weighted/float64(src.Len()), met.MSE)
			}
			if _, err := Evaluate(context.Background(), m, src, Options{Groups: groups[1:]}); err == nil {
				t.Error("Evaluate with one group too few = nil error")
			}
			bad := slices.Clone(groups)
			bad[0] = len(groups) // more groups than windows
			if _, err := Evaluate(context.Background(), m, src, Options{Groups: bad}); err == nil {
				t.Error("Evaluate with a group beyond the windows = nil error")
			}
			if _, err := Evaluate(context.Background(), m, pickSource{src, nil}, Options{Groups: []int{}}); err != nil {
				t.Errorf("Evaluate of no windows in no groups: %v", err)
			}
		})
	}
}

func TestIndependentModelServesEveryChannel(t *testing.T) {
	m, _ := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 8, Frequencies: 6, TopK: 2}, 1)
	src := datasettest.Sines(30, 24, 6, 3, 4)
	met, err := Evaluate(context.Background(), m, src, Options{BatchSize: 7, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if met.Channels != 3 || len(met.PerChannelMSE) != 3 || met.Windows != 30 {
		t.Fatalf("metrics = %+v, want 30 windows × 3 channels", met)
	}
	// Channel 0's score equals scoring a one-channel source of it alone.
	one := datasettest.Slices{N: 30, L: 24, H: 6, C: 1, X: make([]float64, 30*24), Y: make([]float64, 30*6)}
	for i := range 30 {
		for t := range 24 {
			one.X[i*24+t] = src.Input(i)[t*3]
		}
		for t := range 6 {
			one.Y[i*6+t] = src.Target(i)[t*3]
		}
	}
	alone, _ := Evaluate(context.Background(), m, one, Options{})
	if !close(alone.MSE, met.PerChannelMSE[0], 1e-12) {
		t.Errorf("channel 0 MSE %v within the 3-channel source, %v alone", met.PerChannelMSE[0], alone.MSE)
	}
	mixed, _ := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 2}, 1)
	if _, err := Evaluate(context.Background(), mixed, src, Options{}); err == nil || !strings.Contains(err.Error(), "3 channels") {
		t.Errorf("a 2-channel mixed model on 3-channel data: error %v, want one naming the channel counts", err)
	}
}

// TestEvaluateSharesAreTheAttributions: the mean shares Evaluate reports
// (the model file's, which inspect and the reports print) are the mean of
// the served attributions' shares, rhythm by rhythm and frequency by
// frequency, on a model whose rhythms' lines partly cancel.
func TestEvaluateSharesAreTheAttributions(t *testing.T) {
	m, w := trainedTimedModel(t, 1)
	t.Run("UTC", func(t *testing.T) { checkEvaluateShares(t, m, w) })
	// With a time zone, windows around a change of its offset: those read
	// on wall-clock steps count their parts put back on the real steps.
	berlin := m.Clone()
	if err := berlin.SetTimeZone("Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	t.Run("time zone, around a change", func(t *testing.T) {
		checkEvaluateShares(t, berlin, &movedEnds{w, time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC).Add(-30 * time.Hour)})
	})
}

// movedEnds is w with its windows' ends moved to an hour apart from start:
// the readings stay, the times put them where the test wants them.
type movedEnds struct {
	*dataset.Windows
	start time.Time
}

func (m *movedEnds) EndTime(i int) (int64, bool) {
	return m.start.Add(time.Duration(i) * time.Hour).UnixNano(), true
}

// checkEvaluateShares checks that Evaluate's shares of m on w are the mean
// of the attributions Forward gives.
func checkEvaluateShares(t *testing.T, m *model.Model, w model.TimedSource) {
	met, err := Evaluate(context.Background(), m, w, Options{BatchSize: 37})
	if err != nil {
		t.Fatal(err)
	}
	N, R, L, S := m.Config().Frequencies, len(m.Meta.Rhythms), m.Lookback(), w.Channels()
	shares, rhythms, residual := make([]float64, N), make([]float64, R), 0.0
	ws := m.NewWorkspace(S)
	x, ends := make([]float64, S*L), make([]int64, S)
	var a *model.Attribution
	cancel := 0.0 // Σ over windows of the lines' shares less the rhythms'
	for j := range w.Len() {
		in := w.Input(j)
		end, _ := w.EndTime(j)
		for c := range S {
			for t := range L {
				x[c*L+t] = in[t*S+c]
			}
			ends[c] = end
		}
		m.Forward(ws, nil, x, ends)
		for c := range S {
			a = ws.Attribution(c, a)
			for _, ct := range a.Contributions {
				shares[ct.ID] += ct.Share
				if _, ok := m.RhythmOf(ct.ID); ok {
					cancel += ct.Share
				}
			}
			for r, v := range a.RhythmShares {
				rhythms[r] += v
				cancel -= v
			}
			residual += a.ResidualShare
		}
	}
	n := float64(w.Len() * S)
	for f := range N {
		if d := math.Abs(met.Shares[f] - shares[f]/n); d > 1e-9 {
			t.Errorf("frequency %d: Evaluate's share %v, the attributions' mean %v", f, met.Shares[f], shares[f]/n)
		}
	}
	if len(met.RhythmShares) != R {
		t.Fatalf("Evaluate gives %d rhythm shares for %d rhythms", len(met.RhythmShares), R)
	}
	for r := range R {
		if d := math.Abs(met.RhythmShares[r] - rhythms[r]/n); d > 1e-9 {
			t.Errorf("rhythm %d: Evaluate's share %v, the attributions' mean %v", r, met.RhythmShares[r], rhythms[r]/n)
		}
	}
	if d := math.Abs(met.ResidualShare - residual/n); d > 1e-9 {
		t.Errorf("residual: Evaluate's share %v, the attributions' mean %v", met.ResidualShare, residual/n)
	}
	if cancel/n < 1e-3 {
		t.Errorf("the rhythms' lines cancel %.2g of the attribution on average: the case does not tell a rhythm's share from its lines' sum", cancel/n)
	}
}

// TestEvaluatorScoresTheAverage: an Evaluator run inside the Stepper's
// WithAveraged (as package training validates) scores the moving average
// of the parameters, exactly as Evaluate of a model holding them does,
// leaves the model's own as they were, and reusing its workspaces over
// calls on a model whose parameters changed scores as a fresh one.
func TestEvaluatorScoresTheAverage(t *testing.T) {
	cfg := model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 8, Frequencies: 6, TopK: 2}
	src := datasettest.Sines(64, 24, 6, 1, 3)
	m, _ := model.New(cfg, 2)
	sc := trainingStep(16, 0)
	sc.EMA = 0.5
	st, err := m.NewStepper(src, sc, rand.New(rand.NewPCG(4, 5)))
	if err != nil {
		t.Fatal(err)
	}
	ev := NewEvaluator(m, Options{Workers: 2})
	for round := range 2 {
		for s := range 3 {
			if _, err := st.Step([]int{s, s + 10, s + 20, s + 30}, 1e-2, 0.5); err != nil {
				t.Fatal(err)
			}
		}
		live := slices.Clone(m.Params().Data)
		if slices.Equal(st.Averaged(), live) {
			t.Fatal("the moving average equals the parameters after three steps")
		}
		var got model.Metrics
		err = st.WithAveraged(func() error {
			var err error
			got, err = ev.Evaluate(context.Background(), src)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.Params().Data, live) {
			t.Error("WithAveraged changed the model's parameters")
		}
		avg := m.Clone()
		copy(avg.Params().Data, st.Averaged())
		avg.Refresh()
		want, err := Evaluate(context.Background(), avg, src, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got.MSE != want.MSE {
			t.Errorf("round %d: the Evaluator inside WithAveraged scores MSE %v, the moving average %v", round, got.MSE, want.MSE)
		}
		got.Seconds, got.WindowsPerSecond, want.Seconds, want.WindowsPerSecond = 0, 0, 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round %d: the reused Evaluator's metrics %+v, a fresh Evaluate's %+v", round, got, want)
		}
	}
}
