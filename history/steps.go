package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/readings"
)

// FromFile reads long-format history from a file of the given format
// (Detect), decoding it with rc and putting it on steps with pc,
// and splits it by time.
func FromFile(ctx context.Context, path string, format FileFormat, rc readings.Config, pc dataset.PanelConfig, s Split) (*Data, error) {
	h, err := StepsFromFile(ctx, path, format, rc, pc, s.Lookback+s.Horizon)
	if err != nil {
		return nil, oneWindow(err, s)
	}
	return h.Split(s)
}

// oneWindow says what the steps a series needs are for, when it has too
// few (dataset.ShortHistoryError).
func oneWindow(err error, s Split) error {
	if short := (*dataset.ShortHistoryError)(nil); errors.As(err, &short) {
		return fmt.Errorf("%w (a window is lookback + horizon = %d + %d steps: a shorter --lookback or --horizon needs fewer)", err, s.Lookback, s.Horizon)
	}
	return err
}

// StepsFromFile reads long-format history from a file of the given format
// (Detect) onto steps, keeping the runs of at least minRows steps.
func StepsFromFile(ctx context.Context, path string, format FileFormat, rc readings.Config, pc dataset.PanelConfig, minRows int) (*Steps, error) {
	pc.Name = filepath.Base(path)
	b, err := dataset.NewPanelBuilder(pc)
	if err != nil {
		return nil, err
	}
	stats, err := DecodeFile(ctx, path, format, rc, b)
	if err != nil {
		return nil, err
	}
	h, err := build(b, stats, format.String()+" "+pc.Name, minRows)
	if err != nil {
		return nil, err
	}
	if h.SHA256, err = fileSHA256(path); err != nil {
		return nil, err
	}
	return h, nil
}

// fileSHA256 returns the hex SHA-256 of the file at path: the model file
// records it, so that eval can say whether it scores the training data.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// FromTopic reads the retained history of topic (see DecodeTopic),
// decoding it with rc and putting it on steps with pc, and splits it by
// time.
func FromTopic(ctx context.Context, kc *kafkaconn.Client, topic string, opts TopicOptions, rc readings.Config, pc dataset.PanelConfig, s Split) (*Data, error) {
	h, err := StepsFromTopic(ctx, kc, topic, opts, rc, pc, s.Lookback+s.Horizon)
	if err != nil {
		return nil, oneWindow(err, s)
	}
	return h.Split(s)
}

// Steps is long-format history on steps, before its split.
type Steps struct {
	Panel *dataset.Panel
	Stats Stats
	// Span is the time from the earliest to the latest step; From and To
	// are those steps' times (UTC).
	Span     time.Duration
	From, To time.Time
	// SHA256 is the source file's digest, "" for the topic.
	SHA256 string
}

// StepsFromTopic reads the retained history of topic onto steps, keeping
// the runs of at least minRows steps.
func StepsFromTopic(ctx context.Context, kc *kafkaconn.Client, topic string, opts TopicOptions, rc readings.Config, pc dataset.PanelConfig, minRows int) (*Steps, error) {
	pc.Name = "topic " + topic
	b, err := dataset.NewPanelBuilder(pc)
	if err != nil {
		return nil, err
	}
	stats, err := DecodeTopic(ctx, kc, topic, rc, b, opts)
	if err != nil {
		return nil, err
	}
	return build(b, stats, pc.Name, minRows)
}

// build puts the readings on steps.
func build(b *dataset.PanelBuilder, stats Stats, name string, minRows int) (*Steps, error) {
	switch {
	case stats.Messages == 0:
		return nil, fmt.Errorf("%s holds no readings", name)
	case stats.Readings == 0:
		msg := fmt.Sprintf("%s: no readings among %d", name, stats.Messages)
		if stats.Example != "" {
			msg += "; the first refused: " + stats.Example
		}
		// Refusals for fields that are not there or not what they should be
		// are most often field names the configuration does not give.
		for _, r := range []string{readings.ReasonMissingField, readings.ReasonWrongType, readings.ReasonBadSchema} {
			if stats.Refused[r] > 0 {
				return nil, fmt.Errorf("%s; check input.series_field, input.time_field and input.value_fields in --config", msg)
			}
		}
		return nil, errors.New(msg)
	}
	p, err := b.Build(minRows)
	if err != nil {
		return nil, err
	}
	first, last := p.Segments[0].Start, p.Segments[0].Start
	for _, seg := range p.Segments {
		first, last = min(first, seg.Start), max(last, seg.Start+int64(seg.Rows(len(p.Fields)))-1)
	}
	at := func(step int64) time.Time { return time.UnixMilli(step * p.Cadence.Milliseconds()).UTC() }
	return &Steps{Panel: p, Stats: stats, Span: time.Duration(last-first+1) * p.Cadence, From: at(first), To: at(last)}, nil
}

// Split splits the history by time into the windows of s.
func (h *Steps) Split(s Split) (*Data, error) {
	p, stats := h.Panel, h.Stats
	mode := s.Mode
	if mode == "" {
		mode = model.Independent
	}
	bm, err := p.Split(s.Lookback, s.Horizon, mode == model.Independent)
	if err != nil {
		return nil, err
	}
	r := p.Report
	restarts := fmt.Sprintf("%d gaps restart a series", r.Restarts)
	if r.Restarts == 1 {
		restarts = "1 gap restarts a series"
	}
	summary := fmt.Sprintf("%s: %s; %d series, %d segments at %v from %s to %s UTC (%s); %d duplicate readings replaced, %d steps filled, %s",
		p.Name, stats, r.Series, len(p.Segments), p.Cadence, h.From.Format(time.DateTime), h.To.Format(time.DateTime), cycles.FormatPeriod(h.Span),
		r.Duplicates, r.Filled, restarts)
	if len(r.RestartSeries) > 0 {
		more := ""
		if n := r.RestartSeriesN - len(r.RestartSeries); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		summary += fmt.Sprintf(" (%s%s; longer than window.max_gap)", strings.Join(r.RestartSeries, ", "), more)
	}
	// The first line's clauses, then each note on a line of its own.
	if r.ShortSeries > 0 || r.ShortSegments > 0 {
		summary += fmt.Sprintf("; left out as shorter than lookback + horizon: %d segments (%d steps), %d series with nothing longer",
			r.ShortSegments, r.ShortRows, r.ShortSeries)
	}
	if bm.Adapted {
		summary += fmt.Sprintf("; split by time into %s (train, validation, test): the history is too short for 70%%, 10%% and 20%% to hold a horizon each", bm.PartsString())
	}
	if n := bm.Train.Len(); s.MaxWindows > 0 && n > s.MaxWindows {
		summary += fmt.Sprintf("; training on %d of %d windows drawn at random (--max-windows)", s.MaxWindows, n)
	}
	if r.LateInStep > 0 {
		summary += fmt.Sprintf("\n  %d readings are stamped in the last 2%% of their step (such as 12:59:58 for an hourly 12:00 step): "+
			"if each is the next step's reading, set input.align: nearest in --config (and in serve's)", r.LateInStep)
	}
	if r.Collisions > r.Readings/100 && r.Collisions >= 10 {
		summary += fmt.Sprintf("\n  %d readings fell on a step that another reading of their series, at another time, had taken (the later is kept): "+
			"do some series follow another schedule or cadence? (steps of %v, each reading on the %s step: input.cadence, input.align)", r.Collisions, p.Cadence, p.Align)
	}
	if steps := r.Readings - r.Duplicates + r.Filled; r.Filled >= 10 && 10*r.Filled > steps {
		summary += fmt.Sprintf("\n  %d of the %d steps (%.0f%%) had no reading and were filled between their neighbours: "+
			"is the cadence, %v, shorter than the readings' spacing? (input.cadence)", r.Filled, steps, 100*float64(r.Filled)/float64(steps), p.Cadence)
	}
	align := ""
	if p.Align == dataset.AlignNearest {
		align = p.Align
		if r.FloorDuplicates > 0 {
			summary += fmt.Sprintf("\n  readings stamped around the step times (some a moment early): each put on the nearest step, "+
				"where the step it falls in would have put %d on a step already taken (input.align: nearest)", r.FloorDuplicates)
		}
	}
	if flat, n := flatSeries(p); n > 0 {
		summary += fmt.Sprintf("\n  %d series never change in a value field (a stuck sensor or a placeholder?): %s; "+
			"their forecasts are trivially right and their shares split nothing, so they flatter the test error: drop them if they are not real",
			n, flat)
	}
	if stats.Example != "" {
		summary += "\n  first refused: " + stats.Example
	}
	if note := p.OutlierNote(); note != "" {
		summary += "\n" + note
	}
	return &Data{
		Span: h.Span, Name: p.Name, Protocol: "time", Mode: mode, Columns: p.Fields, Cadence: p.Cadence, StepAlign: align, Scaler: bm.Scaler, SHA256: h.SHA256,
		Train: bm.Train.Sample(s.MaxWindows, s.Seed), Val: bm.Val.Sample(s.MaxWindows/5, s.Seed+1), Test: bm.Test,
		Summary: summary,
	}, nil
}

// flatSeries names (up to three) the series of p that hold one value in a
// field over all their steps, and counts them.
func flatSeries(p *dataset.Panel) (names string, n int) {
	F := len(p.Fields)
	type span struct{ lo, hi []float64 }
	by := map[string]*span{}
	var order []string
	for _, seg := range p.Segments {
		sp := by[seg.Series]
		if sp == nil {
			sp = &span{lo: make([]float64, F), hi: make([]float64, F)}
			for f := range F {
				sp.lo[f], sp.hi[f] = math.Inf(1), math.Inf(-1)
			}
			by[seg.Series] = sp
			order = append(order, seg.Series)
		}
		for i, v := range seg.Values {
			sp.lo[i%F], sp.hi[i%F] = min(sp.lo[i%F], v), max(sp.hi[i%F], v)
		}
	}
	var flat []string
	for _, name := range order {
		sp := by[name]
		for f := range F {
			if sp.lo[f] == sp.hi[f] {
				if len(flat) < 3 {
					flat = append(flat, fmt.Sprintf("%q", name))
				}
				n++
				break
			}
		}
	}
	if more := n - len(flat); more > 0 {
		return strings.Join(flat, ", ") + fmt.Sprintf(" and %d more", more), n
	}
	return strings.Join(flat, ", "), n
}
