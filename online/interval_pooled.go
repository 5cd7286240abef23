package online

import "math"

// Two parts of a band that no single series can learn fast enough alone.
//
// The level a band is issued with. A series' error level a_c (its running
// mean and fast estimate) says how large the next errors are; how large
// the errors h steps ahead are regresses towards the series' long-run
// level as h grows, since a storm or a holiday that inflates the errors
// now has usually passed by the time a far step is realised. The band at
// step h (0-based) uses
//
//	ρ_h·a_c + (1 − ρ_h)·long_c,   ρ_h = exp(−(h+1)/levelMemory),
//
// once the long-run level has longErrors of the series' errors behind it
// (a_c alone before then). Near steps follow the errors of the moment, far
// steps the series' usual size: a band issued in the first hour of a burst
// is not stretched over the four days that follow it, and one issued just
// after a burst is not held narrow over the next.
//
// The pooled coverage correction. κ is learned per series only while the
// series' fast estimate agrees with its level (calm): a miss in a burst
// says more of the scale than of the shape. What is published in a burst
// is then left uncalibrated, and a feed whose bursts are frequent (weather,
// a city's traffic) misses more than the level says. A correction g, one
// per level, side and channel and shared by every tracked series,
// multiplies κ and is moved by adaptive conformal inference on every
// published interval scored, calm or not:
//
//	log g ← clamp(log g + η_p/n·(miss − α/2), ±log poolCap),
//
// with n the number of calibrated series, so that the pool moves by η_p
// per round of errors (one scored error of every calibrated series; two
// per data step) whatever the number of series. Summed over T rounds,
// while the clamp does not bind and n stays the same, log g moves by
// η_p·(misses/n − T·α/2): the tracked series' rate of misses is within
// 2·log(poolCap)/(η_p·T) of α/2 per side, a slow guarantee (a point after
// some 80,000 rounds); where the clamp binds, the band stays short. The cap bounds how far the pool
// can override the series' own calibration (a factor of 1.5 either way),
// and the small step keeps it a slow correction of a bias, not a second
// scale that follows bursts.

// levelMemory is how many steps ahead the level of the moment keeps a
// weight of 1/e in a band, the rest going to the long-run level.
const levelMemory = 48

// poolRate is η_p, the pooled correction's step per round of errors (one
// scored error of every calibrated series), and poolCap the most it
// widens or narrows κ by.
const (
	poolRate = 0.001
	poolCap  = 1.5
)

// levelAt is the level channel c's band at horizon step h (0-based) is
// issued with.
func (iv *intervals) levelAt(s *seriesIntervals, c, h int) float64 {
	a := s.inUse(c)
	if s.longW[c] < longErrors {
		return a
	}
	rho := iv.rho[h]
	return rho*a + (1-rho)*s.long[c]
}

// correct moves the pooled coverage correction of level index l and
// channel c by whether a published interval missed its realised value
// below or above.
func (iv *intervals) correct(l, c int, below, above bool) {
	half := (1 - iv.levels[l]) / 2
	step := poolRate / float64(max(iv.calibrated, 1))
	lim := math.Log(poolCap)
	for side, miss := range [2]bool{below, above} {
		j := (l*2+side)*iv.C + c
		x := -half
		if miss {
			x = 1 - half
		}
		v := min(max(iv.steer[j]+step*x, -lim), lim)
		iv.steer[j], iv.gain[j] = v, math.Exp(v)
	}
}

// setSteer restores the pooled correction from a saved calibration; one of
// another shape is ignored.
func (iv *intervals) setSteer(steer []float64) {
	if len(steer) != len(iv.steer) {
		return
	}
	lim := math.Log(poolCap)
	for j, v := range steer {
		if math.IsNaN(v) {
			v = 0
		}
		v = min(max(v, -lim), lim)
		iv.steer[j], iv.gain[j] = v, math.Exp(v)
	}
}
