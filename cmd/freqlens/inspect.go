package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
)

// knownPeriods are the cycles sensor data usually carries.
var knownPeriods = []time.Duration{12 * time.Hour, 24 * time.Hour, 168 * time.Hour}

// matchTolerance is the relative error under which a learned period counts
// as a known one.
const matchTolerance = 0.15

type inspectFrequency struct {
	ID            int      `json:"id"`
	Frequency     float64  `json:"frequency"`
	PeriodSteps   float64  `json:"period_steps"`
	PeriodSeconds *float64 `json:"period_seconds,omitempty"`
	Period        string   `json:"period,omitempty"`
	Phase         float64  `json:"phase"`
	Selected      int      `json:"selected"`
	SelectedShare float64  `json:"selected_share"`
	// Share is the mean share of the attribution; Rhythm is the index (in
	// the model's rhythms) of the rhythm the frequency is a harmonic of,
	// absent for a free frequency, and Cycle says it has one: the
	// frequency carries a cycle of the data.
	Share  float64 `json:"share"`
	Rhythm *int    `json:"rhythm,omitempty"`
	Cycle  bool    `json:"cycle"`
}

type inspectMatch struct {
	Known         string  `json:"known"`
	KnownSeconds  float64 `json:"known_seconds"`
	NearestID     int     `json:"nearest_id"`
	NearestPeriod string  `json:"nearest_period"`
	NearestSecs   float64 `json:"nearest_period_seconds"`
	RelError      float64 `json:"rel_error"`
	// Match says that the nearest frequency is within matchTolerance and
	// a line of one of the data's cycles, named by Cycle; a free frequency
	// near a known period is no cycle of the data.
	Match bool   `json:"match"`
	Cycle string `json:"cycle,omitempty"`
	// CyclePeriod says the match is a cycle's own period, though no line of
	// it lies there: a week seen only through its sidebands around the day.
	CyclePeriod bool `json:"cycle_period,omitempty"`
}

type inspectReport struct {
	Model          string  `json:"model"`
	TrainedOn      string  `json:"trained_on,omitempty"`
	Mode           string  `json:"mode"`
	Lookback       int     `json:"lookback"`
	Horizon        int     `json:"horizon"`
	Channels       int     `json:"channels"`
	CadenceSeconds float64 `json:"cadence_seconds,omitempty"`
	// StepAlign is "nearest" when the training data's readings were put on
	// the nearest step, and serve does so too unless input.align says
	// otherwise; empty for the step a reading falls in.
	StepAlign string  `json:"step_align,omitempty"`
	Alpha     float64 `json:"alpha"`
	// ChannelMix says the residual MLP reads every channel's leftover
	// through the channel mix (model.Config.ChannelMix), not its own only.
	ChannelMix    bool   `json:"channel_mix"`
	SelectionFrom string `json:"selection_counted_on"`
	// SharesFrom says where the attribution shares of Rhythms,
	// ResidualShare and Frequencies[].Share were counted; empty when the
	// model file holds none and no --data was given.
	SharesFrom string `json:"shares_counted_on,omitempty"`
	// LinesSummed says the model file predates the cycles' own shares:
	// each rhythm's share is then its frequencies' sum (lines_share).
	LinesSummed   bool               `json:"cycle_shares_are_lines_sums,omitempty"`
	Rhythms       []rhythmReport     `json:"rhythms"`
	ResidualShare float64            `json:"residual_share"`
	OtherShare    float64            `json:"other_share"` // the frequencies of no cycle; with the cycles' and residual_share, 1
	Frequencies   []inspectFrequency `json:"frequencies"`
	MostSelected  []inspectFrequency `json:"most_selected"`
	// SelectedPerWindow is how many frequencies each window selects: K,
	// or all of the cycles' when they have more (every window selects the
	// cycles' frequencies first).
	SelectedPerWindow int `json:"selected_per_window"`
	// CyclesAlwaysSelected says the model has cycles (rhythms), whose
	// frequencies every window selects.
	CyclesAlwaysSelected bool                   `json:"cycles_always_selected"`
	KnownPeriods         []inspectMatch         `json:"known_periods"`
	Params               int                    `json:"params"`
	Components           []model.ComponentCount `json:"components"`
	Metrics              map[string]float64     `json:"metrics,omitempty"`
	// TimeZone is the zone whose wall clock times the rhythms ("" for UTC).
	TimeZone string `json:"time_zone,omitempty"`
	// Input holds the input.* and window.* settings the long-format
	// training data was read with; eval, predict, report and inspect --data
	// read such data with them when not given --config.
	Input map[string]string `json:"input,omitempty"`
	// Interrupted says the training run was cut short (Ctrl-C, SIGTERM):
	// the file holds the best epoch so far, not that of the whole schedule.
	Interrupted bool `json:"interrupted"`
	// ErrorQuantiles are the test split's error quantiles recorded at
	// training, where served prediction intervals start.
	ErrorQuantiles *model.ErrorQuantiles `json:"error_quantiles,omitempty"`
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	modelPath := fs.String("model", "", "model file written by 'freqlens train'")
	data := fs.String("data", "", "optional data whose test split recounts the selections and the attribution shares: a wide CSV, or long-format CSV, Arrow or Parquet as train reads it")
	configPath := fs.String("config", "", "long-format --data: the serve configuration whose input.* and window.* settings put its readings on steps (default: those the model was trained with)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "model"); err != nil {
		return err
	}
	var m *model.Model
	selected, from := []int(nil), "test split at training time"
	var shares, rhythmShares []float64
	residualShare := 0.0
	if *data != "" {
		var err error
		mm, split, err := loadModelAndData(ctx, *modelPath, *data, *configPath, stderr)
		if err != nil {
			return err
		}
		met, err := measure.Evaluate(ctx, mm, split.Test, measure.Options{})
		if err != nil {
			return err
		}
		m, selected, from = mm, met.Selected, "test split of "+*data
		shares, rhythmShares, residualShare = met.Shares, met.RhythmShares, met.ResidualShare
	} else {
		var err error
		if m, err = loadModelFile(*modelPath); err != nil {
			return err
		}
		selected, shares, rhythmShares, residualShare = m.Meta.Selected, m.Meta.Shares, m.Meta.RhythmShares, m.Meta.ResidualShare
		if selected == nil {
			from = "unknown (the model file holds no counts; pass --data)"
		}
	}
	placed := map[int]bool{}
	for _, pk := range m.Meta.Peaks {
		placed[pk.ID] = true
	}

	cfg := m.Config()
	windows := 0
	for _, c := range selected {
		windows += c
	}
	windows /= m.SelectedPerWindow()
	rep := inspectReport{
		Model: *modelPath, TrainedOn: m.Meta.DataName, Mode: string(cfg.Mode),
		Lookback: cfg.Lookback, Horizon: cfg.Horizon, Channels: cfg.Channels,
		CadenceSeconds: m.Meta.Cadence.Seconds(), StepAlign: m.Meta.StepAlign, Alpha: m.Alpha(), ChannelMix: cfg.ChannelMix, SelectionFrom: from,
		Metrics: m.Meta.Metrics, ErrorQuantiles: m.Meta.ErrorQuantiles, Rhythms: rhythmsOf(m, nil, nil), ResidualShare: residualShare,
		SelectedPerWindow: m.SelectedPerWindow(), CyclesAlwaysSelected: m.SelectsRhythms(),
		Interrupted: m.Meta.Metrics["interrupted"] == 1, TimeZone: m.Meta.TimeZone, Input: m.Meta.Input,
	}
	if shares != nil {
		rep.Rhythms, rep.SharesFrom = rhythmsOf(m, shares, rhythmShares), from
		rep.LinesSummed = len(m.Meta.Rhythms) > 0 && rhythmShares == nil
		rep.OtherShare = otherShare(m, shares, rhythmShares, residualShare)
	}
	for _, f := range m.Frequencies() {
		jf := inspectFrequency{ID: f.ID, Frequency: f.Frequency, PeriodSteps: f.PeriodSteps, Phase: f.Phase}
		if r, ok := m.RhythmOf(f.ID); ok {
			jf.Rhythm, jf.Cycle = &r, true
		} else {
			jf.Cycle = placed[f.ID] // a model without rhythms: its placed cycles
		}
		if shares != nil {
			jf.Share = shares[f.ID]
		}
		if f.Period > 0 {
			s := f.Period.Seconds()
			jf.PeriodSeconds, jf.Period = &s, cycles.FormatPeriod(f.Period)
		}
		if selected != nil {
			jf.Selected = selected[f.ID]
			if windows > 0 {
				jf.SelectedShare = float64(jf.Selected) / float64(windows)
			}
		}
		rep.Frequencies = append(rep.Frequencies, jf)
	}
	slices.SortStableFunc(rep.Frequencies, func(a, b inspectFrequency) int { return cmp.Compare(a.PeriodSteps, b.PeriodSteps) })
	if selected != nil {
		rep.MostSelected = slices.Clone(rep.Frequencies)
		slices.SortStableFunc(rep.MostSelected, func(a, b inspectFrequency) int { return cmp.Compare(b.Selected, a.Selected) })
		rep.MostSelected = rep.MostSelected[:min(len(rep.MostSelected), m.SelectedPerWindow())]
	}
	for _, pm := range explain.MatchPeriods(m, knownPeriods, matchTolerance) {
		km := inspectMatch{
			Known: cycles.FormatPeriod(pm.Known), KnownSeconds: pm.Known.Seconds(),
			NearestID: pm.Nearest.ID, NearestPeriod: cycles.FormatPeriod(pm.Nearest.Period),
			NearestSecs: pm.Nearest.Period.Seconds(), RelError: pm.RelError,
		}
		for _, rh := range m.Meta.Rhythms {
			if pm.Match && slices.Contains(rh.Frequencies, pm.Nearest.ID) {
				_, name := periodFields(rh.PeriodSteps, m.Meta.Cadence)
				km.Match, km.Cycle = true, periodLabel(name, rh.PeriodSteps)+" cycle"
			}
		}
		for _, rh := range m.Meta.Rhythms {
			period := time.Duration(rh.PeriodSteps * float64(m.Meta.Cadence))
			if !km.Match && math.Abs(period.Seconds()/pm.Known.Seconds()-1) < matchTolerance {
				_, name := periodFields(rh.PeriodSteps, m.Meta.Cadence)
				km.Match, km.Cycle, km.CyclePeriod = true, periodLabel(name, rh.PeriodSteps)+" cycle", true
			}
		}
		rep.KnownPeriods = append(rep.KnownPeriods, km)
	}
	rep.Components, rep.Params = m.ParamCounts()

	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	printInspect(stdout, rep)
	return nil
}

func printInspect(w io.Writer, r inspectReport) {
	fmt.Fprintf(w, "model %s: %s, lookback %d, horizon %d, %d channel(s)", r.Model, r.Mode, r.Lookback, r.Horizon, r.Channels)
	if r.TrainedOn != "" {
		fmt.Fprintf(w, ", trained on %s", r.TrainedOn)
	}
	fmt.Fprintln(w)
	if r.TimeZone != "" {
		fmt.Fprintf(w, "clock: the cycles keep %s's wall clock (daylight saving included)\n", r.TimeZone)
	}
	if changed := nonDefault(r.Input); changed != "" {
		fmt.Fprintf(w, "input: long-format data is read with %s, as in training (--config reads it otherwise)\n", changed)
	}
	if r.StepAlign == dataset.AlignNearest {
		fmt.Fprintln(w, "steps: readings go to the nearest step (the training data's stamps straddle the step times); serve does the same unless input.align says otherwise")
	}
	if v, ok := r.Metrics["test_mse"]; ok {
		fmt.Fprintf(w, "test MSE %.4f  MAE %.4f\n", v, r.Metrics["test_mae"])
	}
	if run, ok := r.Metrics["epochs_run"]; ok {
		fmt.Fprintf(w, "trained %.0f epochs, best %.0f", run, r.Metrics["best_epoch"])
		if r.Interrupted {
			fmt.Fprint(w, " (interrupted: the best epoch of a run cut short; the same train command goes on from its checkpoint, if that was kept)")
		}
		fmt.Fprintln(w)
	}
	printErrorQuantiles(w, r.ErrorQuantiles)
	fmt.Fprintf(w, "alpha %.3f (the fusion weight of the frequency heads)\n", r.Alpha)
	if r.ChannelMix {
		fmt.Fprintln(w, "channel mix: the residual MLP reads every channel's leftover, mixed by the time of the strongest cycle, so its part includes what the other channels say")
	}
	fmt.Fprintln(w)
	if r.SharesFrom != "" {
		printRhythms(w, r.Rhythms, r.ResidualShare, "the "+r.SharesFrom)
		if r.LinesSummed {
			fmt.Fprintln(w, "  (this model file predates the cycles' own shares: each cycle's share above is the sum of its frequencies',\n"+
				"   which overstates a cycle whose lines partly cancel; pass --data to count what each cycle adds up to)")
		}
	} else {
		fmt.Fprintf(w, "cycles of the data: %d rhythm(s); their shares are unknown (the model file holds no attribution shares; pass --data, or retrain with this version)\n", len(r.Rhythms))
		for _, rh := range r.Rhythms {
			fmt.Fprintf(w, "  %-14s frequencies %v (harmonics %v)\n", rhythmName(rh), rh.Frequencies, rh.Harmonics)
		}
	}
	cycleLines := 0
	for _, rh := range r.Rhythms {
		cycleLines += len(rh.Frequencies)
	}
	fmt.Fprintf(w, "\nother frequencies, by period (counted on the %s):\n", r.SelectionFrom)
	if r.CyclesAlwaysSelected && cycleLines >= r.SelectedPerWindow {
		fmt.Fprintf(w, "  (every window selects the cycles' %d frequencies, which take all its places, so no other frequency is selected)\n", cycleLines)
	}
	// The frequencies no window used and no cycle holds are counted, not
	// listed: a table of zeros tells nothing (--json has them all).
	var idle []inspectFrequency
	shown, counted := 0, len(r.MostSelected) > 0 && r.SharesFrom != "" // selections and shares known
	for _, f := range r.Frequencies {
		switch {
		case f.Rhythm != nil:
		case counted && f.Selected == 0 && f.Share == 0 && !f.Cycle:
			idle = append(idle, f)
		default:
			shown++
		}
	}
	if shown > 0 {
		fmt.Fprintf(w, "  %3s  %10s  %12s  %10s  %9s  %7s\n", "id", "frequency", "period_steps", "period", "selected", "share")
	}
	for _, f := range r.Frequencies {
		if f.Rhythm != nil || slices.ContainsFunc(idle, func(g inspectFrequency) bool { return g.ID == f.ID }) {
			continue
		}
		note := ""
		if f.Cycle {
			note = "  a spectral peak the forecasts barely use"
		}
		fmt.Fprintf(w, "  %3d  %10.5f  %12.2f  %10s  %8.1f%%  %6.1f%%%s\n", f.ID, f.Frequency, f.PeriodSteps, f.Period, 100*f.SelectedShare, 100*f.Share, note)
	}
	if len(idle) > 0 {
		// r.Frequencies is by period: the first and last idle ones span them.
		span := func(f inspectFrequency) string { return cmp.Or(f.Period, fmt.Sprintf("%.1f steps", f.PeriodSteps)) }
		if len(idle) == 1 {
			fmt.Fprintf(w, "  1 more frequency, at %s: never selected, no share (--json has it)\n", span(idle[0]))
		} else {
			fmt.Fprintf(w, "  %d more frequencies, with periods between %s and %s: never selected, no share (--json lists them)\n",
				len(idle), span(idle[0]), span(idle[len(idle)-1]))
		}
	}
	if len(r.MostSelected) > 0 {
		fmt.Fprintln(w, "\nmost often selected:")
		for _, f := range r.MostSelected {
			label := fmt.Sprintf("%.1f steps", f.PeriodSteps)
			if f.Period != "" {
				label = f.Period
			}
			fmt.Fprintf(w, "  id %2d  %-10s in %5.1f%% of windows\n", f.ID, label, 100*f.SelectedShare)
		}
	}
	fmt.Fprintln(w, "\nknown periods (match: a cycle of the data, or a line of one, within 15%):")
	if len(r.KnownPeriods) == 0 {
		fmt.Fprintln(w, "  the model does not know its data's cadence, so periods have no physical unit")
	}
	for _, k := range r.KnownPeriods {
		verdict := "no match"
		switch {
		case k.CyclePeriod:
			verdict = "match, the period of the " + k.Cycle + " (no line of it lies there: its lines are harmonics)"
		case k.Match:
			verdict = "match, a line of the " + k.Cycle
		case k.RelError < matchTolerance:
			verdict = "no match: a free frequency, no cycle of the data"
		}
		fmt.Fprintf(w, "  %-6s nearest id %2d at %-8s (%.1f%% off): %s\n", k.Known, k.NearestID, k.NearestPeriod, 100*k.RelError, verdict)
	}
	fmt.Fprintf(w, "\nparameters: %d\n", r.Params)
	for _, c := range r.Components {
		fmt.Fprintf(w, "  %-18s %9d\n", c.Component, c.Params)
	}
}
