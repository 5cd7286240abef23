package model

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"time"

	"github.com/freqlens/freqlens/cycles"
)

// Model is a FreqLens forecaster: its shapes, its parameters, the quadrature
// basis derived from them and what is known about the data it was trained on.
//
// A Model is safe for concurrent use by forecasting goroutines that each own
// a Workspace, as long as nothing trains or loads into it at the same time.
type Model struct {
	cfg    Config
	params *Params
	basis  *basis
	clock  *clock
	// Meta describes the data the model was trained on. It is saved with the
	// model and does not affect the maths.
	Meta Meta
}

// Meta is what a model file records about its training data and results.
type Meta struct {
	// ChannelNames names the trained channels (for an Independent model,
	// the channels it was trained on; it serves any).
	ChannelNames []string `json:"channel_names,omitempty"`
	// Cadence is the time between two steps, 0 when unknown.
	Cadence time.Duration `json:"cadence,omitempty"`
	// StepAlign is StepAlignNearest when the training data's readings were put on
	// the step whose time is nearest (stamps of a schedule straddling the
	// step times), so that serve puts a live feed of the same clock on
	// steps the same way; empty for the step a reading falls in.
	StepAlign string `json:"step_align,omitempty"`
	// TimeZone is the IANA time zone ("Europe/Berlin") whose wall clock
	// times the rhythms: the clock reads each window's time as the local
	// time there, so a daily rhythm kept by people (traffic, buildings)
	// stays on its hour across daylight-saving changes. Empty: UTC. Set it
	// with SetTimeZone.
	TimeZone string `json:"time_zone,omitempty"`
	// Input holds the settings the training data was read with, as the
	// command that trained it recorded them (for freqlens, the serve
	// configuration's input.* and window.* keys of long-format data, each
	// with its value as text), so that commands reading such data again
	// need not be told them. The model does not interpret them; nil when
	// nothing was recorded.
	Input map[string]string `json:"input,omitempty"`
	// Mean and Std are the per-channel statistics the data was z-scored
	// with before training (empty when it was not).
	Mean []float64 `json:"mean,omitempty"`
	Std  []float64 `json:"std,omitempty"`
	// DataSHA256 is the hex SHA-256 of the training file.
	DataSHA256 string `json:"data_sha256,omitempty"`
	// DataName is the base name of the training file.
	DataName string `json:"data_name,omitempty"`
	// Metrics holds results such as test_mse and test_mae.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Seed is the seed the model was initialised and trained with.
	Seed uint64 `json:"seed,omitempty"`
	// Training holds the settings the model was trained with.
	Training map[string]float64 `json:"training,omitempty"`
	// Selected counts, per frequency id, how many test windows selected it.
	Selected []int `json:"selected,omitempty"`
	// Version is the serving version of an online fine-tuned model (0 for
	// a model straight from training); each promotion increments it.
	Version int64 `json:"version,omitempty"`
	// Peaks are the cycles of the training rows that training placed a
	// frequency on (see Model.PlaceFrequencies), strongest first.
	Peaks []PlacedPeak `json:"peaks,omitempty"`
	// Shares is each frequency's mean share of the attribution on the test
	// split at training time, ResidualShare the residual MLP's (see
	// Metrics.Shares); nil when unknown.
	Shares        []float64 `json:"shares,omitempty"`
	ResidualShare float64   `json:"residual_share,omitempty"`
	// RhythmShares is, per rhythm (in the order of Rhythms), its summed
	// part's mean share on the test split at training time (see
	// Metrics.RhythmShares); nil when unknown (a file without
	// rhythm_shares metadata, whose shares count a rhythm's lines one by
	// one).
	RhythmShares []float64 `json:"rhythm_shares,omitempty"`
	// Rhythms are the data's rhythms among the placed cycles: each a
	// fundamental period with the frequencies at its harmonics (see
	// FindRhythms). In a model with a known cadence they also set
	// the clock, the terms phased by each window's time.
	Rhythms []cycles.Rhythm `json:"rhythms,omitempty"`
	// ErrorQuantiles are the quantiles of the errors on the test split at
	// training time (measure.ErrorQuantiles), where a served model's
	// prediction intervals start; nil when unknown. Read-only once set: a
	// Clone shares them.
	ErrorQuantiles *ErrorQuantiles `json:"error_quantiles,omitempty"`
}

// StepAlignNearest is Meta.StepAlign's one value: readings put on the
// step whose time is nearest (window.AlignNearest, dataset.AlignNearest).
const StepAlignNearest = "nearest"

// PlacedPeak is a peak of the training rows' spectrum and the frequency
// placed on it.
type PlacedPeak struct {
	// ID is the frequency placed on the peak. Online fine-tuning may move
	// it since; it still carries the cycle.
	ID int `json:"id"`
	// PeriodSteps is the peak's period in steps.
	PeriodSteps float64 `json:"period_steps"`
	// VarianceShare is the cycle's share of its channel's variance in the
	// training rows (the largest over the channels).
	VarianceShare float64 `json:"variance_share"`
	// Prominence is the peak's power over the median of the spectrum
	// around it.
	Prominence float64 `json:"prominence"`
}

// New returns a model of cfg with freshly initialised parameters drawn from
// seed. The same cfg and seed always give the same model.
func New(cfg Config, seed uint64) (*Model, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, params: newParams(cfg), basis: newBasis(cfg)}
	initParams(m.params, cfg, rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)))
	m.Meta.Seed = seed
	m.refresh()
	m.setClock()
	return m, nil
}

// Check reports metadata that disagrees with the shapes of cfg (lengths,
// frequency ids, statistics that are not finite), naming each field by its
// key in the model file.
func (meta Meta) Check(cfg Config) error {
	if q := meta.ErrorQuantiles; q != nil {
		if err := q.check(cfg); err != nil {
			return fmt.Errorf("metadata %w", err)
		}
	}
	if n := len(meta.Selected); n != 0 && n != cfg.Frequencies {
		return fmt.Errorf("metadata selected has %d counts for %d frequencies", n, cfg.Frequencies)
	}
	if n := len(meta.Shares); n != 0 && n != cfg.Frequencies {
		return fmt.Errorf("metadata shares has %d values for %d frequencies", n, cfg.Frequencies)
	}
	if n := len(meta.RhythmShares); n != 0 && n != len(meta.Rhythms) {
		return fmt.Errorf("metadata rhythm_shares has %d values for %d rhythms", n, len(meta.Rhythms))
	}
	for _, v := range meta.RhythmShares {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("metadata rhythm_shares holds %v, not a share", v)
		}
	}
	for _, pk := range meta.Peaks {
		if pk.ID < 0 || pk.ID >= cfg.Frequencies || !(pk.PeriodSteps > 0) || math.IsInf(pk.PeriodSteps, 0) {
			return fmt.Errorf("metadata peaks names frequency %d with period %v of %d frequencies", pk.ID, pk.PeriodSteps, cfg.Frequencies)
		}
	}
	for _, r := range meta.Rhythms {
		if !(r.PeriodSteps > 0) || math.IsInf(r.PeriodSteps, 0) || len(r.Frequencies) == 0 || len(r.Frequencies) != len(r.Harmonics) ||
			math.IsNaN(r.AnchorStep) || math.IsInf(r.AnchorStep, 0) || !(r.AnchorPhase >= 0 && r.AnchorPhase < 1) {
			return fmt.Errorf("metadata rhythms holds a rhythm of period %v with %d frequencies and %d harmonics",
				r.PeriodSteps, len(r.Frequencies), len(r.Harmonics))
		}
		for j, id := range r.Frequencies {
			if id < 0 || id >= cfg.Frequencies || r.Harmonics[j] < 1 {
				return fmt.Errorf("metadata rhythms names frequency %d (harmonic %d) of %d frequencies", id, r.Harmonics[j], cfg.Frequencies)
			}
		}
	}
	if len(meta.Mean) != len(meta.Std) {
		return fmt.Errorf("metadata mean has %d values but std has %d", len(meta.Mean), len(meta.Std))
	}
	if cfg.Mode == Mixed {
		if n := len(meta.Mean); n != 0 && n != cfg.Channels {
			return fmt.Errorf("metadata mean has %d values for %d channels", n, cfg.Channels)
		}
		if n := len(meta.ChannelNames); n != 0 && n != cfg.Channels {
			return fmt.Errorf("metadata channel_names has %d names for %d channels", n, cfg.Channels)
		}
	}
	for i, s := range meta.Std {
		if !(s > 0) || math.IsInf(s, 0) || math.IsNaN(meta.Mean[i]) || math.IsInf(meta.Mean[i], 0) {
			return fmt.Errorf("metadata mean/std of channel %d are %v/%v", i, meta.Mean[i], s)
		}
	}
	if meta.TimeZone != "" {
		if _, err := time.LoadLocation(meta.TimeZone); err != nil {
			return fmt.Errorf("metadata time_zone %q is no time zone: %w", meta.TimeZone, err)
		}
	}
	return nil
}

// Assemble returns the model of cfg whose parameters are data, every
// tensor of Tensors(cfg) in turn, and whose metadata is meta: a model read
// back from its file. The model keeps data as its parameters. It fails on
// shapes that cannot work, a data length that is not the shapes', and
// metadata that disagrees with the shapes (Meta.Check).
func Assemble(cfg Config, meta Meta, data []float64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := meta.Check(cfg); err != nil {
		return nil, err
	}
	if n := paramCount(cfg); len(data) != n {
		return nil, fmt.Errorf("model: %d parameters for a model of these shapes, which has %d", len(data), n)
	}
	p := &Params{Data: data}
	p.bind(cfg)
	m := &Model{cfg: cfg, params: p, basis: newBasis(cfg), Meta: meta}
	m.refresh()
	m.setClock()
	return m, nil
}

// refresh recomputes what is derived from the parameters. Call it after
// every change to θ or φ.
func (m *Model) refresh() {
	m.basis.compute(m.params.Theta, m.params.Phi, m.cfg.Lookback)
}

// Clone returns an independent copy of m (parameters and metadata).
func (m *Model) Clone() *Model {
	c := &Model{cfg: m.cfg, params: m.params.clone(m.cfg), basis: newBasis(m.cfg), Meta: m.Meta}
	c.Meta.ChannelNames = append([]string(nil), m.Meta.ChannelNames...)
	c.Meta.Mean = append([]float64(nil), m.Meta.Mean...)
	c.Meta.Std = append([]float64(nil), m.Meta.Std...)
	c.Meta.Selected = append([]int(nil), m.Meta.Selected...)
	c.Meta.Peaks = append([]PlacedPeak(nil), m.Meta.Peaks...)
	c.Meta.Shares = append([]float64(nil), m.Meta.Shares...)
	c.Meta.RhythmShares = append([]float64(nil), m.Meta.RhythmShares...)
	c.Meta.Rhythms = cycles.CloneRhythms(m.Meta.Rhythms)
	if m.Meta.Training != nil {
		c.Meta.Training = make(map[string]float64, len(m.Meta.Training))
		for k, v := range m.Meta.Training {
			c.Meta.Training[k] = v
		}
	}
	c.Meta.Input = maps.Clone(m.Meta.Input)
	if m.Meta.Metrics != nil {
		c.Meta.Metrics = make(map[string]float64, len(m.Meta.Metrics))
		for k, v := range m.Meta.Metrics {
			c.Meta.Metrics[k] = v
		}
	}
	c.refresh()
	c.setClock()
	return c
}

// Alpha returns the fusion weight α = σ(w): the share of the forecast that
// comes from the frequency heads rather than the residual MLP.
func (m *Model) Alpha() float64 { return sigmoid(m.params.Fusion[0]) }

// Frequency describes one learned frequency.
type Frequency struct {
	// ID is the frequency's fixed index in 0 … N−1; its head is always the same.
	ID int `json:"id"`
	// Frequency is in cycles per step.
	Frequency float64 `json:"frequency"`
	// PeriodSteps is 1/Frequency.
	PeriodSteps float64 `json:"period_steps"`
	// Period is PeriodSteps times the cadence, 0 when the cadence is unknown.
	Period time.Duration `json:"-"`
	// Phase is φ in radians.
	Phase float64 `json:"phase"`
}

// Frequencies returns the N learned frequencies in id order.
func (m *Model) Frequencies() []Frequency {
	out := make([]Frequency, m.cfg.Frequencies)
	for i := range out {
		out[i] = m.frequency(i)
	}
	return out
}

func (m *Model) frequency(id int) Frequency {
	f := m.basis.freq[id]
	fr := Frequency{ID: id, Frequency: f, PeriodSteps: 1 / f, Phase: m.params.Phi[id]}
	if m.Meta.Cadence > 0 {
		fr.Period = time.Duration(math.Round(fr.PeriodSteps * float64(m.Meta.Cadence)))
	}
	return fr
}

// Params returns the model's parameters. Changing them changes the model;
// call Refresh afterwards when θ or φ changed.
func (m *Model) Params() *Params { return m.params }

// Refresh recomputes the atoms after θ or φ were changed through
// Params.
func (m *Model) Refresh() { m.refresh() }

// Finite reports whether every parameter is a finite number, the check a
// candidate model passes before it may serve.
func (m *Model) Finite() bool {
	for _, v := range m.params.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
