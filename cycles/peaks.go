package cycles

import (
	"cmp"
	"math"
	"math/cmplx"
	"slices"

	"gonum.org/v1/gonum/dsp/fourier"
)

// Peak is a cycle found in a stretch of training rows: a sharp maximum of a
// channel's periodogram that stands far above the spectrum around it.
//
// The periodogram of T rows resolves frequencies 1/T apart, and the peak is
// refined between its bins, so a cycle's frequency is known to a small
// fraction of 1/T: far finer than the 1/L a single window can tell apart.
// That is what lets training place a frequency on the data's cycle instead
// of searching for it through the weak gradient a window gives.
type Peak struct {
	// Frequency is in cycles per step.
	Frequency float64
	// Share is the part of the channel's variance the cycle carries
	// (amplitude²/2 over the variance), the largest over the channels that
	// show the peak.
	Share float64
	// Prominence is the peak's power over the median power of the spectrum
	// around it, the largest over the channels that show the peak.
	Prominence float64
	// Channels is how many channels show the peak.
	Channels int
}

// PeakOptions sets what counts as a peak. The zero value of every field
// means its default.
type PeakOptions struct {
	// MinFrequency and MaxFrequency bound the frequencies searched, in
	// cycles per step. Below eight cycles in the rows a slow wander (a
	// random walk, a season) cannot be told from a cycle.
	//
	// Default: 8/T (eight cycles in the rows) and 0.5
	MinFrequency, MaxFrequency float64
	// MinProminence is how far above the surrounding spectrum a peak must
	// stand. The periodogram of noise is exponentially distributed around
	// its local level, so a noise bin exceeds 30 times the local median
	// with probability e^(−30·ln 2) ≈ 1e-9: a peak above it is a cycle.
	//
	// Default: 30
	MinProminence float64
	// MinShare is the least part of a channel's variance a peak must carry.
	//
	// Default: 0.002
	MinShare float64
	// Max is the most peaks returned, the strongest first.
	//
	// Default: unlimited
	Max int
	// Calendar lists frequencies (cycles per step) of calendar periods,
	// such as the day and the week at the rows' cadence, that are tested
	// even where the rows hold fewer than eight of their cycles, down to
	// about four. The eight-cycle floor guards a search over every low
	// frequency, where some bin of a slow wander stands out by chance; a
	// period named in advance is one test at one place, not a search. Its
	// peak must still pass MinProminence against the spectrum on both
	// sides of it and MinShare, in a tenth of the channels (at least one).
	Calendar []float64
}

// FindPeaks returns the cycles carried by rows, a row-major buffer of
// channels values per row in time order, strongest share first. NaN values
// (missing readings) count as the channel's mean. Each channel is
// detrended, tapered with a Hann window and zero-padded four times; the
// local maxima of its periodogram that pass opts are refined to the
// frequency that maximises the tapered transform, and peaks that several
// channels show within two bins (the taper's main lobe) are merged.
func FindPeaks(rows []float64, channels int, opts PeakOptions) []Peak {
	if channels < 1 || len(rows) < channels {
		return nil
	}
	T := len(rows) / channels
	if T < 8 {
		return nil
	}
	userMin := opts.MinFrequency
	opts.MinFrequency = max(opts.MinFrequency, 8/float64(T))
	if opts.MaxFrequency <= 0 || opts.MaxFrequency > 0.5 {
		opts.MaxFrequency = 0.5
	}
	var calendar []float64 // the calendar frequencies below the floor
	for _, f := range opts.Calendar {
		if f >= max(userMin, 4/float64(T)) && f < opts.MinFrequency && f <= opts.MaxFrequency {
			calendar = append(calendar, f)
		}
	}
	if opts.MinProminence <= 0 {
		opts.MinProminence = 30
	}
	if opts.MinShare <= 0 {
		opts.MinShare = 0.002
	}
	sp := newSpectrum(T)
	lobe := 2 / float64(T) // the taper's main lobe: one peak
	near := func(ps []Peak, f float64) bool {
		return slices.ContainsFunc(ps, func(p Peak) bool { return math.Abs(p.Frequency-f) < lobe })
	}
	var all, cal []Peak
	for c := range channels {
		if !sp.load(rows, channels, c) {
			continue
		}
		ps := sp.peaks(opts)
		all = append(all, ps...)
		for _, f := range calendar {
			if near(ps, f) {
				continue // the search found it (within ~8 cycles)
			}
			if p, ok := sp.calendarPeak(f, opts); ok && p.Frequency >= userMin {
				cal = append(cal, p)
			}
		}
	}
	// With so few cycles the background of a named period is two to a few
	// bins, and white noise passes the test in about 0.2% of channels: a
	// period below the floor counts when a tenth of the channels show it,
	// as a rhythm shared by sensors does, and chance in a few does not.
	need := max(1, (channels+9)/10)
	for _, p := range mergePeaks(cal, lobe, 0) {
		if p.Channels >= need && !near(all, p.Frequency) {
			all = append(all, p)
		}
	}
	return mergePeaks(all, lobe, opts.Max)
}

// spectrum holds one channel's tapered series and its periodogram.
type spectrum struct {
	T, nfft  int
	fft      *fourier.FFT
	x        []float64 // tapered, detrended channel, zero-padded to nfft
	taper    []float64 // Hann window over T
	taperSum float64
	coef     []complex128
	power    []float64 // |X_k|², k = 0 … nfft/2
	variance float64   // of the detrended channel
	scratch  []float64
	bands    []float64 // background medians by 2% frequency band, −1 until computed
}

func newSpectrum(T int) *spectrum {
	nfft := 1
	for nfft < 4*T {
		nfft *= 2
	}
	s := &spectrum{T: T, nfft: nfft, fft: fourier.NewFFT(nfft), x: make([]float64, nfft), taper: make([]float64, T),
		power: make([]float64, nfft/2+1)}
	for t := range T {
		s.taper[t] = 0.5 - 0.5*math.Cos(2*math.Pi*(float64(t)+0.5)/float64(T))
		s.taperSum += s.taper[t]
	}
	return s
}

// load detrends and tapers channel c of rows and computes its periodogram.
// It reports false when the channel is constant or has no finite value.
func (s *spectrum) load(rows []float64, channels, c int) bool {
	T := s.T
	// Least-squares line through the finite values, in centred time.
	var n, st, sx, stt, stx float64
	for t := range T {
		v := rows[t*channels+c]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		tt := float64(t) - float64(T-1)/2
		n++
		st += tt
		sx += v
		stt += tt * tt
		stx += tt * v
	}
	if n < 8 {
		return false
	}
	slope := 0.0
	if den := n*stt - st*st; den > 0 {
		slope = (n*stx - st*sx) / den
	}
	icpt := (sx - slope*st) / n
	clear(s.x)
	ss := 0.0
	for t := range T {
		v := rows[t*channels+c]
		d := 0.0
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			d = v - icpt - slope*(float64(t)-float64(T-1)/2)
		}
		ss += d * d
		s.x[t] = d * s.taper[t]
	}
	s.variance = ss / n
	if s.variance <= 0 {
		return false
	}
	s.coef = s.fft.Coefficients(s.coef, s.x)
	for k := range s.power {
		a := cmplx.Abs(s.coef[k])
		s.power[k] = a * a
	}
	return true
}

// amplitude returns the amplitude of a sinusoid at frequency f (cycles per
// step) in the loaded channel, from its tapered transform.
func (s *spectrum) amplitude(f float64) float64 {
	// Σ_t x_t·e^(−2πi f t) by rotation, accumulated in float64.
	var re, im float64
	sn, cs := math.Sincos(-2 * math.Pi * f)
	wr, wi := 1.0, 0.0
	for t := range s.T {
		v := s.x[t]
		re += v * wr
		im += v * wi
		wr, wi = wr*cs-wi*sn, wr*sn+wi*cs
		if t&1023 == 1023 { // keep the rotation on the unit circle
			a, b := math.Sincos(-2 * math.Pi * f * float64(t+1))
			wr, wi = b, a
		}
	}
	return 2 * math.Hypot(re, im) / s.taperSum
}

// peaks returns the loaded channel's peaks that pass opts.
func (s *spectrum) peaks(opts PeakOptions) []Peak {
	T, nfft := s.T, s.nfft
	pad := nfft / T // padded bins per natural bin (≥ 4)
	lo := max(1, int(math.Ceil(opts.MinFrequency*float64(nfft))))
	hi := min(len(s.power)-2, int(math.Floor(opts.MaxFrequency*float64(nfft))))
	if lo >= hi {
		return nil
	}
	s.bands = s.bands[:0]
	var out []Peak
	for k := lo; k <= hi; k++ {
		p := s.power[k]
		if p < s.power[k-1] || p < s.power[k+1] {
			continue
		}
		// A maximum of the main lobe (±2 natural bins wide) only.
		isMax := true
		for j := max(0, k-2*pad); j <= min(len(s.power)-1, k+2*pad); j++ {
			if s.power[j] > p {
				isMax = false
				break
			}
		}
		if !isMax {
			continue
		}
		bg := s.background(k)
		if bg <= 0 || p/bg < opts.MinProminence {
			continue
		}
		f := s.refine(float64(k) / float64(nfft))
		if f < opts.MinFrequency || f > opts.MaxFrequency {
			continue
		}
		a := s.amplitude(f)
		share := a * a / 2 / s.variance
		if share < opts.MinShare {
			continue
		}
		out = append(out, Peak{Frequency: f, Share: min(share, 1), Prominence: p / bg, Channels: 1})
	}
	return out
}

// calendarPeak tests the loaded channel for a peak at frequency f, which
// lies below the search's floor of eight cycles in the rows: the largest
// padded bin within half a natural bin of f must be the maximum of its main
// lobe (±2 natural bins) and stand opts.MinProminence above the median of
// the natural bins 3 to 12 bins away, as many below it as above (near zero
// frequency that leaves few; the median then takes the larger), and the
// refined peak must stay within a natural bin of f and carry opts.MinShare.
func (s *spectrum) calendarPeak(f float64, opts PeakOptions) (Peak, bool) {
	T, nfft := s.T, s.nfft
	step := float64(nfft) / float64(T) // padded bins per natural bin, exactly
	k := int(math.Round(f * float64(nfft)))
	for j := int(math.Ceil(f*float64(nfft) - step/2)); j <= int(f*float64(nfft)+step/2); j++ {
		if j >= 1 && j < len(s.power) && s.power[j] > s.power[k] {
			k = j
		}
	}
	p := s.power[k]
	for j := max(1, k-int(2*step)); j <= min(len(s.power)-1, k+int(2*step)); j++ {
		if s.power[j] > p {
			return Peak{}, false
		}
	}
	far := min(12, int(math.Round(float64(k)/step))-1) // natural bins below k, at least one above zero frequency
	s.scratch = s.scratch[:0]
	for d := 3; d <= far; d++ {
		for _, j := range []int{k - int(math.Round(float64(d)*step)), k + int(math.Round(float64(d)*step))} {
			if j >= 1 && j < len(s.power) {
				s.scratch = append(s.scratch, s.power[j])
			}
		}
	}
	if len(s.scratch) < 2 {
		return Peak{}, false
	}
	slices.Sort(s.scratch)
	bg := s.scratch[len(s.scratch)/2]
	if bg <= 0 || p/bg < opts.MinProminence {
		return Peak{}, false
	}
	fr := s.refine(float64(k) / float64(nfft))
	if math.Abs(fr-f) > 1/float64(T) {
		return Peak{}, false
	}
	a := s.amplitude(fr)
	share := a * a / 2 / s.variance
	if share < opts.MinShare {
		return Peak{}, false
	}
	return Peak{Frequency: fr, Share: min(share, 1), Prominence: p / bg, Channels: 1}, true
}

// background is the median power of the natural bins around padded bin k:
// those between 3 and max(12, 0.3·k/pad) natural bins away on either side
// (as many below as above, so a steep red-noise slope does not tilt it),
// leaving the peak's own main lobe out. Wide neighbourhoods share a median
// computed once per band of 2% in frequency, where one peak cannot move the
// median of hundreds of bins.
func (s *spectrum) background(k int) float64 {
	pad := s.nfft / s.T
	kn := k / pad
	far := min(max(12, int(0.3*float64(kn))), kn-1)
	if far <= 3 {
		return 0
	}
	if far <= 100 {
		return s.median(kn, far, 3)
	}
	band := int(math.Log(float64(kn)) / math.Log(1.02))
	for len(s.bands) <= band {
		s.bands = append(s.bands, -1)
	}
	if s.bands[band] < 0 {
		s.bands[band] = s.median(kn, far, 0)
	}
	return s.bands[band]
}

// median returns the median power of the natural bins within far of bin kn
// but not within gap of it.
func (s *spectrum) median(kn, far, gap int) float64 {
	pad := s.nfft / s.T
	s.scratch = s.scratch[:0]
	last := (len(s.power) - 1) / pad
	for j := max(1, kn-far); j <= min(last, kn+far); j++ {
		if d := j - kn; d >= -gap && d <= gap {
			continue
		}
		s.scratch = append(s.scratch, s.power[j*pad])
	}
	if len(s.scratch) == 0 {
		return 0
	}
	slices.Sort(s.scratch)
	return s.scratch[len(s.scratch)/2]
}

// refine returns the frequency within half a padded bin of f0 that
// maximises the tapered transform's amplitude (golden-section search).
func (s *spectrum) refine(f0 float64) float64 {
	h := 1 / float64(s.nfft)
	a, b := f0-h, f0+h
	const g = 0.6180339887498949
	x1, x2 := b-g*(b-a), a+g*(b-a)
	v1, v2 := s.amplitude(x1), s.amplitude(x2)
	for range 40 {
		if v1 > v2 {
			b, x2, v2 = x2, x1, v1
			x1 = b - g*(b-a)
			v1 = s.amplitude(x1)
		} else {
			a, x1, v1 = x1, x2, v2
			x2 = a + g*(b-a)
			v2 = s.amplitude(x2)
		}
	}
	return (a + b) / 2
}

// mergePeaks joins peaks closer than tol cycles per step (the same cycle
// seen in several channels), keeping the frequency of the most prominent,
// and returns at most max of them (0: all), largest share first.
func mergePeaks(ps []Peak, tol float64, maxN int) []Peak {
	slices.SortFunc(ps, func(a, b Peak) int { return cmp.Compare(b.Prominence, a.Prominence) })
	var out []Peak
	for _, p := range ps {
		merged := false
		for i := range out {
			if math.Abs(out[i].Frequency-p.Frequency) < tol {
				out[i].Share = max(out[i].Share, p.Share)
				out[i].Channels++
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b Peak) int { return cmp.Compare(b.Share, a.Share) })
	if maxN > 0 && len(out) > maxN {
		out = out[:maxN]
	}
	return out
}
