package dataset

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Outlier is a reading far outside the rest of its channel: beyond the
// middle 99.8% of the channel's readings (of a column under 10,000
// readings, all but the ten lowest and highest, or a tenth of a column
// under a hundred) by more than outlierReach times that range's width. It
// finds glitches that are rare (a run of error codes longer than the
// readings set aside at each end sets the range itself and is not found). Sensors write such values as error codes (−9999) or
// glitches (1e9); z-scoring with them squeezes every other reading of the
// channel towards zero, and an error measured in z-scores then looks small.
type Outlier struct {
	Column string
	Row    int
	Time   time.Time
	Value  float64
	// Lo and Hi bound the middle 99.8% of the column's readings.
	Lo, Hi float64
}

// outlierReach is how many widths of the middle 99.8% a reading must lie
// beyond it to be called an outlier: far enough that heavy-tailed readings
// (rain, wind gusts) are not, near enough that an error code is.
const outlierReach = 10

// Outliers returns the readings of f far outside the rest of their channel
// (see Outlier), in channel then row order. A channel whose middle 99.8%
// is one value has none.
func (f *Frame) Outliers() []Outlier {
	rows, chans := f.Rows(), f.Channels()
	var out []Outlier
	col := make([]float64, 0, rows)
	for c := range chans {
		col = col[:0]
		for r := range rows {
			col = append(col, f.Values[r*chans+c])
		}
		lo, hi, ok := usualRange(col)
		if !ok {
			continue
		}
		for r := range rows {
			if x := f.Values[r*chans+c]; outside(x, lo, hi) {
				out = append(out, Outlier{Column: f.Columns[c], Row: r, Time: f.Times[r], Value: x, Lo: lo, Hi: hi})
			}
		}
	}
	return out
}

// usualRange returns the middle 99.8% of the readings in col (NaN left
// out; of a short column, see Outlier), and
// whether any reading lies outside it by more than outlierReach widths.
// It sorts col.
func usualRange(col []float64) (lo, hi float64, any bool) {
	col = slices.DeleteFunc(col, math.IsNaN)
	if len(col) < 20 {
		return 0, 0, false
	}
	slices.Sort(col)
	// At least ten readings off each end (a tenth of a column under a
	// hundred), so that a few glitches do not set the range.
	k := max(len(col)/1000, min(10, len(col)/10))
	lo, hi = col[k], col[len(col)-1-k]
	if w := hi - lo; !(w > 0) || math.IsInf(w, 0) {
		return 0, 0, false
	}
	return lo, hi, outside(col[0], lo, hi) || outside(col[len(col)-1], lo, hi)
}

// outside reports whether x lies beyond [lo, hi] by more than outlierReach
// times its width.
func outside(x, lo, hi float64) bool {
	w := hi - lo
	return x < lo-outlierReach*w || x > hi+outlierReach*w
}

// OutlierNote says, in one line for the user, which columns have readings
// far outside the rest, and "" when none has.
func (f *Frame) OutlierNote() string {
	o := f.Outliers()
	if len(o) == 0 {
		return ""
	}
	var cols []string
	for i := 0; i < len(o); {
		j := i
		for j < len(o) && o[j].Column == o[i].Column {
			j++
		}
		first := o[i]
		cols = append(cols, fmt.Sprintf("%q %d (the first %g at %s; the middle 99.8%% lies in [%g, %g])",
			first.Column, j-i, first.Value, first.Time.Format(time.RFC3339), first.Lo, first.Hi))
		i = j
	}
	return fmt.Sprintf("%s: readings far outside the rest of their column: %s; "+
		"an error code or a glitch scales the column's other readings towards zero and hides its errors: check them, and fix or drop their rows",
		f.Name, strings.Join(cols, ", "))
}

// SeriesOutlier is a reading of a panel far outside the rest of its
// series' readings of the field (see Outlier).
type SeriesOutlier struct {
	Series, Field string
	Time          time.Time
	Value         float64
}

// Outliers returns the readings of p far outside the rest of their series
// and field (see Outlier), series by series.
func (p *Panel) Outliers() []SeriesOutlier {
	C := len(p.Fields)
	var out []SeriesOutlier
	var col []float64
	for i := 0; i < len(p.Segments); {
		j := i
		for j < len(p.Segments) && p.Segments[j].Series == p.Segments[i].Series {
			j++
		}
		for c := range C {
			col = col[:0]
			for _, seg := range p.Segments[i:j] {
				for r := range seg.Rows(C) {
					col = append(col, seg.Values[r*C+c])
				}
			}
			lo, hi, ok := usualRange(col)
			if !ok {
				continue
			}
			for _, seg := range p.Segments[i:j] {
				for r := range seg.Rows(C) {
					if x := seg.Values[r*C+c]; outside(x, lo, hi) {
						at := time.Unix(0, 0).UTC().Add(time.Duration(seg.Start+int64(r)) * p.Cadence)
						out = append(out, SeriesOutlier{Series: seg.Series, Field: p.Fields[c], Time: at, Value: x})
					}
				}
			}
		}
		i = j
	}
	return out
}

// OutlierNote says, in one line for the user, how many readings of which
// series lie far outside the rest of their series, and "" when none does.
func (p *Panel) OutlierNote() string {
	o := p.Outliers()
	if len(o) == 0 {
		return ""
	}
	series := map[string]bool{}
	for _, x := range o {
		series[x.Series] = true
	}
	first := o[0]
	return fmt.Sprintf("%s: %d readings of %d series lie far outside the rest of their series (the first: series %q, %s %g at %s); "+
		"an error code or a glitch scales the series' other readings towards zero and hides its errors: check them, and fix or drop them",
		p.Name, len(o), len(series), first.Series, first.Field, first.Value, first.Time.Format(time.RFC3339))
}
