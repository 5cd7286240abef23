package model

import (
	"fmt"
)

// Mode says how a model treats the channels of a reading.
type Mode string

const (
	// Mixed projects all C channels of a window together, as the paper does.
	// It fits a station that sends many related fields at once.
	Mixed Mode = "mixed"
	// Independent is one single-channel model (C = 1) shared by every
	// series and every field. It fits thousands of single-value sensors.
	Independent Mode = "independent"
)

// Norm says how a window is normalised before the model sees it.
type Norm string

const (
	// NormInstance subtracts each window's per-channel mean and divides by
	// its per-channel standard deviation, then restores both on the
	// forecast (reversible instance normalisation). A model trained this
	// way serves series of any level and scale.
	NormInstance Norm = "instance"
	// NormNone feeds the window as it is (for benchmark files it is already
	// z-scored with the training statistics).
	NormNone Norm = "none"
)

// Config fixes the shapes of a model. The zero value of every field except
// Horizon and Channels means its default.
type Config struct {
	// Lookback is L, the number of past steps in a window.
	//
	// Default: 96
	Lookback int
	// Horizon is H, the number of future steps forecast. Required.
	Horizon int
	// Channels is C, the number of values per step. Required; 1 for an
	// Independent model.
	Channels int
	// Hidden is d, the width of the input projection and of each
	// frequency's coefficient vector.
	//
	// Default: 64
	Hidden int
	// Frequencies is N, the number of learnable frequencies.
	//
	// Default: 32
	Frequencies int
	// TopK is K, how many frequencies each window selects. In a model with
	// rhythms the rhythms' frequencies take the first places in
	// every window, since the clock says where in each rhythm a window
	// stands and so a rhythm is present in all of them, and the other
	// frequencies compete for the K − |rhythms| places left (none when the
	// rhythms have K frequencies or more: then a window selects exactly
	// the rhythms').
	//
	// Default: 8
	TopK int
	// ScorerHidden is the hidden width of the selection scorer.
	//
	// Default: 32
	ScorerHidden int
	// HeadHidden is the hidden width of each frequency's head.
	//
	// Default: 64
	HeadHidden int
	// ResidualHidden is the hidden width of the residual MLP.
	//
	// Default: 2·Hidden
	ResidualHidden int
	// Mode is Mixed or Independent.
	//
	// Default: Mixed
	Mode Mode
	// Norm is the per-window normalisation.
	//
	// Default: NormInstance
	Norm Norm
	// ChannelMix lets a mixed model's residual MLP read the other
	// channels: channel c's input is its own leftover plus a learned,
	// time-of-cycle dependent mix of every channel's (Params.MixW). The
	// residual still forecasts from what the rhythms leave, so its part
	// stays one exact additive part; it now carries what the channels'
	// leftovers tell each other. Validation prefers it on ETTh1, ETTm1 and
	// Weather at most horizons measured (not on ETTh1 at 336) and chooses it
	// per file and horizon (docs/benchmarks.md, "Channels mixed in the
	// residual").
	//
	// Default: false
	ChannelMix bool

	// rhythmSlots is derived, not chosen: how many rhythm frequencies each
	// window selects first (0 without rhythms). The model sets it from its
	// rhythms (setClock).
	rhythmSlots int
}

// sameShapes reports whether a and b differ at most in what a model derives
// from its rhythms (rhythmSlots).
func (a Config) sameShapes(b Config) bool {
	a.rhythmSlots, b.rhythmSlots = 0, 0
	return a == b
}

// slots is how many frequencies each window selects: K, of which the
// rhythms' come first and the others compete for the rest; all of the
// rhythms' when they are more than K.
func (cfg Config) slots() int {
	return max(cfg.TopK, cfg.rhythmSlots)
}

// competes reports whether frequencies compete for a place in each
// window's selection: false for a model whose rhythms take all K places,
// which then needs no scores, no softmax and no sparsity term.
func (cfg Config) competes() bool {
	return cfg.TopK > cfg.rhythmSlots
}

// The defaults of Config's N and K (the paper's), for the commands that
// offer them as flags.
const (
	DefaultFrequencies = 32
	DefaultTopK        = 8
)

// withDefaults returns cfg with every zero field set to its default.
func (cfg Config) withDefaults() Config {
	if cfg.Lookback == 0 {
		cfg.Lookback = 96
	}
	if cfg.Hidden == 0 {
		cfg.Hidden = 64
	}
	if cfg.Frequencies == 0 {
		cfg.Frequencies = DefaultFrequencies
	}
	if cfg.TopK == 0 {
		cfg.TopK = DefaultTopK
	}
	if cfg.ScorerHidden == 0 {
		cfg.ScorerHidden = 32
	}
	if cfg.HeadHidden == 0 {
		cfg.HeadHidden = 64
	}
	if cfg.ResidualHidden == 0 {
		cfg.ResidualHidden = 2 * cfg.Hidden
	}
	if cfg.Mode == "" {
		cfg.Mode = Mixed
	}
	if cfg.Norm == "" {
		cfg.Norm = NormInstance
	}
	return cfg
}

// Validate reports the first field that cannot work, saying what to change.
func (cfg Config) Validate() error {
	positive := []struct {
		name string
		v    int
	}{
		{"horizon", cfg.Horizon},
		{"channels", cfg.Channels},
		{"hidden", cfg.Hidden},
		{"frequencies", cfg.Frequencies},
		{"top_k", cfg.TopK},
		{"scorer_hidden", cfg.ScorerHidden},
		{"head_hidden", cfg.HeadHidden},
		{"residual_hidden", cfg.ResidualHidden},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return fmt.Errorf("model: %s = %d; it must be at least 1", p.name, p.v)
		}
	}
	if cfg.Lookback < 4 {
		return fmt.Errorf("model: lookback = %d is too short to hold a cycle; use at least 4 steps (96 is the standard)", cfg.Lookback)
	}
	if cfg.TopK > cfg.Frequencies {
		return fmt.Errorf("model: top_k = %d exceeds frequencies = %d; lower top_k or add frequencies", cfg.TopK, cfg.Frequencies)
	}
	switch cfg.Mode {
	case Mixed:
	case Independent:
		if cfg.Channels != 1 {
			return fmt.Errorf("model: an independent model has 1 channel, got channels = %d; use mode mixed for multichannel windows", cfg.Channels)
		}
	default:
		return fmt.Errorf("model: mode %q is unknown; use %q or %q", cfg.Mode, Mixed, Independent)
	}
	if cfg.ChannelMix && (cfg.Mode != Mixed || cfg.Channels < 2) {
		return fmt.Errorf("model: channel_mix mixes the channels of a mixed model; this one is %s with %d channel(s): leave channel_mix off", cfg.Mode, cfg.Channels)
	}
	switch cfg.Norm {
	case NormInstance, NormNone:
	default:
		return fmt.Errorf("model: norm %q is unknown; use %q or %q", cfg.Norm, NormInstance, NormNone)
	}
	const maxParams = 1 << 31
	if n := paramCount(cfg); n > maxParams {
		return fmt.Errorf("model: these shapes need %d parameters, more than the %d a model file holds; lower horizon, lookback or hidden sizes", n, maxParams)
	}
	return nil
}

// residualShape returns the shape of the residual MLP's products: rows per
// window (one per channel: the MLP, L → H, is shared between the channels
// of a window, with a per-channel output bias), input and output width
// (2L with the channel mix: the channel's leftover and the mix).
func (cfg Config) residualShape() (perWindow, in, out int) {
	if cfg.ChannelMix {
		// The channel's own leftover, then the channels' mix of theirs.
		return cfg.Channels, 2 * cfg.Lookback, cfg.Horizon
	}
	return cfg.Channels, cfg.Lookback, cfg.Horizon
}

// Lookback returns L, the number of past steps a window holds.
func (m *Model) Lookback() int { return m.cfg.Lookback }

// Horizon returns H, the number of future steps a forecast holds.
func (m *Model) Horizon() int { return m.cfg.Horizon }

// Channels returns C, the number of values per step.
func (m *Model) Channels() int { return m.cfg.Channels }

// Config returns the model's shapes with defaults filled in.
func (m *Model) Config() Config {
	cfg := m.cfg
	cfg.rhythmSlots = 0 // derived from the rhythms, not a shape
	return cfg
}

// ShapeKey returns the model's shapes as text that tells them apart:
// Config's fields (in Go's %+v form) and how many rhythm frequencies each
// window selects first. A training checkpoint records it, so that only
// the run it belongs to resumes from it.
func (m *Model) ShapeKey() string { return fmt.Sprintf("%+v", m.cfg) }

// SelectedPerWindow is how many frequencies each window selects: K, or, in
// a model whose rhythms have more than K frequencies, all of theirs.
func (m *Model) SelectedPerWindow() int { return m.cfg.slots() }

// SelectsRhythms reports whether the model has rhythms, whose frequencies
// every window selects first.
func (m *Model) SelectsRhythms() bool { return m.cfg.rhythmSlots > 0 }
