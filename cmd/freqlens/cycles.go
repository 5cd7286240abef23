package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/model"
)

// rhythmReport is one rhythm in the JSON of train, eval and inspect: a
// cycle of the data (a fundamental period) with the model's frequencies at
// its harmonics, and its share of the attribution.
type rhythmReport struct {
	// Name is what every tool calls it: "24.0h cycle".
	Name          string   `json:"name"`
	PeriodSteps   float64  `json:"period_steps"`
	PeriodSeconds *float64 `json:"period_seconds,omitempty"`
	Period        string   `json:"period,omitempty"`
	// Share is the rhythm's mean share of the attribution (level
	// excluded) at the level of cycles: what its frequencies add up to,
	// counted against the cycles', the other frequencies' and the
	// residual's parts, which together make 1.
	Share float64 `json:"share"`
	// LinesShare is the sum of its frequencies' shares: more than Share
	// by what the lines cancel of each other. A model file without
	// rhythm_shares metadata holds only this, and Share equals it.
	LinesShare float64 `json:"lines_share"`
	// Frequencies are its frequencies' ids and Harmonics their harmonic
	// numbers, in the same order.
	Frequencies []int `json:"frequencies"`
	Harmonics   []int `json:"harmonics"`
	// Lines details each frequency.
	Lines []lineReport `json:"lines"`
}

// lineReport is one frequency of a rhythm.
type lineReport struct {
	ID            int      `json:"id"`
	Harmonic      int      `json:"harmonic"`
	PeriodSteps   float64  `json:"period_steps"`
	PeriodSeconds *float64 `json:"period_seconds,omitempty"`
	Period        string   `json:"period,omitempty"`
	Share         float64  `json:"share"`
	// SpectralPeriodSteps is where the training data's spectrum had the
	// line and VarianceShare the line's share of its channel's variance
	// there; both absent for a harmonic placed without a peak.
	SpectralPeriodSteps float64 `json:"spectral_period_steps,omitempty"`
	VarianceShare       float64 `json:"variance_share,omitempty"`
}

// periodFields returns a period of steps in time, when the cadence is known.
func periodFields(steps float64, cadence time.Duration) (*float64, string) {
	if cadence <= 0 {
		return nil, ""
	}
	d := time.Duration(steps * float64(cadence))
	s := d.Seconds()
	return &s, cycles.FormatPeriod(d)
}

// rhythmsOf lists m's rhythms under shares (per frequency id) and
// rhythmShares (per rhythm index; nil when unknown), largest share first.
func rhythmsOf(m *model.Model, shares, rhythmShares []float64) []rhythmReport {
	peaks := map[int]model.PlacedPeak{}
	for _, pk := range m.Meta.Peaks {
		peaks[pk.ID] = pk
	}
	out := []rhythmReport{}
	for _, rs := range explain.RhythmShares(m, shares, rhythmShares) {
		r := rhythmReport{PeriodSteps: rs.PeriodSteps, Share: rs.Share, LinesShare: rs.LinesShare, Frequencies: rs.Frequencies, Harmonics: rs.Harmonics}
		r.PeriodSeconds, r.Period = periodFields(rs.PeriodSteps, m.Meta.Cadence)
		r.Name = rhythmName(r)
		for j, id := range rs.Frequencies {
			k := rs.Harmonics[j]
			ln := lineReport{ID: id, Harmonic: k, PeriodSteps: rs.PeriodSteps / float64(k)}
			ln.PeriodSeconds, ln.Period = periodFields(ln.PeriodSteps, m.Meta.Cadence)
			if id < len(shares) {
				ln.Share = shares[id]
			}
			if pk, ok := peaks[id]; ok {
				ln.SpectralPeriodSteps, ln.VarianceShare = pk.PeriodSteps, pk.VarianceShare
			}
			r.Lines = append(r.Lines, ln)
		}
		out = append(out, r)
	}
	return out
}

// otherShare is the frequencies of no rhythm's share (explain.OtherShare).
func otherShare(m *model.Model, shares, rhythmShares []float64, residual float64) float64 {
	return explain.OtherShare(explain.RhythmShares(m, shares, rhythmShares), residual)
}

// periodLabel names a period in physical units when known, in steps otherwise.
func periodLabel(period string, steps float64) string {
	if period != "" {
		return period
	}
	return fmt.Sprintf("%.1f steps", steps)
}

// rhythmName is how a user reads a rhythm: "24.0h cycle".
func rhythmName(r rhythmReport) string { return periodLabel(r.Period, r.PeriodSteps) + " cycle" }

// printRhythms writes the rhythms that carry at least explain.MinCycleShare
// of the attribution, each with its frequencies, and the residual's and
// the other frequencies' shares.
func printRhythms(w io.Writer, rhythms []rhythmReport, residualShare float64, where string) {
	fmt.Fprintf(w, "cycles of the data: rhythms with their harmonics (share of the attribution on %s, level excluded):\n", where)
	total, shown, weak := 0.0, 0, 0
	for _, r := range rhythms {
		total += r.Share
		if r.Share < explain.MinCycleShare {
			weak++
			continue
		}
		shown++
		// The lines by their size within the cycle: their own shares sum
		// to more than the cycle's when they partly cancel, so they are not
		// shares of the forecast.
		var parts []string
		for _, ln := range r.Lines {
			size := 0.0
			if r.LinesShare > 0 {
				size = ln.Share / r.LinesShare
			}
			parts = append(parts, fmt.Sprintf("%s %.0f%%", periodLabel(ln.Period, ln.PeriodSteps), 100*size))
		}
		by := " by size within it"
		if len(r.Lines) == 1 {
			by = ""
		}
		fmt.Fprintf(w, "  %-14s %5.1f%%   %d frequenc%s%s: %s%s\n", rhythmName(r), 100*r.Share, len(r.Lines), plural(len(r.Lines), "y", "ies"),
			by, strings.Join(parts, ", "), cancelNote(r.Share, r.LinesShare))
	}
	if shown == 0 {
		fmt.Fprintln(w, "  none: no rhythm of the training data carries 1% of the forecasts")
	}
	if weak > 0 {
		fmt.Fprintf(w, "  (%d more rhythm%s below 1%%)\n", weak, plural(weak, "", "s"))
	}
	fmt.Fprintf(w, "  cycles together %.1f%%, residual MLP %.1f%%, other frequencies %.1f%%\n",
		100*total, 100*residualShare, 100*max(0, 1-total-residualShare))
}

// cancels reports whether a cycle's lines, on their own, come to half a
// point or more above the cycle's share: worth saying that they cancel.
func cancels(share, lines float64) bool { return lines-share >= 0.005 }

// cancelNote says how much a cycle's lines come to on their own when they
// partly cancel (by half a point or more): the cycle's share counts its
// summed part.
func cancelNote(share, lines float64) string {
	if !cancels(share, lines) {
		return ""
	}
	return fmt.Sprintf(" (on their own %.1f%%; they partly cancel)", 100*lines)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// percents rounds shares that make about 1 to whole percents that make
// the rounded total (largest remainder first), so that a line of shares
// reads 100% rather than 99% or 101%. A negative or non-finite share
// counts as 0.
func percents(shares []float64) []int {
	pct := func(i int) float64 {
		if v := 100 * shares[i]; v > 0 && !math.IsInf(v, 1) {
			return v
		}
		return 0
	}
	out := make([]int, len(shares))
	total, sum := 0.0, 0
	for i := range shares {
		total += pct(i)
		out[i] = int(pct(i))
		sum += out[i]
	}
	order := make([]int, len(shares))
	for i := range order {
		order[i] = i
	}
	frac := func(i int) float64 { return pct(i) - math.Floor(pct(i)) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(frac(b), frac(a)) })
	for k := 0; sum < int(math.Round(total)) && k < len(order); k++ {
		out[order[k]]++
		sum++
	}
	return out
}
