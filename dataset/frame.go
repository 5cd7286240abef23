package dataset

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Frame holds equally spaced readings: one timestamp per row and one float64
// per channel (LoadCSV and ReadCSV fill missing steps; see Frame.Gaps). Values is row-major, so the reading of channel c in row r is
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
	// Irregular lists the irregular steps of a wide CSV (see ReadCSV).
	Irregular Irregular
}

// Irregular says which steps of a wide CSV were not one cadence after the
// row before, and what became of them.
type Irregular struct {
	// Gaps are the runs of missing steps, in time order.
	Gaps []Gap
	// Filled says the gaps' steps were inserted as rows, by linear
	// interpolation; when false the rows were read as they are.
	Filled bool
	// Repeated counts the rows whose date repeats the row before's.
	Repeated int
}

// Gap is a run of missing steps: Steps steps from Start on had no row.
type Gap struct {
	Start time.Time
	Steps int
}

// irregularShare is the share of a wide file's rows that may be irregular
// steps read as they are.
const irregularShare = 0.01

// errRepeated reports a repeated date beyond irregularShare.
var errRepeated = errors.New("repeats the date of the row before")

// GapNote says, in one line for the user, which steps of the frame were
// irregular and what became of them, and "" when none was.
func (f *Frame) GapNote() string {
	ir := f.Irregular
	if len(ir.Gaps) == 0 && ir.Repeated == 0 {
		return ""
	}
	var parts []string
	if len(ir.Gaps) > 0 {
		total, longest := 0, ir.Gaps[0]
		for _, g := range ir.Gaps {
			total += g.Steps
			if g.Steps > longest.Steps {
				longest = g
			}
		}
		gaps := "in 1 gap"
		if len(ir.Gaps) > 1 {
			gaps = fmt.Sprintf("in %d gaps, the longest %d steps", len(ir.Gaps), longest.Steps)
		}
		parts = append(parts, fmt.Sprintf("%d missing steps %s from %s", total, gaps, longest.Start.Format(time.RFC3339)))
	}
	if ir.Repeated > 0 {
		parts = append(parts, fmt.Sprintf("%d repeated dates", ir.Repeated))
	}
	what := strings.Join(parts, " and ")
	if ir.Filled {
		return fmt.Sprintf("%s: %s, filled by linear interpolation between the readings around them; "+
			"forecasts and cycles learned across them read the filled values", f.Name, what)
	}
	return fmt.Sprintf("%s: %s, under %.0f%% of the rows: each row read as one step, as the benchmark protocol does", f.Name, what, 100*irregularShare)
}

// regularise records the irregular steps of a wide file and, when they are
// more than irregularShare of its rows, refuses a repeated date or fills
// the missing steps (see ReadCSV). It leaves f unchanged on error.
func (f *Frame) regularise() error {
	c := f.Cadence
	if c <= 0 || f.Rows() < 2 {
		return nil
	}
	var ir Irregular
	missing := 0
	for r := 1; r < f.Rows(); r++ {
		d := f.Times[r].Sub(f.Times[r-1])
		if d == 0 {
			ir.Repeated++
			continue
		}
		k := int((d + c/2) / c) // steps from row r−1 to row r; a jittered clock rounds to 1
		if k < 2 {
			continue
		}
		missing += k - 1
		if missing > f.Rows() {
			return fmt.Errorf("the dates jump by %s from %s to %s, %d steps of %s: more steps would be missing than the file has rows; "+
				"check the dates, or give the stretches before and after the jump as files of their own",
				d, f.Times[r-1].Format(time.RFC3339), f.Times[r].Format(time.RFC3339), k, c)
		}
		ir.Gaps = append(ir.Gaps, Gap{Start: f.Times[r-1].Add(d / time.Duration(k)), Steps: k - 1})
	}
	if float64(missing+ir.Repeated) <= irregularShare*float64(f.Rows()) {
		f.Irregular = ir
		return nil
	}
	if ir.Repeated > 0 {
		return fmt.Errorf("%w (%d rows do, more than %.0f%% of the rows with the missing steps): a row is one step, so keep one row per date",
			errRepeated, ir.Repeated, 100*irregularShare)
	}
	ir.Filled = true
	f.Irregular = ir
	f.fillGaps(missing)
	return nil
}

// fillGaps inserts the missing steps between rows whose dates are two or
// more cadences apart, dated evenly across the gap, with values on the line
// between the rows around it.
func (f *Frame) fillGaps(missing int) {
	c := f.Cadence
	chans := f.Channels()
	rows := f.Rows() + missing
	times := make([]time.Time, 0, rows)
	values := make([]float64, 0, rows*chans)
	for r := range f.Rows() {
		if r > 0 {
			prev, next := f.Row(r-1), f.Row(r)
			d := f.Times[r].Sub(f.Times[r-1])
			k := int((d + c/2) / c)
			for j := 1; j < k; j++ {
				w := float64(j) / float64(k)
				times = append(times, f.Times[r-1].Add(d/time.Duration(k)*time.Duration(j)))
				for ch := range chans {
					values = append(values, prev[ch]*(1-w)+next[ch]*w) // never overflows between finite readings
				}
			}
		}
		times = append(times, f.Times[r])
		values = append(values, f.Row(r)...)
	}
	f.Times, f.Values = times, values
	// The cadence stays what it says, the lower median of the steps: a gap
	// that was not a whole number of cadences spaces its filled dates a
	// little differently.
	f.Cadence = inferCadence(times)
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
