package dataset

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Outlier is a reading far outside the rest of its channel: beyond the
// middle 99.8% of the channel's readings (of a short column, all but the
// five lowest and highest) by more than outlierReach times that range's
// width. Sensors write such values as error codes (−9999) or
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
	if rows < 20 {
		return nil
	}
	var out []Outlier
	col := make([]float64, 0, rows)
	for c := range chans {
		col = col[:0]
		for r := range rows {
			if x := f.Values[r*chans+c]; !math.IsNaN(x) {
				col = append(col, x)
			}
		}
		if len(col) < 20 {
			continue
		}
		slices.Sort(col)
		// The middle 99.8%, and at least five readings off each end of a
		// short column, so that a few glitches do not set its range.
		k := max(len(col)/1000, min(5, len(col)/20))
		lo, hi := col[k], col[len(col)-1-k]
		w := hi - lo
		if !(w > 0) || math.IsInf(w, 0) {
			continue
		}
		if col[0] >= lo-outlierReach*w && col[len(col)-1] <= hi+outlierReach*w {
			continue
		}
		for r := range rows {
			if x := f.Values[r*chans+c]; x < lo-outlierReach*w || x > hi+outlierReach*w {
				out = append(out, Outlier{Column: f.Columns[c], Row: r, Time: f.Times[r], Value: x, Lo: lo, Hi: hi})
			}
		}
	}
	return out
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
