package model

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
)

// smallConfigs are shapes small enough for finite differences over every
// parameter, covering both normalisations, both modes and odd sizes. Each
// model with rhythms has 4 rhythm frequencies (withRhythms) and, but for
// one, K above 4, so the other frequencies still compete for a place.
var smallConfigs = []struct {
	name string
	cfg  Config
	// rhythms gives the model rhythms (withRhythms); clock a cadence too,
	// so it reads the time.
	rhythms, clock bool
}{
	{"mixed instance-norm, rhythms and clock", Config{Lookback: 12, Horizon: 5, Channels: 2, Hidden: 4, Frequencies: 9, TopK: 6, ScorerHidden: 3, HeadHidden: 4, ResidualHidden: 5}, true, true},
	{"mixed no norm, rhythms without the time", Config{Lookback: 10, Horizon: 3, Channels: 3, Hidden: 5, Frequencies: 8, TopK: 5, ScorerHidden: 2, HeadHidden: 3, ResidualHidden: 4, Norm: NormNone}, true, false},
	{"independent, rhythms and clock", Config{Lookback: 16, Horizon: 7, Channels: 1, Hidden: 3, Frequencies: 10, TopK: 7, ScorerHidden: 4, HeadHidden: 5, ResidualHidden: 3, Mode: Independent}, true, true},
	{"independent, no rhythms", Config{Lookback: 16, Horizon: 7, Channels: 1, Hidden: 3, Frequencies: 7, TopK: 4, ScorerHidden: 4, HeadHidden: 5, ResidualHidden: 3, Mode: Independent}, false, false},
	{"mixed, no rhythms", Config{Lookback: 12, Horizon: 5, Channels: 2, Hidden: 4, Frequencies: 6, TopK: 3, ScorerHidden: 3, HeadHidden: 4, ResidualHidden: 5}, false, false},
	{"independent no norm, rhythms without the time", Config{Lookback: 16, Horizon: 7, Channels: 1, Hidden: 3, Frequencies: 10, TopK: 7, ScorerHidden: 4, HeadHidden: 5, ResidualHidden: 3, Mode: Independent, Norm: NormNone}, true, false},
	{"mixed, K below the rhythms' 4 frequencies (no place left to the others)", Config{Lookback: 12, Horizon: 5, Channels: 2, Hidden: 4, Frequencies: 9, TopK: 3, ScorerHidden: 3, HeadHidden: 4, ResidualHidden: 5}, true, true},
	{"mixed, channel mix, rhythms and clock", Config{Lookback: 12, Horizon: 5, Channels: 3, Hidden: 4, Frequencies: 9, TopK: 7, ScorerHidden: 4, HeadHidden: 4, ResidualHidden: 5, ChannelMix: true}, true, true},
	{"mixed no norm, channel mix, rhythms without the time", Config{Lookback: 10, Horizon: 3, Channels: 3, Hidden: 5, Frequencies: 8, TopK: 5, ScorerHidden: 2, HeadHidden: 3, ResidualHidden: 4, Norm: NormNone, ChannelMix: true}, true, false},
	{"mixed, channel mix, no rhythms", Config{Lookback: 12, Horizon: 5, Channels: 2, Hidden: 4, Frequencies: 6, TopK: 3, ScorerHidden: 3, HeadHidden: 4, ResidualHidden: 5, ChannelMix: true}, false, false},
}

// smallModel returns a random model of small config i with its rhythms.
func smallModel(t testing.TB, i int, seed uint64) *Model {
	sc := smallConfigs[i]
	m := randomModel(t, sc.cfg, seed)
	if sc.rhythms {
		withRhythms(m, sc.clock)
	}
	return m
}

func TestForwardMatchesReference(t *testing.T) {
	for i, tc := range smallConfigs {
		t.Run(tc.name, func(t *testing.T) {
			m := smallModel(t, i, 1)
			n := 5
			x, y := randomBatch(m.cfg, n, 2)
			noise := gumbel(n*m.cfg.Frequencies, 3)
			tr := newGradTrainer(t, m, x, y, noise, n, 0)
			got := tr.gradient(n, 0.7)
			fix := selectionOf(tr, n)
			want := refLoss(m.cfg, m.params, clockOf(m, tr.tau), x, y, n, noise, 0.7, fix, tr.cfg)
			sameSelection(t, fix, want)
			for i, v := range want.forecast {
				if !close(tr.out[i], v, 1e-12) {
					t.Fatalf("forecast[%d] = %.17g, reference %.17g", i, tr.out[i], v)
				}
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"mse", got.MSE, want.mse}, {"div", got.Div, want.div}, {"recon", got.Recon, want.recon},
				{"sparse", got.Sparse, want.sparse}, {"var", got.Var, want.vr}, {"total", got.Total, want.total},
			} {
				if !close(c.got, c.want, 1e-11) {
					t.Errorf("%s loss = %.17g, reference %.17g", c.name, c.got, c.want)
				}
			}
		})
	}
}

// TestGradientFiniteDifferences checks the hand-written backward pass for
// every parameter against central differences of the reference loss, with
// the selection held fixed (it is piecewise constant) and straight-through
// gates 1 + p − p̄.
func TestGradientFiniteDifferences(t *testing.T) {
	for i, tc := range smallConfigs {
		t.Run(tc.name, func(t *testing.T) {
			m := smallModel(t, i, 4)
			n := 6
			x, y := randomBatch(m.cfg, n, 5)
			noise := gumbel(n*m.cfg.Frequencies, 6)
			xIn, yIn := slices.Clone(x), slices.Clone(y)
			const tau = 0.5
			tr := newGradTrainer(t, m, x, y, noise, n, 0.3)
			tr.gradient(n, tau)
			got := slices.Clone(tr.ws.tr.grad.Data)
			fix := selectionOf(tr, n)

			p := m.params.clone(m.cfg)
			f := func(v []float64) float64 {
				copy(p.Data, v)
				return refLoss(m.cfg, p, clockOf(m, tr.tau), x, y, n, noise, tau, fix, tr.cfg).total
			}
			want := fd.Gradient(nil, f, slices.Clone(m.params.Data), &fd.Settings{Formula: fd.Central, Step: 1e-6})
			if !slices.Equal(x, xIn) || !slices.Equal(y, yIn) {
				t.Fatal("the gradient computation modified its inputs")
			}
			checkGradient(t, m.cfg, got, want, 1e-6)
		})
	}
}

// checkGradient compares two gradients tensor by tensor with a relative
// tolerance on each tensor's norm, and names the first tensor that differs.
func checkGradient(t *testing.T, cfg Config, got, want []float64, tol float64) {
	t.Helper()
	off := 0
	for _, ts := range tensors(cfg) {
		k := numel(ts.shape)
		g, w := got[off:off+k], want[off:off+k]
		off += k
		diff, norm := 0.0, 0.0
		worst, worstAt := 0.0, 0
		for i := range g {
			diff += (g[i] - w[i]) * (g[i] - w[i])
			norm += w[i] * w[i]
			if e := math.Abs(g[i] - w[i]); e > worst {
				worst, worstAt = e, i
			}
		}
		rel := math.Sqrt(diff) / math.Max(math.Sqrt(norm), 1e-12)
		if rel > tol {
			t.Errorf("%s: relative error %.3g > %.0g (worst element %d: got %.12g, want %.12g)",
				ts.name, rel, tol, worstAt, g[worstAt], w[worstAt])
		}
	}
}

func close(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
