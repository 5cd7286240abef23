package online

import "math"

// The thresholds κ: each side's experts, how they learn from the sampled
// errors and which is published (see interval.go).

// startExperts starts every expert of s at its published thresholds, and
// forgets its snapshots.
func (iv *intervals) startExperts(s *seriesIntervals) {
	k, C := len(iv.levels), iv.C
	for i := range s.snapAt {
		s.snapAt[i] = none
	}
	for l := range k {
		for c := range C {
			for side, q := range [2]float64{s.lo[l*C+c], s.hi[l*C+c]} {
				base := ((l*2+side)*C + c) * experts
				for e := range experts {
					s.expert[base+e] = q
				}
				clear(s.loss[((l*2+side)*C+c)*lossStride:][:lossStride])
			}
		}
	}
}

// snapshot copies s's experts' thresholds when the newest copy is
// H/(snapshots−1) steps older than step at, or there is none.
func (iv *intervals) snapshot(s *seriesIntervals, at int64) {
	every := int64(max(1, iv.H/(snapshots-1)))
	last := s.snapAt[(s.snapNext+snapshots-1)%snapshots]
	if last != none && at-last < every {
		return
	}
	n := len(s.expert)
	dst := s.snap[s.snapNext*n : (s.snapNext+1)*n]
	for i, x := range s.expert {
		dst[i] = float32(x)
	}
	s.snapAt[s.snapNext] = at
	s.snapNext = (s.snapNext + 1) % snapshots
}

// snapAsOf returns s's newest snapshot taken at or before step at, nil
// when there is none.
func (iv *intervals) snapAsOf(s *seriesIntervals, at int64) []float32 {
	n := len(s.expert)
	best := -1
	for i, t := range s.snapAt {
		if t != none && t <= at && (best < 0 || t > s.snapAt[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	return s.snap[best*n : (best+1)*n]
}

// score scores the bounds published for sampled step r of slot at
// horizon step h (0-based) of channel c, whose target is step st, whose
// forecast was f, realised value v and normalised error e (scale its
// unit): it counts the coverage and score of published intervals, moves
// every expert's thresholds by whether the value fell outside them and
// picks each side's expert of least recent pinball loss, and updates s's
// error level and the day shape.
func (iv *intervals) score(s *seriesIntervals, slot, r, h, c int, st int64, f, v, e, scale float64) {
	k, C := len(iv.levels), iv.C
	rec := s.bounds[(slot*sampledSteps+r)*2*k*C:][:2*k*C]
	w := float64(s.unit[(slot*sampledSteps+r)*C+c])
	then := iv.snapAsOf(s, st-int64(h)-1) // the experts when the forecast was issued
	for l := range k {
		lo, hi := float64(rec[l*C+c]), float64(rec[(k+l)*C+c])
		if math.IsNaN(lo) || math.IsNaN(hi) || math.IsNaN(v) {
			continue
		}
		if s.published[slot] {
			held := v >= lo && v <= hi
			iv.count(l, held, IntervalScore(lo, hi, v, 1-iv.levels[l])/scale, (hi-lo)/scale)
			iv.correct(l, c, v < lo, v > hi)
			s.scored[l]++
			if held {
				s.covered[l]++
			}
		}
		if !(w > 0) || then == nil || !s.calm(c) {
			continue
		}
		// How far beyond the forecast, in units of w, the value fell on
		// each side.
		j := l*C + c
		iv.learn(s, then, l, 0, c, (f-v)/w, &s.lo[j], &iv.sumLo[j])
		iv.learn(s, then, l, 1, c, (v-f)/w, &s.hi[j], &iv.sumHi[j])
	}
	if math.IsNaN(e) {
		return
	}
	iv.noteLevel(s, h, c, st, math.Abs(e))
}

// learn moves the experts of level index l, side (0 lower, 1 upper) and
// channel c of s by a realised distance z beyond the forecast (in units
// of the thresholds) against the thresholds they had when it was issued
// (then), compares their pinball losses there, and sets the published
// threshold *q to the slowest expert's, or to a faster one's whose loss
// has lately been lower by selectZ standard errors (the lowest such),
// keeping the calibrated series' sum *sum in step.
func (iv *intervals) learn(s *seriesIntervals, then []float32, l, side, c int, z float64, q, sum *float64) {
	tau := 1 - (1-iv.levels[l])/2 // the quantile a side is
	j := (l*2+side)*iv.C + c
	base := j * experts
	ls := s.loss[j*lossStride:][:lossStride]
	ls[0] = ls[0]*iv.lossD + 1
	w := ls[0]
	var slow float64
	best, bestMean := base, 0.0
	for e := range experts {
		i := base + e
		x := s.expert[i]
		u := z - float64(then[i])
		pin := tau * u
		if u < 0 {
			pin = (tau - 1) * u
		}
		switch {
		case u > 0:
			s.expert[i] = max(x*iv.grow[l*experts+e], minThreshold)
		default:
			s.expert[i] = max(x*iv.shrink[l*experts+e], minThreshold)
		}
		if e == 0 {
			slow = pin
			continue
		}
		// A faster expert stays within expertSpan of the slowest: one
		// wound up by a shock's misses would take weeks to come back.
		s.expert[i] = min(max(s.expert[i], s.expert[base]/expertSpan), s.expert[base]*expertSpan)
		d := pin - slow
		mean, sq := &ls[1+2*(e-1)], &ls[2+2*(e-1)]
		*mean += (d - *mean) / w
		*sq += (d*d - *sq) / w
		se := math.Sqrt(max(*sq-*mean**mean, 0) / w)
		if w >= minLossErrors && *mean < -selectZ*se && *mean < bestMean {
			best, bestMean = i, *mean
		}
	}
	old := *q
	*q = s.expert[best]
	if s.calibrated {
		*sum += *q - old
	}
}
