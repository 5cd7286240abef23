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
	"strconv"
	"strings"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/model"
)

type predictContribution struct {
	ID            int      `json:"id"`
	Frequency     float64  `json:"frequency"`
	PeriodSteps   float64  `json:"period_steps"`
	Period        string   `json:"period,omitempty"`
	PeriodSeconds *float64 `json:"period_seconds,omitempty"`
	Share         float64  `json:"share"`
	// Rhythm is the index of the frequency's rhythm (see the report's
	// rhythms), absent for a free frequency; Cycle says it has one: the
	// frequency is a harmonic of a cycle of the data. Other frequencies
	// carry what has no cycle.
	Rhythm *int        `json:"rhythm,omitempty"`
	Cycle  bool        `json:"cycle"`
	Values [][]float64 `json:"values"`
	// Removed marks a frequency --without removed: its values are still
	// its part of the full forecast, not of forecast.
	Removed bool `json:"removed,omitempty"`
}

// predictRhythm is one rhythm's part of the forecast: the sum of its
// frequencies' contributions.
type predictRhythm struct {
	Index         int      `json:"index"`
	Name          string   `json:"name"`
	PeriodSteps   float64  `json:"period_steps"`
	Period        string   `json:"period,omitempty"`
	PeriodSeconds *float64 `json:"period_seconds,omitempty"`
	// Share is what its frequencies add up to, against the other parts:
	// the rhythms', the other frequencies' and residual_share make 1.
	// LinesShare is the sum of its frequencies' shares, more than Share by
	// what they cancel of each other.
	Share       float64     `json:"share"`
	LinesShare  float64     `json:"lines_share"`
	Frequencies []int       `json:"frequencies"`
	Values      [][]float64 `json:"values"`
}

// predictReport is what `predict --json` prints. Values are in the data's
// units; forecast = residual + Σ contributions.values, element by element,
// where residual is the residual MLP's part plus the window's level. With
// --without, forecast leaves out the contributions marked removed, and
// full_forecast is the sum of them all.
type predictReport struct {
	Model string `json:"model"`
	Data  string `json:"data"`
	// At is the data row of a wide file that ends the window; absent for
	// long-format data, whose window is named by Series and Time.
	At       *int        `json:"at,omitempty"`
	Series   string      `json:"series,omitempty"`
	Time     string      `json:"time"`
	Channels []string    `json:"channels"`
	Times    []string    `json:"times,omitempty"`
	Alpha    float64     `json:"alpha"`
	Forecast [][]float64 `json:"forecast"`
	// Residual is the residual MLP's part with the window's level: the
	// forecast is Residual plus every contribution, as on the attribution
	// topic. Level, each channel's window mean, is given apart because the
	// shares leave it out (ResidualShare counts the residual MLP alone).
	Residual      [][]float64 `json:"residual"`
	ResidualShare float64     `json:"residual_share"`
	// ChannelMix says the residual MLP read every channel's leftover
	// (model.Config.ChannelMix), so its part includes what the other
	// channels say.
	ChannelMix bool      `json:"channel_mix"`
	Level      []float64 `json:"level"`
	// WindowStd is each channel's standard deviation over the window: how
	// much its readings move, the yardstick for how far the parts move the
	// forecast.
	WindowStd     []float64             `json:"window_std"`
	Contributions []predictContribution `json:"contributions"`
	// Rhythms are the parts of the model's rhythms: each the sum of its
	// frequencies' contributions.
	Rhythms []predictRhythm `json:"rhythms"`
	// Actual holds the readings the file has after the window, a row per
	// step: H of them, fewer near the file's end, and null when the window
	// ends on its last row.
	Actual [][]float64 `json:"actual"`
	// Without lists the frequencies removed with --without; Forecast is
	// then the forecast without them and Full the model's forecast with
	// them, so Full − Forecast is their summed contributions.
	Without []int       `json:"without,omitempty"`
	Full    [][]float64 `json:"full_forecast,omitempty"`
}

func runPredict(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	modelPath := fs.String("model", "", "model file written by 'freqlens train'")
	data := fs.String("data", "", "data holding the window: a wide CSV, or long-format CSV, Arrow or Parquet as train reads it (with --series)")
	atFlag := fs.String("at", "", "where the input window ends: the 0-based data row of a wide CSV (header not counted), or the time of a step of long-format data (RFC 3339, or 2006-01-02 15:04:05 in UTC)")
	series := fs.String("series", "", "long-format --data: the series whose window to forecast")
	configPath := fs.String("config", "", "long-format --data: the serve configuration whose input.* and window.* settings put its readings on steps (default: those the model was trained with)")
	asJSON := fs.Bool("json", false, "print the forecast and its attribution as one JSON object")
	without := fs.String("without", "", "forecast without these frequencies: ids or cycle names (e.g. 3,17 or 24h or \"7.0d\"), comma-separated")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "model", "data"); err != nil {
		return err
	}
	m, err := loadModelFile(*modelPath)
	if err != nil {
		return err
	}
	cfg, format, err := detectData(*data, *configPath, m, stderr)
	if err != nil {
		return err
	}
	var frame *dataset.Frame
	row, at := 0, 0
	if format != "" {
		if *series == "" || *atFlag == "" {
			return fmt.Errorf("%s is long-format data: --series names the series and --at the time of the step that ends its window", *data)
		}
		t, err := parseAt(*atFlag)
		if err != nil {
			return err
		}
		noteZoneless(stderr, m, *atFlag, t)
		if frame, row, err = longWindow(ctx, m, *data, format, cfg, *series, t); err != nil {
			return err
		}
		noteStep(stderr, t, frame, row)
		at = row
	} else {
		if *series != "" {
			return fmt.Errorf("--series is for long-format data; %s is a wide CSV, whose columns are its channels", *data)
		}
		if frame, err = loadWide(*data, cfg.Readings, stderr); err != nil {
			return err
		}
		if err := checkFits(m, frame, *data); err != nil {
			return err
		}
		if at, err = wideRow(m, frame, fs, *atFlag); err != nil {
			return err
		}
		row = frame.FrameRow(at)
	}
	// A mixed model normalises with its training columns' statistics; an
	// independent one normalises every window itself and takes any width.
	if n := len(m.Meta.Mean); m.Config().Mode == model.Mixed && n != 0 && n != frame.Channels() {
		return fmt.Errorf("the model was trained on %d columns and normalises with their statistics, but %s has %d", n, *data, frame.Channels())
	}
	removed, notes, err := parseWithout(m, *without)
	if err != nil {
		return err
	}
	rep, err := predict(m, frame, row, removed)
	if err != nil {
		return err
	}
	if rep.At = &at; format != "" {
		rep.At, rep.Series = nil, *series
		rep.Time = instant(m, frame.Times[row])
		for h := range rep.Times {
			rep.Times[h] = instant(m, frame.Times[row].Add(time.Duration(h+1)*frame.Cadence))
		}
	}
	for _, n := range append(notes, idleRemovals(m, rep, removed)...) {
		fmt.Fprintln(stderr, "freqlens predict: note:", n)
	}
	rep.Model, rep.Data, rep.ChannelMix = *modelPath, *data, m.Config().ChannelMix
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	printPredict(stdout, rep, m.Horizon())
	return nil
}

// wideRow checks --at against a wide file: a 0-based data row that leaves
// a whole window.
func wideRow(m *model.Model, frame *dataset.Frame, fs *flag.FlagSet, atText string) (int, error) {
	L := m.Lookback()
	rows := frame.FileRows() // --at counts the file's rows, not the steps filled between them
	if !flagSet(fs, "at") {
		return 0, fmt.Errorf("--at is required: the 0-based data row that ends the window (from %d to %d for this file)", L-1, rows-1)
	}
	at, err := strconv.Atoi(atText)
	switch {
	case err != nil || at < 0:
		return 0, fmt.Errorf("--at %s is not a row; use a 0-based data row from %d to %d", atText, L-1, rows-1)
	case at >= rows:
		return 0, fmt.Errorf("--at %d is past the last data row %d; use a row from %d to %d", at, rows-1, L-1, rows-1)
	case at < L-1:
		return 0, fmt.Errorf("--at %d leaves %d rows for a window of %d; use a row from %d on", at, at+1, L, L-1)
	}
	return at, nil
}

// predict forecasts the window ending at row at and explains it in the
// data's units (explain.Explainer applies and undoes its training
// normalisation; shares are measured on the model's scale).
//
// With removed, the forecast is the model's forecast without those
// frequencies (removed from the selection, not replaced, and without
// their clock terms and band heads), and the report also holds the full forecast.
func predict(m *model.Model, frame *dataset.Frame, at int, removed []int) (predictReport, error) {
	L, H, C := m.Lookback(), m.Horizon(), frame.Channels()
	e, err := explain.New(m, C)
	if err != nil {
		return predictReport{}, err
	}
	x := make([]float64, 0, L*C)
	for t := range L {
		x = append(x, frame.Row(at-L+1+t)...)
	}
	var ends []int64
	if m.ReadsTime() {
		ends = []int64{frame.Times[at].UnixNano()}
	}
	full := slices.Clone(e.Forecast(x, ends))
	ex := e.Explain(0, nil)

	rows := func(v []float64) [][]float64 {
		g := grid(H, C)
		for h := range H {
			copy(g[h], v[h*C:(h+1)*C])
		}
		return g
	}
	rep := predictReport{
		At: &at, Channels: frame.Columns, Alpha: ex.Alpha, Level: ex.Level,
		Forecast: rows(ex.Forecast), Residual: rows(ex.Residual), ResidualShare: ex.ResidualShare,
		WindowStd: make([]float64, C),
	}
	for c := range C {
		mean, sq := 0.0, 0.0
		for t := range L {
			mean += x[t*C+c]
		}
		mean /= float64(L)
		for t := range L {
			d := x[t*C+c] - mean
			sq += d * d
		}
		rep.WindowStd[c] = math.Sqrt(sq / float64(L))
	}
	placed := map[int]bool{}
	for _, pk := range m.Meta.Peaks {
		placed[pk.ID] = true
	}
	for _, ct := range ex.Contributions {
		pc := predictContribution{ID: ct.ID, Frequency: ct.Frequency.Frequency, PeriodSteps: ct.PeriodSteps, Share: ct.Share,
			Cycle: placed[ct.ID], Values: rows(ct.Values)}
		if r, ok := m.RhythmOf(ct.ID); ok {
			pc.Rhythm, pc.Cycle = &r, true
		}
		if ct.Period > 0 {
			s := ct.Period.Seconds()
			pc.Period, pc.PeriodSeconds = cycles.FormatPeriod(ct.Period), &s
		}
		pc.Removed = slices.Contains(removed, ct.ID)
		rep.Contributions = append(rep.Contributions, pc)
	}
	rep.Rhythms = []predictRhythm{}
	for _, rp := range ex.Rhythms {
		pr := predictRhythm{Index: rp.Index, PeriodSteps: rp.PeriodSteps, Share: rp.Share, Frequencies: rp.Frequencies, Values: rows(rp.Values)}
		pr.PeriodSeconds, pr.Period = periodFields(rp.PeriodSteps, m.Meta.Cadence)
		pr.Name = periodLabel(pr.Period, pr.PeriodSteps) + " cycle"
		for _, ct := range ex.Contributions {
			if slices.Contains(rp.Frequencies, ct.ID) {
				pr.LinesShare += ct.Share
			}
		}
		rep.Rhythms = append(rep.Rhythms, pr)
	}
	slices.SortStableFunc(rep.Rhythms, func(a, b predictRhythm) int { return cmp.Compare(b.Share, a.Share) })
	if len(removed) > 0 {
		// The counterfactual: the same window through the model without
		// them. Its difference from the full forecast is exactly their
		// contributions (the attribution is faithful to removal).
		e.Without(removed...)
		rep.Forecast = rows(e.Forecast(x, ends))
		e.Without()
		rep.Full, rep.Without = rows(full), removed
	}
	if at < len(frame.Times) {
		rep.Time = dateTime(frame.Times[at])
		if frame.Cadence > 0 {
			for h := range H {
				rep.Times = append(rep.Times, dateTime(frame.Times[at].Add(time.Duration(h+1)*frame.Cadence)))
			}
		}
	}
	// The realised values of the steps the file holds after the window:
	// all H of them, or fewer near the file's end.
	if n := min(H, frame.Rows()-1-at); n > 0 {
		rep.Actual = grid(n, C)
		for h := range n {
			copy(rep.Actual[h], frame.Row(at+1+h))
		}
	}
	return rep, nil
}

func grid(rows, cols int) [][]float64 {
	g := make([][]float64, rows)
	for i := range g {
		g[i] = make([]float64, cols)
	}
	return g
}

func printPredict(w io.Writer, r predictReport, H int) {
	switch {
	case r.At == nil:
		fmt.Fprintf(w, "forecast of %d steps of %s after %s", H, r.Series, r.Time)
	default:
		fmt.Fprintf(w, "forecast of %d steps after row %d", H, *r.At)
		if r.Time != "" {
			fmt.Fprintf(w, " (%s)", r.Time)
		}
	}
	scope := "its"
	if n := len(r.Channels); n > 1 {
		scope = fmt.Sprintf("all %d channels'", n)
	}
	fmt.Fprintf(w, ", alpha %.3f\n\nwhat drives it (share of %s total absolute attribution; the cycles, other frequencies and residual make 100%%):\n", r.Alpha, scope)
	label := func(c predictContribution) string {
		return fmt.Sprintf("%s (id %d)", periodLabel(c.Period, c.PeriodSteps), c.ID)
	}
	for _, rh := range r.Rhythms {
		fmt.Fprintf(w, "  %-24s %5.1f%%\n", rh.Name, 100*rh.Share)
		// A cycle's lines by their size within it: their own shares,
		// summed, are more than the cycle's when they partly cancel, so
		// they are not shares of the forecast.
		var parts []string
		for _, c := range r.Contributions {
			if c.Rhythm != nil && *c.Rhythm == rh.Index && rh.LinesShare > 0 {
				parts = append(parts, fmt.Sprintf("%s %.0f%%", label(c), 100*c.Share/rh.LinesShare))
			}
		}
		if len(parts) > 1 {
			fmt.Fprintf(w, "      its frequencies by size: %s\n", strings.Join(parts, ", "))
			if cancels(rh.Share, rh.LinesShare) {
				fmt.Fprintf(w, "      (on their own they come to %.1f%%; they partly cancel, down to the cycle's %.1f%%)\n", 100*rh.LinesShare, 100*rh.Share)
			}
		}
	}
	other := 0.0
	var parts []string
	for _, c := range r.Contributions {
		if c.Rhythm == nil {
			other += c.Share
			parts = append(parts, fmt.Sprintf("%s %.1f%%", label(c), 100*c.Share))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "  %-24s %5.1f%%\n      %s\n", "other frequencies*", 100*other, strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "  %-24s %5.1f%%\n", explain.ResidualName(r.ChannelMix), 100*r.ResidualShare)
	if len(parts) > 0 {
		fmt.Fprintln(w, "  * no cycle of the training data: frequencies that carry what has no peak in its spectrum")
	}
	fmt.Fprintln(w, "  "+partsSize(r))
	printPredictSteps(w, r, H)
}

// printPredictSteps prints the forecast's first steps (without the removed
// parts and in full, beside the actual values when known): a step a row
// for one or two channels, else a channel a row.
func printPredictSteps(w io.Writer, r predictReport, H int) {
	if len(r.Without) > 0 {
		fmt.Fprintf(w, "\nforecast without %s (the full forecast minus exactly the removed parts):\n", removedName(r))
	}
	show := min(H, 6)
	what := "forecast"
	if r.Full != nil {
		what += " without them / full"
	}
	if r.Actual != nil {
		what += " / actual"
	}
	cell := func(h, c int) string {
		v := reading(r.Forecast[h][c])
		if r.Full != nil {
			v += "/" + reading(r.Full[h][c])
		}
		if h < len(r.Actual) {
			v += "/" + reading(r.Actual[h][c])
		} else if r.Actual != nil {
			v += "/-"
		}
		return v
	}
	if len(r.Channels) <= 2 {
		fmt.Fprintf(w, "\nfirst %d steps (%s):\n", show, what)
		for h := range show {
			label := fmt.Sprintf("+%d", h+1)
			if len(r.Times) > h {
				label = r.Times[h]
			}
			fmt.Fprintf(w, "  %-20s", label)
			for c := range r.Channels {
				fmt.Fprintf(w, " %s %s", r.Channels[c], cell(h, c))
			}
			fmt.Fprintln(w)
		}
		return
	}
	// Many channels: a channel a row, the steps across.
	from := ""
	if len(r.Times) > 0 {
		from = " from " + r.Times[0]
	}
	fmt.Fprintf(w, "\nfirst %d steps%s (%s):\n", show, from, what)
	rows := [][]string{{"channel"}}
	for h := range show {
		rows[0] = append(rows[0], fmt.Sprintf("+%d", h+1))
	}
	for c, name := range r.Channels {
		row := []string{name}
		for h := range show {
			row = append(row, cell(h, c))
		}
		rows = append(rows, row)
	}
	width := make([]int, show+1)
	for _, row := range rows {
		for j, v := range row {
			width[j] = max(width[j], len(v))
		}
	}
	for _, row := range rows {
		var line strings.Builder
		line.WriteString(" ")
		for j, v := range row {
			fmt.Fprintf(&line, " %-*s", width[j], v)
		}
		fmt.Fprintln(w, strings.TrimRight(line.String(), " "))
	}
}

// partsSize says how far the parts move the forecast from the window's
// level, on average over steps, against how much the window's readings
// move: what the shares split. A flat window (a stuck sensor) still has
// shares that make 100%, of almost nothing, and this line shows it. One
// channel is said in its units; several, whose units differ (mbar and W/m²
// side by side), in each channel's window std, with the flat ones named.
func partsSize(r predictReport) string {
	full := r.Forecast
	if r.Full != nil {
		full = r.Full
	}
	C := len(r.Level)
	moved := make([]float64, C)
	for h := range full {
		for c, v := range full[h] {
			moved[c] += math.Abs(v-r.Level[c]) / float64(len(full))
		}
	}
	if C == 1 {
		return fmt.Sprintf("what the shares split: the parts move the forecast %s from the window's level on average; the window's readings move %s (std)",
			reading(moved[0]), reading(r.WindowStd[0]))
	}
	ratio, n := 0.0, 0
	var flat []string
	for c := range C {
		if s := r.WindowStd[c]; s > 1e-9*max(math.Abs(r.Level[c]), 1e-300) {
			ratio += moved[c] / s
			n++
		} else {
			flat = append(flat, r.Channels[c])
		}
	}
	line := fmt.Sprintf("what the shares split: the parts move each channel's forecast from its window's level by %.2f times the window's own standard deviation, on average over the %d channels whose window moves",
		ratio/float64(max(n, 1)), n)
	if len(flat) > 0 {
		line += fmt.Sprintf("; flat windows, whose shares split almost nothing (a stuck sensor?): %q", flat)
	}
	return line
}

// removedName names what --without removed: the cycles all of whose
// frequencies went, then the other frequencies by id.
func removedName(r predictReport) string {
	gone := map[int]bool{}
	for _, id := range r.Without {
		gone[id] = true
	}
	var names []string
	for _, rh := range r.Rhythms {
		if len(rh.Frequencies) > 0 && !slices.ContainsFunc(rh.Frequencies, func(id int) bool { return !gone[id] }) {
			names = append(names, "the "+rh.Name)
			for _, id := range rh.Frequencies {
				delete(gone, id)
			}
		}
	}
	var ids []int
	for _, id := range r.Without {
		if gone[id] {
			ids = append(ids, id)
		}
	}
	// A line of a cycle is named with its cycle.
	lineOf := func(id int) string {
		for _, c := range r.Contributions {
			if c.ID != id || c.Rhythm == nil {
				continue
			}
			for _, rh := range r.Rhythms {
				if rh.Index == *c.Rhythm {
					return fmt.Sprintf(", the %s line of the %s", periodLabel(c.Period, c.PeriodSteps), rh.Name)
				}
			}
		}
		return ""
	}
	switch len(ids) {
	case 0:
	case 1:
		names = append(names, fmt.Sprintf("frequency %d%s", ids[0], lineOf(ids[0])))
	default:
		names = append(names, fmt.Sprintf("frequencies %v", ids))
	}
	return strings.Join(names, " and ")
}

// parseWithout reads --without: frequency ids and cycle (rhythm) names,
// comma-separated. A cycle name is its period as inspect and predict
// print it ("24.0h", "7.0d"), with or without " cycle", or its period in
// steps ("168 steps", or "168" when no frequency has that id); it stands
// for every frequency of the rhythm. A bare number that is both an id and
// a cycle's period in steps is read as the id, with a note saying how to
// name the cycle.
func parseWithout(m *model.Model, spec string) (ids []int, notes []string, err error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil, nil
	}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(item), "cycle"))
		if id, err := strconv.Atoi(item); err == nil && id >= 0 && id < m.Config().Frequencies {
			ids = append(ids, id)
			if r, ok := rhythmByName(m, item); ok {
				_, name := periodFields(m.Meta.Rhythms[r].PeriodSteps, m.Meta.Cadence)
				notes = append(notes, fmt.Sprintf("--without %s removes frequency %d, not the %s cycle (%s steps); for the cycle write --without %q",
					item, id, periodLabel(name, m.Meta.Rhythms[r].PeriodSteps), item, item+" steps"))
			}
			continue
		}
		r, ok := rhythmByName(m, item)
		if !ok {
			if id, ok := frequencyByName(m, item); ok {
				ids = append(ids, id) // one line of a cycle, as predict lists them ("12.0h (id 14)")
				continue
			}
			var names []string
			for _, rs := range explain.RhythmShares(m, nil, nil) {
				_, name := periodFields(rs.PeriodSteps, m.Meta.Cadence)
				names = append(names, periodLabel(name, rs.PeriodSteps))
			}
			return nil, nil, fmt.Errorf("--without %q: not a frequency id (0 to %d), a frequency's period nor a cycle of this model (its cycles: %s)",
				item, m.Config().Frequencies-1, strings.Join(names, ", "))
		}
		ids = append(ids, m.Meta.Rhythms[r].Frequencies...)
	}
	slices.Sort(ids)
	return slices.Compact(ids), notes, nil
}

// idleRemovals notes each removed frequency that took no part in the
// forecast (neither selected for the window nor a cycle's, whose clock
// term and band head are always in): removing it changes nothing.
func idleRemovals(m *model.Model, rep predictReport, removed []int) []string {
	var notes []string
	for _, id := range removed {
		if _, cycle := m.RhythmOf(id); cycle || slices.ContainsFunc(rep.Contributions, func(c predictContribution) bool { return c.ID == id }) {
			continue
		}
		notes = append(notes, fmt.Sprintf("frequency %d was not selected for this window, so the forecast without it is the full forecast", id))
	}
	return notes
}

// rhythmByName finds the rhythm whose period reads as name ("24.0h",
// "24h", "7.0d", or steps), within 1%.
func rhythmByName(m *model.Model, name string) (int, bool) {
	want := periodByName(m, name)
	if want <= 0 {
		return 0, false
	}
	for r, rh := range m.Meta.Rhythms {
		if math.Abs(rh.PeriodSteps/want-1) <= 0.01 {
			return r, true
		}
	}
	return 0, false
}

// frequencyByName returns the id of the frequency whose period is name
// (within 1%, the closest), as predict and inspect print it ("12.0h").
func frequencyByName(m *model.Model, name string) (int, bool) {
	want := periodByName(m, name)
	if want <= 0 {
		return 0, false
	}
	best, bestOff := -1, 0.01
	for _, f := range m.Frequencies() {
		if off := math.Abs(f.PeriodSteps/want - 1); off <= bestOff {
			best, bestOff = f.ID, off
		}
	}
	return best, best >= 0
}

// periodByName reads a period written as inspect and predict print it
// ("24.0h", "7.0d", "168 steps", "168") in steps; 0 when it is none.
func periodByName(m *model.Model, name string) float64 {
	want := -1.0
	if v, err := strconv.ParseFloat(strings.TrimSuffix(name, " steps"), 64); err == nil {
		want = v
	} else if m.Meta.Cadence > 0 {
		s := strings.ReplaceAll(name, " ", "")
		for unit, hours := range map[string]float64{"d": 24, "w": 168} { // days and weeks, which time.ParseDuration lacks
			if strings.HasSuffix(s, unit) {
				if v, err := strconv.ParseFloat(strings.TrimSuffix(s, unit), 64); err == nil {
					s = strconv.FormatFloat(v*hours, 'f', -1, 64) + "h"
				}
			}
		}
		if d, err := time.ParseDuration(s); err == nil {
			want = float64(d) / float64(m.Meta.Cadence)
		}
	}
	return max(want, 0)
}

// dateTime writes t as its file wrote it: "2006-01-02 15:04:05", with the
// zone's offset when the file gave one other than UTC's.
func dateTime(t time.Time) string {
	if _, off := t.Zone(); off != 0 {
		return t.Format("2006-01-02 15:04:05-07:00")
	}
	return t.Format(time.DateTime)
}

// reading writes a forecast or reading for a person: three decimals at
// ordinary magnitudes, four significant digits at very small or large
// ones, where fixed decimals would print 0.000 or a row of digits.
func reading(v float64) string {
	if a := math.Abs(v); a == 0 || (a >= 0.01 && a < 1e7) {
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
