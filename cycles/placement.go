package cycles

import (
	"math"
	"slices"
	"time"
)

// Placing the rhythms' lines: which peaks of the training spectrum get a
// frequency beyond those placement keeps by the window's resolution,
// because the rhythms' clock tells them apart by time (calendar sidebands,
// and harmonics of a rhythm found).

// CalendarSidebands marks, among the peaks placement left out (most for
// lying within 1/L of a stronger line; placed maps each frequency id to its
// peak, −1 for none), the sidebands of a found calendar
// rhythm: harmonics of the next longer calendar period around its lines,
// such as the 168/k-hour lines a weekday/weekend difference puts within
// 1/L of the day's. A window cannot tell them from the day's lines, which
// is why placement leaves them out, but the clock tells them apart by
// time. Without them the week of a feed whose day spans a window (at a
// 10- or 15-minute cadence every weekly line lies within 1/L of a daily
// one) has no line at all, and the few that pass alone are named as
// rhythms of their own.
//
// A peak is marked when its period divides a calendar period P = m·Q
// (m > 1; the week, 7 days) within the tolerance of opts, at a harmonic n
// of P that is not one of Q's (n not a multiple of m), within 1/L of the
// nearest of Q's harmonics (the first, for the lowest n), and rhythms hold
// Q or P, and P shows at least four times in the rows (as FindRhythms
// needs of a fundamental). Marking does not lift the cap of N/2 placed
// frequencies.
func CalendarSidebands(peaks []Peak, placed []int, rhythms []Rhythm, opts RhythmOptions, lookback int) []bool {
	opts = opts.withDefaults()
	if opts.Cadence <= 0 || opts.Rows < 2 || len(rhythms) == 0 {
		return nil
	}
	tol := opts.Tolerance / float64(opts.Rows)
	kept := make([]bool, len(peaks))
	for _, p := range placed {
		if p >= 0 && p < len(kept) {
			kept[p] = true
		}
	}
	found := func(period float64) bool {
		return slices.ContainsFunc(rhythms, func(r Rhythm) bool { return math.Abs(1/r.PeriodSteps-1/period) <= tol })
	}
	var out []bool
	for i, pk := range peaks {
		if kept[i] || !(pk.Frequency > 0) {
			continue
		}
		P := calendarCap(1/pk.Frequency, tol, opts.Cadence)
		m := calendarSplit(P, tol, opts.Cadence)
		if math.IsInf(P, 1) || m < 2 || P > float64(opts.Rows)/4 {
			continue // no calendar period above, or too long for a rhythm in these rows
		}
		n := int(math.Round(P * pk.Frequency))
		Q := P / float64(m)
		j := max(1, math.Round(float64(n)/float64(m)))
		if n%m == 0 || math.Abs(pk.Frequency-j/Q) >= 1/float64(lookback) || !(found(Q) || found(P)) {
			continue
		}
		if out == nil {
			out = make([]bool, len(peaks))
		}
		out[i] = true
	}
	return out
}

// LeftHarmonics marks the peaks that are harmonics (k ≥ 2) of a rhythm
// found, or its fundamental two to four times lower (fundamentalBelow), so that placement keeps them however close they lie to a stronger
// line the clock tells apart from them. Placement leaves out a line within
// 1/L of a stronger one, such as the day's 12 hours at a 10-minute cadence,
// 72 steps from the day's 144: 1/144 apart, under the 1/96 a window tells
// apart. The clock phases a rhythm's lines by time, so it tells them apart;
// left out, the rhythm's shape loses a harmonic, and what it carried goes
// to lines of no rhythm. So a harmonic is marked when every stronger line
// within 1/L of it is on the comb of its rhythm, or of a longer period its
// rhythm's divides (a rhythm found, or a calendar period: the week's 28h
// and 21h beside the day's 12h). Beside a stronger line of another rhythm
// or of none (the solar 12h tide beside the lunar 12.42h) the window's
// limit holds: placing it there cost accuracy. A peak lies on its
// rhythm's comb when it is within (1 + k/2)·Tolerance/Rows of its k-th
// harmonic, on a longer period's within Tolerance/Rows.
// It returns nil when no peak is marked.
func LeftHarmonics(peaks []Peak, rhythms []Rhythm, opts RhythmOptions, lookback int) []bool {
	opts = opts.withDefaults()
	if opts.Rows < 2 || len(rhythms) == 0 {
		return nil
	}
	tol := opts.Tolerance / float64(opts.Rows)
	near := 0.99 / float64(lookback) // as placement counts 1/L
	onComb := func(f, period, first float64) bool {
		k := math.Round(f * period)
		return k >= first && math.Abs(f-k/period) <= (1+k/2)*tol
	}
	// A longer period's comb is dense (the week's lines are 1/168 apart
	// at an hour), so a line counts as on it only within the lines' own
	// error.
	onLongComb := func(f, period float64) bool {
		k := math.Round(f * period)
		return k >= 1 && math.Abs(f-k/period) <= tol
	}
	var longer []float64 // the rhythms' periods and the calendar's
	for _, r := range rhythms {
		longer = append(longer, r.PeriodSteps)
	}
	for _, f := range CalendarFrequencies(opts.Cadence) {
		longer = append(longer, 1/f)
	}
	// clockOf reports whether line f is on the comb of period or of a
	// longer period that period divides.
	clockOf := func(f, period float64) bool {
		if onComb(f, period, 1) {
			return true
		}
		for _, P := range longer {
			if m := math.Round(P / period); m >= 2 && math.Abs(P-m*period) <= 0.01*period && onLongComb(f, P) {
				return true
			}
		}
		return false
	}
	var out []bool
	for i, pk := range peaks {
		if !(pk.Frequency > 0) {
			continue
		}
		// freeOf: every stronger line within 1/L of the peak is on the comb of
		// period (or of a longer period it divides).
		freeOf := func(period float64) bool {
			for _, q := range peaks {
				if q.Share > pk.Share && math.Abs(q.Frequency-pk.Frequency) < near && !clockOf(q.Frequency, period) {
					return false
				}
			}
			return true
		}
		marked := slices.ContainsFunc(rhythms, func(r Rhythm) bool {
			return onComb(pk.Frequency, r.PeriodSteps, 2) && freeOf(r.PeriodSteps) ||
				fundamentalBelow(pk, r, peaks, opts, tol) && freeOf(1/pk.Frequency)
		})
		if marked {
			if out == nil {
				out = make([]bool, len(peaks))
			}
			out[i] = true
		}
	}
	return out
}

// fundamentalBelow reports whether peak pk lies at the fundamental of a
// period two to four times rhythm r's (within lockedBins) and is strong enough
// for FindRhythms to reach down to it: a quarter of the amplitude of r's
// strongest line. A cycle longer than the window whose second harmonic
// is its strongest line has a weaker fundamental within 1/L of it, which
// placement leaves out; r then stands at half the cycle's period. r must
// be free to reach that far (no calendar period caps it, as the day caps
// its 12h line's rhythm), and the period must show four times in the rows.
func fundamentalBelow(pk Peak, r Rhythm, peaks []Peak, opts RhythmOptions, tol float64) bool {
	n := math.Round(1 / (pk.Frequency * r.PeriodSteps))
	if n < 2 || n > maxOctaveHarmonic || math.Abs(pk.Frequency-1/(n*r.PeriodSteps)) > tol*lockedBins/opts.Tolerance ||
		n*r.PeriodSteps > float64(opts.Rows)/4 || calendarCap(r.PeriodSteps, tol, opts.Cadence) < n*r.PeriodSteps*(1-tol) {
		return false
	}
	strongest := 0.0
	for _, q := range peaks {
		if k := math.Round(q.Frequency * r.PeriodSteps); k >= 1 && math.Abs(q.Frequency-k/r.PeriodSteps) <= (1+k/2)*tol {
			strongest = max(strongest, q.Share)
		}
	}
	return strongest > 0 && math.Sqrt(pk.Share/strongest) >= opts.MinStrength
}

// UnmarkUngrouped clears the marks of calendar sidebands whose frequency
// did not join a calendar rhythm when the placed lines were grouped again
// (a lone weekly line that found no other to make the week with would
// otherwise be named a rhythm of its own), and of harmonics (marked in
// harmonics, nil for none) that joined no rhythm of two lines or more, and
// reports whether it cleared any. Placement then treats them as unmarked
// peaks and leaves them out.
func UnmarkUngrouped(marks, harmonics []bool, placed []int, rhythms []Rhythm, cadence time.Duration) bool {
	inCalendar := map[int]bool{} // frequency id → in a calendar rhythm
	inRhythm := map[int]bool{}   // frequency id → in a rhythm of two lines or more
	for _, r := range rhythms {
		for _, id := range r.Frequencies {
			inCalendar[id] = inCalendar[id] || IsCalendar(r.PeriodSteps, cadence)
			inRhythm[id] = inRhythm[id] || len(r.Frequencies) >= 2
		}
	}
	changed := false
	for id, peak := range placed {
		if peak < 0 || peak >= len(marks) || !marks[peak] {
			continue
		}
		if harmonic := peak < len(harmonics) && harmonics[peak]; harmonic && !inRhythm[id] || !harmonic && !inCalendar[id] {
			marks[peak], changed = false, true
		}
	}
	return changed
}
