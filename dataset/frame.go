package dataset

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Frame holds equally spaced readings: one timestamp per row and one float64
// per channel. Values is row-major, so the reading of channel c in row r is
// Values[r*len(Columns)+c].
//
// A Frame loaded by LoadCSV or ReadCSV never holds NaN or ±Inf. A synthetic
// Frame marks missing readings with NaN; call FillMissing before handing it
// to Standard. A Frame is not safe for concurrent mutation.
type Frame struct {
	// Name is the base name of the source, such as "ETTh1.csv". Standard
	// passes it to ProtocolFor to pick the evaluation protocol. Synthetic
	// frames are named "synthetic".
	Name string
	// Columns holds the channel names as they appear in the header, date
	// column excluded.
	Columns []string
	// Times holds one timestamp per row.
	Times []time.Time
	// Values holds Rows()×Channels() readings, row-major.
	Values []float64
	// Cadence is the inferred step between rows: the lower median of the
	// positive differences between consecutive timestamps, so that a
	// duplicated timestamp or a gap does not change it. It is 0 when no two
	// consecutive timestamps differ.
	Cadence time.Duration
	// SHA256 is the hex SHA-256 of the source bytes as LoadCSV read them,
	// and "" for frames that were not loaded from a file.
	SHA256 string
	// SeriesColumn and Series are set by LoadCSVSeries only: the column
	// read as text (not a channel), and its text in every row, the id of
	// the series the row is a reading of. Other functions ignore them.
	SeriesColumn string
	Series       []string
}

// Rows returns the number of rows, one per timestamp.
func (f *Frame) Rows() int { return len(f.Times) }

// Channels returns the number of channels, the date column excluded.
func (f *Frame) Channels() int { return len(f.Columns) }

// Row returns the readings of row r as a view into Values, not a copy:
// writing to it changes the Frame. Its capacity ends with the row, so an
// append cannot overwrite the next row. Row panics if r is out of range.
func (f *Frame) Row(r int) []float64 {
	c := len(f.Columns)
	return f.Values[r*c : (r+1)*c : (r+1)*c]
}

// FillMissing replaces every NaN reading in place by linear interpolation
// between the nearest readings before and after it in the same channel,
// treating rows as equally spaced (timestamps are not consulted). NaN readings
// before the first or after the last reading of a channel take the value of
// that nearest reading. ±Inf counts as a reading, not as missing; a gap next
// to one takes the value of the reading before the gap.
//
// FillMissing returns the number of readings it filled. It returns an error,
// and leaves the Frame unchanged, if some channel has no reading at all.
func (f *Frame) FillMissing() (filled int, err error) {
	rows, chans := f.Rows(), f.Channels()
	if len(f.Values) != rows*chans {
		return 0, fmt.Errorf("fill missing in %s: frame has %d values, want rows×channels = %d×%d = %d",
			f.Name, len(f.Values), rows, chans, rows*chans)
	}
	if rows == 0 {
		return 0, nil
	}
	// Check every channel before touching any, so an error leaves the frame as it was.
	for c := range chans {
		empty := true
		for r := range rows {
			if !math.IsNaN(f.Values[r*chans+c]) {
				empty = false
				break
			}
		}
		if empty {
			return 0, fmt.Errorf("fill missing in %s: column %q has no readings (all %d rows are NaN); "+
				"drop the column or supply at least one reading", f.Name, f.Columns[c], rows)
		}
	}
	v := f.Values
	for c := range chans {
		last := -1 // row of the last reading seen
		for r := range rows {
			x := v[r*chans+c]
			if math.IsNaN(x) {
				continue
			}
			switch gap := r - last - 1; {
			case gap == 0:
			case last < 0: // leading NaNs take the first reading
				for k := range r {
					v[k*chans+c] = x
				}
				filled += gap
			default:
				a := v[last*chans+c]
				span := float64(r - last)
				for k := last + 1; k < r; k++ {
					if math.IsInf(a, 0) || math.IsInf(x, 0) {
						v[k*chans+c] = a // a line through ±Inf is undefined
						continue
					}
					v[k*chans+c] = a + (x-a)*(float64(k-last)/span)
				}
				filled += gap
			}
			last = r
		}
		// Trailing NaNs take the last reading.
		for k := last + 1; k < rows; k++ {
			v[k*chans+c] = v[last*chans+c]
			filled++
		}
	}
	return filled, nil
}

// inferCadence returns the lower median of the positive differences between
// consecutive timestamps, or 0 when there is none.
// SameCadence reports whether two cadences, such as a model's and the one
// inferred from a file, are the same step: within 5% of each other, since
// an inferred cadence is a median that moves with the rows a file holds
// when the step is not constant (30 or 31 days for monthly data, 59m58s for
// hourly readings stamped with jitter). A zero cadence (unknown) matches
// any.
func SameCadence(a, b time.Duration) bool {
	if a <= 0 || b <= 0 {
		return true
	}
	return math.Abs(float64(a)/float64(b)-1) <= 0.05
}

func inferCadence(times []time.Time) time.Duration {
	if len(times) < 2 {
		return 0
	}
	diffs := make([]time.Duration, 0, len(times)-1)
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d > 0 {
			diffs = append(diffs, d)
		}
	}
	if len(diffs) == 0 {
		return 0
	}
	slices.Sort(diffs)
	return diffs[(len(diffs)-1)/2]
}
