package online

import (
	"math"
	"time"
)

// The unit of a series' thresholds: the horizon shape m, the day shape p
// and the series' error level a (see interval.go), and what the sampled
// errors teach them.

// noteError adds the normalised error e at index i (h·C+c) to the horizon
// shape.
func (iv *intervals) noteError(i int, e float64) {
	iv.absErr[i] = iv.decay*iv.absErr[i] + math.Abs(e)
	iv.weight[i] = iv.decay*iv.weight[i] + 1
	iv.fresh++
}

// shape fills iv.m with the horizon shape of every step and channel: the
// mean absolute error over its mean along the horizon; a step without
// errors yet takes the straight line between its nearest neighbours that
// have some (or the nearest one). It returns false when a channel has none
// at all.
func (iv *intervals) shape() bool {
	// The shape is a mean over thousands of errors: a horizon's worth
	// more moves it by a fraction of a percent, and recomputing it for
	// every forecast cost a fifth of the intervals' time.
	if iv.shapeOK && iv.fresh < iv.n {
		return true
	}
	iv.shapeOK, iv.fresh = iv.computeShape(), 0
	return iv.shapeOK
}

func (iv *intervals) computeShape() bool {
	H, C := iv.H, iv.C
	for c := range C {
		prev := -1 // the last step with errors
		for h := range H {
			i := h*C + c
			if iv.weight[i] == 0 {
				continue
			}
			iv.m[i] = iv.absErr[i] / iv.weight[i]
			switch {
			case prev < 0:
				for g := range h {
					iv.m[g*C+c] = iv.m[i]
				}
			case prev < h-1:
				a, b := iv.m[prev*C+c], iv.m[i]
				for g := prev + 1; g < h; g++ {
					iv.m[g*C+c] = a + (b-a)*float64(g-prev)/float64(h-prev)
				}
			}
			prev = h
		}
		if prev < 0 {
			return false
		}
		for g := prev + 1; g < H; g++ {
			iv.m[g*C+c] = iv.m[prev*C+c]
		}
		mean := 0.0
		for h := range H {
			mean += iv.m[h*C+c]
		}
		mean /= float64(H)
		if !(mean > 0) {
			mean = 1
		}
		for h := range H {
			iv.m[h*C+c] = max(iv.m[h*C+c]/mean, minThreshold)
		}
	}
	return true
}

// bin returns the part of the day, in the model's zone, that step k's time
// falls in.
func (iv *intervals) bin(k int64, offMs int64) int {
	if iv.bins == 1 {
		return 0
	}
	const dayMs = 24 * 60 * 60 * 1000
	ms := (k*iv.cadMs + offMs) % dayMs
	if ms < 0 {
		ms += dayMs
	}
	return int(ms / iv.binMs)
}

// zoneOffset is the zone's offset from UTC, in milliseconds, at step k.
func (iv *intervals) zoneOffset(k int64) int64 {
	if iv.loc == time.UTC || iv.bins == 1 {
		return 0
	}
	_, off := time.UnixMilli(k * iv.cadMs).In(iv.loc).Zone()
	return int64(off) * 1000
}

// dayShape fills iv.day with the day shape of the target of every step
// and channel of a forecast issued at step at.
func (iv *intervals) dayShape(at int64) {
	C := iv.C
	if iv.bins == 1 {
		for i := range iv.day {
			iv.day[i] = 1
		}
		return
	}
	if iv.profDirty {
		iv.normaliseProfile()
	}
	off := iv.zoneOffset(at)
	for h := range iv.H {
		b := iv.bin(at+int64(h)+1, off)
		copy(iv.day[h*C:(h+1)*C], iv.profile[b*C:(b+1)*C])
	}
}

// normaliseProfile recomputes the day shape from its sums: each part of
// the day's mean, shrunk towards 1 by profilePrior errors, over their mean.
func (iv *intervals) normaliseProfile() {
	C, B := iv.C, iv.bins
	for c := range C {
		mean := 0.0
		for b := range B {
			i := b*C + c
			v := (iv.profSum[i] + profilePrior) / (iv.profW[i] + profilePrior)
			iv.profile[i] = v
			mean += v
		}
		mean /= float64(B)
		for b := range B {
			iv.profile[b*C+c] = max(iv.profile[b*C+c]/mean, minThreshold)
		}
	}
	iv.profDirty = false
}

// noteLevel adds a sampled error's size ae (normalised) at horizon step h
// of channel c, for target step st, to s's error level and to the day
// shape.
func (iv *intervals) noteLevel(s *seriesIntervals, h, c int, st int64, ae float64) {
	if !iv.shape() {
		return
	}
	C := iv.C
	m := iv.m[h*C+c]
	s.maxAbs[c] = max(ae, s.maxAbs[c]*iv.longD)
	if s.seen[c] < math.MaxUint32 {
		s.seen[c]++
	}
	b, p := 0, 1.0
	if iv.bins > 1 {
		if iv.profDirty {
			iv.normaliseProfile()
		}
		b = iv.bin(st, iv.zoneOffset(st))
		p = iv.profile[b*C+c]
	}
	lvl := s.level[c]
	if !math.IsNaN(lvl) && lvl > 0 && iv.bins > 1 && s.calm(c) {
		// The day shape learns from the error over this series' level.
		i := b*C + c
		if dt := st - iv.profAt[i]; dt > 0 && iv.profW[i] > 0 {
			d := math.Exp2(-float64(dt) / iv.profHalfSteps)
			iv.profSum[i] *= d
			iv.profW[i] *= d
		}
		iv.profAt[i] = max(iv.profAt[i], st)
		iv.profSum[i] += min(ae/(m*lvl), levelClip)
		iv.profW[i]++
		iv.profDirty = true
	}
	x := max(ae/(m*p), minThreshold)
	old := lvl
	if math.IsNaN(lvl) {
		s.level[c], s.levelW[c], s.fast[c], s.long[c], s.longW[c] = x, 1, x, x, 1
	} else {
		iv.moveLevel(s, c, x)
	}
	if s.calibrated && !math.IsNaN(old) {
		iv.sumLevel[c] += s.level[c] - old
	}
}

// moveLevel adds the error x (in units of the shapes) to channel c's
// level, its fast estimate and the long-run level.
//
// The level takes each error at most slowClip times itself (once it rests
// on settledErrors), so that a burst or a storm barely moves it, while the
// band follows the fast estimate up meanwhile (inUse) and is back to its
// size as soon as the errors are. Errors that stay away from the level,
// below it by calmRatio for awayErrors errors in a row (the end of a shock
// the level took some of), or above it for awayUpErrors (a lasting change,
// longer than a burst), shorten the level's memory to unsettledWeight
// errors, so that it follows them within a day or so of hourly data.
func (iv *intervals) moveLevel(s *seriesIntervals, c int, x float64) {
	lvl, fast := s.level[c], s.fast[c]
	if s.levelW[c] >= levelPriorWeight {
		x = min(x, levelClip*max(lvl, fast))
	}
	fast += (x - fast) * (1 - iv.fastD)
	s.fast[c] = fast
	s.levelW[c] = s.levelW[c]*iv.levelD + 1
	if s.levelW[c] >= settledErrors {
		x = min(x, slowClip*lvl)
	}
	switch a := &s.away[c]; {
	case fast > calmRatio*lvl:
		*a = min(max(*a, 0), math.MaxInt16-1) + 1
	case fast*calmRatio < lvl:
		*a = max(min(*a, 0), math.MinInt16+1) - 1
	default:
		*a = 0
	}
	if a := s.away[c]; a <= -awayErrors || a >= awayUpErrors {
		s.levelW[c] = min(s.levelW[c], unsettledWeight)
	}
	lvl += (x - lvl) / s.levelW[c]
	s.longW[c] = s.longW[c]*iv.longD + 1
	s.long[c] += (x - s.long[c]) / s.longW[c]
	if s.longW[c] >= longErrors {
		lvl = max(lvl, levelFloor*s.long[c])
	}
	s.level[c] = max(lvl, minThreshold)
}

// inUse is the error level channel c's bands are issued with: the level,
// or its fast estimate over fastLead once that is higher, so that a band
// widens with the first errors of a shock, before the level resets to
// them.
func (s *seriesIntervals) inUse(c int) float64 {
	return max(s.level[c], s.fast[c]/fastLead)
}

// calm reports whether channel c's fast estimate is within calmRatio of
// its level (moveLevel's away count is 0): the band's scale fits the
// errors, so a miss says something of their shape (the thresholds and the
// day shape learn from it), not that a shock is under way.
func (s *seriesIntervals) calm(c int) bool { return s.away[c] == 0 }
