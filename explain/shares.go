package explain

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/model"
)

// RhythmShare is a rhythm of a model with its part of the attribution,
// its period in the data's units.
type RhythmShare struct {
	// Index is the rhythm's index in model.Meta.Rhythms.
	Index int
	cycles.Rhythm
	// Period is PeriodSteps times the cadence, 0 when the cadence is
	// unknown.
	Period time.Duration
	// Share is the rhythm's share at the level of cycles: its summed
	// part's (model.Metrics.RhythmShares). When that is unknown (a model file
	// without rhythm_shares metadata) it is LinesShare.
	Share float64
	// LinesShare is the sum of its frequencies' shares: more than Share
	// by what its lines cancel of each other.
	LinesShare float64
}

// RhythmShares returns m's rhythms with their shares of the
// attribution, given each frequency's and each rhythm's (model.Metrics'
// Shares and RhythmShares, or the same of model.Meta), largest share first.
// shares may be nil (every share 0); rhythmShares may be nil when unknown,
// and each rhythm's share is then the sum of its frequencies'.
func RhythmShares(m *model.Model, shares, rhythmShares []float64) []RhythmShare {
	out := make([]RhythmShare, 0, len(m.Meta.Rhythms))
	net := len(rhythmShares) == len(m.Meta.Rhythms)
	for i, r := range m.Meta.Rhythms {
		rs := RhythmShare{Index: i, Rhythm: r}
		if m.Meta.Cadence > 0 {
			rs.Period = time.Duration(math.Round(r.PeriodSteps * float64(m.Meta.Cadence)))
		}
		for _, id := range r.Frequencies {
			if id < len(shares) {
				rs.LinesShare += shares[id]
			}
		}
		rs.Share = rs.LinesShare
		if net {
			rs.Share = rhythmShares[i]
		}
		out = append(out, rs)
	}
	slices.SortStableFunc(out, func(a, b RhythmShare) int { return cmp.Compare(b.Share, a.Share) })
	return out
}

// OtherShare is the share of the frequencies of no rhythm: what the
// rhythms' shares (all of them, as RhythmShares gives them) and the
// residual's leave of 1, never below 0 (rounding).
func OtherShare(rhythms []RhythmShare, residual float64) float64 {
	other := 1 - residual
	for _, rs := range rhythms {
		other -= rs.Share
	}
	return max(0, other)
}

// Cycle is a cycle of the data that the model carries: a frequency placed
// on a peak of the training rows' spectrum, with its part of the forecasts.
type Cycle struct {
	// Frequency is the frequency now (online learning may have moved it
	// from the peak).
	model.Frequency
	// Peak is where training placed it.
	Peak model.PlacedPeak
	// Share is its mean share of the attribution over the windows the
	// shares were counted on.
	Share float64
}

// MinCycleShare is the least mean share of the attribution a placed
// frequency carries to count as a discovered cycle; placed frequencies
// below it are peaks of the spectrum the forecasts do not use.
const MinCycleShare = 0.01

// Cycles returns the discovered cycles: the frequencies placed on peaks of
// the training rows' spectrum that carry at least minShare of the
// attribution, by shares (per frequency id, as model.Metrics.Shares gives them),
// largest share first. A model trained without placement has none.
func Cycles(m *model.Model, shares []float64, minShare float64) []Cycle {
	freqs := m.Frequencies()
	var out []Cycle
	for _, pk := range m.Meta.Peaks {
		if pk.ID < 0 || pk.ID >= len(shares) || pk.ID >= len(freqs) || shares[pk.ID] < minShare {
			continue
		}
		out = append(out, Cycle{Frequency: freqs[pk.ID], Peak: pk, Share: shares[pk.ID]})
	}
	slices.SortStableFunc(out, func(a, b Cycle) int { return cmp.Compare(b.Share, a.Share) })
	return out
}

// PeriodMatch pairs a known period with the nearest learned one.
type PeriodMatch struct {
	// Known is the period looked for, e.g. 24h.
	Known time.Duration
	// Nearest is the learned frequency whose period is closest to Known.
	Nearest model.Frequency
	// RelError is |Nearest.Period − Known| / Known.
	RelError float64
	// Match says RelError is below the tolerance asked for.
	Match bool
}

// MatchPeriods finds, for each known period, m's learned frequency with
// the nearest period, and says whether it lies within tol (relative). It
// needs the cadence; without one it returns nil.
func MatchPeriods(m *model.Model, known []time.Duration, tol float64) []PeriodMatch {
	if m.Meta.Cadence <= 0 {
		return nil
	}
	freqs := m.Frequencies()
	out := make([]PeriodMatch, 0, len(known))
	for _, k := range known {
		best := PeriodMatch{Known: k, RelError: math.Inf(1)}
		for _, f := range freqs {
			rel := math.Abs(float64(f.Period-k)) / float64(k)
			if rel < best.RelError {
				best.Nearest, best.RelError = f, rel
			}
		}
		best.Match = best.RelError < tol
		out = append(out, best)
	}
	return out
}

// ResidualName is what the reports call the residual's part: "residual MLP",
// or "residual (all channels)" for a model with the channel mix
// (model.Config.ChannelMix), whose residual reads every channel's leftover.
func ResidualName(channelMix bool) string {
	if channelMix {
		return "residual (all channels)"
	}
	return "residual MLP"
}
