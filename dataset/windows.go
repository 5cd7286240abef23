package dataset

import (
	"fmt"
	"math"
)

// Windows holds every stride-1 window of a row range of a row-major buffer:
// window i has the input rows [Start+i, Start+i+lookback) and the target
// rows that follow, [Start+i+lookback, Start+i+lookback+horizon). Windows
// copies nothing; Input and Target return views into the buffer.
//
// The views are meant to be read only. As long as nobody writes to the
// buffer, a *Windows is safe for concurrent use.
type Windows struct {
	data     []float64 // row-major rows×channels, normally z-scored
	channels int
	lookback int
	horizon  int
	r        Range
	n        int     // number of windows
	times    []int64 // Unix nanoseconds of every row of data, nil when unknown
}

// NewWindows returns the stride-1 windows of the rows r of data, a
// row-major buffer with the given number of channels per row. lookback and
// horizon are counted in rows. The data is not copied, so later writes to it
// show through the views.
//
// NewWindows returns an error if channels, lookback or horizon is not
// positive, if len(data) is not a multiple of channels, if r is not within
// the rows of data, or if r holds fewer than lookback+horizon rows, which
// one window needs.
func NewWindows(data []float64, channels, lookback, horizon int, r Range) (*Windows, error) {
	switch {
	case channels < 1:
		return nil, fmt.Errorf("windows: channels = %d; need at least 1", channels)
	case len(data)%channels != 0:
		return nil, fmt.Errorf("windows: data has %d values, not a multiple of %d channels; "+
			"pass the row-major rows×channels buffer", len(data), channels)
	case lookback < 1:
		return nil, fmt.Errorf("windows: lookback = %d; use a --lookback of at least 1", lookback)
	case horizon < 1:
		return nil, fmt.Errorf("windows: horizon = %d; use a --horizon of at least 1", horizon)
	}
	rows := len(data) / channels
	if r.Start < 0 || r.End > rows || r.Start > r.End {
		return nil, fmt.Errorf("windows: range %v is not within the %d rows of the data", r, rows)
	}
	if need := lookback + horizon; r.Len() < need {
		fix := "use a shorter --horizon or --lookback"
		if r.Len() > lookback {
			fix = fmt.Sprintf("use a --horizon of at most %d, or a shorter --lookback", r.Len()-lookback)
		}
		return nil, fmt.Errorf("windows: range %v holds %d rows, but one window needs lookback %d + horizon %d = %d rows; %s",
			r, r.Len(), lookback, horizon, need, fix)
	}
	return &Windows{
		data:     data,
		channels: channels,
		lookback: lookback,
		horizon:  horizon,
		r:        r,
		n:        r.Len() - lookback - horizon + 1,
	}, nil
}

// Len returns the number of windows, (r.End − r.Start) − lookback − horizon + 1.
func (w *Windows) Len() int { return w.n }

// Input returns the lookback×channels input of window i, the rows
// [Start+i, Start+i+lookback), as a read-only view. Its capacity ends with
// the view. Input panics if i is not in [0, Len()).
func (w *Windows) Input(i int) []float64 {
	w.check(i)
	lo := (w.r.Start + i) * w.channels
	hi := lo + w.lookback*w.channels
	return w.data[lo:hi:hi]
}

// Target returns the horizon×channels target of window i, the rows
// [Start+i+lookback, Start+i+lookback+horizon), as a read-only view. Its
// capacity ends with the view. Target panics if i is not in [0, Len()).
func (w *Windows) Target(i int) []float64 {
	w.check(i)
	lo := (w.r.Start + i + w.lookback) * w.channels
	hi := lo + w.horizon*w.channels
	return w.data[lo:hi:hi]
}

// EndRow returns the 0-based data row of the last input row of window i,
// Start+i+lookback−1; the first target row is EndRow(i)+1. EndRow panics
// if i is not in [0, Len()).
func (w *Windows) EndRow(i int) int {
	w.check(i)
	return w.r.Start + i + w.lookback - 1
}

// WithTimes returns a copy of w whose windows know when they end: times
// holds the time of every row of the buffer w was cut from (not only of its
// range), in Unix nanoseconds. A model that reads the time (rhythms phased
// by the clock) trains and forecasts only on windows with times.
func (w *Windows) WithTimes(times []int64) (*Windows, error) {
	if rows := len(w.data) / w.channels; len(times) != rows {
		return nil, fmt.Errorf("windows: %d times for %d rows; give one time per row of the data", len(times), rows)
	}
	c := *w
	c.times = times
	return &c, nil
}

// EndTime returns the time of the newest row of window i's input (row
// EndRow(i)) in Unix nanoseconds, and false when the windows have no
// times. It panics if i is not in [0, Len()).
func (w *Windows) EndTime(i int) (int64, bool) {
	w.check(i)
	if w.times == nil {
		return 0, false
	}
	return w.times[w.EndRow(i)], true
}

// Channels returns the number of channels per row.
func (w *Windows) Channels() int { return w.channels }

// Lookback returns the number of input rows per window.
func (w *Windows) Lookback() int { return w.lookback }

// Horizon returns the number of target rows per window.
func (w *Windows) Horizon() int { return w.horizon }

// Rows returns the rows the windows were cut from, [Start, End), as a
// read-only row-major view. Its capacity ends with the view.
func (w *Windows) Rows() []float64 {
	lo, hi := w.r.Start*w.channels, w.r.End*w.channels
	return w.data[lo:hi:hi]
}

// Range returns the row range the windows were cut from.
func (w *Windows) Range() Range { return w.r }

func (w *Windows) check(i int) {
	if i < 0 || i >= w.n {
		panic(fmt.Sprintf("dataset: window %d out of range [0, %d)", i, w.n))
	}
}

// Benchmark bundles a Frame prepared under the standard evaluation protocol:
// its split, the scaler fitted on the training rows, the whole frame
// z-scored with that scaler, and the stride-1 windows of each part. The
// Windows views point into Normalised, which must therefore not be written.
type Benchmark struct {
	// Frame is the source, unmodified.
	Frame *Frame
	// Protocol is the protocol picked from Frame.Name by ProtocolFor.
	Protocol Protocol
	// Split holds the row ranges of the three parts.
	Split Split
	// Scaler holds the per-channel mean and standard deviation of the
	// training rows.
	Scaler Scaler
	// Normalised holds the whole frame z-scored with Scaler, row-major.
	// Metrics computed on it compare with published tables.
	Normalised []float64
	// Times holds the time of every row in Unix nanoseconds; the windows
	// below carry them (Windows.EndTime).
	Times []int64
	// Train, Val and Test hold every stride-1 window of each part.
	Train, Val, Test *Windows
}

// Standard prepares f under the standard evaluation protocol for the given
// lookback and horizon in rows: it picks the protocol with ProtocolFor(f.Name),
// splits the rows, fits a Scaler on the training rows, z-scores the whole
// frame into a new buffer and cuts the windows of each part. f is not
// modified.
//
// Standard returns an error if f holds a NaN or ±Inf reading (call
// FillMissing first), if the file is too short for its protocol, or if a
// part holds fewer rows than one window needs.
func Standard(f *Frame, lookback, horizon int) (*Benchmark, error) {
	rows, chans := f.Rows(), f.Channels()
	if chans == 0 || len(f.Values) != rows*chans {
		return nil, fmt.Errorf("%s: frame has %d values for %d rows × %d channels; "+
			"want rows×channels with at least one channel", f.Name, len(f.Values), rows, chans)
	}
	for i, v := range f.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: row %d column %q is %v; call FillMissing first or drop the row",
				f.Name, i/chans, f.Columns[i%chans], v)
		}
	}
	p := ProtocolFor(f.Name)
	// The parts' own rows (no lookback before them) say which lookback
	// and horizon fit: the training part holds lookback + horizon rows,
	// and the validation and test parts a horizon each.
	if parts, err := p.Split(rows, 0); err == nil && lookback >= 0 {
		nTrain, nVal, nTest := parts.Train.Len(), parts.Val.Len(), parts.Test.Len()
		if maxH := min(nVal, nTest, nTrain-lookback); horizon > maxH {
			var fix string
			switch short := min(nVal, nTest); {
			case short < 1 || nTrain < 2:
				fix = "use a longer file"
			case horizon > short && lookback+short > nTrain:
				fix = fmt.Sprintf("use a --horizon of at most %d (then a --lookback of at most %d) or a longer file", short, nTrain-short)
			case horizon > short:
				fix = fmt.Sprintf("use a --horizon of at most %d or a longer file", short)
			case maxH < 1:
				fix = fmt.Sprintf("use a --lookback of at most %d for this horizon, or a longer file", nTrain-horizon)
			default:
				fix = fmt.Sprintf("use a --lookback of at most %d for this horizon, a --horizon of at most %d for this lookback, or a longer file",
					nTrain-horizon, maxH)
			}
			return nil, fmt.Errorf("%s: its %d rows split into %d for training, %d for validation and %d for testing (%s protocol); "+
				"training needs lookback %d + horizon %d = %d rows, validation and testing a horizon each; %s",
				f.Name, rows, nTrain, nVal, nTest, p, lookback, horizon, lookback+horizon, fix)
		}
	}
	split, err := p.Split(rows, lookback)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	if split.Train.Len() == 0 {
		return nil, fmt.Errorf("%s: protocol %s leaves no training rows out of %d; use a longer file",
			f.Name, p, rows)
	}
	// Every split needs one window: the longest horizon is that of the
	// shortest split, which the message names, not only the first to fail.
	if maxH := min(split.Train.Len(), split.Val.Len(), split.Test.Len()) - lookback; horizon > maxH {
		fix := fmt.Sprintf("use a --horizon of at most %d, a shorter --lookback or a longer file", maxH)
		if maxH < 1 {
			fix = "use a shorter --lookback or a longer file"
		}
		return nil, fmt.Errorf("%s: its %d rows split into %d for training, %d for validation and %d for testing (%s protocol, each with the lookback before it), "+
			"and each needs at least one window of lookback %d + horizon %d = %d rows; %s",
			f.Name, rows, split.Train.Len(), split.Val.Len(), split.Test.Len(), p, lookback, horizon, lookback+horizon, fix)
	}
	b := &Benchmark{Frame: f, Protocol: p, Split: split, Scaler: FitScaler(f, split.Train)}
	b.Normalised = b.Scaler.Transform(nil, f.Values)
	b.Times = make([]int64, rows)
	for i, t := range f.Times {
		b.Times[i] = t.UnixNano()
	}
	for _, part := range []struct {
		name string
		r    Range
		dst  **Windows
	}{
		{"train", split.Train, &b.Train},
		{"val", split.Val, &b.Val},
		{"test", split.Test, &b.Test},
	} {
		w, err := NewWindows(b.Normalised, chans, lookback, horizon, part.r)
		if err == nil {
			w, err = w.WithTimes(b.Times)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s split under protocol %s: %w", f.Name, part.name, p, err)
		}
		*part.dst = w
	}
	return b, nil
}
