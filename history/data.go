package history

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/model"
)

// Data is what a model learns from, whichever the source.
type Data struct {
	// Name names the source: a file's base name, or "topic <name>".
	Name string
	// Protocol is the split: ett-hour, ett-minute or ratio for a wide
	// file, time for long-format history.
	Protocol string
	// Mode is the model's channel mode.
	Mode model.Mode
	// Columns names the channels (the value fields of long data).
	Columns []string
	// Cadence is the step length.
	Cadence time.Duration
	// StepAlign is dataset.AlignNearest when the readings were put on the
	// nearest step (model.Meta.StepAlign), else empty.
	StepAlign string
	// Scaler holds the training rows' statistics, a mixed model's
	// normalisation.
	Scaler dataset.Scaler
	// SHA256 is the source file's digest, "" for the topic.
	SHA256 string
	// Train, Val and Test are the windows of each part.
	Train, Val, Test model.Source
	// Summary says what became of long-format readings, or of a wide file's
	// irregular steps, for the log; "" when there is nothing to say.
	Summary string
	// Span is the time from the earliest to the latest step of long-format
	// history (0 for a wide file).
	Span time.Duration
}

// Split says how history is cut into windows.
type Split struct {
	Lookback, Horizon int
	// Mode is the model's channel mode; "" means mixed for a wide file and
	// independent (one model for every series) for long data.
	Mode model.Mode
	// MaxWindows caps the training windows of long data, drawn at random
	// with Seed (a fifth as many validation windows); 0 keeps all.
	MaxWindows int
	Seed       uint64
}

// FromWideCSV reads a wide benchmark CSV (a date column, one column per
// channel) under the standard protocol.
func FromWideCSV(path string, s Split) (*Data, error) {
	frame, err := dataset.LoadCSV(path)
	if err != nil {
		return nil, err
	}
	frame.Name = filepath.Base(path)
	var notes []string
	for _, note := range []string{frame.GapNote(), frame.OutlierNote()} {
		if note != "" {
			notes = append(notes, note)
		}
	}
	d, err := FromFrame(frame, s)
	if err != nil {
		if frame.Irregular.Filled {
			// Its row counts are the filled frame's: say why.
			return nil, fmt.Errorf("%w (%s)", err, frame.GapNote())
		}
		return nil, err
	}
	d.Summary = strings.Join(notes, "\n")
	return d, nil
}

// FromFrame splits a frame under the standard protocol its name picks
// (dataset.ProtocolFor).
func FromFrame(frame *dataset.Frame, s Split) (*Data, error) {
	bm, err := dataset.Standard(frame, s.Lookback, s.Horizon)
	if err != nil {
		return nil, err
	}
	mode := s.Mode
	if mode == "" {
		mode = model.Mixed
	}
	return &Data{
		Name: frame.Name, Protocol: string(bm.Protocol), Mode: mode, Columns: frame.Columns,
		Cadence: frame.Cadence, StepAlign: frame.Align, Scaler: bm.Scaler, SHA256: frame.SHA256,
		Train: bm.Train, Val: bm.Val, Test: bm.Test,
	}, nil
}
