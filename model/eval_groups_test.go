package model

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/dataset/datasettest"
)

// pickSource is the windows idx of src.
type pickSource struct {
	src Source
	idx []int
}

func (p pickSource) Len() int               { return len(p.idx) }
func (p pickSource) Channels() int          { return p.src.Channels() }
func (p pickSource) Input(i int) []float64  { return p.src.Input(p.idx[i]) }
func (p pickSource) Target(i int) []float64 { return p.src.Target(p.idx[i]) }

// TestEvaluateScoresEachGroup: each group's errors are the errors of
// evaluating its windows alone, for a mixed model and for an independent
// one serving every channel, with groups of random sizes (one empty), and
// the groups' errors weighted by their windows give the overall error.
func TestEvaluateScoresEachGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		C    int
	}{
		{"mixed", Config{Lookback: 24, Horizon: 6, Channels: 3, Hidden: 8, Frequencies: 6, TopK: 3}, 3},
		{"independent serving 3 channels", Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: Independent, Hidden: 8, Frequencies: 6, TopK: 3}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := randomModel(t, tc.cfg, 4)
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
			met, err := Evaluate(context.Background(), m, src, EvalOptions{BatchSize: 10, Groups: groups})
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
				alone, err := Evaluate(context.Background(), m, pickSource{src, members[g]}, EvalOptions{})
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
			if _, err := Evaluate(context.Background(), m, src, EvalOptions{Groups: groups[1:]}); err == nil {
				t.Error("Evaluate with one group too few = nil error")
			}
			bad := slices.Clone(groups)
			bad[0] = len(groups) // more groups than windows
			if _, err := Evaluate(context.Background(), m, src, EvalOptions{Groups: bad}); err == nil {
				t.Error("Evaluate with a group beyond the windows = nil error")
			}
			if _, err := Evaluate(context.Background(), m, pickSource{src, nil}, EvalOptions{Groups: []int{}}); err != nil {
				t.Errorf("Evaluate of no windows in no groups: %v", err)
			}
		})
	}
}
