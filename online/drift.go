package online

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/freqlens/freqlens/model"
)

// DriftEvent is a change in the periods the model relies on. It is what the
// drift topic carries, one JSON object per event.
type DriftEvent struct {
	// TS is the data time the event was raised at (the newest observed step).
	TS time.Time `json:"ts"`
	// Kind is "period" (a dominant frequency's period moved beyond the
	// threshold from its reference and stayed there for min_duration),
	// "dominant_entered" or "dominant_left" (the set of dominant periods
	// changed and the change lasted min_duration).
	Kind        string `json:"kind"`
	FrequencyID int    `json:"frequency_id"`
	// ReferencePeriod and Period are in steps; the _seconds fields give
	// them in time when the cadence is known.
	ReferencePeriod        float64 `json:"reference_period"`
	Period                 float64 `json:"period"`
	ReferencePeriodSeconds float64 `json:"reference_period_seconds,omitempty"`
	PeriodSeconds          float64 `json:"period_seconds,omitempty"`
	// RelativeChange is Period/ReferencePeriod − 1.
	RelativeChange float64 `json:"relative_change"`
	// Share is the frequency's recent part of the attribution.
	Share        float64 `json:"share"`
	ModelVersion int64   `json:"model_version"`
}

// drift follows each frequency's period against its reference and which
// frequencies carry the attribution of recent forecasts.
type drift struct {
	mu       sync.Mutex
	cfg      Config
	cadence  time.Duration
	ref      []float64 // reference period of each frequency, in steps
	shareSum []float64 // attribution shares since the last evaluation
	shareN   int64
	share    []float64 // smoothed recent share
	shared   bool      // share holds a value
	periods  []float64 // the serving model's periods
	alpha    float64
	version  int64
	dominant []bool
	pending  []bool    // a changed dominant set waiting for min_duration
	setSince time.Time // when pending was first seen
	since    []time.Time
	raised   []bool
}

func newDrift(cfg Config, ref *model.Model) *drift {
	N := ref.Config().Frequencies
	d := &drift{cfg: cfg, cadence: ref.Meta.Cadence, ref: make([]float64, N), shareSum: make([]float64, N),
		share: make([]float64, N), periods: make([]float64, N), dominant: make([]bool, N),
		since: make([]time.Time, N), raised: make([]bool, N)}
	for i, f := range ref.Frequencies() {
		d.ref[i], d.periods[i] = f.PeriodSteps, f.PeriodSteps
	}
	d.alpha = ref.Alpha()
	return d
}

func (d *drift) observeShares(cs []model.Contribution) {
	if len(cs) == 0 {
		return
	}
	d.mu.Lock()
	for _, c := range cs {
		if c.ID >= 0 && c.ID < len(d.shareSum) {
			d.shareSum[c.ID] += c.Share
		}
	}
	d.shareN++
	d.mu.Unlock()
}

// evaluate updates the periods from the serving model and the shares from
// the forecasts since the last call, and returns the drift events due at
// data time now.
func (d *drift) evaluate(now time.Time, m *model.Model, version int64) []DriftEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, f := range m.Frequencies() {
		d.periods[i] = f.PeriodSteps
	}
	d.alpha, d.version = m.Alpha(), version
	if d.shareN > 0 {
		for i := range d.share {
			recent := d.shareSum[i] / float64(d.shareN)
			if d.shared {
				d.share[i] = 0.5*d.share[i] + 0.5*recent
			} else {
				d.share[i] = recent
			}
			d.shareSum[i] = 0
		}
		d.shareN, d.shared = 0, true
	}
	var events []DriftEvent
	if d.shared {
		events = d.updateDominant(now, events)
	}
	for i, dom := range d.dominant {
		rel := d.periods[i]/d.ref[i] - 1
		if !dom || math.Abs(rel) <= d.cfg.DriftThreshold {
			d.since[i], d.raised[i] = time.Time{}, false
			continue
		}
		if d.since[i].IsZero() {
			d.since[i] = now
		}
		if !d.raised[i] && now.Sub(d.since[i]) >= d.cfg.MinDuration {
			d.raised[i] = true
			events = append(events, d.event(now, "period", i))
		}
	}
	return events
}

// updateDominant recomputes the dominant set; a change counts once it has
// lasted min_duration (the first set counts at once, without events).
func (d *drift) updateDominant(now time.Time, events []DriftEvent) []DriftEvent {
	ids := make([]int, len(d.share))
	for i := range ids {
		ids[i] = i
	}
	slices.SortStableFunc(ids, func(a, b int) int { return cmp.Compare(d.share[b], d.share[a]) }) // largest first
	next := make([]bool, len(d.share))
	for _, id := range ids[:min(d.cfg.Dominant, len(ids))] {
		if d.share[id] >= d.cfg.DominantMinShare {
			next[id] = true
		}
	}
	switch {
	case !slices.Contains(d.dominant, true):
		copy(d.dominant, next)
		d.pending = nil
	case slices.Equal(next, d.dominant):
		d.pending = nil
	case !slices.Equal(next, d.pending):
		d.pending, d.setSince = next, now
	case now.Sub(d.setSince) >= d.cfg.MinDuration:
		for i := range next {
			switch {
			case next[i] && !d.dominant[i]:
				events = append(events, d.event(now, "dominant_entered", i))
			case !next[i] && d.dominant[i]:
				events = append(events, d.event(now, "dominant_left", i))
			}
		}
		copy(d.dominant, next)
		d.pending = nil
	}
	return events
}

func (d *drift) event(now time.Time, kind string, i int) DriftEvent {
	e := DriftEvent{TS: now, Kind: kind, FrequencyID: i, ReferencePeriod: d.ref[i], Period: d.periods[i],
		RelativeChange: d.periods[i]/d.ref[i] - 1, Share: d.share[i], ModelVersion: d.version}
	if d.cadence > 0 {
		e.ReferencePeriodSeconds = d.ref[i] * d.cadence.Seconds()
		e.PeriodSeconds = d.periods[i] * d.cadence.Seconds()
	}
	return e
}

// FrequencyState is what the drift tracker knows of one frequency.
type FrequencyState struct {
	ID              int     `json:"id"`
	PeriodSteps     float64 `json:"period_steps"`
	ReferencePeriod float64 `json:"reference_period_steps"`
	DriftRatio      float64 `json:"drift_ratio"`
	Share           float64 `json:"share"`
	Dominant        bool    `json:"dominant"`
}

func (d *drift) frequencies() []FrequencyState {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]FrequencyState, len(d.ref))
	for i := range out {
		out[i] = FrequencyState{ID: i, PeriodSteps: d.periods[i], ReferencePeriod: d.ref[i],
			DriftRatio: d.periods[i]/d.ref[i] - 1, Share: d.share[i], Dominant: d.dominant[i]}
	}
	return out
}
