package model

import (
	"cmp"
	"math"
	"slices"

	"github.com/freqlens/freqlens/cycles"
)

// Placement says which frequencies training placed on the data's cycles.
type Placement struct {
	// Peaks are the cycles found in the training rows, strongest first,
	// before the window-resolution rule dropped any.
	Peaks []cycles.Peak
	// Placed maps frequency id to the peak it was placed on (−1: a free
	// frequency spread over the rest of the spectrum).
	Placed []int
}

// PlaceFrequencies sets θ from the peaks of the training rows' spectrum
// and records the placed peaks in m.Meta.Peaks:
// each kept peak gets one frequency, exactly on it, and the other
// frequencies are spread log-uniformly over [1/L, ½] outside a band of
// ±1/L around every placed one, so that no free frequency starts where a
// window cannot tell it from a cycle. Ids stay in order of frequency. Phases
// are reset to 0.
//
// Peaks outside the model's frequency range are ignored. A peak closer
// than 1/L to a stronger kept one (a window cannot separate the two) is
// kept only when it is a cycle in its own right rather than leakage or a
// modulation sideband: at least a quarter of the stronger one's share.
// (PlaceOnSpectrum then also keeps the sidebands of calendar rhythms,
// which the clock tells apart: see placeRhythms.) At most half of the
// frequencies are placed.
//
// PlaceFrequencies is meant for a new model before training: the heads of a
// trained model would no longer match their frequencies.
func (m *Model) PlaceFrequencies(peaks []cycles.Peak) Placement {
	return m.placeFrequencies(peaks, nil, nil)
}

// placeFrequencies is PlaceFrequencies where the peaks marked in sidebands
// are kept however close they lie to a stronger one (calendar sidebands,
// see cycles.CalendarSidebands), with, after the peaks, one frequency exactly on
// each of harmonics (cycles per step): the missing harmonics of the
// rhythms. The clock tells both apart by time even where a window cannot
// (closer than 1/L). The cap of N/2 holds for all of them.
func (m *Model) placeFrequencies(peaks []cycles.Peak, sidebands []bool, harmonics []float64) Placement {
	N, L := m.cfg.Frequencies, m.cfg.Lookback
	fmin, fmax := freqBounds(L)
	freqs, onPeak := cycles.Spread(peaks, sidebands, harmonics, N, L, fmin, fmax)
	pl := Placement{Peaks: slices.Clone(peaks), Placed: onPeak}
	m.Meta.Peaks = m.Meta.Peaks[:0]
	for id, f := range freqs {
		m.setFrequency(id, f)
		m.params.Phi[id] = 0
		if k := onPeak[id]; k >= 0 {
			pk := peaks[k]
			m.Meta.Peaks = append(m.Meta.Peaks, PlacedPeak{ID: id, PeriodSteps: 1 / pk.Frequency,
				VarianceShare: pk.Share, Prominence: pk.Prominence})
		}
	}
	slices.SortStableFunc(m.Meta.Peaks, func(a, b PlacedPeak) int { return cmp.Compare(b.VarianceShare, a.VarianceShare) })
	m.refresh()
	return pl
}

// setFrequency sets θ of frequency id so that it is f cycles per step,
// held just inside the model's range. Call refresh after.
func (m *Model) setFrequency(id int, f float64) {
	fmin, fmax := freqBounds(m.cfg.Lookback)
	u := (f - fmin) / (fmax - fmin)
	u = math.Min(math.Max(u, 1e-9), 1-1e-9)
	m.params.Theta[id] = math.Log(u / (1 - u))
}

// CycleMove is a discovered cycle's frequency moved to where the recent
// spectrum shows the cycle now.
type CycleMove struct {
	ID int
	// Rhythm is the index of the frequency's rhythm, which moved as one
	// (TrackRhythms), or −1 for a frequency moved alone (TrackCycles).
	Rhythm                int
	FromPeriod, ToPeriod  float64 // steps
	PeakShare, Prominence float64 // of the recent peak
}

// TrackCycles moves each frequency placed on a cycle (m.Meta.Peaks) to the
// strongest of peaks (found in recent rows by FindPeaks) within the
// window's resolution 1/L of where it is now, so that a cycle whose period
// drifts keeps its frequency, its head and its name. A peak goes to at most
// one frequency, the strongest peaks first; a frequency with no peak near
// stays. Free frequencies never move. It returns the moves made.
//
// The forecast loss cannot place a frequency more finely than about ½/L
// (its head absorbs the offset), while the periodogram of a few windows'
// worth of recent rows can: this is how online learning follows a period.
func (m *Model) TrackCycles(peaks []cycles.Peak) []CycleMove {
	freqs := make([]float64, len(m.Meta.Peaks))
	for j, pp := range m.Meta.Peaks {
		freqs[j] = math.NaN()
		if pp.ID >= 0 && pp.ID < m.cfg.Frequencies {
			freqs[j] = m.basis.freq[pp.ID]
		}
	}
	fmin, fmax := freqBounds(m.cfg.Lookback)
	var moves []CycleMove
	for _, c := range cycles.Claims(freqs, peaks, m.cfg.Lookback, fmin, fmax) {
		pk, id, from := peaks[c.PeakIndex], m.Meta.Peaks[c.FreqIndex].ID, freqs[c.FreqIndex]
		if math.Abs(from/pk.Frequency-1) < 1e-9 {
			continue
		}
		m.setFrequency(id, pk.Frequency)
		moves = append(moves, CycleMove{ID: id, Rhythm: -1, FromPeriod: 1 / from, ToPeriod: 1 / pk.Frequency, PeakShare: pk.Share, Prominence: pk.Prominence})
	}
	if len(moves) > 0 {
		m.refresh()
	}
	return moves
}

// discover finds the peaks of the spectrum of rows (channels values a row),
// the calendar's periods at m's cadence among them, places m's frequencies
// on them and groups them into rhythms: the start of PlaceOnSpectrum.
func (m *Model) discover(rows []float64, channels int) ([]cycles.Peak, cycles.RhythmOptions, Placement, []cycles.Rhythm, []bool) {
	fmin, _ := freqBounds(m.cfg.Lookback)
	peaks := cycles.FindPeaks(rows, channels, cycles.PeakOptions{MinFrequency: fmin, Calendar: cycles.CalendarFrequencies(m.Meta.Cadence)})
	ropts := cycles.RhythmOptions{Rows: len(rows) / max(channels, 1), Cadence: m.Meta.Cadence}
	pl, rhythms, sidebands := m.placeRhythms(peaks, ropts)
	return peaks, ropts, pl, rhythms, sidebands
}

// PlaceOnSpectrum places the model's frequencies on the cycles of the
// training rows (row-major, channels values a row: a RowSource's Rows or a
// SpectrumSource's SpectrumRows) and groups them into rhythms (SetRhythms,
// which starts their clock when the model knows its cadence), with a
// frequency on each of up to fillHarmonics missing harmonics of a rhythm
// (0: none), and returns the placement. Training calls it once, before
// the first step.
func (m *Model) PlaceOnSpectrum(rows []float64, channels, fillHarmonics int) Placement {
	peaks, ropts, pl, rhythms, sidebands := m.discover(rows, channels)
	if fillHarmonics > 0 {
		fmin, _ := freqBounds(m.cfg.Lookback)
		tol := 0.5 / float64(ropts.Rows)
		fills := cycles.HarmonicFills(rhythms, func(id int) float64 { return m.basis.freq[id] }, fillHarmonics,
			m.cfg.Frequencies/2-len(m.Meta.Peaks), fmin, tol)
		if len(fills) > 0 {
			pl = m.placeFrequencies(peaks, sidebands, fills)
			rhythms = cycles.FindRhythms(m.lines(), ropts)
			cycles.AddFills(rhythms, fills, m.basis.freq, tol)
		}
	}
	m.SetRhythms(rhythms)
	return pl
}
