package cycles

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Rhythm is a cycle of the data with its harmonics: a fundamental period
// and the model's frequencies at integer multiples of its frequency. The
// day of hourly road traffic is one (24h, 12h, 8h, 6h, 4.8h …), the week
// another (the 168/k-hour lines that are not the day's: 84h, 33.6h,
// 18.7h …), whereas the spectrum shows only lines. A rhythm's part of a
// forecast is the exact sum of its frequencies' contributions.
type Rhythm struct {
	// PeriodSteps is the fundamental period in steps.
	PeriodSteps float64 `json:"period_steps"`
	// Frequencies are the ids of its frequencies and Harmonics their
	// harmonic numbers k, frequency k/PeriodSteps, in the same order.
	Frequencies []int `json:"frequencies"`
	Harmonics   []int `json:"harmonics"`
	// AnchorStep and AnchorPhase fix the rhythm's phase in time: at
	// AnchorStep steps since the Unix epoch it stood at AnchorPhase cycles.
	// Training leaves both 0 (phase 0 at the epoch, so a day starts at
	// midnight UTC); when online learning moves the period it re-anchors at
	// the time of the move, so the phase is continuous.
	AnchorStep  float64 `json:"anchor_step,omitempty"`
	AnchorPhase float64 `json:"anchor_phase,omitempty"`
}

// String is the rhythm in a line: its period in steps, its frequencies'
// ids and their harmonic numbers.
func (r Rhythm) String() string {
	return fmt.Sprintf("[P=%.3f ids %v k %v]", r.PeriodSteps, r.Frequencies, r.Harmonics)
}

// CloneRhythms returns a deep copy of rs (nil for nil).
func CloneRhythms(rs []Rhythm) []Rhythm {
	if rs == nil {
		return nil
	}
	out := make([]Rhythm, len(rs))
	for i, r := range rs {
		out[i] = r
		out[i].Frequencies = slices.Clone(r.Frequencies)
		out[i].Harmonics = slices.Clone(r.Harmonics)
	}
	return out
}

// Line is a spectral line a rhythm is built from: a frequency of the model
// placed on a peak of the training rows' spectrum.
type Line struct {
	// ID is the model frequency placed on the line.
	ID int
	// Frequency is the line's frequency in cycles per step.
	Frequency float64
	// Share is the line's share of its channel's variance.
	Share float64
}

// RhythmOptions sets how FindRhythms groups lines. The zero value of every
// field except Rows means its default.
type RhythmOptions struct {
	// Rows is the number of rows the lines were found in: the spectrum
	// resolves frequencies 1/Rows apart, and lines match a harmonic within
	// Tolerance/Rows. Required.
	Rows int
	// Cadence is the time between two steps, 0 when unknown. With it, a
	// fundamental within the resolution of a calendar period (a minute, an
	// hour, a day, a week) is set to it exactly, and a rhythm never reaches
	// past the calendar period that its strongest line divides: the day
	// stays the day when the week's lines stand around it.
	Cadence time.Duration
	// Tolerance is how far from an exact harmonic a line may lie, in
	// natural bins of the spectrum (1/Rows).
	//
	// Default: 0.6
	Tolerance float64
	// MaxHarmonic is the highest harmonic number a rhythm's strongest line
	// may have: the most a fundamental can lie below its strongest line.
	//
	// Default: 24
	MaxHarmonic int
	// MinStrength is how strong, relative to a rhythm's strongest line (in
	// amplitude), the lines a longer fundamental adds must be for the
	// rhythm to reach down to it rather than leave them to a rhythm of
	// their own. A weekday/weekend difference puts lines around the daily
	// cycle far weaker than it; a cycle with a strong second harmonic has
	// a fundamental near its strength.
	//
	// Default: 0.25
	MinStrength float64
}

func (o RhythmOptions) withDefaults() RhythmOptions {
	if o.Tolerance <= 0 {
		o.Tolerance = 0.6
	}
	if o.MaxHarmonic <= 0 {
		o.MaxHarmonic = 24
	}
	if o.MinStrength <= 0 {
		o.MinStrength = 0.25
	}
	return o
}

// calendarPeriods are the periods people name; a fundamental within the
// spectrum's resolution of one is set to it.
var calendarPeriods = []time.Duration{
	time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour,
}

// CalendarFrequencies returns the frequencies, in cycles per step, of the
// calendar periods at cadence that span at least two steps; nil when the
// cadence is unknown.
func CalendarFrequencies(cadence time.Duration) []float64 {
	if cadence <= 0 {
		return nil
	}
	var fs []float64
	for _, cp := range calendarPeriods {
		if pc := float64(cp) / float64(cadence); pc >= 2 {
			fs = append(fs, 1/pc)
		}
	}
	return fs
}

// FindRhythms groups spectral lines into rhythms: fundamental periods with
// the lines at their harmonics. Every line ends in exactly one rhythm (a
// line that is nobody's harmonic is a rhythm of its own).
//
// A rhythm grows harmonic by harmonic from the lowest, refitting its
// fundamental as it goes, and takes a harmonic at most twice as high (plus
// four) as the highest it has: the low harmonics fix where the high ones must
// lie, and a line far above them that only happens to sit near a harmonic
// is left alone.
//
// Lines are taken strongest first. An unclaimed line anchors a new rhythm
// whose fundamental is the line's frequency divided by the n (1 … MaxHarmonic)
// that claims the most unclaimed lines at its harmonics; n > 1 is allowed
// only when the lines it adds beyond the anchor's own harmonics are real:
// at least MinStrength of the anchor's amplitude, and either a line at the
// fundamental itself or three of them. Taking lines strongest first and
// leaving claimed lines alone is what keeps the day the day: the week's
// lines around it are weak, so the daily line does not reach down to the
// week, and they form the week's rhythm afterwards. The fundamental is the
// least-squares fit to all its lines' harmonics, set to a calendar period
// when one lies within the resolution.
func FindRhythms(lines []Line, opts RhythmOptions) []Rhythm {
	opts = opts.withDefaults()
	if opts.Rows < 2 || len(lines) == 0 {
		return nil
	}
	g := &grouping{opts: opts, tol: opts.Tolerance / float64(opts.Rows), ls: slices.Clone(lines)}
	slices.SortStableFunc(g.ls, func(a, b Line) int { return cmp.Compare(b.Share, a.Share) })
	g.claimed = make([]bool, len(g.ls))
	for a := range g.ls {
		if g.claimed[a] {
			continue
		}
		if !(g.ls[a].Frequency > 0) {
			g.claimed[a] = true
			continue
		}
		best, F := g.bestComb(a)
		g.add(best, F)
	}
	return g.out
}

// grouping is FindRhythms at work: the lines strongest first, which of them
// a rhythm has claimed, and the rhythms so far.
type grouping struct {
	opts    RhythmOptions
	tol     float64 // a line's frequency error: Tolerance/Rows
	ls      []Line
	claimed []bool
	out     []Rhythm
}

// amp is a line's amplitude, √share.
func amp(l Line) float64 { return math.Sqrt(max(l.Share, 0)) }

// fit returns the least-squares fundamental of the members' harmonics,
// F = Σ k f / Σ k², and its error tol/√Σk².
func (g *grouping) fit(ms []harmonicMatch) (F, sigma float64) {
	var num, den float64
	for _, mb := range ms {
		num += float64(mb.k) * g.ls[mb.line].Frequency
		den += float64(mb.k * mb.k)
	}
	return num / den, g.tol / math.Sqrt(den)
}

// fitCal is fit, with a calendar fundamental exact: its harmonics lie where
// the calendar says, to the lines' own error.
func (g *grouping) fitCal(ms []harmonicMatch) (F, sigma float64) {
	F, sigma = g.fit(ms)
	if P := snapCalendar(1/F, g.tol, g.opts.Cadence); P != 1/F {
		return 1 / P, 0
	}
	return F, sigma
}

// grow builds the rhythm whose fundamental is anchor a's frequency divided
// by n: harmonic by harmonic, from the lowest, it takes the unclaimed line
// nearest each harmonic k when it lies within tol + k·sigma of it, and
// refits the fundamental (and its error) after each, so the low harmonics
// fix where the high ones must lie and a line that only happens to lie near
// a high harmonic is not taken.
//
// When the fundamental is a calendar period that a shorter one divides
// (the week, 7 days: skip = 7), the harmonics at multiples of skip (24h,
// 12h, …) are left to the shorter period's rhythm: the week is "the
// 168/k-hour lines that are not the day's".
func (g *grouping) grow(a, n, skip int) (ms []harmonicMatch, F, sigma float64) {
	ms = []harmonicMatch{{a, n}}
	F, sigma = g.fitCal(ms)
	top := max(n, skip) // the highest harmonic taken (the skipped ones count)
	for k := 1; float64(k)*F <= 0.5+g.tol && k <= 2*top+4; k++ {
		if k == n || (skip > 1 && k%skip == 0) {
			continue
		}
		w := g.tol + float64(k)*sigma
		if w >= F/4 {
			break // the comb's teeth would overlap: nothing can be told apart
		}
		best, dist := -1, w
		for j, l := range g.ls {
			if d := math.Abs(l.Frequency - float64(k)*F); !g.claimed[j] && j != a && d <= dist {
				best, dist = j, d
			}
		}
		if best >= 0 {
			ms = append(ms, harmonicMatch{best, k})
			F, sigma = g.fitCal(ms)
			top = max(top, k)
		}
	}
	return ms, F, sigma
}

// chance is how many of the unclaimed lines outside anchor a's own
// harmonics (every n-th of the comb) would match a comb of spacing F by
// accident.
func (g *grouping) chance(F, sigma float64, a, n int) float64 {
	lambda := 0.0
	for j, l := range g.ls {
		if g.claimed[j] || j == a {
			continue
		}
		k := int(math.Round(l.Frequency / F))
		if k >= 1 && k%n == 0 && math.Abs(l.Frequency-float64(k)*F) <= g.tol+float64(k)*sigma {
			continue // the anchor's own comb explains it
		}
		lambda += min(1, 2*(g.tol+float64(max(k, 1))*sigma)/F)
	}
	return lambda
}

// bestComb returns the members and fundamental of the rhythm anchor a
// makes: of the fundamentals a's frequency / n (n = 1 … MaxHarmonic), the
// one that claims the most lines, a calendar one winning a tie, among
// those whose lines beyond a's own harmonics are real (real).
func (g *grouping) bestComb(a int) ([]harmonicMatch, float64) {
	opts, tol, anchor := g.opts, g.tol, g.ls[a]
	limit := min(float64(opts.Rows)/4, calendarCap(1/anchor.Frequency, tol, opts.Cadence)) // a fundamental shows at least four times
	var best []harmonicMatch
	bestF, bestScore := anchor.Frequency, 0.0
	for n := 1; n <= opts.MaxHarmonic; n++ {
		F := anchor.Frequency / float64(n)
		if n > 1 && 1/F > limit*(1+tol*limit) {
			break
		}
		skip := calendarSplit(1/F, tol, opts.Cadence)
		if skip > 1 && n%skip == 0 {
			continue // the anchor is the shorter calendar rhythm's line
		}
		ms, F, sigma := g.grow(a, n, skip)
		if len(ms) == 0 {
			continue
		}
		calendar := snapCalendar(1/F, tol, opts.Cadence) == 1/F && IsCalendar(1/F, opts.Cadence)
		if n > 1 && !g.real(ms, a, n, F, sigma, calendar) {
			continue
		}
		// The most lines wins; a calendar fundamental wins a tie.
		score := float64(len(ms))
		if calendar {
			score += 0.5
		}
		if score > bestScore {
			best, bestF, bestScore = ms, F, score
		}
	}
	if len(best) == 0 {
		best = []harmonicMatch{{a, 1}}
	}
	return best, bestF
}

// real reports whether the members ms of a fundamental F (error sigma)
// anchor a's frequency / n (n > 1) holds are a rhythm, not chance.
func (g *grouping) real(ms []harmonicMatch, a, n int, F, sigma float64, calendar bool) bool {
	opts, tol, anchor := g.opts, g.tol, g.ls[a]
	if calendar {
		// A calendar fundamental (the day of a 12h line) needs only a line
		// of its own: rhythms of the calendar are what sensors have, not
		// chance alignments. Or a rhythm of that period is there already
		// (its lines were claimed by a stronger anchor).
		known := slices.ContainsFunc(g.out, func(r Rhythm) bool { return math.Abs(1/r.PeriodSteps-F) <= tol })
		return known || slices.ContainsFunc(ms, func(mb harmonicMatch) bool { return mb.k%n != 0 })
	}
	// What the longer fundamental adds to the anchor's own harmonics must be
	// real lines, not chance alignments.
	var ext []harmonicMatch
	strongest, fundamental, gc := 0.0, 0.0, 0
	locked, calendarLine := false, false
	for _, mb := range ms {
		if mb.k%n == 0 {
			continue
		}
		ext = append(ext, mb)
		l := g.ls[mb.line]
		strongest = max(strongest, amp(l))
		if mb.k == 1 {
			fundamental = amp(l)
			locked = math.Abs(l.Frequency-anchor.Frequency/float64(n)) <= tol*lockedBins/opts.Tolerance
		}
		// A line on a calendar period's comb shorter than the fundamental
		// (the day's, under a 48h one) is that period's.
		calendarLine = calendarLine || calendarCap(1/l.Frequency, tol, opts.Cadence) < 0.99/F
		gc = gcd(gc, mb.k)
	}
	if len(ext) == 0 || strongest < opts.MinStrength*amp(anchor) || !(fundamental > 0 || len(ext) >= 3) {
		return false
	}
	// Lines that all sit at multiples of gc > 1 are a family of their own
	// (fundamental F·gc) that happens to line up with the anchor's, not the
	// fundamental's harmonics. And a calendar period's lines are that
	// period's (the day's 24h and 12h beside a stronger 16h line and a 48h
	// one would otherwise make a "48h" rhythm of all four).
	if gc > 1 || calendarLine {
		return false
	}
	// And more of them than chance would line up; or a strong line at the
	// fundamental itself, a few octaves below the anchor, exactly where the
	// anchor puts it: a cycle whose second, third or fourth harmonic is its
	// strongest line (a double-peaked cycle, a tide), which one line can
	// never show against chance. Left to chance, such a cycle is split in
	// two "cycles" on 18 of 20 seeded feeds whose second harmonic is 1.5
	// times the first; their fundamentals lie within 0.05 bins of the
	// anchor's. Two cycles of their own half a bin off 2:1 drift apart in
	// phase over the rows: grouped, their test MSE is 3–9% worse.
	strongFundamental := n <= maxOctaveHarmonic && fundamental >= opts.MinStrength*amp(anchor) && locked
	return strongFundamental || !(poissonTail(g.chance(F, sigma, a, n), len(ext)) > 1e-3)
}

// add records the rhythm of members best and fundamental F, claiming its
// lines: as a rhythm of its own, or into one of the same period found from
// another anchor (its lines missed the first fit).
func (g *grouping) add(best []harmonicMatch, F float64) {
	P := snapCalendar(1/F, g.tol, g.opts.Cadence)
	r := -1
	for i := range g.out {
		if math.Abs(1/g.out[i].PeriodSteps-1/P) <= g.tol {
			r = i
		}
	}
	if r < 0 {
		g.out = append(g.out, Rhythm{PeriodSteps: P})
		r = len(g.out) - 1
	}
	for _, mb := range best {
		g.claimed[mb.line] = true
		k := int(math.Round(g.ls[mb.line].Frequency * g.out[r].PeriodSteps))
		g.out[r].Frequencies = append(g.out[r].Frequencies, g.ls[mb.line].ID)
		g.out[r].Harmonics = append(g.out[r].Harmonics, max(k, 1))
	}
	sortByHarmonic(&g.out[r])
}

// sortByHarmonic orders a rhythm's frequencies by harmonic number.
func sortByHarmonic(r *Rhythm) {
	idx := make([]int, len(r.Frequencies))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(r.Harmonics[a], r.Harmonics[b]) })
	fs, hs := make([]int, len(idx)), make([]int, len(idx))
	for i, j := range idx {
		fs[i], hs[i] = r.Frequencies[j], r.Harmonics[j]
	}
	r.Frequencies, r.Harmonics = fs, hs
}

// maxOctaveHarmonic is the highest harmonic number a rhythm's strongest
// line may have when a strong line at the fundamental is all that shows the
// rhythm reaches down to it (FindRhythms).
const maxOctaveHarmonic = 4

// lockedBins is how close, in natural bins of the spectrum, a fundamental
// must lie to its strongest harmonic's frequency divided by its number for
// that strong line alone to vouch for the rhythm (FindRhythms): a third of
// the default tolerance.
const lockedBins = 0.2

// harmonicMatch is a line (index into the sorted lines) at harmonic k of
// a fundamental.
type harmonicMatch struct{ line, k int }

// calendarCap returns the shortest calendar period (in steps) that is an
// integer multiple of period within the frequency tolerance tol, or +Inf.
func calendarCap(period, tol float64, cadence time.Duration) float64 {
	if cadence <= 0 {
		return math.Inf(1)
	}
	for _, cp := range calendarPeriods {
		pc := float64(cp) / float64(cadence)
		if 1/pc > 1/period+tol {
			continue // shorter than period, beyond the tolerance
		}
		k := math.Round(pc / period)
		if k >= 1 && math.Abs(k/pc-1/period) <= tol {
			return pc
		}
	}
	return math.Inf(1)
}

// calendarSplit returns m when period (steps) is within the frequency
// tolerance tol of a calendar period that is m > 1 times a shorter
// calendar period (the week: 7 days), else 0.
func calendarSplit(period, tol float64, cadence time.Duration) int {
	if cadence <= 0 {
		return 0
	}
	for i, cp := range calendarPeriods {
		pc := float64(cp) / float64(cadence)
		if math.Abs(1/pc-1/period) > tol || i == 0 {
			continue
		}
		// The next shorter one: the day for the week, the hour for the day.
		if ps := float64(calendarPeriods[i-1]) / float64(cadence); ps >= 2 {
			return int(math.Round(pc / ps))
		}
	}
	return 0
}

// IsCalendar reports whether period (steps) is a calendar period exactly.
func IsCalendar(period float64, cadence time.Duration) bool {
	if cadence <= 0 {
		return false
	}
	for _, cp := range calendarPeriods {
		if float64(cp)/float64(cadence) == period {
			return true
		}
	}
	return false
}

// snapCalendar returns the calendar period (in steps) within the frequency
// tolerance tol of period, or period itself.
func snapCalendar(period, tol float64, cadence time.Duration) float64 {
	if cadence <= 0 {
		return period
	}
	for _, cp := range calendarPeriods {
		pc := float64(cp) / float64(cadence)
		if pc >= 2 && math.Abs(1/pc-1/period) <= tol {
			return pc
		}
	}
	return period
}

// HarmonicFills returns the frequencies (cycles per step) of the missing
// harmonics of rhythms worth a frequency of their own, lowest harmonic
// numbers first, at most budget of them: for each rhythm with more than one
// line, the harmonics k = 1 … maxHarmonic below the Nyquist frequency that
// no rhythm has a frequency on yet. A rhythm's clock term is then a fuller
// profile of its cycle (its shape over the day, not only its strongest
// lines); harmonics that the data does not have learn coefficients near
// zero.
func HarmonicFills(rs []Rhythm, freqOf func(id int) float64, maxHarmonic, budget int, fmin, tol float64) []float64 {
	taken := func(f float64) bool {
		for _, r := range rs {
			for _, id := range r.Frequencies {
				if math.Abs(freqOf(id)-f) <= tol {
					return true
				}
			}
		}
		return false
	}
	var out []float64
	for k := 1; k <= maxHarmonic && len(out) < budget; k++ {
		for _, r := range rs {
			if len(out) >= budget || len(r.Frequencies) < 2 {
				continue
			}
			f := float64(k) / r.PeriodSteps
			if f >= 0.5 || f <= fmin || taken(f) || slices.ContainsFunc(out, func(g float64) bool { return math.Abs(g-f) <= tol }) {
				continue
			}
			out = append(out, f)
		}
	}
	return out
}

// AddFills adds to its rhythm the frequency (id) placed on each fill: the
// rhythm with a harmonic within tol of it.
func AddFills(rs []Rhythm, fills, freq []float64, tol float64) {
	for _, f := range fills {
		id := -1
		for i, g := range freq {
			if math.Abs(g-f) <= 1e-9*f {
				id = i
			}
		}
		if id < 0 {
			continue
		}
		for r := range rs {
			k := math.Round(f * rs[r].PeriodSteps)
			if len(rs[r].Frequencies) > 1 && k >= 1 && math.Abs(f-k/rs[r].PeriodSteps) <= tol && !slices.Contains(rs[r].Frequencies, id) {
				rs[r].Frequencies = append(rs[r].Frequencies, id)
				rs[r].Harmonics = append(rs[r].Harmonics, int(k))
				sortByHarmonic(&rs[r])
				break
			}
		}
	}
}

// poissonTail is P(X ≥ k) for X Poisson with mean lambda.
func poissonTail(lambda float64, k int) float64 {
	if k <= 0 {
		return 1
	}
	term, below := math.Exp(-lambda), 0.0
	for i := range k {
		if i > 0 {
			term *= lambda / float64(i)
		}
		below += term
	}
	return max(0, 1-below)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// FormatPeriod writes a period the way people say it: "24.0h", "7.0d",
// "15.0m", "30.0s".
func FormatPeriod(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d >= 72*time.Hour:
		return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + "d"
	case d >= time.Hour:
		return strconv.FormatFloat(d.Hours(), 'f', 1, 64) + "h"
	case d >= time.Minute:
		return strconv.FormatFloat(d.Minutes(), 'f', 1, 64) + "m"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}
