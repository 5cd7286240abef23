package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/dataset/datasettest"
)

// strongHarmonicFrame is a cycle of a random period in [lo, hi) steps whose
// second harmonic is ratio times as strong as its first (a double-peaked
// cycle), with noise, hourly, on two series.
func strongHarmonicFrame(seed uint64, lo, hi float64, steps int, ratio float64) (*dataset.Frame, float64) {
	rng := rand.New(rand.NewPCG(seed, 81))
	period := lo + (hi-lo)*rng.Float64()
	a1 := 0.5 + 0.5*rng.Float64()
	p1, p2 := 2*math.Pi*rng.Float64(), 2*math.Pi*rng.Float64()
	noise := 0.05 + 0.15*rng.Float64()
	f := datasettest.HourlyPair("double", steps, func(t int) float64 {
		return a1*math.Sin(2*math.Pi*float64(t)/period+p1) + ratio*a1*math.Sin(4*math.Pi*float64(t)/period+p2)
	}, func(s int, v float64) float64 {
		return float64(s) + v + noise*rng.NormFloat64()
	})
	return f, period
}

// TestStrongSecondHarmonicStaysInItsCycle: a cycle whose second harmonic is
// as strong as its first, or stronger, is one rhythm, at its period (within
// the spectrum's resolution, so a period that close to a calendar one may
// be read as it), not two "cycles" of P and P/2, nor one of P/2. Periods of
// half a window to 3 windows, 20 seeded feeds each, the second harmonic 0.5
// to 3 times the first. Before a strong line at the fundamental was enough
// to reach down to it, a single line could never show against chance: 7 and
// 11 of 20 feeds were split at 1, 18 and 18 at 1.5. Before such a
// fundamental was placed within 1/L of its harmonic (cycles longer than the
// window), 6 of 20 long cycles were read at half their period at 2, all 20
// at 3.
func TestStrongSecondHarmonicStaysInItsCycle(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		steps  int
	}{{12, 40, 2400}, {150, 290, 4000}} {
		for _, ratio := range []float64{0.5, 1, 1.5, 2, 3} {
			var wrong []string
			for seed := uint64(1); seed <= 20; seed++ {
				f, period := strongHarmonicFrame(seed, tc.lo, tc.hi, tc.steps, ratio)
				rows := f.Rows() * 7 / 10
				rhythms := discovered(t, f, rows, seed)
				tol := 0.6 / float64(rows)
				if len(rhythms) != 1 {
					wrong = append(wrong, fmt.Sprintf("seed %d, period %.2f: %s", seed, period, fmt.Sprint(rhythms)))
					continue
				}
				P := rhythms[0].PeriodSteps
				if k := math.Round(P / period); k < 1 || math.Abs(k/P-1/period) > tol {
					wrong = append(wrong, fmt.Sprintf("seed %d, period %.2f: %s", seed, period, fmt.Sprint(rhythms)))
				}
			}
			if len(wrong) > 0 {
				t.Errorf("periods %v–%v steps, second harmonic %v times the first: %d of 20 feeds not one rhythm at the period:\n%s",
					tc.lo, tc.hi, ratio, len(wrong), strings.Join(wrong, "\n"))
			}
		}
	}
}

// TestOctaveRuleLeavesOtherCyclesAlone: a strong line at a fundamental two
// to four times below a stronger one vouches for their rhythm only where a
// harmonic of one cycle would put it and never over a calendar period's
// lines. Two cycles of their own half a bin off 2:1 stay two, the stronger
// where the spectrum measured it; a day beside a stronger 16h (or 32h)
// line and a line at 48h (96h) stays the day, also with its 12h line,
// which made the lines more than chance before a calendar period's lines
// were kept from longer non-calendar fundamentals.
func TestOctaveRuleLeavesOtherCyclesAlone(t *testing.T) {
	const rows = 1680
	for _, tc := range []struct {
		name  string
		lines []cycles.Line
		want  []float64 // the rhythms' periods, in any order
	}{
		{"a locked octave is one cycle", []cycles.Line{{ID: 0, Frequency: 1.0 / 20, Share: 0.5}, {ID: 1, Frequency: 1.0 / 40, Share: 0.1}}, []float64{40}},
		{"half a bin off 2:1, two cycles", []cycles.Line{{ID: 0, Frequency: 1.0 / 20, Share: 0.5}, {ID: 1, Frequency: 1.0/40 - 0.5/rows, Share: 0.1}}, []float64{20, 1 / (1.0/40 - 0.5/rows)}},
		{"the day beside 16h and 48h", []cycles.Line{{ID: 0, Frequency: 1.0 / 16, Share: 0.40}, {ID: 1, Frequency: 1.0 / 24, Share: 0.15}, {ID: 2, Frequency: 1.0 / 48, Share: 0.06}}, []float64{16, 24, 48}},
		{"the day and 12h beside 16h and 48h", []cycles.Line{{ID: 0, Frequency: 1.0 / 16, Share: 0.40}, {ID: 1, Frequency: 1.0 / 24, Share: 0.15}, {ID: 2, Frequency: 1.0 / 12, Share: 0.08}, {ID: 3, Frequency: 1.0 / 48, Share: 0.06}}, []float64{16, 24, 48}},
		{"the day beside 32h and 96h", []cycles.Line{{ID: 0, Frequency: 1.0 / 32, Share: 0.40}, {ID: 1, Frequency: 1.0 / 24, Share: 0.15}, {ID: 2, Frequency: 1.0 / 96, Share: 0.06}}, []float64{32, 24, 96}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := cycles.FindRhythms(tc.lines, cycles.RhythmOptions{Rows: rows, Cadence: time.Hour})
			var got []float64
			for _, r := range rs {
				got = append(got, r.PeriodSteps)
			}
			ok := len(got) == len(tc.want)
			for _, w := range tc.want {
				ok = ok && slices.ContainsFunc(got, func(g float64) bool { return math.Abs(g/w-1) < 0.001 })
			}
			if !ok {
				t.Errorf("rhythms %s, want periods %.3f", fmt.Sprint(rs), tc.want)
			}
		})
	}
}
