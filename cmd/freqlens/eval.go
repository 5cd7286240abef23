package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/readings"
)

// evalReport is what `eval --json` prints.
type evalReport struct {
	Model         string             `json:"model"`
	Data          string             `json:"data"`
	Protocol      string             `json:"protocol"`
	SameData      bool               `json:"same_data_as_training"`
	MSE           float64            `json:"mse"`
	MAE           float64            `json:"mae"`
	RMSE          float64            `json:"rmse"`
	Windows       int                `json:"windows"`
	Channels      int                `json:"channels"`
	PerChannel    map[string]float64 `json:"per_channel"`
	PerChannelMAE map[string]float64 `json:"per_channel_mae"`
	// PerSeries scores each series of long-format data with more than
	// one, worst MSE first (normalised units, as mse).
	PerSeries        []seriesError `json:"per_series,omitempty"`
	Seconds          float64       `json:"seconds"`
	WindowsPerSecond float64       `json:"windows_per_second"`
	// ResidualShare is the residual MLP's mean share of the attribution
	// (level excluded) over the test windows; Rhythms the data's rhythms
	// with theirs.
	ResidualShare float64        `json:"residual_share"`
	OtherShare    float64        `json:"other_share"` // the frequencies of no cycle; with the cycles' and residual_share, 1
	Rhythms       []rhythmReport `json:"rhythms"`
	// Perturbation is the perturbation test (--perturbation K): the
	// forecast without each window's k largest parts, k = 1 … K.
	Perturbation *measure.PerturbationResult `json:"perturbation,omitempty"`
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	modelPath := fs.String("model", "", "model file written by 'freqlens train'")
	data := fs.String("data", "", "data to score on its test split: a wide CSV (standard protocol), or long-format CSV, Arrow or Parquet as train reads it (split by time)")
	configPath := fs.String("config", "", "long-format data: the serve configuration whose input.* and window.* settings put its readings on steps (default: those the model was trained with)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	perturb := fs.Int("perturbation", 0, "also remove each test window's k largest parts, k = 1 … K, and compare the forecast's change with the parts (0: off)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "model", "data"); err != nil {
		return err
	}
	if *perturb < 0 {
		return fmt.Errorf("--perturbation %d is negative; use a number of parts such as 8", *perturb)
	}
	m, split, err := loadModelAndData(ctx, *modelPath, *data, *configPath, stderr)
	if err != nil {
		return err
	}
	met, err := measure.Evaluate(ctx, m, split.Test, measure.Options{Groups: split.Groups})
	if err != nil {
		return err
	}
	rep := evalReport{
		Model: *modelPath, Data: *data, Protocol: split.Protocol,
		SameData: m.Meta.DataSHA256 != "" && m.Meta.DataSHA256 == split.SHA256,
		MSE:      met.MSE, MAE: met.MAE, RMSE: met.RMSE, Windows: met.Windows, Channels: met.Channels,
		PerChannel:    perChannel(split.Columns, met.PerChannelMSE),
		PerChannelMAE: perChannel(split.Columns, met.PerChannelMAE),
		Seconds:       met.Seconds, WindowsPerSecond: met.WindowsPerSecond,
		ResidualShare: met.ResidualShare, Rhythms: rhythmsOf(m, met.Shares, met.RhythmShares),
		OtherShare: otherShare(m, met.Shares, met.RhythmShares, met.ResidualShare),
		PerSeries:  perSeries(split.Series, met),
	}
	if *perturb > 0 {
		pr, err := measure.Perturbation(ctx, m, split.Test, *perturb, 1)
		if err != nil {
			return err
		}
		rep.Perturbation = &pr
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	fmt.Fprintf(stdout, "%s on %s (%s protocol, test split): MSE %.4f  MAE %.4f  RMSE %.4f\n",
		filepath.Base(*modelPath), filepath.Base(*data), rep.Protocol, rep.MSE, rep.MAE, rep.RMSE)
	fmt.Fprintf(stdout, "%d windows × %d channels, %.0f windows/s\n", rep.Windows, rep.Channels, rep.WindowsPerSecond)
	// The channels worst first, as the series below, so that the one the
	// model serves worst heads the list (file order on ties).
	order := make([]int, len(split.Columns))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return worstFirst(met.PerChannelMSE[a], met.PerChannelMSE[b]) })
	if len(order) > 1 {
		units := "each channel z-scored with its training rows' statistics"
		if split.Series != nil {
			units = "every series' readings together, in the units given below"
		}
		fmt.Fprintf(stdout, "by channel, worst test MSE first (%s):\n", units)
	}
	for _, i := range order {
		fmt.Fprintf(stdout, "  %-24s MSE %.4f  MAE %.4f\n", split.Columns[i], met.PerChannelMSE[i], met.PerChannelMAE[i])
	}
	printPerSeries(stdout, rep.PerSeries, m.Config().Mode == model.Independent)
	fmt.Fprintln(stdout)
	printRhythms(stdout, rep.Rhythms, rep.ResidualShare, "the test split")
	if pr := rep.Perturbation; pr != nil {
		fmt.Fprintf(stdout, "\nperturbation: each test window's k largest parts removed (%d windows; full forecasts MSE %.4f):\n", pr.Windows, pr.MSE)
		fmt.Fprintf(stdout, "  %2s  %14s  %14s  %10s  %9s  %16s\n", "k", "forecast moved", "parts removed", "worst gap", "MSE", "MSE, k at random")
		for _, st := range pr.Steps {
			fmt.Fprintf(stdout, "  %2d  %14.6f  %14.6f  %10.2e  %9.4f  %16.4f\n", st.K, st.Change, st.Parts, st.Gap, st.MSE, st.RandomMSE)
		}
	}
	return nil
}

// seriesError is one series' score in `eval --json`'s per_series.
type seriesError struct {
	Series  string  `json:"series"`
	MSE     float64 `json:"mse"`
	MAE     float64 `json:"mae"`
	Windows int     `json:"windows"`
}

// testSplit is the test windows a model is scored on, from a wide CSV
// under the standard protocol or from long-format history split by time.
type testSplit struct {
	Test     model.Source
	Columns  []string // the channels (a wide file's columns, long data's value fields)
	Protocol string
	SHA256   string // the file's
	// Series and Groups name the series of long-format data with more
	// than one (Groups[i] indexes Series for test window i); nil else.
	Series []string
	Groups []int
}

// perSeries lists the series' scores, worst MSE first.
func perSeries(names []string, met model.Metrics) []seriesError {
	out := make([]seriesError, 0, len(names))
	for g, name := range names {
		if g < len(met.GroupMSE) && met.GroupWindows[g] > 0 {
			out = append(out, seriesError{Series: name, MSE: met.GroupMSE[g], MAE: met.GroupMAE[g], Windows: met.GroupWindows[g]})
		}
	}
	slices.SortStableFunc(out, func(a, b seriesError) int { return worstFirst(a.MSE, b.MSE) })
	return out
}

// worstFirst orders errors largest first, with NaN (a window the model
// could not score) before all of them.
func worstFirst(a, b float64) int {
	switch an, bn := math.IsNaN(a), math.IsNaN(b); {
	case an && bn:
		return 0
	case an:
		return -1
	case bn:
		return 1
	}
	return cmp.Compare(b, a)
}

// printPerSeries writes the series' scores, worst first: all of them when
// there are few, else the worst and the best. Their units are the MSE's
// above: each series z-scored with its own training rows' statistics for
// an independent model, with the pooled ones for a mixed model.
func printPerSeries(w io.Writer, ss []seriesError, independent bool) {
	if len(ss) == 0 {
		return
	}
	units := "all series z-scored with their pooled training statistics"
	if independent {
		units = "each series z-scored with its own training rows' statistics"
	}
	fmt.Fprintf(w, "by series, worst test MSE first (%d series; %s):\n", len(ss), units)
	line := func(s seriesError) {
		fmt.Fprintf(w, "  %-24s MSE %.4f  MAE %.4f  (%d windows)\n", s.Series, s.MSE, s.MAE, s.Windows)
	}
	const worst, best = 8, 3
	if len(ss) <= worst+best+1 {
		for _, s := range ss {
			line(s)
		}
		return
	}
	for _, s := range ss[:worst] {
		line(s)
	}
	fmt.Fprintf(w, "  … %d more (--json lists every series)\n", len(ss)-worst-best)
	for _, s := range ss[len(ss)-best:] {
		line(s)
	}
}

// loadModelAndData loads a model and the file at dataPath, checks they fit
// together, and cuts the file's test windows with the model's lookback and
// horizon: a wide CSV under the standard protocol, long-format history
// (CSV, Arrow, Parquet, as train reads it with configPath's input.* and
// window.* settings) split by time, its readings put on the model's steps.
func loadModelAndData(ctx context.Context, modelPath, dataPath, configPath string, stderr io.Writer) (*model.Model, testSplit, error) {
	m, err := loadModelFile(modelPath)
	if err != nil {
		return nil, testSplit{}, err
	}
	cfg, format, err := detectData(dataPath, configPath, m, stderr)
	if err != nil {
		return nil, testSplit{}, err
	}
	if format != "" {
		return longTestSplit(ctx, m, dataPath, format, cfg, stderr)
	}
	frame, err := loadWide(dataPath, cfg.Readings, stderr)
	if err != nil {
		return nil, testSplit{}, err
	}
	if err := checkFits(m, frame, dataPath); err != nil {
		return nil, testSplit{}, err
	}
	if err := checkLongEnough(m, modelPath, frame, dataPath); err != nil {
		return nil, testSplit{}, err
	}
	bm, err := dataset.Standard(frame, m.Lookback(), m.Horizon())
	if err != nil {
		return nil, testSplit{}, err
	}
	return m, testSplit{Test: bm.Test, Columns: frame.Columns, Protocol: string(bm.Protocol), SHA256: frame.SHA256}, nil
}

// loadWide loads a wide CSV and says on stderr which of its steps were
// irregular and what became of them (dataset.Frame.GapNote), and which
// readings lie far outside the rest of their column (OutlierNote).
func loadWide(path string, rc readings.Config, stderr io.Writer) (*dataset.Frame, error) {
	frame, err := dataset.LoadCSV(path)
	if err != nil {
		return nil, withLongHint(err, path, rc)
	}
	for _, note := range []string{frame.GapNote(), frame.OutlierNote()} {
		if note != "" {
			fmt.Fprintln(stderr, note)
		}
	}
	return frame, nil
}

// withLongHint adds to the error of a CSV read as a wide file how to read it
// as long-format data, when it looks like that (history.LongHint).
func withLongHint(err error, path string, rc readings.Config) error {
	if hint := history.LongHint(path, rc); hint != "" {
		return fmt.Errorf("%w\n  %s", err, hint)
	}
	return err
}

// checkLongEnough returns an error when frame is too short to cut the
// standard protocol's splits at the model's lookback and horizon. Those were
// fixed when the model was trained, so the way out is a longer file, or
// predict, which explains one window without scoring a test split.
func checkLongEnough(m *model.Model, modelPath string, frame *dataset.Frame, path string) error {
	p := dataset.ProtocolFor(frame.Name)
	need := p.MinRows(m.Lookback(), m.Horizon())
	if rows := frame.Rows(); need > 0 && !p.Fits(rows, m.Lookback(), m.Horizon()) {
		parts := "70% training, 10% validation and 20% test, each holding a window"
		if p != dataset.ProtocolRatio {
			parts = "its 20 months of 30 days"
		}
		return fmt.Errorf("%s has %d rows, too few to score this model: its lookback (%d) and horizon (%d) were fixed when it was trained, "+
			"and the %s protocol (%s) needs at least %d rows for them; use a longer file, or 'freqlens predict --model %s --data %s --at ROW' to explain one window",
			filepath.Base(path), rows, m.Lookback(), m.Horizon(), p, parts, need, modelPath, path)
	}
	return nil
}

// checkFits reports data the model cannot be run on: a mixed model given
// data of another width, or data whose date column steps at another
// cadence than the model was trained on (its periods would be read in the
// wrong units: a 24h cycle of an hourly model is 6h of 15-minute data;
// see dataset.SameCadence for what counts as the same).
func checkFits(m *model.Model, frame *dataset.Frame, path string) error {
	if mc, fc := m.Meta.Cadence, frame.Cadence; !dataset.SameCadence(mc, fc) {
		return fmt.Errorf("%s steps every %s but the model was trained on %s steps; its learned periods would be read in the wrong units; "+
			"use data at the model's step, or train a model on this data", filepath.Base(path), fc, mc)
	}
	if m.Config().Mode == model.Mixed && frame.Channels() != m.Channels() {
		trained := ""
		if m.Meta.DataName != "" {
			trained = " (" + m.Meta.DataName + ")"
		}
		return fmt.Errorf("%s has %d value columns but the model was trained on %d%s; use data with the same columns, or an independent model",
			filepath.Base(path), frame.Channels(), m.Channels(), trained)
	}
	// A mixed model reads each column as the channel it was trained on:
	// swapped or renamed columns would be forecast as each other.
	if names := m.Meta.ChannelNames; m.Config().Mode == model.Mixed && len(names) == frame.Channels() && !slices.Equal(names, frame.Columns) {
		if slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(frame.Columns))) {
			return fmt.Errorf("%s has the model's columns in another order (%s; the model's: %s); a mixed model reads each column as its own channel, so put them in the model's order",
				filepath.Base(path), strings.Join(frame.Columns, ", "), strings.Join(names, ", "))
		}
		return fmt.Errorf("%s has the columns %s where the mixed model was trained on %s; a mixed model reads each column as its own channel, so name them as the model's, or train on this data",
			filepath.Base(path), strings.Join(frame.Columns, ", "), strings.Join(names, ", "))
	}
	return nil
}
