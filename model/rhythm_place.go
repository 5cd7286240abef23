package model

import "github.com/freqlens/freqlens/cycles"

// placeRhythms places frequencies on peaks (PlaceFrequencies) and groups
// the placed lines into rhythms (FindRhythms). Then it places again with
// the calendar sidebands of the rhythms found (cycles.CalendarSidebands), groups
// again, and leaves out once more the sidebands that joined no calendar
// rhythm. It returns the placement, the rhythms and the sidebands kept
// (nil when there were none to try).
func (m *Model) placeRhythms(peaks []cycles.Peak, opts cycles.RhythmOptions) (Placement, []cycles.Rhythm, []bool) {
	pl := m.PlaceFrequencies(peaks)
	rhythms := cycles.FindRhythms(m.lines(), opts)
	sidebands := cycles.CalendarSidebands(peaks, pl.Placed, rhythms, opts, m.cfg.Lookback)
	harmonics := cycles.LeftHarmonics(peaks, rhythms, opts, m.cfg.Lookback)
	if sidebands == nil && harmonics == nil {
		return pl, rhythms, nil
	}
	if sidebands == nil {
		sidebands = make([]bool, len(peaks))
	}
	for i, h := range harmonics {
		sidebands[i] = sidebands[i] || h
	}
	pl = m.placeFrequencies(peaks, sidebands, nil)
	rhythms = cycles.FindRhythms(m.lines(), opts)
	if cycles.UnmarkUngrouped(sidebands, harmonics, pl.Placed, rhythms, opts.Cadence) {
		pl = m.placeFrequencies(peaks, sidebands, nil)
		rhythms = cycles.FindRhythms(m.lines(), opts)
	}
	return pl, rhythms, sidebands
}
