package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/internal/scratch"
)

// The paper's four axioms of an attribution, checked on the model as it
// serves: Completeness (the parts add up to the forecast), Faithfulness
// (removing frequency f moves the forecast by exactly its part, and
// removing a rhythm by the sum of its frequencies' parts), Null-Frequency
// (a frequency that adds nothing gets nothing) and Symmetry (twin
// frequencies get the same). With them each part is the frequency's
// Shapley value in the game "forecast with this set of frequencies".

// caseModel returns a random model of cfg, with rhythms (and a cadence, so
// that it reads the time, when clock is set).
func caseModel(t testing.TB, cfg Config, rhythms, clock bool, seed uint64) *Model {
	t.Helper()
	m := randomModel(t, cfg, seed)
	if rhythms {
		withRhythms(m, clock)
	}
	return m
}

// windowEnds returns n window end times an hour apart in 2026 (random
// minutes off the hour), or nil for a model that does not read the time.
func windowEnds(m *Model, n int, seed uint64) []int64 {
	if !m.ReadsTime() {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	ends := make([]int64, n)
	for i := range ends {
		ends[i] = start + int64(rng.IntN(5000))*int64(time.Hour) + int64(rng.IntN(60))*int64(time.Minute)
	}
	return ends
}

// axiomCase is a model with windows to explain.
type axiomCase struct {
	name string
	m    *Model
	x    []float64
	ends []int64
	n    int
}

// axiomCases are random models of every shape (both modes, both
// normalisations, with and without rhythms and the time) on random
// windows, and small models trained on timed synthetic feeds.
func axiomCases(t *testing.T) []axiomCase {
	t.Helper()
	var out []axiomCase
	for seed := range uint64(3) {
		for _, tc := range fullConfigs {
			m := caseModel(t, tc.cfg, tc.rhythms, tc.clock, seed)
			x, _ := randomBatch(m.cfg, 6, seed+100)
			out = append(out, axiomCase{tc.name, m, x, windowEnds(m, 6, seed), 6})
		}
		for i, tc := range smallConfigs {
			m := smallModel(t, i, seed)
			x, _ := randomBatch(m.cfg, 9, seed+100)
			out = append(out, axiomCase{tc.name, m, x, windowEnds(m, 9, seed), 9})
		}
	}
	for seed := range uint64(2) {
		// A time zone, and windows whose steps straddle a change of its
		// offset: read and forecast on wall-clock steps, the parts put back
		// on real ones.
		for _, tc := range []int{0, 2} {
			m := caseModel(t, fullConfigs[tc].cfg, true, true, seed)
			if err := m.SetTimeZone("Europe/Berlin"); err != nil {
				t.Fatal(err)
			}
			x, _ := randomBatch(m.cfg, 6, seed+200)
			rng := rand.New(rand.NewPCG(seed, 9))
			ends := make([]int64, 6)
			for i := range ends {
				change := []time.Time{time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)}[i%2]
				ends[i] = change.Add(time.Duration(rng.IntN(m.cfg.Lookback+m.cfg.Horizon)-m.cfg.Horizon) * time.Hour).UnixNano()
			}
			out = append(out, axiomCase{fullConfigs[tc].name + ", time zone, straddling a change of offset", m, x, ends, 6})
		}
	}
	for _, seed := range []uint64{1, 2} {
		m, w := trainedTimedModel(t, seed)
		n := 12
		x := make([]float64, 0, n*m.Lookback())
		var ends []int64
		S := w.Channels()
		for i := range n {
			// Window j of series i%S: the independent model forecasts one
			// series at a time.
			j := i * (w.Len() - 1) / (n - 1)
			in := w.Input(j)
			for t := range m.Lookback() {
				x = append(x, in[t*S+i%S])
			}
			e, _ := w.EndTime(j)
			ends = append(ends, e)
		}
		out = append(out, axiomCase{"trained on a timed feed", m, x, ends, n})
	}
	return out
}

// trainedTimedModel trains a small independent model for a few epochs on a
// timed feed with a daily and a weekly rhythm and returns it with its test
// windows.
func trainedTimedModel(t *testing.T, seed uint64) (*Model, *dataset.Windows) {
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
	m, err := New(Config{Lookback: 48, Horizon: 24, Channels: 1, Mode: Independent, Hidden: 16, HeadHidden: 16, Frequencies: 16, TopK: 4}, seed)
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

// partsOf returns the forecast and each frequency's part (by id) of window
// i of the last pass.
func partsOf(ws *Workspace, i int) (forecast []float64, byID map[int][]float64, residual []float64) {
	a := ws.Attribution(i, nil)
	byID = map[int][]float64{}
	for _, c := range a.Contributions {
		byID[c.ID] = slices.Clone(c.Values)
	}
	return slices.Clone(a.Forecast), byID, slices.Clone(a.Residual)
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(x))
	}
	return m
}

func TestCompleteness(t *testing.T) {
	for _, ac := range axiomCases(t) {
		t.Run(ac.name, func(t *testing.T) {
			m := ac.m
			ws := m.NewWorkspace(ac.n)
			y := m.Forward(ws, nil, ac.x, ac.ends)
			HC := m.cfg.Horizon * m.cfg.Channels
			var a *Attribution
			for i := range ac.n {
				a = ws.Attribution(i, a)
				scale := maxAbs(y[i*HC : (i+1)*HC])
				share := 0.0
				seen := map[int]bool{}
				for _, c := range a.Contributions {
					if seen[c.ID] {
						t.Fatalf("frequency %d has two parts", c.ID)
					}
					seen[c.ID] = true
					share += c.Share
				}
				for j := range HC {
					sum := a.Residual[j]
					for _, c := range a.Contributions {
						sum += c.Values[j]
					}
					if d := math.Abs(sum - y[i*HC+j]); d > 1e-9*scale {
						t.Fatalf("window %d value %d: parts sum to %.17g, forecast %.17g (|diff| %.3g > 1e-9 × %.3g)", i, j, sum, y[i*HC+j], d, scale)
					}
					if a.Forecast[j] != y[i*HC+j] {
						t.Fatalf("Attribution.Forecast[%d] = %v, Forward gave %v", j, a.Forecast[j], y[i*HC+j])
					}
				}
				checkCycleShares(t, m, a, i)
				if len(m.Meta.Rhythms) == 0 && math.Abs(share+a.ResidualShare-1) > 1e-12 {
					t.Errorf("window %d: with no rhythms the shares sum to %v, want 1", i, share+a.ResidualShare)
				}
				picked := map[int]bool{}
				for _, c := range a.Contributions {
					picked[c.ID] = true
				}
				for _, r := range m.Meta.Rhythms {
					for _, id := range r.Frequencies {
						if !picked[id] {
							t.Errorf("window %d: rhythm frequency %d is not selected", i, id)
						}
					}
				}
				if want := m.cfg.slots(); len(picked) != want || len(a.Contributions) != want {
					t.Errorf("window %d: %d contributions of %d frequencies, want %d (K = %d and %d of the rhythms)", i, len(a.Contributions), len(picked), want, m.cfg.TopK, m.cfg.rhythmSlots)
				}
			}
		})
	}
}

// removalGap returns the largest |(forecast − forecast without ids) − Σ
// parts of ids| over the windows, relative to the forecast's scale.
func removalGap(m *Model, x []float64, ends []int64, n int, ids func(i int) []int) float64 {
	return skewedRemovalGap(m, x, ends, n, ids, 0)
}

// skewedRemovalGap is removalGap against parts that are each 1 + skew
// times what the attribution says: a skew other than 0 is an attribution
// that credits a frequency with more or less than removing it takes away.
func skewedRemovalGap(m *Model, x []float64, ends []int64, n int, ids func(i int) []int, skew float64) float64 {
	ws, wo := m.NewWorkspace(n), m.NewWorkspace(1)
	y := slices.Clone(m.Forward(ws, nil, x, ends))
	HC, LC := m.cfg.Horizon*m.cfg.Channels, m.cfg.Lookback*m.cfg.Channels
	worst := 0.0
	for i := range n {
		_, byID, _ := partsOf(ws, i)
		rm := ids(i)
		wo.Without(rm...)
		var e []int64
		if ends != nil {
			e = ends[i : i+1]
		}
		without := m.Forward(wo, nil, x[i*LC:(i+1)*LC], e)
		scale := max(maxAbs(y[i*HC:(i+1)*HC]), 1e-12)
		for j := range HC {
			want := 0.0
			for _, id := range rm {
				if v, ok := byID[id]; ok {
					want += (1 + skew) * v[j]
				}
			}
			got := y[i*HC+j] - without[j]
			worst = max(worst, math.Abs(got-want)/scale)
		}
	}
	return worst
}

// checkCycleShares checks window i's shares against the definition at the
// level of cycles, recounted here from the values: each rhythm counts by
// Σ|its summed part|, each free frequency and the residual by Σ|part|, and
// these shares sum to 1.
func checkCycleShares(t *testing.T, m *Model, a *Attribution, i int) {
	t.Helper()
	R := len(m.Meta.Rhythms)
	if len(a.RhythmShares) != R {
		t.Fatalf("window %d: %d rhythm shares for %d rhythms", i, len(a.RhythmShares), R)
	}
	HC := len(a.Forecast)
	C := len(a.Level)
	sums := make([][]float64, R)
	for r := range sums {
		sums[r] = make([]float64, HC)
	}
	res := 0.0
	for j := range HC {
		res += math.Abs(a.Residual[j] - a.Level[j%C])
	}
	total, free := res, map[int]float64{}
	for _, c := range a.Contributions {
		r, ok := m.RhythmOf(c.ID)
		if !ok {
			free[c.ID] = scratch.AbsSum(c.Values)
			total += free[c.ID]
			continue
		}
		for j, v := range c.Values {
			sums[r][j] += v
		}
	}
	want := make([]float64, R)
	for r := range R {
		want[r] = scratch.AbsSum(sums[r])
		total += want[r]
	}
	if total == 0 {
		return
	}
	close := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("window %d: %s share %v, recounted %v", i, what, got, want)
		}
	}
	sum := a.ResidualShare
	close("residual", a.ResidualShare, res/total)
	for r := range R {
		close(fmt.Sprintf("rhythm %d", r), a.RhythmShares[r], want[r]/total)
		sum += a.RhythmShares[r]
	}
	for _, c := range a.Contributions {
		close(fmt.Sprintf("frequency %d", c.ID), c.Share, scratch.AbsSum(c.Values)/total)
		if _, ok := free[c.ID]; ok {
			sum += c.Share
		}
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("window %d: rhythms, free frequencies and residual share %v, want 1", i, sum)
	}
}

func TestFaithfulness(t *testing.T) {
	for _, ac := range axiomCases(t) {
		t.Run(ac.name, func(t *testing.T) {
			m := ac.m
			ws := m.NewWorkspace(ac.n)
			m.Forward(ws, nil, ac.x, ac.ends)
			// Every frequency with a part, one at a time.
			for i := range ac.n {
				_, byID, _ := partsOf(ws, i)
				for id := range byID {
					one := func(int) []int { return []int{id} }
					x, e := ac.x[i*m.cfg.Lookback*m.cfg.Channels:][:m.cfg.Lookback*m.cfg.Channels], ac.ends
					if e != nil {
						e = e[i : i+1]
					}
					if gap := removalGap(m, x, e, 1, one); gap > 1e-9 {
						t.Fatalf("window %d: removing frequency %d moves the forecast by its part ± %.3g of the forecast's scale (> 1e-9)", i, id, gap)
					}
				}
			}
			// Every rhythm at once, and a free frequency with it.
			for r, rh := range m.Meta.Rhythms {
				if gap := removalGap(m, ac.x, ac.ends, ac.n, func(int) []int { return rh.Frequencies }); gap > 1e-9 {
					t.Errorf("removing rhythm %d (period %.2f) moves the forecast by the sum of its parts ± %.3g (> 1e-9)", r, rh.PeriodSteps, gap)
				}
			}
			if gap := removalGap(m, ac.x, ac.ends, ac.n, func(int) []int { return []int{0, 1, m.cfg.Frequencies - 1} }); gap > 1e-9 {
				t.Errorf("removing three frequencies moves the forecast by the sum of their parts ± %.3g (> 1e-9)", gap)
			}
		})
	}
}

// TestFaithfulnessCatchesAMisattribution: the removal test above can
// fail: parts that are 1% off what removing the frequencies takes away
// (an attribution that credits part of the residual, or of another
// frequency, to the removed ones) leave a gap far above its 1e-9.
func TestFaithfulnessCatchesAMisattribution(t *testing.T) {
	for _, tc := range fullConfigs {
		t.Run(tc.name, func(t *testing.T) {
			m := caseModel(t, tc.cfg, tc.rhythms, tc.clock, 5)
			x, _ := randomBatch(m.cfg, 4, 6)
			ends := windowEnds(m, 4, 5)
			ws := m.NewWorkspace(4)
			m.Forward(ws, nil, x, ends)
			K := m.cfg.slots()
			top := func(i int) []int { return []int{int(ws.sel[i*K])} }
			if gap := skewedRemovalGap(m, x, ends, 4, top, 0.01); gap < 1e-6 {
				t.Fatalf("parts 1%% off the removal leave a gap of %.3g: the faithfulness test could not fail", gap)
			}
		})
	}
}

// TestNullFrequency: a frequency that adds nothing to any forecast gets
// nothing. A head's output layer, clock coefficients and band head of zero
// make frequency f a null player; and a frequency without a clock term whose
// coefficients are zero (a constant window, no input bias) contributes
// exactly zero because its head has no bias.
func TestNullFrequency(t *testing.T) {
	for _, tc := range fullConfigs {
		t.Run(tc.name+", null head and clock", func(t *testing.T) {
			m := caseModel(t, tc.cfg, tc.rhythms, tc.clock, 3)
			c := m.cfg
			E, HC, C := c.HeadHidden, c.Horizon*c.Channels, c.Channels
			for _, f := range []int{0, 2, 5} { // rhythm frequencies (with rhythms) and a free one
				clear(m.params.HeadW2[f*E*HC : (f+1)*E*HC])
				clear(m.params.Clock[2*f*C : (2*f+2)*C])
				if len(m.params.Band) > 0 {
					clear(m.params.Band[2*f*c.Horizon : (2*f+2)*c.Horizon])
				}
				m.params.FreqBias[f] = 50 // selected in every window
			}
			x, _ := randomBatch(c, 5, 4)
			ends := windowEnds(m, 5, 5)
			ws := m.NewWorkspace(5)
			m.Forward(ws, nil, x, ends)
			for i := range 5 {
				_, byID, _ := partsOf(ws, i)
				for _, f := range []int{0, 2, 5} {
					if v := maxAbs(byID[f]); v != 0 {
						t.Fatalf("window %d: null frequency %d contributes up to %v", i, f, v)
					}
				}
			}
			if gap := removalGap(m, x, ends, 5, func(int) []int { return []int{0, 2, 5} }); gap > 1e-12 {
				t.Errorf("removing null frequencies moved the forecast (%.3g)", gap)
			}
		})
		t.Run(tc.name+", zero coefficients", func(t *testing.T) {
			m := randomModel(t, tc.cfg, 3)
			clear(m.params.InB)
			L, C := m.cfg.Lookback, m.cfg.Channels
			x := make([]float64, L*C)
			for i := range x {
				x[i] = float64(i%C) - 1.5 // each channel constant
			}
			if m.cfg.Norm == NormNone {
				clear(x)
			}
			ws := m.NewWorkspace(1)
			y := m.Forward(ws, nil, x, nil)
			a := ws.Attribution(0, nil)
			for _, c := range a.Contributions {
				if v := maxAbs(c.Values); v != 0 {
					t.Fatalf("frequency %d contributes %v with zero coefficients", c.ID, v)
				}
			}
			for j := range y {
				if y[j] != a.Residual[j] {
					t.Fatalf("forecast[%d] = %v, residual %v: they must be equal when all contributions are zero", j, y[j], a.Residual[j])
				}
			}
		})
	}
}

// TestSymmetry: two frequencies with the same θ, φ, prior, head, clock
// coefficients and band head, both of the same rhythm or both free, get the same part.
func TestSymmetry(t *testing.T) {
	for _, tc := range fullConfigs {
		t.Run(tc.name, func(t *testing.T) {
			m := caseModel(t, tc.cfg, tc.rhythms, tc.clock, 8)
			p, c := m.params, m.cfg
			i, j := 6, 9 // free frequencies
			if tc.rhythms {
				// Twins in one rhythm: two frequencies on the same harmonic.
				rs := cycles.CloneRhythms(m.Meta.Rhythms)
				rs[0].Frequencies = append(rs[0].Frequencies, j)
				rs[0].Harmonics = append(rs[0].Harmonics, rs[0].Harmonics[0])
				i = rs[0].Frequencies[0]
				m.SetRhythms(rs)
			}
			p.Theta[j], p.Phi[j] = p.Theta[i], p.Phi[i]
			p.FreqBias[i], p.FreqBias[j] = 50, 50 // both always selected
			D, E, HC, C := 2*c.Hidden, c.HeadHidden, c.Horizon*c.Channels, c.Channels
			copy(p.HeadW1[j*D*E:(j+1)*D*E], p.HeadW1[i*D*E:(i+1)*D*E])
			copy(p.HeadW2[j*E*HC:(j+1)*E*HC], p.HeadW2[i*E*HC:(i+1)*E*HC])
			copy(p.Clock[2*j*C:(2*j+2)*C], p.Clock[2*i*C:(2*i+2)*C])
			if H := c.Horizon; len(p.Band) > 0 {
				copy(p.Band[2*j*H:(2*j+2)*H], p.Band[2*i*H:(2*i+2)*H])
			}
			m.refresh()
			x, _ := randomBatch(c, 4, 9)
			ws := m.NewWorkspace(4)
			m.Forward(ws, nil, x, windowEnds(m, 4, 10))
			for w := range 4 {
				_, byID, _ := partsOf(ws, w)
				vi, vj := byID[i], byID[j]
				if vi == nil || vj == nil {
					t.Fatalf("window %d: the twins %d and %d do not both have a part", w, i, j)
				}
				if !slices.Equal(vi, vj) {
					t.Fatalf("window %d: twin frequencies contribute differently", w)
				}
			}
		})
	}
}
