package cycles

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSpreadProperties: over seeded random spectra, Spread returns n
// increasing frequencies inside the range, puts one exactly on each peak
// it keeps (at most n/2, none outside the range, none of two closer than
// 1/L unless the weaker has a quarter of the stronger's share or is
// marked), and keeps every free frequency at least 1/L from them.
func TestSpreadProperties(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		L := 24 + rng.IntN(200)
		n := 4 + rng.IntN(40)
		fmin, fmax := 1/(10*float64(L)), 0.5
		peaks := make([]Peak, rng.IntN(12))
		for i := range peaks {
			peaks[i] = Peak{Frequency: math.Exp(math.Log(fmin/2) + rng.Float64()*(math.Log(0.6)-math.Log(fmin/2))), Share: rng.Float64()}
		}
		slices.SortFunc(peaks, func(a, b Peak) int {
			if a.Share > b.Share {
				return -1
			}
			return 1
		})
		sidebands := make([]bool, len(peaks))
		for i := range sidebands {
			sidebands[i] = rng.IntN(5) == 0
		}
		freqs, on := Spread(peaks, sidebands, nil, n, L, fmin, fmax)
		if len(freqs) != n || len(on) != n {
			t.Fatalf("seed %d: %d frequencies, %d marks, want %d", seed, len(freqs), len(on), n)
		}
		res := 1 / float64(L)
		kept := 0
		for i, f := range freqs {
			if i > 0 && !(f >= freqs[i-1]) {
				t.Fatalf("seed %d: frequencies not increasing at %d: %v", seed, i, freqs)
			}
			if on[i] < 0 {
				continue
			}
			kept++
			pk := peaks[on[i]]
			if f != pk.Frequency || !(f > fmin && f < fmax) {
				t.Fatalf("seed %d: frequency %v placed on peak %v (range %v–%v)", seed, f, pk.Frequency, fmin, fmax)
			}
			for j, g := range freqs {
				if on[j] < 0 || j == i || math.Abs(f-g) >= 0.99*res {
					continue
				}
				other := peaks[on[j]]
				weaker, stronger := pk, other
				if on[j] > on[i] {
					weaker, stronger = other, pk
				}
				if w := max(on[i], on[j]); !sidebands[w] && weaker.Share < 0.25*stronger.Share {
					t.Fatalf("seed %d: peaks %v and %v, %v apart (< 1/L), both kept", seed, pk, other, math.Abs(f-g))
				}
			}
		}
		if kept > n/2 {
			t.Fatalf("seed %d: %d of %d frequencies on peaks, more than half", seed, kept, n)
		}
		for i, f := range freqs {
			if on[i] >= 0 {
				continue
			}
			for j, g := range freqs {
				if on[j] >= 0 && math.Abs(f-g) < res*(1-1e-9) && n-kept < 4096/8 {
					// The free frequencies skip ±1/L around every kept one
					// unless nothing of the range is left.
					t.Fatalf("seed %d: free frequency %v within 1/L of placed %v", seed, f, g)
				}
			}
		}
	}
}

// TestFollowFitsTheMovedHarmonics: a rhythm whose period moved by a few
// percent is found at its new period from peaks at its new harmonics; no
// peak near a harmonic gives false.
func TestFollowFitsTheMovedHarmonics(t *testing.T) {
	r := Rhythm{PeriodSteps: 30, Frequencies: []int{0, 1, 2}, Harmonics: []int{1, 2, 3}}
	const L = 96
	for _, P := range []float64{29.2, 30.5, 31} {
		peaks := []Peak{
			{Frequency: 1 / P, Share: 0.4},
			{Frequency: 2 / P, Share: 0.2},
			{Frequency: 3 / P, Share: 0.1},
		}
		got, best, ok := r.Follow(peaks, L, 1/(10.0*L), 0.5)
		if !ok || math.Abs(got/P-1) > 1e-9 || best.Share != 0.4 {
			t.Errorf("moved to %v: Follow gives %v (strongest %v, %v)", P, got, best, ok)
		}
	}
	if _, _, ok := r.Follow([]Peak{{Frequency: 0.3, Share: 1}}, L, 1/(10.0*L), 0.5); ok {
		t.Error("Follow found the rhythm in a peak far from every harmonic")
	}
}

// TestClaims: each peak, strongest first, claims the nearest unclaimed
// frequency within 1/L; a NaN frequency and a peak outside the range or
// farther than 1/L from every frequency claim nothing.
func TestClaims(t *testing.T) {
	const L = 100 // resolution 0.01
	freqs := []float64{0.10, math.NaN(), 0.106, 0.30}
	peaks := []Peak{
		{Frequency: 0.105, Share: 0.1},  // nearest is 0.106, which the stronger peak took: takes 0.10
		{Frequency: 0.104, Share: 0.5},  // takes 0.106, 0.002 away (0.10 is 0.004 away)
		{Frequency: 0.2, Share: 0.9},    // nothing within 0.01
		{Frequency: 0.301, Share: 0.05}, // takes 0.30
		{Frequency: 0.6, Share: 1},      // outside the range
	}
	got := Claims(freqs, peaks, L, 0.001, 0.5)
	want := []Claim{{FreqIndex: 2, PeakIndex: 1}, {FreqIndex: 0, PeakIndex: 0}, {FreqIndex: 3, PeakIndex: 3}}
	if !slices.Equal(got, want) {
		t.Errorf("Claims = %+v, want %+v", got, want)
	}
}

// TestSpreadPlacesHarmonics: the harmonics given join the kept peaks, on
// no peak, as long as the cap of n/2 allows.
func TestSpreadPlacesHarmonics(t *testing.T) {
	peaks := []Peak{{Frequency: 1.0 / 24, Share: 0.5}, {Frequency: 2.0 / 24, Share: 0.2}}
	harmonics := []float64{3.0 / 24, 4.0 / 24, 5.0 / 24}
	for _, n := range []int{6, 10} {
		freqs, on := Spread(peaks, nil, harmonics, n, 96, 1/960.0, 0.5)
		var onPeaks, onHarmonics int
		for i, f := range freqs {
			switch {
			case on[i] >= 0:
				onPeaks++
			case slices.Contains(harmonics, f):
				onHarmonics++
			}
		}
		if want := min(len(harmonics), n/2-len(peaks)); onPeaks != 2 || onHarmonics != want {
			t.Errorf("n = %d: %d frequencies on peaks, %d on harmonics; want 2 and %d", n, onPeaks, onHarmonics, want)
		}
	}
}
