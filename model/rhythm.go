package model

import (
	"math"

	"github.com/freqlens/freqlens/cycles"
)

// lines returns the placed cycles (Meta.Peaks) as spectral lines.
func (m *Model) lines() []cycles.Line {
	out := make([]cycles.Line, 0, len(m.Meta.Peaks))
	for _, pk := range m.Meta.Peaks {
		out = append(out, cycles.Line{ID: pk.ID, Frequency: 1 / pk.PeriodSteps, Share: pk.VarianceShare})
	}
	return out
}

// SetRhythms records rhythms in the model (Meta.Rhythms) and puts each of
// their frequencies exactly on its harmonic, k/PeriodSteps, so that a
// rhythm's frequencies are one family and its clock terms keep their phase
// over any span of time. A frequency named by no rhythm is left as it is.
// For a model with a known cadence the rhythms also start the clock (Model.ReadsTime).
func (m *Model) SetRhythms(rs []cycles.Rhythm) {
	m.Meta.Rhythms = cycles.CloneRhythms(rs)
	for _, r := range m.Meta.Rhythms {
		for j, id := range r.Frequencies {
			if id >= 0 && id < m.cfg.Frequencies {
				m.setFrequency(id, float64(r.Harmonics[j])/r.PeriodSteps)
			}
		}
	}
	m.refresh()
	m.setClock()
}

// RhythmOf returns the index (in Meta.Rhythms) of the rhythm frequency id
// belongs to, and false when it belongs to none: a free frequency.
func (m *Model) RhythmOf(id int) (int, bool) {
	r := m.clock.rhythmOfID(id)
	return r, r >= 0
}

// TrackRhythms moves each rhythm to where the recent spectrum shows it:
// its period becomes the fit of the peaks (found by FindPeaks in recent
// rows) near its harmonics (cycles.Rhythm.Follow). All its
// frequencies move with it and stay its harmonics, so a rhythm drifts as
// one and keeps its frequencies, heads and name. at is the time of the
// newest recent row in steps since the Unix epoch: the rhythm is
// re-anchored there, so its clock phase is continuous at the time of the
// move and its clock terms go on from where they were. Free frequencies
// never move, nor does a rhythm of a calendar period (a day, a week: the
// clock keeps them). It returns the moves made, one per moved frequency.
//
// A model without rhythms (its placed cycles formed none) moves its
// placed frequencies one by one (TrackCycles).
func (m *Model) TrackRhythms(peaks []cycles.Peak, at float64) []CycleMove {
	if len(m.Meta.Rhythms) == 0 {
		return m.TrackCycles(peaks)
	}
	fmin, fmax := freqBounds(m.cfg.Lookback)
	var moves []CycleMove
	for r := range m.Meta.Rhythms {
		rh := &m.Meta.Rhythms[r]
		if cycles.IsCalendar(rh.PeriodSteps, m.Meta.Cadence) {
			// The day and the week do not drift: a holiday or a storm
			// that blurs their lines in the recent spectrum is not a new
			// period.
			continue
		}
		P, best, ok := rh.Follow(peaks, m.cfg.Lookback, fmin, fmax)
		if !ok || math.Abs(P/rh.PeriodSteps-1) < 1e-9 {
			continue
		}
		from := rh.PeriodSteps
		rh.AnchorPhase, rh.AnchorStep = phaseAt(rh, at), at
		rh.PeriodSteps = P
		for j, id := range rh.Frequencies {
			k := float64(rh.Harmonics[j])
			m.setFrequency(id, k/P)
			moves = append(moves, CycleMove{ID: id, Rhythm: r, FromPeriod: from / k, ToPeriod: P / k,
				PeakShare: best.Share, Prominence: best.Prominence})
		}
	}
	if len(moves) > 0 {
		m.refresh()
		m.setClock()
	}
	return moves
}
