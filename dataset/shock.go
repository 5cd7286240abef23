package dataset

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// ShockKind is a kind of event that real sensor feeds have and stationary
// noise does not.
type ShockKind string

// The shocks a synthetic feed can have.
const (
	// ShockHoliday: the weekdays of the span behave like Sundays (no rush
	// hours, the weekly cycle at its Sunday value), as traffic does on a
	// public holiday or between Christmas and New Year.
	ShockHoliday ShockKind = "holiday"
	// ShockStorm: the noise-free value is multiplied by Factor for the
	// span (0.5 halves the traffic for a day of snow).
	ShockStorm ShockKind = "storm"
	// ShockOutage: no readings in the span (the sensor or its link is
	// down); they are missing (NaN).
	ShockOutage ShockKind = "outage"
	// ShockStuck: every reading of the span repeats the one at its start,
	// as a sensor that froze does.
	ShockStuck ShockKind = "stuck"
	// ShockSpikes: in the span, each reading is a spike with probability
	// Rate: the value plus Factor times the series' level (a negative
	// Factor dips).
	ShockSpikes ShockKind = "spikes"
	// ShockLevel: from the span's start on, for Duration or for good when
	// it is 0, the level is multiplied by Factor (road works, a sensor
	// recalibrated, a new customer).
	ShockLevel ShockKind = "level_shift"
)

// Shock is one event in a synthetic feed.
type Shock struct {
	Kind ShockKind
	// Start is the first step of the event and Steps how many it lasts
	// (a level shift with Steps 0 lasts to the end).
	Start, Steps int
	// Factor is the storm's and the level shift's multiplier and the
	// spikes' size in units of the series' level.
	Factor float64
	// Rate is the spikes' probability per reading.
	Rate float64
	// Series lists the series it hits; nil hits every series.
	Series []int
}

// End returns one past the last step of the shock (for a level shift
// without Steps, the largest int).
func (sh Shock) End() int {
	if sh.Kind == ShockLevel && sh.Steps == 0 {
		return math.MaxInt
	}
	return sh.Start + sh.Steps
}

// hits reports whether the shock hits series s at step t.
func (sh Shock) hits(s, t int) bool {
	return t >= sh.Start && t < sh.End() && (sh.Series == nil || slices.Contains(sh.Series, s))
}

func (sh Shock) check(series int) error {
	switch sh.Kind {
	case ShockHoliday, ShockStorm, ShockOutage, ShockStuck, ShockSpikes, ShockLevel:
	default:
		return fmt.Errorf("kind %q; use holiday, storm, outage, stuck, spikes or level_shift", sh.Kind)
	}
	switch {
	case sh.Start < 0 || sh.Steps < 0:
		return fmt.Errorf("start %d, %d steps; neither can be negative", sh.Start, sh.Steps)
	case sh.Steps == 0 && sh.Kind != ShockLevel:
		return errors.New("0 steps; a shock other than a lasting level shift needs a duration")
	case (sh.Kind == ShockStorm || sh.Kind == ShockLevel) && !(sh.Factor > 0 && finite(sh.Factor)):
		return fmt.Errorf("factor %v; a storm or level shift multiplies the value by a positive factor", sh.Factor)
	case sh.Kind == ShockSpikes && (!finite(sh.Factor) || !(sh.Rate > 0 && sh.Rate <= 1)):
		return fmt.Errorf("factor %v, rate %v; spikes need a finite size and a probability in (0, 1]", sh.Factor, sh.Rate)
	}
	for _, s := range sh.Series {
		if s < 0 || s >= series {
			return fmt.Errorf("series %d is not one of the %d series", s, series)
		}
	}
	return nil
}

// holiday makes the holiday's weekdays follow the Sunday before them (or
// after, when the feed starts later than that Sunday) in like.
func (sh Shock) holiday(cfg *SyntheticConfig, times []time.Time, like []int) {
	day := int(24 * time.Hour / cfg.Cadence)
	if day < 1 {
		return
	}
	for t := sh.Start; t < min(sh.End(), len(like)); t++ {
		wd := int(times[t].Weekday()) // Sunday 0
		if wd == 0 || wd == 6 {
			continue
		}
		if back := t - wd*day; back >= 0 {
			like[t] = back
		} else if fwd := t + (7-wd)*day; fwd < len(like) {
			like[t] = fwd
		}
	}
}

// applyShocks applies the storms, spikes and level shifts that hit series
// s at step t to its noise-free value v (level is the series' level).
func applyShocks(cfg *SyntheticConfig, s, t int, v, level float64) float64 {
	for k, sh := range cfg.Shocks {
		if !sh.hits(s, t) {
			continue
		}
		switch sh.Kind {
		case ShockStorm:
			v *= sh.Factor
		case ShockLevel:
			v += (sh.Factor - 1) * level
		case ShockSpikes:
			u := float64(splitmix64(cfg.Seed^splitmix64(uint64(k)<<40^uint64(s)<<20^uint64(t))) >> 11)
			if u/(1<<53) < sh.Rate {
				v += sh.Factor * level
			}
		}
	}
	return v
}

// stickAndDrop applies the stuck sensors and outages that hit series s to
// its readings (column s of values, series wide).
func stickAndDrop(cfg *SyntheticConfig, s int, values []float64, series int) {
	steps := len(values) / series
	for _, sh := range cfg.Shocks {
		if sh.Series != nil && !slices.Contains(sh.Series, s) {
			continue
		}
		end := min(sh.End(), steps)
		switch sh.Kind {
		case ShockOutage:
			for t := sh.Start; t < end; t++ {
				values[t*series+s] = math.NaN()
			}
		case ShockStuck:
			if sh.Start >= steps {
				continue
			}
			stuck := math.NaN() // the last reading before the sensor froze
			for t := sh.Start; t >= 0 && math.IsNaN(stuck); t-- {
				stuck = values[t*series+s]
			}
			for t := sh.Start; t < end; t++ {
				values[t*series+s] = stuck
			}
		}
	}
}
