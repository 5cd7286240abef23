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
	// threshold from the last period reported for it and settled there for
	// min_duration), "dominant_entered" or "dominant_left" (the set of
	// frequencies that carry the attribution changed and the change lasted
	// min_duration). See drift for the rules.
	Kind        string `json:"kind"`
	FrequencyID int    `json:"frequency_id"`
	// Cycle says the frequency was placed on a cycle of the training data,
	// so Period is that cycle's period now.
	Cycle bool `json:"cycle"`
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
//
// The rules, so that an event means something changed and stayed changed:
//
//   - A frequency is dominant while it carries the attribution: it joins
//     once its smoothed share reaches DominantMinShare and it is among the
//     Dominant largest (a full set admits a newcomer only when its share is
//     half as large again as the smallest member's), and it leaves once its
//     share falls below half of DominantMinShare. A change of the set
//     counts after it has held for MinDuration: "dominant_entered" and
//     "dominant_left" events.
//   - A "period" event is raised for a dominant frequency whose period is
//     further than DriftThreshold from the last period reported for it (at
//     first its reference, the period it was trained with) and has settled:
//     it moved less than a quarter of DriftThreshold over the last
//     MinDuration. The event carries the reference and the settled period,
//     so a drift is reported once, with where it ended, not at every step
//     on the way; a further move of DriftThreshold is a new event.
type drift struct {
	mu       sync.Mutex
	cfg      Config
	cadence  time.Duration
	ref      []float64 // reference period of each frequency, in steps
	cycle    []bool    // the frequency was placed on a cycle of the training data
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
	reported []float64 // the period last reported for each frequency (its reference at first)
	anchor   []float64 // the period a settling move is measured from
	since    []time.Time
}

func newDrift(cfg Config, ref *model.Model) *drift {
	N := ref.Config().Frequencies
	d := &drift{cfg: cfg, cadence: ref.Meta.Cadence, ref: make([]float64, N), cycle: make([]bool, N), shareSum: make([]float64, N),
		share: make([]float64, N), periods: make([]float64, N), dominant: make([]bool, N),
		reported: make([]float64, N), anchor: make([]float64, N), since: make([]time.Time, N)}
	for i, f := range ref.Frequencies() {
		d.ref[i], d.periods[i], d.reported[i] = f.PeriodSteps, f.PeriodSteps, f.PeriodSteps
	}
	for _, pk := range ref.Meta.Peaks {
		if pk.ID >= 0 && pk.ID < N {
			d.cycle[pk.ID] = true
		}
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
	th := d.cfg.DriftThreshold
	for i, dom := range d.dominant {
		p := d.periods[i]
		if !dom || math.Abs(p/d.reported[i]-1) <= th {
			d.since[i] = time.Time{}
			continue
		}
		if d.since[i].IsZero() || math.Abs(p/d.anchor[i]-1) > th/4 {
			d.since[i], d.anchor[i] = now, p // beyond the threshold, still moving
			continue
		}
		if now.Sub(d.since[i]) >= d.cfg.MinDuration {
			events = append(events, d.event(now, "period", i))
			d.reported[i], d.since[i] = p, time.Time{}
		}
	}
	return events
}

// updateDominant recomputes the dominant set; a change counts once it has
// lasted min_duration (the first set counts at once, without events).
func (d *drift) updateDominant(now time.Time, events []DriftEvent) []DriftEvent {
	enter, leave := d.cfg.DominantMinShare, d.cfg.DominantMinShare/2
	next := slices.Clone(d.dominant)
	members := 0
	for i, dom := range next {
		if dom && d.share[i] < leave {
			next[i] = false
		}
		if next[i] {
			members++
		}
	}
	ids := make([]int, len(d.share))
	for i := range ids {
		ids[i] = i
	}
	slices.SortStableFunc(ids, func(a, b int) int { return cmp.Compare(d.share[b], d.share[a]) }) // largest first
	for _, id := range ids {
		if next[id] || d.share[id] < enter {
			continue
		}
		if members < d.cfg.Dominant {
			next[id] = true
			members++
			continue
		}
		weakest := -1
		for j, dom := range next {
			if dom && (weakest < 0 || d.share[j] < d.share[weakest]) {
				weakest = j
			}
		}
		if weakest >= 0 && d.share[id] > 1.5*d.share[weakest] {
			next[weakest], next[id] = false, true
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
	e := DriftEvent{TS: now, Kind: kind, FrequencyID: i, Cycle: d.cycle[i], ReferencePeriod: d.ref[i], Period: d.periods[i],
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
	Cycle           bool    `json:"cycle"`
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
		out[i] = FrequencyState{ID: i, Cycle: d.cycle[i], PeriodSteps: d.periods[i], ReferencePeriod: d.ref[i],
			DriftRatio: d.periods[i]/d.ref[i] - 1, Share: d.share[i], Dominant: d.dominant[i]}
	}
	return out
}
