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
	// Align is AlignNearest when the dates straddle the step times, some a
	// moment early (see findAlign): a live feed of the same clock puts each
	// reading on its step only when it is put on the nearest one; the rows
	// are then dated on the step times when each rounds to its own. Empty
	// otherwise (AlignFloor).
	Align string
}

// Irregular says which steps of a wide CSV were not one cadence after the
// row before, and what became of them.
type Irregular struct {
	// Gaps are the runs of missing steps, in time order.
	Gaps []Gap
	// Missing is the number of missing steps, the sum of the gaps'.
	Missing int
	// Filled says the gaps' steps were inserted as rows, by linear
	// interpolation; when false the rows were read as they are.
	Filled bool
	// Repeated counts the rows on the step of the row before (the same
	// date, or one a little later that the schedule puts on that step: a
	// reading sent twice, stamped seconds apart), and Backward those dated
	// before it (a local clock falling back).
	Repeated, Backward int
	// AsIs says why irregular steps beyond irregularShare were read as
	// they are; "" when they were few or filled.
	AsIs string
}

// Gap is a run of missing steps: Steps steps from Start on had no row.
// AfterRow is the file's data row (0-based) that the gap follows.
type Gap struct {
	Start    time.Time
	Steps    int
	AfterRow int
}

// FileRows returns how many data rows f's file has: f's rows less those
// LoadCSV filled.
func (f *Frame) FileRows() int {
	if f.Irregular.Filled {
		return f.Rows() - f.Irregular.Missing
	}
	return f.Rows()
}

// FrameRow returns the row of f that holds data row r (0-based) of its
// file: r itself, unless LoadCSV filled missing steps before it.
func (f *Frame) FrameRow(r int) int {
	if !f.Irregular.Filled {
		return r
	}
	row := r
	for _, g := range f.Irregular.Gaps {
		if g.AfterRow < r {
			row += g.Steps
		}
	}
	return row
}

// irregularShare is the share of a wide file's rows that may be irregular
// steps read as they are; fillShare the most missing steps, as a share of
// the rows, that are always filled. Beyond it they are filled when they
// are readings lost at random (see outages), at most as many as the rows;
// otherwise the spacing is the data's own (business days, business hours,
// shifts) and the rows are read as they are.
const (
	irregularShare = 0.01
	fillShare      = 0.10
)

var (
	// errRepeated reports repeated dates beyond irregularShare.
	errRepeated = errors.New("repeats the date of the row before")
	// errBackward reports dates out of order beyond irregularShare.
	errBackward = errors.New("is before the date of the row before")
)

// GapNote says, in one line for the user, which steps of the frame were
// irregular and what became of them, and "" when none was.
func (f *Frame) GapNote() string {
	ir := f.Irregular
	if len(ir.Gaps) == 0 && ir.Repeated == 0 && ir.Backward == 0 {
		return ""
	}
	var parts []string
	if len(ir.Gaps) > 0 {
		longest := ir.Gaps[0]
		for _, g := range ir.Gaps {
			if g.Steps > longest.Steps {
				longest = g
			}
		}
		gaps := "in 1 gap"
		if len(ir.Gaps) > 1 {
			gaps = fmt.Sprintf("in %d gaps, the longest %s", len(ir.Gaps), count(longest.Steps, "step"))
		}
		parts = append(parts, fmt.Sprintf("%s %s from %s", count(ir.Missing, "missing step"), gaps, longest.Start.Round(time.Second).Format(time.RFC3339)))
	}
	if ir.Repeated > 0 {
		parts = append(parts, count(ir.Repeated, "row")+" on the step of the row before")
	}
	if ir.Backward > 0 {
		parts = append(parts, count(ir.Backward, "date")+" before the row before's")
	}
	what := strings.Join(parts, " and ")
	switch {
	case ir.Filled && float64(ir.Missing) > fillShare*float64(f.FileRows()):
		return fmt.Sprintf("%s: %s, more than %.0f%% of the rows but none longer than a day and at no regular time of the week, so taken as lost readings: "+
			"filled by linear interpolation between the readings around them; forecasts, cycles and scores count the filled steps "+
			"(--at still counts the file's rows)", f.Name, what, 100*fillShare)
	case ir.Filled:
		return fmt.Sprintf("%s: %s, filled by linear interpolation between the readings around them; "+
			"forecasts, cycles and scores count the filled steps (--at still counts the file's rows)", f.Name, what)
	case ir.AsIs != "" && len(ir.Gaps) > 0:
		return fmt.Sprintf("%s: %s; %s: each row read as one step (the cycles' clock still reads the dates); "+
			"if the gaps are outages, windows now join the readings across them: fill them, or write the readings in long format "+
			"(series,ts,value), where a long gap starts a new run", f.Name, what, ir.AsIs)
	case ir.AsIs != "":
		return fmt.Sprintf("%s: %s; %s: each row read as one step (the cycles' clock still reads the dates)", f.Name, what, ir.AsIs)
	}
	return fmt.Sprintf("%s: %s, at most %.0f%% of the rows: each row read as one step, as the benchmark protocol does", f.Name, what, 100*irregularShare)
}

// count writes n things, with the plural's s when n is not 1.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// stepCounts returns, for every row r ≥ 1 of times, how many cadences lie
// between row r−1 and row r (k[0] is 0): 1 for the next step, 2 or more
// across missing steps, 0 or less for a row in the same step or before it;
// and the cadence it counted in. A clock can be read two ways, and the one
// that finds fewer irregular steps is taken:
//
//   - interval by interval, each difference rounded to whole cadences c
//     (the lower median of the differences): right for a sensor that waits
//     about a cadence after each reading, whose stamps wander away from any
//     fixed grid;
//   - on a grid (scheduleSteps; onGrid): right for readings due on a schedule but
//     stamped early or late by up to 40% of a cadence, whose intervals
//     then vary by almost a whole one (hourly readings stamped ±25 minutes
//     off are 10 to 110 minutes apart, and their median is off the hour).
//
// On a regular file both agree and the first is taken without trying the
// grid; on a tie the grid is taken when its cadence is a round one that c
// misses by seconds. A file of fewer than 32 rows is read interval by
// interval: too few stamps to tell a schedule.
func stepCounts(times []time.Time, c time.Duration) (steps []int, cadence time.Duration, onGrid bool) {
	interval := make([]int, len(times))
	for r := 1; r < len(times); r++ {
		interval[r] = wholeSteps(secondsBetween(times[r-1], times[r]), c)
	}
	ii := irregularity(interval, times)
	if ii == 0 && slices.Contains(roundCadences, c) || len(times) < 32 {
		return interval, c, false
	}
	grid, gc := scheduleSteps(times, c)
	switch gi := irregularity(grid, times); {
	case gc <= 0:
	case gi < ii, gi == ii && gc != c && slices.Contains(roundCadences, gc):
		return grid, gc, true
	}
	return interval, c, false
}

// scheduleSteps reads times as readings due every cadence on a schedule,
// each stamped a little early or late. The schedule's cadence is the one
// within 6% of c (the lower median of the differences, which jitter and
// gaps move by a few percent) on whose grid the first rows' stamps line up
// best (coherence). The rows read on that grid, with a phase that follows the
// stamps, give the least-squares line through step number and time, whose
// slope is the cadence of the clock (which may run a little fast or slow)
// and whose intercept is its phase; the rows are read again on that line,
// with a phase that follows them slowly. The cadence returned is the slope,
// or the round cadence within 0.1% of it; 0 when no line fits.
func scheduleSteps(times []time.Time, c time.Duration) ([]int, time.Duration) {
	head := times[:min(len(times), 1024)]
	best, cs, phase := -1.0, c.Seconds(), 0.0
	try := func(s float64) {
		if r, ph := coherence(head, s); r > best {
			best, cs, phase = r, s, ph
		}
	}
	// Steps of a quarter of the coherence peak's width, 1/len(head), and
	// the round cadences in the range exactly.
	for f := 0.94; f <= 1.06; f += 0.25 / float64(len(head)) {
		try(f * c.Seconds())
	}
	for _, r := range roundCadences {
		if f := float64(r) / float64(c); f >= 0.94 && f <= 1.06 {
			try(r.Seconds())
		}
	}
	steps := gridSteps(times, cs, phase, 16)
	var n, si, ss, sii, sis float64
	step := 0
	for r, t := range times {
		step += steps[r]
		i, s := float64(step), secondsBetween(times[0], t)
		n, si, ss, sii, sis = n+1, si+i, ss+s, sii+i*i, sis+i*s
	}
	den := n*sii - si*si
	if den <= 0 {
		return nil, 0
	}
	slope := (n*sis - si*ss) / den
	if !(slope > 0) || slope > math.MaxInt64/1e9 {
		return nil, 0
	}
	return gridSteps(times, slope, (ss-slope*si)/n, 64), roundCadence(time.Duration(slope * 1e9))
}

// coherence returns how well times line up on a grid of cs seconds, the
// length of the mean of their phases as unit vectors (1: all on it, near
// 0: spread over it), and the grid's phase in seconds after times[0].
func coherence(times []time.Time, cs float64) (r, phase float64) {
	var sin, cos float64
	for _, t := range times {
		s, c := math.Sincos(2 * math.Pi * secondsBetween(times[0], t) / cs)
		sin, cos = sin+s, cos+c
	}
	return math.Hypot(sin, cos) / float64(len(times)), cs * math.Atan2(sin, cos) / (2 * math.Pi)
}

// roundCadences are the cadences schedules use.
var roundCadences = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 20 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 6 * time.Hour, 8 * time.Hour, 12 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour,
}

// roundCadence returns the round cadence within 0.1% of c, or c when there
// is none: a schedule's cadence fitted through a file's stamps (a clock up to
// 0.05% fast or slow) is round; a steady 59m40s is not.
func roundCadence(c time.Duration) time.Duration {
	for _, r := range roundCadences {
		if math.Abs(float64(c)/float64(r)-1) <= 0.001 {
			return r
		}
	}
	return c
}

// secondsBetween returns b − a in seconds, from Unix seconds: time.Time.Sub
// saturates beyond 292 years.
func secondsBetween(a, b time.Time) float64 {
	return float64(b.Unix()-a.Unix()) + float64(b.Nanosecond()-a.Nanosecond())/1e9
}

// wholeSteps rounds s seconds to whole cadences c, bounded so that dates
// centuries apart do not overflow.
func wholeSteps(s float64, c time.Duration) int {
	return roundSteps(s / c.Seconds())
}

// roundSteps rounds x to a whole number of steps within ±2^40.
func roundSteps(x float64) int {
	return int(max(min(math.Round(x), 1<<40), -1<<40))
}

// gridSteps reads times on a grid of cs seconds whose points lie phase
// seconds after times[0]'s multiples of cs: row r's step is its time
// rounded to the nearest grid point, and k[r] the steps from row r−1's.
// The phase then follows the stamps by 1/follow of each row's offset, so
// that a clock a little fast or slow does not walk the rows off their
// steps, while a row stamped far off moves the grid little.
func gridSteps(times []time.Time, cs, phase, follow float64) []int {
	k := make([]int, len(times))
	prev := 0
	for r, t := range times {
		s := secondsBetween(times[0], t) - phase
		step := roundSteps(s / cs)
		if r > 0 {
			k[r] = step - prev
		}
		prev = step
		phase += (s - float64(step)*cs) / follow
	}
	return k
}

// irregularity counts the irregular steps k finds among rows whose times
// go forward: |k − 1| for each.
func irregularity(k []int, times []time.Time) int {
	n := 0
	for r := 1; r < len(times); r++ {
		if times[r].After(times[r-1]) {
			n += max(k[r]-1, 1-k[r])
		}
	}
	return n
}

// regularise records the irregular steps of a wide file and decides what
// becomes of them (see ReadCSV): read as they are when they are few; a
// repeated date or one out of order beyond that refused; missing steps
// filled up to fillShare of the rows and read as they are beyond it. It
// leaves f unchanged on error.
func (f *Frame) regularise() error {
	c := f.Cadence
	if c <= 0 || f.Rows() < 2 {
		return nil
	}
	var ir Irregular
	steps, c, onGrid := stepCounts(f.Times, c)
	align := ""
	var ms []int64
	if c%time.Millisecond == 0 {
		ms = make([]int64, len(f.Times))
		for r, t := range f.Times {
			ms[r] = t.UnixMilli()
		}
		if a, _ := findAlign([][]int64{ms}, c.Milliseconds()); a == AlignNearest {
			align = a
		}
	}
	// A schedule read on the step times: its rows are those steps, so the
	// dates become them (13:00, not 12:59:58), the step times serve puts a
	// live feed of the same clock on (multiples of the cadence since the
	// Unix epoch), when each row rounds to its own step.
	var snapped []time.Time
	if align == AlignNearest {
		cm := c.Milliseconds()
		snapped = make([]time.Time, len(f.Times))
		for r, t := range f.Times {
			snapped[r] = time.UnixMilli(floorDiv(ms[r]+alignOffset(AlignNearest, cm), cm) * cm).In(t.Location())
			if r > 0 && snapped[r].Sub(snapped[r-1]) != time.Duration(steps[r])*c {
				snapped = nil
				break
			}
		}
	}
	dates := f.Times // where a gap starts, as the rows will be dated
	if snapped != nil {
		dates = snapped
	}
	exact := 0 // rows repeating the date of the row before
	for r := 1; r < f.Rows(); r++ {
		switch k := steps[r]; {
		case f.Times[r].Equal(f.Times[r-1]):
			ir.Repeated++
			exact++
		case k == 0 && f.Times[r].After(f.Times[r-1]):
			ir.Repeated++ // said, and read as it is: only repeated dates are refused
		case f.Times[r].Before(f.Times[r-1]):
			ir.Backward++
		case k >= 2:
			ir.Missing += k - 1
			ir.Gaps = append(ir.Gaps, Gap{Start: dates[r-1].Add(dates[r].Sub(dates[r-1]) / time.Duration(k)), Steps: k - 1, AfterRow: r - 1})
		}
	}
	few := irregularShare * float64(f.Rows())
	switch {
	case float64(ir.Missing+ir.Repeated+ir.Backward) <= few:
	case float64(exact) > few:
		return fmt.Errorf("%w (%s, more than %.0f%% of the rows): a row is one step, so keep one row per date",
			errRepeated, count(exact, "row"), 100*irregularShare)
	case float64(ir.Backward) > few:
		return fmt.Errorf("%w (%s, more than %.0f%% of the rows): sort the rows by time; "+
			"if a local clock fell back, write the dates with their offset", errBackward, count(ir.Backward, "row"), 100*irregularShare)
	case float64(ir.Missing) > fillShare*float64(f.Rows()) && (ir.Missing > f.Rows() || !outages(f.Times, ir.Gaps, c)):
		ir.AsIs = fmt.Sprintf("more than %.0f%% of the rows, so the spacing is taken as the data's own (business days or hours?)", 100*fillShare)
	case ir.Backward > 0:
		ir.AsIs = "the gaps are not filled because dates go back"
	default:
		ir.Filled = true
		if snapped != nil {
			f.Times = snapped
		}
		f.fillGaps(ir.Missing, steps)
	}
	f.Irregular, f.Align = ir, align
	if snapped != nil && !ir.Filled {
		f.Times = snapped
	}
	switch {
	case onGrid, ir.Filled && slices.Contains(roundCadences, c):
		// The schedule's cadence, which the median of jittered intervals
		// misses by seconds or minutes, or a round one the rows were
		// filled on: dates filled evenly across a gap between jittered
		// stamps would move their median below it.
		f.Cadence = c
	case ir.Filled:
		// The lower median of the steps again: a gap that was not a whole
		// number of cadences spaces its filled dates a little differently.
		f.Cadence = inferCadence(f.Times)
	}
	return nil
}

// outages reports whether the missing steps of gaps (cadence c) between
// times are readings lost at random, which are filled, rather than the
// data's own spacing, which is read as it is: a schedule such as business
// days or hours, or one that repeats on no week (shifts, a rotation). They
// are lost readings when no gap lasts longer than a day (a day or more is a
// schedule's day off, or an outage a straight line would make up) and
// hardly any lies where the data's week leaves them: for every position in
// the week (by the dates' own clock) it counts the steps the data spans
// there and those missing, and the missing steps at positions missing in
// most weeks must be no more than readings lost at random would leave
// there by chance (half as many again, and 2% of the rows); a schedule,
// with readings lost besides or not, leaves far more. Data spanning less than two weeks, or of a cadence
// longer than a day, cannot tell and reports false.
func outages(times []time.Time, gaps []Gap, c time.Duration) bool {
	const week, day = 7 * 24 * time.Hour, 24 * time.Hour
	if len(times) < 2 || len(gaps) == 0 || c <= 0 || c > day || times[len(times)-1].Sub(times[0]) < 2*week {
		return false
	}
	for _, g := range gaps {
		if time.Duration(g.Steps)*c > day {
			return false
		}
	}
	bins := int(min((week+c-1)/c, week/time.Minute))
	slot := func(t time.Time) int {
		_, off := t.Zone()
		pos := (t.Unix() + int64(off)) % int64(week/time.Second)
		if pos < 0 {
			pos += int64(week / time.Second)
		}
		return int(pos * int64(bins) / int64(week/time.Second))
	}
	spanned, missing := make([]int, bins), make([]int, bins)
	for _, t := range times {
		spanned[slot(t)]++
	}
	for _, g := range gaps {
		for i := range g.Steps {
			b := slot(g.Start.Add(time.Duration(i) * c))
			spanned[b]++
			missing[b]++
		}
	}
	// The missing steps at positions missing in most weeks, and how many
	// readings lost at random, at the file's rate, would leave there by
	// chance (with two or three weeks of data, many).
	scheduled, chance, total, all := 0, 0.0, 0, 0
	for b := range bins {
		total += missing[b]
		all += spanned[b]
	}
	p := float64(total) / float64(all)
	for b := range bins {
		n := spanned[b]
		if 2*missing[b] > n {
			scheduled += missing[b]
		}
		lg, _ := math.Lgamma(float64(n + 1))
		for k := n/2 + 1; k <= n; k++ { // E[missing · 1{missing > n/2}], binomial
			lk, _ := math.Lgamma(float64(k + 1))
			lnk, _ := math.Lgamma(float64(n - k + 1))
			chance += float64(k) * math.Exp(lg-lk-lnk+float64(k)*math.Log(p)+float64(n-k)*math.Log1p(-p))
		}
	}
	return float64(scheduled) < 1.5*chance+0.02*float64(len(times))
}

// fillGaps inserts the missing steps between rows that steps (stepCounts)
// puts two or more cadences apart, dated evenly across the gap, with values
// on the line between the rows around it.
func (f *Frame) fillGaps(missing int, steps []int) {
	chans := f.Channels()
	rows := f.Rows() + missing
	times := make([]time.Time, 0, rows)
	values := make([]float64, 0, rows*chans)
	for r := range f.Rows() {
		if r > 0 {
			prev, next := f.Row(r-1), f.Row(r)
			d := f.Times[r].Sub(f.Times[r-1])
			k := steps[r]
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

// inferCadence returns the lower median of the positive differences between
// consecutive timestamps, or 0 when there is none.
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
