package model

import (
	"slices"
	"strings"
	"testing"

	"github.com/freqlens/freqlens/cycles"
)

// fullConfigs are the default shapes for both modes.
var fullConfigs = []struct {
	name           string
	cfg            Config
	rhythms, clock bool
}{
	{"mixed C=7 H=96, rhythms and clock", Config{Horizon: 96, Channels: 7}, true, true},
	{"mixed C=3 H=192 no norm", Config{Horizon: 192, Channels: 3, Norm: NormNone}, false, false},
	{"independent H=96, rhythms and clock", Config{Horizon: 96, Channels: 1, Mode: Independent}, true, true},
	{"mixed C=7 H=96, channel mix, rhythms and clock", Config{Horizon: 96, Channels: 7, ChannelMix: true}, true, true},
}

// TestBatchMatchesSingle: a window's forecast does not depend on the other
// windows of its batch.
func TestBatchMatchesSingle(t *testing.T) {
	m := caseModel(t, fullConfigs[0].cfg, true, true, 10)
	n := 7
	x, _ := randomBatch(m.cfg, n, 11)
	ends := windowEnds(m, n, 12)
	batch := m.Forward(m.NewWorkspace(n), nil, x, ends)
	ws := m.NewWorkspace(1)
	LC, HC := m.cfg.Lookback*m.cfg.Channels, m.cfg.Horizon*m.cfg.Channels
	for i := range n {
		one := m.Forward(ws, nil, x[i*LC:(i+1)*LC], ends[i:i+1])
		for j := range one {
			if !close(one[j], batch[i*HC+j], 1e-12) {
				t.Fatalf("window %d value %d: alone %v, in a batch %v", i, j, one[j], batch[i*HC+j])
			}
		}
	}
}

// TestInstanceNormIsScaleFree: with instance normalisation, scaling and
// shifting a window scales and shifts its forecast the same way.
func TestInstanceNormIsScaleFree(t *testing.T) {
	m := caseModel(t, fullConfigs[2].cfg, true, true, 12)
	x, _ := randomBatch(m.cfg, 1, 13)
	// Not exact: the ε under the square root of the normalisation weighs
	// less on the scaled window, a relative change of about ε/(2·var) in
	// its normalised values and in σ, which scales the clock's terms (the
	// same in both windows) back to the input's units. A window of
	// variance ~10⁸ makes that change ~10⁻¹³ (at ~10⁴, 10⁻⁹, which the
	// heads of a random model amplified to 2·10⁻⁷ of the forecast).
	for i := range x {
		x[i] *= 1e4
	}
	ends := windowEnds(m, 1, 14)
	ws := m.NewWorkspace(1)
	y := slices.Clone(m.Forward(ws, nil, x, ends))
	big := slices.Clone(x)
	for i := range big {
		big[i] = 1000*big[i] + 5e4
	}
	yb := m.Forward(ws, nil, big, ends)
	for j := range y {
		if want := 1000*y[j] + 5e4; !close(yb[j], want, 1e-10) {
			t.Fatalf("forecast[%d] of the scaled window = %v, want %v", j, yb[j], want)
		}
	}
}

func TestForwardAllocatesNothing(t *testing.T) {
	for _, tc := range fullConfigs {
		for _, n := range []int{1, 32} {
			m := caseModel(t, tc.cfg, tc.rhythms, tc.clock, 14)
			x, _ := randomBatch(m.cfg, n, 15)
			ends := windowEnds(m, n, 16)
			ws := m.NewWorkspace(n)
			dst := m.Forward(ws, nil, x, ends)
			var a *Attribution
			a = ws.Attribution(0, a)
			allocs := testing.AllocsPerRun(20, func() {
				dst = m.Forward(ws, dst, x, ends)
				a = ws.Attribution(n-1, a)
			})
			if allocs != 0 {
				t.Errorf("%s batch %d: Forward+Attribution allocate %v times per call, want 0", tc.name, n, allocs)
			}
		}
	}
}

// TestServingWorkspaceIsSmall: a serving pass (no backward pass after it)
// holds no coefficients for every frequency when it is lean, and no scorer
// layer when the rhythms take every place, so a replica's workspaces do
// not carry training-sized buffers; a training pass on the same workspace
// then sizes them to its capacity.
func TestServingWorkspaceIsSmall(t *testing.T) {
	// The day's eight frequencies take all K = 8 places: no scorer.
	full := caseModel(t, Config{Horizon: 24, Channels: 1, Mode: Independent}, false, false, 14)
	full.SetRhythms([]cycles.Rhythm{{PeriodSteps: 24, Frequencies: []int{10, 15, 17, 20, 22, 25, 27, 30}, Harmonics: []int{1, 2, 3, 4, 5, 7, 8, 11}}})
	if full.cfg.competes() {
		t.Fatal("a rhythm of K frequencies leaves places to compete for")
	}
	for _, tc := range append(fullConfigs, struct {
		name           string
		cfg            Config
		rhythms, clock bool
	}{name: "independent, the rhythms take every place"}) {
		m := full
		if tc.cfg.Horizon != 0 {
			m = caseModel(t, tc.cfg, tc.rhythms, tc.clock, 14)
		}
		const n = 16
		x, _ := randomBatch(m.cfg, n, 15)
		ends := windowEnds(m, n, 16)
		ws := m.NewWorkspace(n)
		m.Forward(ws, nil, x, ends)
		if ws.lean && ws.coef != nil {
			t.Errorf("%s: a lean serving pass holds %d coefficients, want none", tc.name, len(ws.coef))
		}
		if !m.cfg.competes() && ws.z != nil {
			t.Errorf("%s: the rhythms take every place, yet the workspace holds the scorer's layer (%d values)", tc.name, len(ws.z))
		}
		if !ws.lean && m.cfg.competes() {
			continue
		}
		tau := slices.Clone(ws.tauIn[:n*m.cfg.Channels])
		ws.enableTraining()
		m.forward(ws, make([]float64, n*m.cfg.Horizon*m.cfg.Channels), x, tau, n,
			&stepDraws{noise: make([]float64, n*m.cfg.Frequencies), tau: 1})
		if N, d := m.cfg.Frequencies, m.cfg.Hidden; len(ws.coef) != n*N*2*d {
			t.Errorf("%s: after a training pass the workspace holds %d coefficients, want %d", tc.name, len(ws.coef), n*N*2*d)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no horizon", Config{Channels: 1}, "horizon"},
		{"no channels", Config{Horizon: 4}, "channels"},
		{"top_k above frequencies", Config{Horizon: 4, Channels: 1, Frequencies: 4, TopK: 5}, "top_k"},
		{"independent with channels", Config{Horizon: 4, Channels: 3, Mode: Independent}, "independent"},
		{"unknown mode", Config{Horizon: 4, Channels: 1, Mode: "other"}, "mode"},
		{"unknown norm", Config{Horizon: 4, Channels: 1, Norm: "zscore"}, "norm"},
		{"tiny lookback", Config{Horizon: 4, Channels: 1, Lookback: 2}, "lookback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%+v) error = %v, want one mentioning %q", tc.cfg, err, tc.want)
			}
		})
	}
}

func TestParamCounts(t *testing.T) {
	m, err := New(Config{Horizon: 96, Channels: 7}, 1)
	if err != nil {
		t.Fatal(err)
	}
	parts, total := m.ParamCounts()
	want := map[string]int{
		"input projection": 7*64 + 64,
		"frequencies":      2 * 32,
		"scorer":           2*64*32 + 32 + 32 + 32,
		"heads":            32 * (2*64*64 + 64*96*7),
		"residual":         96*128 + 128 + 128*96 + 96*7,
		"fusion":           1,
		"clock":            32 * 2 * 7,
		"band heads":       32 * 2 * 96,
	}
	sum := 0
	for _, p := range parts {
		if p.Params != want[p.Component] {
			t.Errorf("%s has %d parameters, want %d", p.Component, p.Params, want[p.Component])
		}
		sum += want[p.Component]
	}
	if total != sum || total != len(m.params.Data) {
		t.Errorf("total = %d, want %d (storage %d)", total, sum, len(m.params.Data))
	}
}

func TestInitialFrequenciesAreLogUniform(t *testing.T) {
	m, err := New(Config{Horizon: 8, Channels: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	fs := m.Frequencies()
	if got := fs[0].PeriodSteps; !close(got, 96, 1e-6) {
		t.Errorf("longest initial period = %v steps, want L = 96", got)
	}
	if got := fs[len(fs)-1].PeriodSteps; !close(got, 2, 1e-4) {
		t.Errorf("shortest initial period = %v steps, want 2 (Nyquist)", got)
	}
	ratio := fs[0].Frequency / fs[1].Frequency
	for i := 1; i+1 < len(fs); i++ {
		if r := fs[i].Frequency / fs[i+1].Frequency; !close(r, ratio, 1e-3) {
			t.Errorf("frequency ratio %d/%d = %v, want the constant %v of a log-uniform grid", i, i+1, r, ratio)
		}
	}
}

// TestWorkspaceOutlivesSetRhythms: a workspace (and so an
// explain.Explainer, which holds one) made before the model had rhythms
// keeps working after SetRhythms changed how many frequencies a window
// selects, and forecasts as a new one does; the model's public Config does
// not change with its rhythms.
func TestWorkspaceOutlivesSetRhythms(t *testing.T) {
	cfg := Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: Independent, Frequencies: 12, TopK: 2}
	m := randomModel(t, cfg, 3)
	before := m.Config()
	old := m.NewWorkspace(2)
	x, _ := randomBatch(m.cfg, 2, 4)
	m.Forward(old, nil, x, nil)
	withRhythms(m, true) // 4 rhythm frequencies: more than K
	if m.SelectedPerWindow() != 4 {
		t.Fatalf("SelectedPerWindow = %d, want the rhythms' 4", m.SelectedPerWindow())
	}
	if m.Config() != before {
		t.Errorf("Config changed with the rhythms: %+v, was %+v", m.Config(), before)
	}
	ends := windowEnds(m, 2, 5)
	got := slices.Clone(m.Forward(old, nil, x, ends))
	want := m.Forward(m.NewWorkspace(2), nil, x, ends)
	if !slices.Equal(got, want) {
		t.Fatalf("an old workspace forecasts %v, a new one %v", got[:3], want[:3])
	}
	if a := old.Attribution(1, nil); len(a.Contributions) != 4 {
		t.Errorf("%d contributions, want the rhythms' 4", len(a.Contributions))
	}
}

// TestWorkspaceFollowsTheBasis: a workspace keeps what it derived
// from the model's atoms (leftoverProjections) only while they stand: after
// the frequencies move (a training step, online fine-tuning), or the
// rhythms change, it forecasts exactly as a new workspace does.
func TestWorkspaceFollowsTheBasis(t *testing.T) {
	m := caseModel(t, fullConfigs[0].cfg, true, true, 21) // 4 rhythm frequencies, K = 8: others compete
	if !m.freeReadsLeftover() {
		t.Fatal("the case model's other frequencies do not read the rhythms' leftover")
	}
	x, _ := randomBatch(m.cfg, 2, 22)
	ends := windowEnds(m, 2, 23)
	ws := m.NewWorkspace(2)
	m.Forward(ws, nil, x, ends)
	same := func(what string) {
		t.Helper()
		got := slices.Clone(m.Forward(ws, nil, x, ends))
		want := m.Forward(m.NewWorkspace(2), nil, x, ends)
		if !slices.Equal(got, want) {
			t.Errorf("after %s a used workspace forecasts %v, a new one %v", what, got[:2], want[:2])
		}
	}
	for i := range m.params.Theta {
		m.params.Theta[i] += 0.05 * float64(i%3)
	}
	m.Refresh()
	same("the frequencies moved")
	withRhythms(m, true)
	same("the rhythms were set again")
}
