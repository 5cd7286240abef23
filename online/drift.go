package online

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/model"
)

// DriftEvent is a change in the periods the model relies on. It is what the
// drift topic carries, one JSON object per event.
type DriftEvent struct {
	// TS is the data time the event was raised at (the newest observed step).
	TS time.Time `json:"ts"`
	// Kind is "period" (a dominant rhythm's or frequency's period moved
	// beyond the threshold from the last period reported for it and
	// settled there for min_duration), "dominant_entered" or
	// "dominant_left" (the set of rhythms and frequencies that carry the
	// attribution changed and the change lasted min_duration). See drift
	// for the rules.
	Kind string `json:"kind"`
	// FrequencyID is the frequency the event is about; for a rhythm, its
	// lowest harmonic's.
	FrequencyID int `json:"frequency_id"`
	// Rhythm is the rhythm the event is about (its index in the model's
	// rhythms) and Frequencies its frequencies, which drift as one; nil
	// for a free frequency.
	Rhythm      *int  `json:"rhythm,omitempty"`
	Frequencies []int `json:"frequencies,omitempty"`
	// Cycle says the event is about a cycle of the data (a rhythm, or in a
	// model without rhythms a frequency placed on a cycle of the training
	// data), so Period is that cycle's period now.
	Cycle bool `json:"cycle"`
	// ReferencePeriod and Period are in steps (a rhythm's fundamental
	// period); the _seconds fields give them in time when the cadence is
	// known.
	ReferencePeriod        float64 `json:"reference_period"`
	Period                 float64 `json:"period"`
	ReferencePeriodSeconds float64 `json:"reference_period_seconds,omitempty"`
	PeriodSeconds          float64 `json:"period_seconds,omitempty"`
	// RelativeChange is Period/ReferencePeriod − 1.
	RelativeChange float64 `json:"relative_change"`
	// Share is the recent part of the attribution of the rhythm (its
	// frequencies together) or frequency.
	Share        float64 `json:"share"`
	ModelVersion int64   `json:"model_version"`
}

// shareHalfLife is the half-life, in data time, of the shares that pick the
// dominant rhythms and frequencies: a week, the calendar's longest cycle,
// so that a holiday week, a storm or an outage does not change which
// cycles carry the forecasts.
const shareHalfLife = 7 * 24 * time.Hour

// drift follows the periods the model relies on against their reference,
// and which of them carry the attribution of recent forecasts. Its units
// are the rhythms, each followed as one (its fundamental period and its
// share: what its frequencies add up to), and the free frequencies.
//
// The rules, so that an event means something changed and stayed changed:
//
//   - A unit is dominant while it carries the attribution: it joins once
//     its smoothed share reaches DominantMinShare and it is among the
//     Dominant largest (a full set admits a newcomer only when its share is
//     half as large again as the smallest member's), and it leaves once its
//     share falls below half of DominantMinShare. A change of the set
//     counts after it has held for MinDuration: "dominant_entered" and
//     "dominant_left" events.
//   - A "period" event is raised for a dominant unit whose period is
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
	unitOf   []int     // frequency id → unit
	members  [][]int   // unit → its frequencies (a rhythm's, or one free frequency)
	rhythm   []int     // unit → rhythm index, −1 for a free frequency
	ref      []float64 // reference period of each unit, in steps
	cycle    []bool    // the unit is a cycle of the data
	freqSum  []float64 // attribution shares by frequency since the last evaluation
	unitSum  []float64 // a rhythm unit's shares (its summed part's) since the last evaluation
	shareN   int64
	share    []float64 // smoothed recent share of each unit
	fshare   []float64 // smoothed recent share of each frequency
	shared   bool      // share holds a value
	sharedAt time.Time // the data time share was last updated at
	periods  []float64 // the serving model's period of each unit
	fperiods []float64 // the serving model's period of each frequency
	alpha    float64
	version  int64
	dominant []bool
	pending  []bool    // a changed dominant set waiting for min_duration
	setSince time.Time // when pending was first seen
	reported []float64 // the period last reported for each unit (its reference at first)
	anchor   []float64 // the period a settling move is measured from
	since    []time.Time
}

func newDrift(cfg Config, ref *model.Model) *drift {
	N := ref.Config().Frequencies
	d := &drift{cfg: cfg, cadence: ref.Meta.Cadence, unitOf: make([]int, N), freqSum: make([]float64, N),
		fshare: make([]float64, N), fperiods: make([]float64, N)}
	for i := range d.unitOf {
		d.unitOf[i] = -1
	}
	for r, rh := range ref.Meta.Rhythms {
		u := len(d.members)
		var ids []int
		for _, id := range rh.Frequencies {
			if id >= 0 && id < N && d.unitOf[id] < 0 {
				d.unitOf[id] = u
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			continue
		}
		d.members, d.rhythm, d.cycle = append(d.members, ids), append(d.rhythm, r), append(d.cycle, true)
		d.ref = append(d.ref, rh.PeriodSteps)
	}
	placed := make([]bool, N)
	for _, pk := range ref.Meta.Peaks {
		if pk.ID >= 0 && pk.ID < N {
			placed[pk.ID] = true
		}
	}
	for i, f := range ref.Frequencies() {
		d.fperiods[i] = f.PeriodSteps
		if d.unitOf[i] >= 0 {
			continue
		}
		d.unitOf[i] = len(d.members)
		d.members, d.rhythm, d.cycle = append(d.members, []int{i}), append(d.rhythm, -1), append(d.cycle, placed[i])
		d.ref = append(d.ref, f.PeriodSteps)
	}
	U := len(d.members)
	d.unitSum = make([]float64, U)
	d.share, d.periods, d.dominant = make([]float64, U), slices.Clone(d.ref), make([]bool, U)
	d.reported, d.anchor, d.since = slices.Clone(d.ref), make([]float64, U), make([]time.Time, U)
	d.alpha = ref.Alpha()
	return d
}

// observeShares adds one forecast's shares: its frequencies' and its
// rhythms' (a rhythm's share is its summed part's, less than its
// frequencies' when they partly cancel). A forecast without rhythm parts
// counts each rhythm by its frequencies' shares.
func (d *drift) observeShares(cs []model.Contribution, rs []explain.RhythmPart) {
	if len(cs) == 0 {
		return
	}
	d.mu.Lock()
	for _, c := range cs {
		if c.ID < 0 || c.ID >= len(d.freqSum) {
			continue
		}
		d.freqSum[c.ID] += c.Share
		if u := d.unitOf[c.ID]; len(rs) == 0 && u >= 0 && d.rhythm[u] >= 0 {
			d.unitSum[u] += c.Share
		}
	}
	for _, rp := range rs {
		if u := slices.Index(d.rhythm, rp.Index); u >= 0 && rp.Index >= 0 {
			d.unitSum[u] += rp.Share
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
		if i < len(d.fperiods) {
			d.fperiods[i] = f.PeriodSteps
		}
	}
	for u, ids := range d.members {
		if r := d.rhythm[u]; r >= 0 && r < len(m.Meta.Rhythms) {
			d.periods[u] = m.Meta.Rhythms[r].PeriodSteps
		} else {
			d.periods[u] = d.fperiods[ids[0]]
		}
	}
	d.alpha, d.version = m.Alpha(), version
	// The recent forecasts weigh by the data time they cover, so that
	// shares are a week's, however often evaluate runs (forecasts of a
	// data time not yet past wait for it): a holiday or a storm moves them
	// only so far.
	if d.shareN > 0 && (!d.shared || now.After(d.sharedAt)) {
		n := float64(d.shareN)
		keep := 0.0
		if d.shared {
			keep = math.Exp2(-float64(now.Sub(d.sharedAt)) / float64(shareHalfLife))
		}
		d.sharedAt = now
		smooth := func(old, recent float64) float64 {
			if d.shared {
				return keep*old + (1-keep)*recent
			}
			return recent
		}
		for u, ids := range d.members {
			// A rhythm by its summed part (observeShares), a free
			// frequency by its own share.
			recent := 0.0
			if d.rhythm[u] >= 0 {
				recent = d.unitSum[u] / n
			} else {
				for _, id := range ids {
					recent += d.freqSum[id] / n
				}
			}
			d.share[u], d.unitSum[u] = smooth(d.share[u], recent), 0
		}
		for i := range d.fshare {
			d.fshare[i], d.freqSum[i] = smooth(d.fshare[i], d.freqSum[i]/n), 0
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

func (d *drift) event(now time.Time, kind string, u int) DriftEvent {
	e := DriftEvent{TS: now, Kind: kind, FrequencyID: d.members[u][0], Cycle: d.cycle[u], ReferencePeriod: d.ref[u], Period: d.periods[u],
		RelativeChange: d.periods[u]/d.ref[u] - 1, Share: d.share[u], ModelVersion: d.version}
	if r := d.rhythm[u]; r >= 0 {
		e.Rhythm, e.Frequencies = &r, slices.Clone(d.members[u])
	}
	if d.cadence > 0 {
		e.ReferencePeriodSeconds = d.ref[u] * d.cadence.Seconds()
		e.PeriodSeconds = d.periods[u] * d.cadence.Seconds()
	}
	return e
}

// FrequencyState is what the drift tracker knows of one frequency.
type FrequencyState struct {
	ID int `json:"id"`
	// Rhythm is the index of the frequency's rhythm, nil for a free one.
	Rhythm          *int    `json:"rhythm,omitempty"`
	Cycle           bool    `json:"cycle"`
	PeriodSteps     float64 `json:"period_steps"`
	ReferencePeriod float64 `json:"reference_period_steps"`
	DriftRatio      float64 `json:"drift_ratio"`
	Share           float64 `json:"share"`
	// Dominant says the frequency, or its rhythm, carries the attribution.
	Dominant bool `json:"dominant"`
}

// RhythmState is what the drift tracker knows of one rhythm.
type RhythmState struct {
	Index       int     `json:"index"`
	Frequencies []int   `json:"frequencies"`
	PeriodSteps float64 `json:"period_steps"`
	// PeriodSeconds is the period in time when the cadence is known.
	PeriodSeconds   float64 `json:"period_seconds,omitempty"`
	ReferencePeriod float64 `json:"reference_period_steps"`
	DriftRatio      float64 `json:"drift_ratio"`
	Share           float64 `json:"share"`
	Dominant        bool    `json:"dominant"`
}

func (d *drift) frequencies() []FrequencyState {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]FrequencyState, len(d.unitOf))
	for i := range out {
		u := d.unitOf[i]
		fs := FrequencyState{ID: i, Cycle: d.cycle[u], PeriodSteps: d.fperiods[i], Share: d.fshare[i], Dominant: d.dominant[u]}
		// A rhythm's frequency drifts with its rhythm: its reference is
		// its harmonic of the rhythm's reference.
		fs.ReferencePeriod = d.fperiods[i] * d.ref[u] / d.periods[u]
		if d.rhythm[u] < 0 {
			fs.ReferencePeriod = d.ref[u]
		} else {
			r := d.rhythm[u]
			fs.Rhythm = &r
		}
		fs.DriftRatio = fs.PeriodSteps/fs.ReferencePeriod - 1
		out[i] = fs
	}
	return out
}

func (d *drift) rhythms() []RhythmState {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []RhythmState
	for u, r := range d.rhythm {
		if r < 0 {
			continue
		}
		rs := RhythmState{Index: r, Frequencies: slices.Clone(d.members[u]), PeriodSteps: d.periods[u], ReferencePeriod: d.ref[u],
			DriftRatio: d.periods[u]/d.ref[u] - 1, Share: d.share[u], Dominant: d.dominant[u]}
		if d.cadence > 0 {
			rs.PeriodSeconds = d.periods[u] * d.cadence.Seconds()
		}
		out = append(out, rs)
	}
	return out
}

// cycleName names rhythm r by its reference period, the way the CLI does
// ("24.0h", "7.0d"), or in steps without a cadence: a label that stays the
// same while the rhythm drifts.
func (d *drift) cycleName(r int) string {
	for u, ru := range d.rhythm {
		if ru != r {
			continue
		}
		if d.cadence > 0 {
			return cycles.FormatPeriod(time.Duration(math.Round(d.ref[u] * float64(d.cadence))))
		}
		return strconv.FormatFloat(d.ref[u], 'f', 1, 64) + " steps"
	}
	return ""
}
