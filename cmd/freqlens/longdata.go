package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/freqlens/freqlens/config"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/service"
)

// inputKeys are the serve configuration's settings that read long-format
// history and put its readings on steps. train records them in the model
// (model.Meta.Input), and eval, predict, inspect and report read such data
// with them when not given --config.
func inputKeys() []string {
	return []string{
		"input.series_field", "input.time_field", "input.value_fields", "input.value_range",
		"input.cadence", "input.align", "window.max_gap", "window.fill",
	}
}

// detectData says whether the file at path is long-format data, in which
// format (history.Detect), or a wide CSV (""), and returns the serve
// configuration to read it with: the one at configPath, or else the
// defaults with the settings m was trained with (saying on stderr which
// differ from the defaults, as they read the file).
func detectData(path, configPath string, m *model.Model, stderr io.Writer) (service.Config, history.FileFormat, error) {
	cfg, fromModel := service.DefaultConfig(), false
	switch {
	case configPath != "":
		var err error
		if cfg, err = loadConfig(configPath); err != nil {
			return cfg, "", err
		}
	case len(m.Meta.Input) > 0:
		var err error
		if cfg, err = config.FromValues(m.Meta.Input); err != nil {
			return cfg, "", fmt.Errorf("the model records the settings its training data was read with, and this build cannot use them (%w); "+
				"give --config with the input.* and window.* settings to read %s with", err, filepath.Base(path))
		}
		fromModel = true
	}
	format, err := history.Detect(path, cfg.Readings)
	if err == nil && fromModel && format != "" {
		if changed := nonDefault(m.Meta.Input); changed != "" {
			fmt.Fprintf(stderr, "freqlens: reading %s with the settings the model was trained with: %s (--config reads it otherwise)\n", filepath.Base(path), changed)
		}
	}
	return cfg, format, err
}

// nonDefault lists the settings of values that differ from the defaults,
// as "key: value" in key order.
func nonDefault(values map[string]string) string {
	defaults, err := config.Values(service.DefaultConfig(), slices.Collect(maps.Keys(values))...)
	if err != nil { // a key this build lacks: FromValues refused it already
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if values[k] != defaults[k] {
			parts = append(parts, k+": "+values[k])
		}
	}
	return strings.Join(parts, ", ")
}

// recordInput returns cfg's inputKeys as a model records them, or nil when
// a value cannot be written (a value field whose name holds a comma); the
// commands then need --config again, as for a model that records none.
func recordInput(cfg service.Config) map[string]string {
	values, err := config.Values(cfg, inputKeys()...)
	if err != nil {
		return nil
	}
	return values
}

// otherCadence is the error for long-format data put on steps of another
// length than the model's (input.cadence of --config): the model forecasts
// at its own step only.
func otherCadence(path string, cadence, modelCadence time.Duration) error {
	return fmt.Errorf("%s is put on steps of %s (input.cadence) but the model was trained on %s steps and forecasts at its own step only; "+
		"leave input.cadence out of --config (the model's step is used) if the data has a reading every %[3]s, or train a model on this data",
		filepath.Base(path), cadence, modelCadence)
}

// onModelSteps explains a cadence error of data read on the model's steps
// (no input.cadence given, or the one the model recorded): readings further apart, or closer, than the
// model's step are data of another cadence, for which a model of their own
// is the way; setting input.cadence would only meet otherCadence.
func onModelSteps(err error, m *model.Model, cfg service.Config, path string) error {
	var ce *dataset.CadenceError
	// The model's own step: no input.cadence, or the one it recorded.
	if m.Meta.Cadence <= 0 || cfg.Cadence != 0 && cfg.Cadence != m.Meta.Cadence || !errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("%s has readings about %s apart (series %q), but the model was trained on %s steps and forecasts at its own step only; "+
		"train a model on this data (freqlens train --data %s), or use data with a reading every %[4]s", filepath.Base(path), ce.Spacing, ce.Series, m.Meta.Cadence, path)
}

// modelPanel is how long-format history is put on a model's steps to score
// or explain it: cfg's settings, with the model's cadence and alignment
// where cfg leaves them to the data.
func modelPanel(m *model.Model, cfg service.Config) dataset.PanelConfig {
	pc := cfg.HistoryPanel("")
	if pc.Cadence == 0 {
		pc.Cadence = m.Meta.Cadence
	}
	if pc.Align == "" {
		pc.Align = dataset.AlignFloor
		if m.Meta.StepAlign == model.StepAlignNearest {
			pc.Align = dataset.AlignNearest
		}
	}
	return pc
}

// longTestSplit reads long-format history onto the model's steps (its
// cadence and alignment unless cfg sets them) and returns its test windows.
func longTestSplit(ctx context.Context, m *model.Model, path string, format history.FileFormat, cfg service.Config, stderr io.Writer) (*model.Model, testSplit, error) {
	d, err := history.FromFile(ctx, path, format, cfg.Readings, modelPanel(m, cfg), history.Split{Lookback: m.Lookback(), Horizon: m.Horizon(), Mode: m.Config().Mode})
	if err != nil {
		return nil, testSplit{}, onModelSteps(err, m, cfg, path)
	}
	if d.Summary != "" {
		fmt.Fprintln(stderr, d.Summary)
	}
	if mc := m.Meta.Cadence; mc > 0 && mc != d.Cadence {
		return nil, testSplit{}, otherCadence(path, d.Cadence, mc)
	}
	if m.Config().Mode == model.Mixed && len(d.Columns) != m.Channels() {
		return nil, testSplit{}, fmt.Errorf("%s has %d value field(s) %q but the mixed model forecasts %d channels together (%s); "+
			"score it on data with those columns (a wide file like the one it was trained on, or long data whose --config input.value_fields names them), "+
			"or train an independent model on %[1]s",
			filepath.Base(path), len(d.Columns), d.Columns, m.Channels(), strings.Join(m.Meta.ChannelNames, ", "))
	}
	split := testSplit{Test: d.Test, Columns: d.Columns, Protocol: d.Protocol, SHA256: d.SHA256}
	if c, ok := d.Test.(*dataset.Collection); ok {
		if names, groups := c.Series(); len(names) > 1 {
			split.Series, split.Groups = names, groups
		}
	}
	return m, split, nil
}

// readHistory reads long-format history onto steps for a model of the
// given lookback, saying so when no series has that many steps in a row.
func readHistory(ctx context.Context, path string, format history.FileFormat, cfg service.Config, pc dataset.PanelConfig, lookback int) (*history.Steps, error) {
	h, err := history.StepsFromFile(ctx, path, format, cfg.Readings, pc, lookback)
	if short := (*dataset.ShortHistoryError)(nil); errors.As(err, &short) {
		return nil, fmt.Errorf("%w: a window is the model's lookback, %d steps", short, lookback)
	}
	return h, err
}

// parseAt reads --at for long-format data: a time as history.ParseTime
// reads it, or epoch milliseconds (13 digits), as readings may carry them.
func parseAt(s string) (time.Time, error) {
	if len(s) == 13 {
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms > 0 {
			return time.UnixMilli(ms).UTC(), nil
		}
	}
	if t, ok := history.ParseTime(s); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--at %q is not a time; use RFC 3339 (2026-01-05T08:00:00Z), 2026-01-05 08:00:00 (UTC) or epoch milliseconds (13 digits)", s)
}

// instant writes a time of long-format data in RFC 3339: in the model's
// time zone when it has one, else in UTC. Long-format readings keep
// instants, not the offsets their file wrote, so a time without its zone
// would read as the wrong hour to someone east or west of Greenwich.
func instant(m *model.Model, t time.Time) string {
	return t.In(m.Location()).Format(time.RFC3339)
}

// noteZoneless tells the user, when the model keeps a time zone's clock,
// that an --at written without a zone was read as UTC, and what that is on
// the model's clock.
func noteZoneless(w io.Writer, m *model.Model, atText string, at time.Time) {
	if m.Meta.TimeZone == "" || len(atText) == 13 { // epoch milliseconds are an instant
		return
	}
	if _, err := time.Parse(time.RFC3339Nano, atText); err == nil {
		return
	}
	fmt.Fprintf(w, "note: --at %s has no zone and is read as UTC, %s on the model's clock (%s); write an offset (2026-01-05T08:00:00+01:00) to give a local time\n",
		atText, instant(m, at), m.Meta.TimeZone)
}

// noteStep tells the user when --at is not the time of the step whose
// window is explained: a time between two steps is on the step it falls in
// (floor, or the nearest for a model trained on nearest steps).
func noteStep(w io.Writer, at time.Time, f *dataset.Frame, row int) {
	if at.IsZero() || row >= len(f.Times) || f.Times[row].Equal(at) {
		return
	}
	fmt.Fprintf(w, "note: --at %s is not a step's time; it is on the step of %s (steps are %s apart), whose window is explained\n",
		at.UTC().Format(time.RFC3339), f.Times[row].Format(time.RFC3339), f.Cadence)
}

// longWindow reads long-format history onto the model's steps and returns
// the run of steps of series that holds the step of at, as a frame (its
// value fields the channels), and the row of that step; with a zero at,
// the series' longest run and its last row.
func longWindow(ctx context.Context, m *model.Model, path string, format history.FileFormat, cfg service.Config, series string, at time.Time) (*dataset.Frame, int, error) {
	pc := modelPanel(m, cfg)
	h, err := readHistory(ctx, path, format, cfg, pc, m.Lookback())
	if err != nil {
		return nil, 0, onModelSteps(err, m, cfg, path)
	}
	p := h.Panel
	if mc := m.Meta.Cadence; mc > 0 && mc != p.Cadence {
		return nil, 0, otherCadence(path, p.Cadence, mc)
	}
	c, k := p.Cadence.Milliseconds(), p.Step(at)
	C := len(p.Fields)
	if at.IsZero() {
		// The longest run: the row of its last step.
		longest := -1
		for i, sg := range p.Segments {
			if sg.Series == series && (longest < 0 || sg.Rows(C) > p.Segments[longest].Rows(C)) {
				longest = i
			}
		}
		if longest >= 0 {
			sg := p.Segments[longest]
			k = sg.Start + int64(sg.Rows(C)) - 1
		}
	}
	var spans []string
	for _, sg := range p.Segments {
		if sg.Series != series {
			continue
		}
		rows := sg.Rows(C)
		first, last := time.UnixMilli(sg.Start*c).UTC(), time.UnixMilli((sg.Start+int64(rows)-1)*c).UTC()
		spans = append(spans, first.Format(time.RFC3339)+" to "+last.Format(time.RFC3339))
		if k < sg.Start || k >= sg.Start+int64(rows) {
			continue
		}
		row := int(k - sg.Start)
		if row < m.Lookback()-1 {
			return nil, 0, fmt.Errorf("--at %s leaves %d steps of %q since %s (the start of its run of steps) for a window of %d; use a time from %s on",
				at.Format(time.RFC3339), row+1, series, first.Format(time.RFC3339), m.Lookback(), time.UnixMilli((sg.Start+int64(m.Lookback())-1)*c).UTC().Format(time.RFC3339))
		}
		// The frame is one series' run, not the file: its name says so
		// wherever report or predict names the data.
		name := fmt.Sprintf("%s, series %s from %s to %s", filepath.Base(path), series, first.Format(time.DateTime), last.Format(time.DateTime))
		cols := p.Fields
		if len(cols) == 1 {
			cols = []string{series} // one value field: the series is what figures and tables name
		}
		f := &dataset.Frame{Name: name, Columns: cols, Values: sg.Values, Cadence: p.Cadence}
		for i := range rows {
			f.Times = append(f.Times, time.UnixMilli((sg.Start+int64(i))*c).UTC())
		}
		return f, row, nil
	}
	if spans == nil {
		var names []string
		for _, sg := range p.Segments {
			if n := len(names); n < 5 && (n == 0 || names[n-1] != sg.Series) {
				names = append(names, sg.Series)
			}
		}
		return nil, 0, fmt.Errorf("%s holds no run of %d steps of series %q; name a series the file holds (--series), such as %s",
			filepath.Base(path), m.Lookback(), series, strings.Join(names, ", "))
	}
	return nil, 0, fmt.Errorf("--at %s is in no run of steps of %q; its runs (a gap longer than window.max_gap starts a new one): %s",
		at.Format(time.RFC3339), series, strings.Join(spans, ", "))
}
