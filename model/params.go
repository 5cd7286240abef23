package model

import (
	"math"
	"math/rand/v2"
)

// Params holds every trainable number of a model in one flat slice, with a
// named view per tensor. Keeping them in one slice makes the optimiser,
// gradient clipping, snapshots and the model file single loops; the views
// give the maths readable names. Gradients use the same type.
//
// Matrices are row-major and multiply from the right (y = x·W), so a weight
// that maps a inputs to b outputs has shape [a, b].
type Params struct {
	// Data is the backing store of every view below.
	Data []float64

	// InW [C, d] and InB [d] are the input projection. InB follows InW
	// directly in Data, so together they form the (C+1)×d matrix W̃ that
	// maps a window row with an appended 1 to its hidden row.
	InW, InB []float64
	// Theta [N] sets the frequencies through a sigmoid; Phi [N] the phases.
	Theta, Phi []float64
	// ScW1 [2d, S], ScB1 [S] and ScW2 [S] are the selection scorer, applied
	// to each frequency's coefficients (d from its cosine atom, then d from
	// its sine atom); FreqBias [N] is the per-frequency prior added to its
	// score.
	ScW1, ScB1, ScW2, FreqBias []float64
	// HeadW1 [N, 2d, E] and HeadW2 [N, E, H·C] are the N bias-free heads.
	HeadW1, HeadW2 []float64
	// ResW1 [L, R], ResB1 [R], ResW2 [R, H] and ResB2 [H·C] are the
	// residual MLP, applied to each channel of the window with the same
	// weights and a per-channel output bias.
	ResW1, ResB1, ResW2, ResB2 []float64
	// MixW [3, C, C] is the channel mix of a model with Config.ChannelMix
	// (empty otherwise): channel c's residual reads [u_c | Σ_c' (M₀ +
	// cos 2πρ_c·M₁ + sin 2πρ_c·M₂)[c, c']·u_c'], with ρ_c the first
	// rhythm's phase at the end of channel c's window (M₀ alone without a
	// clock), and ResW1 is then [2L, R].
	MixW []float64
	// Fusion [1] is w, with α = σ(w).
	Fusion []float64
	// Clock [N, 2, C] holds, for every frequency of a rhythm, the cosine and
	// sine coefficients per channel of its term phased by the time of day,
	// week or whatever its rhythm's period is (see clock); zero and unused
	// for the other frequencies.
	Clock []float64
	// Band [N, 2, H] is, for every frequency of a rhythm, the linear band
	// head: what its cosine and sine coefficients of the window less the
	// clock add at each step ahead; zero and unused for the others.
	Band []float64
}

// tensor names one view of Params for the model file and for inspection.
type tensor struct {
	name      string
	component string
	shape     []int
	view      func(p *Params) *[]float64
}

// tensors lists the views of Params in storage order, with the shapes of cfg.
func tensors(cfg Config) []tensor {
	C, H := cfg.Channels, cfg.Horizon
	d, N, S, E, R := cfg.Hidden, cfg.Frequencies, cfg.ScorerHidden, cfg.HeadHidden, cfg.ResidualHidden
	_, rin, rout := cfg.residualShape()
	ts := []tensor{
		{"input.weight", "input projection", []int{C, d}, func(p *Params) *[]float64 { return &p.InW }},
		{"input.bias", "input projection", []int{d}, func(p *Params) *[]float64 { return &p.InB }},
		{"freq.theta", "frequencies", []int{N}, func(p *Params) *[]float64 { return &p.Theta }},
		{"freq.phi", "frequencies", []int{N}, func(p *Params) *[]float64 { return &p.Phi }},
		{"scorer.w1", "scorer", []int{2 * d, S}, func(p *Params) *[]float64 { return &p.ScW1 }},
		{"scorer.b1", "scorer", []int{S}, func(p *Params) *[]float64 { return &p.ScB1 }},
		{"scorer.w2", "scorer", []int{S}, func(p *Params) *[]float64 { return &p.ScW2 }},
		{"scorer.freq_bias", "scorer", []int{N}, func(p *Params) *[]float64 { return &p.FreqBias }},
		{"heads.w1", "heads", []int{N, 2 * d, E}, func(p *Params) *[]float64 { return &p.HeadW1 }},
		{"heads.w2", "heads", []int{N, E, H * C}, func(p *Params) *[]float64 { return &p.HeadW2 }},
		{"residual.w1", "residual", []int{rin, R}, func(p *Params) *[]float64 { return &p.ResW1 }},
		{"residual.b1", "residual", []int{R}, func(p *Params) *[]float64 { return &p.ResB1 }},
		{"residual.w2", "residual", []int{R, rout}, func(p *Params) *[]float64 { return &p.ResW2 }},
		{"residual.b2", "residual", []int{H * C}, func(p *Params) *[]float64 { return &p.ResB2 }},
	}
	if cfg.ChannelMix {
		ts = append(ts, tensor{"residual.mix", "residual", []int{mixTerms, C, C}, func(p *Params) *[]float64 { return &p.MixW }})
	}
	return append(ts,
		tensor{"fusion.w", "fusion", []int{1}, func(p *Params) *[]float64 { return &p.Fusion }},
		tensor{"clock.weight", "clock", []int{N, 2, C}, func(p *Params) *[]float64 { return &p.Clock }},
		tensor{"band.weight", "band heads", []int{N, 2, H}, func(p *Params) *[]float64 { return &p.Band }})
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// paramCount returns the number of trainable numbers of a model of cfg.
func paramCount(cfg Config) int {
	n := 0
	for _, t := range tensors(cfg) {
		n += numel(t.shape)
	}
	return n
}

// newParams allocates zeroed parameters with the shapes of cfg.
func newParams(cfg Config) *Params {
	p := &Params{Data: make([]float64, paramCount(cfg))}
	p.bind(cfg)
	return p
}

// bind points every view at its range of Data.
func (p *Params) bind(cfg Config) {
	off := 0
	for _, t := range tensors(cfg) {
		n := numel(t.shape)
		*t.view(p) = p.Data[off : off+n : off+n]
		off += n
	}
}

// clone returns a deep copy with its own backing store.
func (p *Params) clone(cfg Config) *Params {
	q := &Params{Data: append([]float64(nil), p.Data...)}
	q.bind(cfg)
	return q
}

// Tensor names one tensor of a model's parameters: its name in the model
// file, the part of the model it belongs to and its shape. Params.Data
// holds the tensors of Tensors one after the other.
type Tensor struct {
	Name, Component string
	Shape           []int
}

// Size is the number of values the tensor holds.
func (t Tensor) Size() int { return numel(t.Shape) }

// Tensors lists the tensors of a model of cfg in their order in
// Params.Data. cfg is as Model.Config returns it.
func Tensors(cfg Config) []Tensor {
	ts := tensors(cfg)
	out := make([]Tensor, len(ts))
	for i, t := range ts {
		out[i] = Tensor{Name: t.name, Component: t.component, Shape: t.shape}
	}
	return out
}

// ComponentCount is the number of trainable parameters of one part of the model.
type ComponentCount struct {
	Component string `json:"component"`
	Params    int    `json:"params"`
}

// ParamCounts returns the parameter count per component, in model order,
// and the total.
func (m *Model) ParamCounts() (parts []ComponentCount, total int) {
	for _, t := range tensors(m.cfg) {
		n := numel(t.shape)
		total += n
		if k := len(parts); k > 0 && parts[k-1].Component == t.component {
			parts[k-1].Params += n
			continue
		}
		parts = append(parts, ComponentCount{Component: t.component, Params: n})
	}
	return parts, total
}

// Frequency bounds in cycles per step: the lowest is one cycle in ten
// windows, the highest the Nyquist frequency.
func freqBounds(lookback int) (fmin, fmax float64) {
	return 1 / (10 * float64(lookback)), 0.5
}

// initParams fills p with the starting values of a new model:
//
//   - frequencies log-uniform in [1/L, 0.5] through the inverse of the
//     sigmoid map, phases 0;
//   - Glorot-uniform weights for the projection, the scorer and the residual
//     MLP, zero biases;
//   - heads with a small second layer, so every frequency starts with a
//     near-zero contribution and grows only as far as the data asks;
//   - α = σ(0) = ½;
//   - the clock's terms and the band heads at zero (left as newParams
//     made them), so a rhythm frequency starts as its head alone.
func initParams(p *Params, cfg Config, rng *rand.Rand) {
	L, C, H := cfg.Lookback, cfg.Channels, cfg.Horizon
	d, N, S, E, R := cfg.Hidden, cfg.Frequencies, cfg.ScorerHidden, cfg.HeadHidden, cfg.ResidualHidden

	glorot := func(w []float64, fanIn, fanOut int, gain float64) {
		a := gain * math.Sqrt(6/float64(fanIn+fanOut))
		for i := range w {
			w[i] = a * (2*rng.Float64() - 1)
		}
	}
	glorot(p.InW, C, d, 1)
	clear(p.InB)

	fmin, fmax := freqBounds(L)
	lo, hi := math.Log(1/float64(L)), math.Log(0.5)
	for i := range N {
		f := math.Exp(lo + (hi-lo)*float64(i)/math.Max(1, float64(N-1)))
		u := (f - fmin) / (fmax - fmin)
		u = math.Min(math.Max(u, 1e-6), 1-1e-6)
		p.Theta[i] = math.Log(u / (1 - u))
		p.Phi[i] = 0
	}

	// The scorer's output layer starts at zero: at first the selection
	// follows each window's energy (see windowEnergy), which picks the
	// cycles a window holds, and the scorer learns corrections from there.
	// A random output layer scores strong cycles at random, often far
	// below noise, and the straight-through gradient rarely recovers them:
	// a frequency that is not selected trains neither its head nor its score.
	glorot(p.ScW1, 2*d, S, 1)
	clear(p.ScB1)
	clear(p.ScW2)
	clear(p.FreqBias)

	for f := range N {
		glorot(p.HeadW1[f*2*d*E:(f+1)*2*d*E], 2*d, E, 1)
		glorot(p.HeadW2[f*E*H*C:(f+1)*E*H*C], E, H*C, 0.1)
	}

	_, rin, rout := cfg.residualShape()
	glorot(p.ResW1, rin, R, 1)
	clear(p.ResB1)
	glorot(p.ResW2, R, rout, 0.1)
	clear(p.ResB2)
	clear(p.MixW) // the mix starts as the identity: each channel reads its own leftover

	p.Fusion[0] = 0
}
