package main

import (
	"fmt"
	"io"

	"github.com/freqlens/freqlens/model"
)

// cycleReport is one discovered cycle in the JSON of train, eval and
// inspect: a frequency placed on a peak of the training data's spectrum,
// with its share of the attribution.
type cycleReport struct {
	ID            int      `json:"id"`
	PeriodSteps   float64  `json:"period_steps"`
	PeriodSeconds *float64 `json:"period_seconds,omitempty"`
	Period        string   `json:"period,omitempty"`
	// Share is the cycle's mean share of the attribution (level excluded).
	Share float64 `json:"share"`
	// SpectralPeriodSteps is where the training data's spectrum put it;
	// VarianceShare is the cycle's share of its channel's variance there.
	SpectralPeriodSteps float64 `json:"spectral_period_steps"`
	VarianceShare       float64 `json:"variance_share"`
}

// cyclesOf lists m's discovered cycles under shares (per frequency id).
func cyclesOf(m *model.Model, shares []float64) []cycleReport {
	out := []cycleReport{}
	for _, c := range m.Cycles(shares, model.MinCycleShare) {
		cr := cycleReport{ID: c.ID, PeriodSteps: c.PeriodSteps, Share: c.Share,
			SpectralPeriodSteps: c.Peak.PeriodSteps, VarianceShare: c.Peak.VarianceShare}
		if c.Period > 0 {
			s := c.Period.Seconds()
			cr.PeriodSeconds, cr.Period = &s, model.FormatPeriod(c.Period)
		}
		out = append(out, cr)
	}
	return out
}

// periodLabel names a period in physical units when known, in steps otherwise.
func periodLabel(period string, steps float64) string {
	if period != "" {
		return period
	}
	return fmt.Sprintf("%.1f steps", steps)
}

// printCycles writes the discovered cycles and the residual's share.
func printCycles(w io.Writer, cycles []cycleReport, residualShare float64, where string) {
	fmt.Fprintf(w, "discovered cycles (share of the attribution on %s, level excluded):\n", where)
	if len(cycles) == 0 {
		fmt.Fprintln(w, "  none: no peak of the training data's spectrum carries 1% of the forecasts")
	}
	total := 0.0
	for _, c := range cycles {
		fmt.Fprintf(w, "  %-12s id %2d  %5.1f%%   (spectrum: %.2f steps, %.1f%% of the variance)\n",
			periodLabel(c.Period, c.PeriodSteps), c.ID, 100*c.Share, c.SpectralPeriodSteps, 100*c.VarianceShare)
		total += c.Share
	}
	fmt.Fprintf(w, "  cycles together %.1f%%, residual MLP %.1f%%, other frequencies %.1f%%\n",
		100*total, 100*residualShare, 100*max(0, 1-total-residualShare))
}
