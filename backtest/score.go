package backtest

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/wire"
)

// issued is one forecast as the pipeline issued it, copied out of the
// pipeline's reused storage: what the scorer scores once the batch that
// caused it is committed.
type issued struct {
	series int
	step   int64 // the window's newest step
	end    time.Time
	window []float64 // L×C, the input's units (kept when the frozen model is run)
	fc     []float64 // H×C
	// lower and upper are per level (nil when no intervals were published).
	lower, upper [][]float64
}

// pointSums adds up errors per horizon step, in units of each series'
// scale.
type pointSums struct {
	sq, abs []float64 // per step
	n       []int64
}

func newPointSums(H int) *pointSums {
	return &pointSums{sq: make([]float64, H), abs: make([]float64, H), n: make([]int64, H)}
}

func (p *pointSums) add(h int, e float64) {
	p.sq[h] += e * e
	p.abs[h] += math.Abs(e)
	p.n[h]++
}

// bandSums adds up one kind of band's coverage, width and interval score
// at one level, in units of each series' scale.
type bandSums struct {
	n, covered  int64
	width, wink float64
}

// add scores the band [lo, hi] (normalised) around a realised value y
// (normalised) at miscoverage alpha.
func (b *bandSums) add(lo, hi, y, alpha float64) {
	b.n++
	b.width += hi - lo
	b.wink += online.IntervalScore(lo, hi, y, alpha)
	if y >= lo && y <= hi {
		b.covered++
	}
}

// errHist is a histogram of normalised errors (realised minus forecast)
// per horizon step: what the static hindsight bands are computed from
// without keeping every error.
type errHist struct {
	counts [][]int64 // per step, per bin
	// under and over hold, per step, the count and sum of the errors
	// beyond the bins' range, so that the tails' penalties stay exact.
	underN, overN     []int64
	underSum, overSum []float64
}

const (
	histBins  = 8000
	histRange = 40.0 // the bins cover [−histRange, histRange) standard deviations
	histWidth = 2 * histRange / histBins
)

func newErrHist(H int) *errHist {
	e := &errHist{counts: make([][]int64, H), underN: make([]int64, H), overN: make([]int64, H),
		underSum: make([]float64, H), overSum: make([]float64, H)}
	for h := range e.counts {
		e.counts[h] = make([]int64, histBins)
	}
	return e
}

func (e *errHist) add(h int, x float64) {
	switch {
	case x < -histRange:
		e.underN[h]++
		e.underSum[h] += x
	case x >= histRange:
		e.overN[h]++
		e.overSum[h] += x
	default:
		e.counts[h][int((x+histRange)/histWidth)]++
	}
}

// total returns how many errors step h holds.
func (e *errHist) total(h int) int64 {
	n := e.underN[h] + e.overN[h]
	for _, c := range e.counts[h] {
		n += c
	}
	return n
}

// quantile returns the p quantile of step h's errors (a bin's centre).
func (e *errHist) quantile(h int, p float64) float64 {
	n := e.total(h)
	if n == 0 {
		return math.NaN()
	}
	want := int64(math.Ceil(p * float64(n)))
	seen := e.underN[h]
	if seen >= want {
		return e.underSum[h] / float64(e.underN[h])
	}
	for b, c := range e.counts[h] {
		seen += c
		if seen >= want {
			return -histRange + (float64(b)+0.5)*histWidth
		}
	}
	return e.overSum[h] / float64(max(e.overN[h], 1))
}

// band scores the static band [ŷ + lo_h, ŷ + hi_h] at every step h over
// the errors held, at miscoverage alpha: its coverage, mean width and mean
// interval score.
func (e *errHist) band(lo, hi []float64, alpha float64) (cov, width, score float64) {
	var n, covered int64
	var w, s float64
	for h := range e.counts {
		nh := e.total(h)
		if nh == 0 {
			continue
		}
		w += float64(nh) * (hi[h] - lo[h])
		s += float64(nh) * (hi[h] - lo[h])
		add := func(x float64, c int64) {
			if c == 0 {
				return
			}
			switch {
			case x < lo[h]:
				s += float64(c) * 2 / alpha * (lo[h] - x)
			case x > hi[h]:
				s += float64(c) * 2 / alpha * (x - hi[h])
			default:
				covered += c
			}
		}
		if e.underN[h] > 0 {
			add(e.underSum[h]/float64(e.underN[h]), e.underN[h])
		}
		if e.overN[h] > 0 {
			add(e.overSum[h]/float64(e.overN[h]), e.overN[h])
		}
		for b, c := range e.counts[h] {
			add(-histRange+(float64(b)+0.5)*histWidth, c)
		}
		n += nh
	}
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	return float64(covered) / float64(n), w / float64(n), s / float64(n)
}

// hindsight returns the static band of the errors held at level: per step
// their α/2 and 1 − α/2 quantiles, known only once every error is.
func (e *errHist) hindsight(level float64) (lo, hi []float64) {
	H := len(e.counts)
	lo, hi = make([]float64, H), make([]float64, H)
	for h := range H {
		lo[h], hi[h] = e.quantile(h, (1-level)/2), e.quantile(h, (1+level)/2)
	}
	return lo, hi
}

// bucket is one stretch of data time of the timeline: what the forecasts
// issued in it did.
type bucket struct {
	forecasts int64
	absErr    float64 // served, normalised
	points    int64
	bands     []bandSums // per level: the published intervals
	static    []bandSums // per level: the static split-conformal band
}

// scorer scores every issued forecast against the realised values, beside
// seasonal naive forecasts, the frozen model and static bands.
type scorer struct {
	g       *grid
	H, L, C int
	levels  []float64
	day     int // steps of a day (0: no daily baseline)
	week    int // steps of a week (0: none)
	from    int64
	// quantiles are the model's held-out error quantiles (the static
	// split-conformal band), nil when it has none.
	quantiles *model.ErrorQuantiles
	bucketMs  int64
	focus     []bool // the series the timeline keeps; nil for all

	mu      sync.Mutex
	pending []*issued
	free    []*issued

	served, frozen, naiveDay, naiveWeek *pointSums
	servedHist, naiveHist               *errHist
	bands, static                       []bandSums
	withBands, without                  int64 // forecasts with and without published intervals
	identical, crossing, touching       int64 // forecasts whose adjacent levels' bands are so
	wider                               []int64
	widest                              []float64 // per level: the widest band over how far the series had moved
	timeline                            map[int64]*bucket
	forecasts                           int64
	firstScored, lastScored             time.Time
}

func newScorer(g *grid, L, H int, cadence time.Duration, levels []float64, q *model.ErrorQuantiles, from time.Time, every time.Duration) *scorer {
	s := &scorer{g: g, H: H, L: L, C: g.C, levels: levels, quantiles: q, bucketMs: every.Milliseconds(),
		served: newPointSums(H), frozen: newPointSums(H), naiveDay: newPointSums(H), naiveWeek: newPointSums(H),
		servedHist: newErrHist(H), naiveHist: newErrHist(H),
		bands: make([]bandSums, len(levels)), static: make([]bandSums, len(levels)),
		wider: make([]int64, len(levels)), widest: make([]float64, len(levels)), timeline: map[int64]*bucket{}}
	if d := 24 * time.Hour; cadence < d && d%cadence == 0 {
		s.day = int(d / cadence)
	}
	if w := 7 * 24 * time.Hour; cadence < w && w%cadence == 0 {
		s.week = int(w / cadence)
	}
	s.from = math.MinInt64
	if !from.IsZero() {
		s.from = g.step(from.UnixMilli())
	}
	if q != nil && (q.Horizon != H || (q.Channels != 1 && q.Channels != g.C)) {
		s.quantiles = nil
	}
	return s
}

// take returns an issued record with room for a forecast of these levels.
func (s *scorer) take(window bool) *issued {
	var it *issued
	if n := len(s.free); n > 0 {
		it, s.free = s.free[n-1], s.free[:n-1]
	} else {
		it = &issued{fc: make([]float64, s.H*s.C)}
		for range s.levels {
			it.lower = append(it.lower, make([]float64, s.H*s.C))
			it.upper = append(it.upper, make([]float64, s.H*s.C))
		}
	}
	if window && it.window == nil {
		it.window = make([]float64, s.L*s.C)
	}
	return it
}

// observe copies one issued forecast (a pipeline.ForecastObserverFunc's
// arguments) for scoring; it runs on the pipeline's workers.
func (s *scorer) observe(f *wire.Forecast, window []float64, keepWindow bool, series int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.take(keepWindow)
	it.series = series
	it.end = f.TS
	it.step = s.g.step(f.TS.UnixMilli())
	copy(it.fc, f.Values)
	if keepWindow {
		copy(it.window, window)
	}
	it.lower, it.upper = it.lower[:cap(it.lower)], it.upper[:cap(it.upper)]
	if len(f.Intervals) == len(s.levels) && len(s.levels) > 0 {
		for k, iv := range f.Intervals {
			copy(it.lower[k], iv.Lower)
			copy(it.upper[k], iv.Upper)
		}
	} else {
		it.lower, it.upper = it.lower[:0], it.upper[:0]
	}
	s.pending = append(s.pending, it)
}

// drain returns the forecasts observed since the last drain.
func (s *scorer) drain() []*issued {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.pending
	s.pending = nil
	return out
}

// recycle gives scored forecasts back for reuse.
func (s *scorer) recycle(its []*issued) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free = append(s.free, its...)
}

// score scores one forecast; frozen is the frozen model's forecast of the
// same window (nil when the model served is the frozen one).
func (s *scorer) score(it *issued, frozen []float64) {
	s.forecasts++
	if it.step < s.from {
		return
	}
	g, H, C := s.g, s.H, s.C
	si := it.series
	published := len(it.lower) == len(s.levels) && len(s.levels) > 0
	if published {
		s.withBands++
		s.checkNesting(it)
	} else {
		s.without++
	}
	var b *bucket
	if s.bucketMs > 0 && (s.focus == nil || s.focus[si]) {
		key := it.end.UnixMilli() / s.bucketMs
		if b = s.timeline[key]; b == nil {
			b = &bucket{bands: make([]bandSums, len(s.levels)), static: make([]bandSums, len(s.levels))}
			s.timeline[key] = b
		}
		b.forecasts++
	}
	scored := false
	for h := range H {
		k := it.step + int64(h) + 1
		y := g.at(si, k)
		if y == nil {
			continue
		}
		var yd, yw []float64
		if s.day > 0 {
			yd = g.at(si, k-int64(s.day)*int64(h/s.day+1))
		}
		if s.week > 0 {
			yw = g.at(si, k-int64(s.week)*int64(h/s.week+1))
		}
		for c := range C {
			yv := y[c]
			if math.IsNaN(yv) || (s.day > 0 && (yd == nil || math.IsNaN(yd[c]))) || (s.week > 0 && (yw == nil || math.IsNaN(yw[c]))) {
				continue
			}
			sc := g.scale[si][c]
			i := h*C + c
			e := (yv - it.fc[i]) / sc
			s.served.add(h, e)
			s.servedHist.add(h, e)
			if frozen != nil {
				s.frozen.add(h, (yv-frozen[i])/sc)
			} else {
				s.frozen.add(h, e)
			}
			if s.day > 0 {
				ed := (yv - yd[c]) / sc
				s.naiveDay.add(h, ed)
				s.naiveHist.add(h, ed)
			}
			if s.week > 0 {
				s.naiveWeek.add(h, (yv-yw[c])/sc)
			}
			if b != nil {
				b.absErr += math.Abs(e)
				b.points++
			}
			scored = true
			z := yv / sc
			for l, level := range s.levels {
				alpha := 1 - level
				if published {
					lo, hi := it.lower[l][i]/sc, it.upper[l][i]/sc
					s.bands[l].add(lo, hi, z, alpha)
					if b != nil {
						b.bands[l].add(lo, hi, z, alpha)
					}
					if moved := g.moved(si, it.step, c) / sc; moved > 0 {
						r := (hi - lo) / moved
						s.widest[l] = max(s.widest[l], r)
						if r > 1 {
							s.wider[l]++
						}
					}
				}
				if q := s.quantiles; q != nil {
					qc := min(c, q.Channels-1)
					f := it.fc[i] / sc
					lo, hi := f+q.Quantile(alpha/2, h, qc), f+q.Quantile(1-alpha/2, h, qc)
					s.static[l].add(lo, hi, z, alpha)
					if b != nil {
						b.static[l].add(lo, hi, z, alpha)
					}
				}
			}
		}
	}
	if scored {
		if s.firstScored.IsZero() {
			s.firstScored = it.end
		}
		s.lastScored = it.end
	}
}

// checkNesting counts a forecast whose bands of adjacent levels are
// identical (number for number), cross (a higher level's bound inside the
// lower level's band) or touch (a bound shared).
func (s *scorer) checkNesting(it *issued) {
	ident, cross, touch := false, false, false
	for l := 1; l < len(s.levels); l++ {
		same := true
		for i := range it.fc {
			lo0, hi0, lo1, hi1 := it.lower[l-1][i], it.upper[l-1][i], it.lower[l][i], it.upper[l][i]
			if lo1 > lo0 || hi1 < hi0 {
				cross = true
			}
			if lo1 == lo0 || hi1 == hi0 {
				touch = true
			}
			if lo1 != lo0 || hi1 != hi0 {
				same = false
			}
		}
		ident = ident || same
	}
	if ident {
		s.identical++
	}
	if cross {
		s.crossing++
	}
	if touch {
		s.touching++
	}
}

// timelineKeys returns the timeline's buckets in time order.
func (s *scorer) timelineKeys() []int64 {
	keys := make([]int64, 0, len(s.timeline))
	for k := range s.timeline {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
