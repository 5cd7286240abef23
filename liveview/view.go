package liveview

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/freqlens/freqlens/wire"
)

// Config bounds what the view keeps.
type Config struct {
	// MaxSeries is the most series the view keeps
	// (metrics.live_view_series); each costs about
	// 8·C·(L + H·(2 + K + 2·I)) bytes, K the contributions and I the
	// intervals of a forecast. At least 1; DefaultConfig's is 200.
	MaxSeries int
	// StaleAfter is how long a kept series must have had no forecast before
	// a new series may take its place when MaxSeries are kept (not a YAML
	// key). Positive; DefaultConfig's is 15m.
	StaleAfter time.Duration
}

// DefaultConfig returns the defaults; callers start from it and change
// what they configure.
func DefaultConfig() Config { return Config{MaxSeries: 200, StaleAfter: 15 * time.Minute} }

// Validate reports a bound that cannot work, as written: a zero is a zero.
func (c Config) Validate() error {
	d := DefaultConfig()
	switch {
	case c.MaxSeries < 1:
		return fmt.Errorf("metrics.live_view_series = %d; the live view keeps at least 1 series (default %d)", c.MaxSeries, d.MaxSeries)
	case c.StaleAfter <= 0:
		return fmt.Errorf("liveview: StaleAfter = %s; use a positive duration (default %s)", c.StaleAfter, d.StaleAfter)
	}
	return nil
}

// Option sets a collaborator of a View.
type Option func(*View)

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(v *View) { v.now = now } }

// View keeps the latest forecast of each of at most MaxSeries series and
// serves them (Handler) with the page. It is safe for concurrent use.
type View struct {
	cfg Config
	now func() time.Time

	mu      sync.Mutex
	index   map[string]int // series → slots index
	slots   []slot
	dropped int64 // forecasts of series not kept (the view was full)
	// fullUntil: no kept series can be stale before this time (the oldest
	// update seen by the last full scan, plus StaleAfter), so a new series
	// is turned away without scanning the slots again.
	fullUntil time.Time
}

// New returns an empty view keeping what cfg says, taken as given (start
// from DefaultConfig).
func New(cfg Config, opts ...Option) (*View, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	v := &View{cfg: cfg, now: time.Now, index: make(map[string]int, cfg.MaxSeries),
		slots: make([]slot, 0, cfg.MaxSeries)}
	for _, o := range opts {
		o(v)
	}
	return v, nil
}

// slot is one kept series' latest forecast, in buffers reused from one
// forecast to the next.
type slot struct {
	series              string
	ts                  time.Time // the forecast origin (last observed step)
	updated             time.Time // when the view saw it
	forecasts           int64     // observed since the view started
	version             int64
	cadence             time.Duration
	fields              []string
	lookback            int // L
	horizon             int // H
	alpha               float64
	window              []float64 // L×C
	values              []float64 // H×C
	residual            []float64 // H×C; empty without attributions
	residualAllChannels bool      // the residual reads every field's leftover
	level               []float64 // C; empty when unknown
	parts               []part    // the first nparts are this forecast's
	nparts              int
	rhythms             []rhythmPart // the first nrhythms are this forecast's
	nrhythms            int
	bands               []band // the first nbands are this forecast's
	nbands              int
}

// part is one frequency's contribution.
type part struct {
	id          int
	periodSteps float64
	period      time.Duration
	share       float64
	cycle       bool // a harmonic of rhythm
	rhythm      int
	values      []float64 // H×C
}

// rhythmPart is one rhythm's part: the sum of its frequencies'.
type rhythmPart struct {
	index       int
	periodSteps float64
	period      time.Duration
	share       float64
	frequencies []int
	values      []float64 // H×C
}

// band is one prediction interval (wire.Interval).
type band struct {
	level        float64
	lower, upper []float64 // H×C
}

// Observe keeps f as its series' latest forecast, with the window it was
// computed from (L×C row-major, oldest step first) and the per-field level
// inside f.Residual (nil when unknown). It copies what it keeps: the caller
// may reuse every slice afterwards. It has the signature of
// pipeline.ForecastObserverFunc and allocates nothing once the series is
// kept with these shapes.
func (v *View) Observe(f *wire.Forecast, window, level []float64) {
	C := len(f.Fields)
	if C == 0 || f.Horizon < 1 || len(window)%C != 0 {
		return // not a forecast the pipeline issues
	}
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.slot(f.Series, now)
	if s == nil {
		v.dropped++
		return
	}
	s.ts, s.updated, s.forecasts = f.TS, now, s.forecasts+1
	s.version, s.cadence, s.alpha = f.ModelVersion, f.Cadence, f.Alpha
	if !slices.Equal(s.fields, f.Fields) {
		s.fields = slices.Clone(f.Fields)
	}
	s.lookback, s.horizon = len(window)/C, f.Horizon
	s.window = fill(s.window, window)
	s.values = fill(s.values, f.Values)
	s.residual = fill(s.residual, f.Residual)
	s.residualAllChannels = f.ResidualAllChannels
	s.level = fill(s.level, level)
	s.nparts = len(f.Frequencies)
	if len(s.parts) < s.nparts {
		s.parts = append(s.parts, make([]part, s.nparts-len(s.parts))...)
	}
	for i, c := range f.Frequencies {
		p := &s.parts[i]
		p.id, p.periodSteps, p.period, p.share = c.ID, c.PeriodSteps, c.Period, c.Share
		p.cycle, p.rhythm = c.Cycle, c.Rhythm
		p.values = fill(p.values, c.Values)
	}
	s.nrhythms = len(f.Rhythms)
	if len(s.rhythms) < s.nrhythms {
		s.rhythms = append(s.rhythms, make([]rhythmPart, s.nrhythms-len(s.rhythms))...)
	}
	for i, r := range f.Rhythms {
		rp := &s.rhythms[i]
		rp.index, rp.periodSteps, rp.period, rp.share = r.Index, r.PeriodSteps, r.Period, r.Share
		if !slices.Equal(rp.frequencies, r.Frequencies) {
			rp.frequencies = slices.Clone(r.Frequencies)
		}
		rp.values = fill(rp.values, r.Values)
	}
	s.nbands = len(f.Intervals)
	if len(s.bands) < s.nbands {
		s.bands = append(s.bands, make([]band, s.nbands-len(s.bands))...)
	}
	for i, iv := range f.Intervals {
		b := &s.bands[i]
		b.level = iv.Level
		b.lower = fill(b.lower, iv.Lower)
		b.upper = fill(b.upper, iv.Upper)
	}
}

// slot returns the slot of series, taking a free one or the stalest one
// when the series is new; nil when the view is full of fresh series. The
// caller holds v.mu.
func (v *View) slot(series string, now time.Time) *slot {
	if i, ok := v.index[series]; ok {
		return &v.slots[i]
	}
	if len(v.slots) < v.cfg.MaxSeries {
		v.slots = append(v.slots, slot{series: series})
		v.index[series] = len(v.slots) - 1
		return &v.slots[len(v.slots)-1]
	}
	if now.Before(v.fullUntil) {
		return nil // updates only move forward: nothing is stale yet
	}
	oldest := 0
	for i := range v.slots {
		if v.slots[i].updated.Before(v.slots[oldest].updated) {
			oldest = i
		}
	}
	s := &v.slots[oldest]
	if now.Sub(s.updated) < v.cfg.StaleAfter {
		v.fullUntil = s.updated.Add(v.cfg.StaleAfter)
		return nil
	}
	delete(v.index, s.series)
	v.index[series] = oldest
	s.series, s.forecasts = series, 0
	return s
}

// fill copies src into dst, growing dst only when it is too small.
func fill(dst, src []float64) []float64 {
	if cap(dst) < len(src) {
		dst = make([]float64, len(src))
	}
	dst = dst[:len(src)]
	copy(dst, src)
	return dst
}
