package cycles

import (
	"cmp"
	"math"
	"slices"
)

// Spread chooses n frequencies (cycles per step) for windows of lookback
// steps, in (fmin, fmax): one exactly on each peak it keeps, then one on
// each of harmonics, at most n/2 in all, and the others spread
// log-uniformly over [1/lookback, ½] outside ±1/lookback of every kept
// one, so that no free frequency starts where a window cannot tell it
// from a cycle. It returns the frequencies in increasing order and, for
// each, the index in peaks of the peak it sits on (−1 for a free
// frequency or a harmonic).
//
// Peaks are taken in their order (strongest first, as FindPeaks gives
// them); those outside (fmin, fmax) are left out. A window cannot tell
// apart two lines closer than 1/lookback, so a peak that close to a
// stronger kept one is kept only when it is a cycle in its own right
// rather than leakage or a modulation sideband: at least a quarter of the
// stronger one's share. The peaks marked in sidebands (CalendarSidebands,
// LeftHarmonics) are kept however close: the rhythms' clock tells them
// apart by time.
func Spread(peaks []Peak, sidebands []bool, harmonics []float64, n, lookback int, fmin, fmax float64) (freqs []float64, onPeak []int) {
	res := 1 / float64(lookback)
	// Lines exactly 1/L apart, such as the harmonics of a cycle of L
	// steps (the day at 15 minutes with L = 96), are told apart, and their
	// refined frequencies miss 1/L by a little either way, so 1/L counts
	// with a margin of 1% of it.
	near := 0.99 * res
	type kept struct {
		f    float64
		peak int
	}
	var keep []kept
	for i, p := range peaks {
		if len(keep) >= n/2 {
			break
		}
		if !(p.Frequency > fmin && p.Frequency < fmax) {
			continue
		}
		ok, sideband := true, i < len(sidebands) && sidebands[i]
		for _, k := range keep {
			if !sideband && math.Abs(k.f-p.Frequency) < near && p.Share < 0.25*peaks[k.peak].Share {
				ok = false
				break
			}
		}
		if ok {
			keep = append(keep, kept{p.Frequency, i})
		}
	}
	for _, f := range harmonics {
		if len(keep) >= n/2 || !(f > fmin && f < fmax) {
			continue
		}
		keep = append(keep, kept{f, -1})
	}

	// Sample the allowed part of [1/L, ½] finely in log-frequency and pick
	// the free points at equal steps of allowed log-length.
	free := n - len(keep)
	lo, hi := math.Log(res), math.Log(0.5)
	blocked := func(f float64) bool {
		for _, k := range keep {
			if math.Abs(f-k.f) < res {
				return true
			}
		}
		return false
	}
	const grid = 4096
	var allowed []float64
	for j := range grid {
		u := lo + (hi-lo)*float64(j)/float64(grid-1)
		if !blocked(math.Exp(u)) {
			allowed = append(allowed, u)
		}
	}
	fs := make([]float64, 0, n)
	for _, k := range keep {
		fs = append(fs, k.f)
	}
	for j := range free {
		var u float64
		switch {
		case len(allowed) == 0:
			u = lo + (hi-lo)*float64(j)/math.Max(1, float64(free-1))
		case free == 1:
			u = allowed[len(allowed)/2]
		default:
			u = allowed[j*(len(allowed)-1)/(free-1)]
		}
		fs = append(fs, math.Exp(u))
	}

	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(fs[a], fs[b]) })
	freqs, onPeak = make([]float64, n), make([]int, n)
	for i, j := range order {
		freqs[i], onPeak[i] = fs[j], -1
		if j < len(keep) {
			onPeak[i] = keep[j].peak
		}
	}
	return freqs, onPeak
}

// Follow returns where peaks (found by FindPeaks in recent rows) put the
// rhythm now: every peak within the window's resolution 1/lookback of one
// of its harmonics k/P, strongest first and each to one harmonic, gives
// an estimate of the fundamental; the strongest says where the rhythm is,
// and the others refine it where they agree within a quarter of 1/lookback
// (so a peak of the old period still in the recent rows does not pull it
// halfway back), weighted by their shares. Peaks outside (fmin, fmax) are
// left out. It returns the period in steps and the strongest peak, or
// false when no peak lies near a harmonic.
func (r Rhythm) Follow(peaks []Peak, lookback int, fmin, fmax float64) (period float64, strongest Peak, ok bool) {
	res := 1 / float64(lookback)
	ps := slices.Clone(peaks)
	slices.SortStableFunc(ps, func(a, b Peak) int { return cmp.Compare(b.Share, a.Share) })
	type hit struct {
		pk Peak
		k  float64
	}
	used := make([]bool, len(r.Harmonics))
	var hits []hit
	for _, pk := range ps {
		if !(pk.Frequency > fmin && pk.Frequency < fmax) {
			continue
		}
		j, dist := -1, res
		for i, k := range r.Harmonics {
			if d := math.Abs(float64(k)/r.PeriodSteps - pk.Frequency); !used[i] && d < dist {
				j, dist = i, d
			}
		}
		if j >= 0 {
			used[j] = true
			hits = append(hits, hit{pk, float64(r.Harmonics[j])})
		}
	}
	if len(hits) == 0 {
		return 0, Peak{}, false
	}
	best := hits[0].pk
	F0 := best.Frequency / hits[0].k
	var num, den float64
	for _, h := range hits {
		if math.Abs(h.pk.Frequency-h.k*F0) > res/4 {
			continue
		}
		num += h.pk.Share * h.k * h.pk.Frequency
		den += h.pk.Share * h.k * h.k
	}
	return den / num, best, true
}

// Claim is a peak claimed by a frequency (Claims).
type Claim struct {
	FreqIndex, PeakIndex int // indices in Claims' freqs and peaks
}

// Claims pairs peaks (found by FindPeaks in recent rows) with freqs (cycles
// per step), so that a cycle whose period drifts keeps its frequency: each
// peak in (fmin, fmax), strongest first, goes to the nearest unclaimed
// frequency within the window's resolution 1/lookback. A NaN frequency is
// never claimed. It returns the pairs in the order they were made.
func Claims(freqs []float64, peaks []Peak, lookback int, fmin, fmax float64) []Claim {
	order := make([]int, len(peaks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(peaks[b].Share, peaks[a].Share) })
	claimed := make([]bool, len(freqs))
	var out []Claim
	for _, k := range order {
		pk := peaks[k]
		if !(pk.Frequency > fmin && pk.Frequency < fmax) {
			continue
		}
		best, dist := -1, 1/float64(lookback)
		for j, f := range freqs {
			if d := math.Abs(f - pk.Frequency); !claimed[j] && d < dist {
				best, dist = j, d
			}
		}
		if best >= 0 {
			claimed[best] = true
			out = append(out, Claim{FreqIndex: best, PeakIndex: k})
		}
	}
	return out
}
