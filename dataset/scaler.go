package dataset

import (
	"fmt"
	"math"
)

// Scaler z-scores readings per channel:
//
//	z = (x − Mean[c]) / Std[c]        x = z·Std[c] + Mean[c]
//
// A Scaler is a plain value; its methods do not modify it.
type Scaler struct {
	// Mean holds the mean of each channel.
	Mean []float64
	// Std holds the standard deviation of each channel; it is never 0.
	Std []float64
}

// FitScaler returns the per-channel mean and population standard deviation
// (ddof = 0, as sklearn's StandardScaler) of the rows r of f, which under the
// standard protocol are the training rows only:
//
//	Mean[c] = (1/n) Σ x_rc        Std[c] = √((1/n) Σ (x_rc − Mean[c])²)
//
// NaN readings are skipped, again as StandardScaler does; n counts the other
// readings of the channel. A channel whose readings in r are all equal, or
// that has none, gets Std 1 instead of 0 (and Mean 0 when it has none), so
// that Transform maps it to zeros rather than to NaN or ±Inf.
//
// FitScaler panics if r is empty or not within [0, f.Rows()]; Standard rules
// both out before it calls FitScaler.
func FitScaler(f *Frame, r Range) Scaler {
	if r.Start < 0 || r.End > f.Rows() || r.Start >= r.End {
		panic(fmt.Sprintf("dataset: FitScaler range %v is empty or outside the %d rows of %s", r, f.Rows(), f.Name))
	}
	return fitScaler(f.Values, f.Channels(), r)
}

// fitScaler is FitScaler on the rows r of a row-major buffer of chans
// channels.
func fitScaler(values []float64, chans int, r Range) Scaler {
	s := Scaler{Mean: make([]float64, chans), Std: make([]float64, chans)}
	for c := range chans {
		var sum float64
		n := 0
		lo, hi := math.Inf(1), math.Inf(-1)
		for row := r.Start; row < r.End; row++ {
			x := values[row*chans+c]
			if math.IsNaN(x) {
				continue
			}
			sum += x
			n++
			lo, hi = min(lo, x), max(hi, x)
		}
		if n == 0 {
			s.Mean[c], s.Std[c] = 0, 1
			continue
		}
		mean := sum / float64(n)
		s.Mean[c] = mean
		if lo == hi {
			// A constant channel: rounding in the mean must not turn 0 into a tiny divisor.
			s.Std[c] = 1
			continue
		}
		var ss float64
		for row := r.Start; row < r.End; row++ {
			x := values[row*chans+c]
			if math.IsNaN(x) {
				continue
			}
			d := x - mean
			ss += d * d
		}
		s.Std[c] = math.Sqrt(ss / float64(n))
		if a := max(-lo, hi); a > extreme || !(s.Std[c] > 1/extreme) || math.IsInf(mean, 0) {
			// Near the float64 limits the sum overflows or the squares
			// underflow to 0: the same statistics of x/a, scaled back.
			s.Mean[c], s.Std[c] = scaledStats(values, chans, c, r, a)
			if !(s.Std[c] > 0) {
				s.Std[c] = hi - lo // subnormal readings: a spread no square resolves
			}
		}
	}
	return s
}

// extreme is the magnitude beyond which a channel's statistics are taken
// of its values scaled by their largest magnitude: squares of larger
// numbers overflow, and squares of deviations below 1/extreme lose their
// digits to underflow.
const extreme = 1e150

// scaledStats returns the mean and standard deviation of channel c's
// readings in the rows r, computed on x/a (a the largest magnitude) so that
// neither the sum nor the squares leave the float64 range.
func scaledStats(values []float64, chans, c int, r Range, a float64) (mean, std float64) {
	var sum, ss float64
	n := 0
	for row := r.Start; row < r.End; row++ {
		if x := values[row*chans+c]; !math.IsNaN(x) {
			sum += x / a
			n++
		}
	}
	m := sum / float64(n)
	for row := r.Start; row < r.End; row++ {
		if x := values[row*chans+c]; !math.IsNaN(x) {
			d := x/a - m
			ss += d * d
		}
	}
	return m * a, math.Sqrt(ss/float64(n)) * a
}

// Transform z-scores src, a row-major buffer of rows×len(s.Mean) readings,
// into dst and returns dst. dst may be src itself; otherwise it is reused if
// its capacity suffices and allocated if not (a nil dst always allocates).
// NaN stays NaN. Transform panics if len(src) is not a multiple of the number
// of channels.
func (s Scaler) Transform(dst, src []float64) []float64 {
	dst = s.prepare(dst, src)
	chans := len(s.Mean)
	for i := 0; i < len(src); i += chans {
		for c, x := range src[i : i+chans] {
			dst[i+c] = (x - s.Mean[c]) / s.Std[c]
		}
	}
	return dst
}

// Inverse undoes Transform: it maps z-scores in src back to readings in dst
// and returns dst, with the same rules for dst and the same panic as
// Transform.
func (s Scaler) Inverse(dst, src []float64) []float64 {
	dst = s.prepare(dst, src)
	chans := len(s.Mean)
	for i := 0; i < len(src); i += chans {
		for c, z := range src[i : i+chans] {
			dst[i+c] = z*s.Std[c] + s.Mean[c]
		}
	}
	return dst
}

func (s Scaler) prepare(dst, src []float64) []float64 {
	chans := len(s.Mean)
	if chans == 0 || len(s.Std) != chans || len(src)%chans != 0 {
		panic(fmt.Sprintf("dataset: Scaler with %d means and %d stds cannot scale %d values; "+
			"want a multiple of the channel count", len(s.Mean), len(s.Std), len(src)))
	}
	if cap(dst) < len(src) {
		return make([]float64, len(src))
	}
	return dst[:len(src)]
}
