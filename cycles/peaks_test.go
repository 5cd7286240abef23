package cycles

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// cycleRows returns T rows of C channels: every cycle in every channel
// (channel c scales it by 1 + 0.2·c and shifts its phase), Gaussian noise,
// a linear trend and, with missing > 0, that share of NaN readings.
func cycleRows(rng *rand.Rand, T, C int, periods, amps []float64, noise, trend, missing float64) []float64 {
	rows := make([]float64, T*C)
	phases := make([]float64, len(periods)*C)
	for i := range phases {
		phases[i] = 2 * math.Pi * rng.Float64()
	}
	for t := range T {
		for c := range C {
			v := trend*float64(t) + noise*rng.NormFloat64()
			for k, p := range periods {
				v += amps[k] * (1 + 0.2*float64(c)) * math.Sin(2*math.Pi*float64(t)/p+phases[k*C+c])
			}
			if rng.Float64() < missing {
				v = math.NaN()
			}
			rows[t*C+c] = v
		}
	}
	return rows
}

// TestFindPeaksRecoversRandomCycles draws random cycle sets (periods from 3
// steps to a tenth of the rows, amplitudes a factor of four apart, noise,
// trend, missing readings, one to three channels) and requires every cycle
// to be found within 0.3% of its period, and nothing else of note. The
// precision is statistical: at amplitude 0.53 over noise 0.94, a 139-step
// cycle in 2391 rows is found with an RMS error of 0.27%, so the draws keep
// the amplitude above the noise.
func TestFindPeaksRecoversRandomCycles(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 99))
		T, C := 1500+rng.IntN(4000), 1+rng.IntN(3)
		var periods, amps []float64
		for len(periods) < 1+rng.IntN(3) {
			p := math.Exp(math.Log(3) + rng.Float64()*(math.Log(float64(T)/10)-math.Log(3)))
			if slices.ContainsFunc(periods, func(q float64) bool { return math.Abs(1/p-1/q) < 8/float64(T) }) {
				continue // closer than the taper's main lobe: one peak
			}
			periods, amps = append(periods, p), append(amps, 0.5+1.5*rng.Float64())
		}
		noise := 0.1 + 0.4*rng.Float64() // amplitude over noise at least 1
		rows := cycleRows(rng, T, C, periods, amps, noise, 0.01*rng.NormFloat64(), 0.02*rng.Float64())
		peaks := FindPeaks(rows, C, PeakOptions{})
		for k, p := range periods {
			found := slices.IndexFunc(peaks, func(pk Peak) bool { return math.Abs(1/pk.Frequency/p-1) < 0.003 })
			if found < 0 {
				t.Errorf("seed %d (T=%d, C=%d, noise %.2f): cycle of %.3f steps, amplitude %.2f, not found within 0.3%% in %v",
					seed, T, C, noise, p, amps[k], periodsOf(peaks))
				continue
			}
			if got := peaks[found].Channels; got != C {
				t.Errorf("seed %d: cycle of %.3f steps seen in %d channels, want all %d", seed, p, got, C)
			}
		}
		// Anything else found is weak: leakage or a noise fluctuation.
		for _, pk := range peaks {
			if slices.ContainsFunc(periods, func(p float64) bool { return math.Abs(1/pk.Frequency/p-1) < 0.003 }) {
				continue
			}
			if pk.Share > 0.01 {
				t.Errorf("seed %d: a peak at %.3f steps carrying %.1f%% of the variance where no cycle is (true %v)",
					seed, 1/pk.Frequency, 100*pk.Share, periods)
			}
		}
	}
}

func periodsOf(ps []Peak) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = math.Round(1000/p.Frequency) / 1000
	}
	return out
}

// noiseAndWalk returns T steps of standard white noise and of a random walk.
func noiseAndWalk(rng *rand.Rand, T int) (white, walk []float64) {
	white, walk = make([]float64, T), make([]float64, T)
	for i := range white {
		white[i] = rng.NormFloat64()
		walk[i] = rng.NormFloat64()
		if i > 0 {
			walk[i] += walk[i-1]
		}
	}
	return white, walk
}

// TestFindPeaksIgnoresNoise: white noise and random walks hold no cycle.
func TestFindPeaksIgnoresNoise(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 5))
		T := 2000 + rng.IntN(3000)
		white, walk := noiseAndWalk(rng, T)
		for name, rows := range map[string][]float64{"white noise": white, "random walk": walk} {
			if ps := FindPeaks(rows, 1, PeakOptions{}); len(ps) > 0 {
				t.Errorf("seed %d: %s of %d steps gave peaks at %v steps", seed, name, T, periodsOf(ps))
			}
		}
	}
}

// TestFindPeaksCalendarBelowTheFloor: a calendar period that the rows hold
// only four to eight times (six weeks of hourly readings hold 4.2 training
// weeks) is below the search's floor of eight cycles, so it is found only
// when named in PeakOptions.Calendar, then within half the spectrum's
// resolution (1/T) of it, as FindRhythms needs to set the rhythm's period to
// the calendar's; white noise and random walks give no peak there even
// when it is named.
func TestFindPeaksCalendarBelowTheFloor(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 17))
		T, C := 600+rng.IntN(3000), 1+rng.IntN(3)
		P := float64(T) / (4.05 + 3.9*rng.Float64())
		periods, amps := []float64{P}, []float64{0.4 + 1.2*rng.Float64()}
		if rng.IntN(2) == 0 { // a stronger, shorter cycle beside it
			periods, amps = append(periods, 5+30*rng.Float64()), append(amps, 1.5+rng.Float64())
		}
		noise := 0.2 + 0.5*rng.Float64()
		rows := cycleRows(rng, T, C, periods, amps, noise, 0.002*rng.NormFloat64(), 0.02*rng.Float64())
		near := func(ps []Peak) bool {
			return slices.ContainsFunc(ps, func(pk Peak) bool { return math.Abs(pk.Frequency-1/P) <= 0.5/float64(T) })
		}
		if ps := FindPeaks(rows, C, PeakOptions{Calendar: []float64{1 / P}}); !near(ps) {
			t.Errorf("seed %d (T=%d, C=%d, noise %.2f): a named period of %.1f steps (%.1f cycles, amplitude %.2f) not found within half a bin in %v",
				seed, T, C, noise, P, float64(T)/P, amps[0], periodsOf(ps))
		}
		if ps := FindPeaks(rows, C, PeakOptions{}); near(ps) {
			t.Errorf("seed %d: a period of %.1f cycles in the rows found without being named: %v", seed, float64(T)/P, periodsOf(ps))
		}

		white, walk := noiseAndWalk(rng, T)
		named := []float64{1 / P, 1 / (float64(T) / 4.5), 1 / (float64(T) / 7)}
		for name, rows := range map[string][]float64{"white noise": white, "random walk": walk} {
			if ps := FindPeaks(rows, 1, PeakOptions{Calendar: named}); len(ps) > 0 {
				t.Errorf("seed %d: %s of %d steps gave peaks at %v steps", seed, name, T, periodsOf(ps))
			}
		}
	}
}

// TestFindPeaksCalendarEdges: a clean line at exactly four cycles is found
// whatever the padding (nfft/T is not whole); a named period that the
// search finds too is one peak in one channel; and white noise in many
// channels, each passing the few-bin test now and then by chance, gives
// no peak at a named period. (The search itself finds a noise peak in
// some of these 200-channel panels; this test does not judge those.)
func TestFindPeaksCalendarEdges(t *testing.T) {
	for _, T := range []int{672, 700, 1000, 1344, 2000} {
		rows := sine(T, float64(T)/4)
		if ps := FindPeaks(rows, 1, PeakOptions{Calendar: []float64{4 / float64(T)}}); len(ps) != 1 || math.Abs(ps[0].Frequency*float64(T)-4) > 0.5 {
			t.Errorf("T=%d: a clean line at 4 cycles gave %v steps, want %.1f", T, periodsOf(ps), float64(T)/4)
		}
	}
	rows := sine(1000, 1000.0/8)
	if ps := FindPeaks(rows, 1, PeakOptions{Calendar: []float64{7.9 / 1000}}); len(ps) != 1 || ps[0].Channels != 1 {
		t.Errorf("a line at 8 cycles, 7.9 named: %+v, want one peak in one channel", ps)
	}
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 23))
		const T, C = 700, 200
		noise := make([]float64, T*C)
		for i := range noise {
			noise[i] = rng.NormFloat64()
		}
		named := []float64{1.0 / 168, 1.0 / 150}
		for _, p := range FindPeaks(noise, C, PeakOptions{Calendar: named}) {
			if slices.ContainsFunc(named, func(f float64) bool { return math.Abs(p.Frequency-f) < 2.0/T }) {
				t.Errorf("seed %d: white noise in %d channels of %d rows gave a peak at %.1f steps, a named period", seed, C, T, 1/p.Frequency)
			}
		}
	}
}

func TestFindPeaksEdgeCases(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name     string
		rows     []float64
		channels int
		want     int
	}{
		{"nothing", nil, 1, 0},
		{"shorter than 8 rows", []float64{1, 2, 3, 1, 2, 3}, 1, 0},
		{"no channels", []float64{1, 2}, 0, 0},
		{"constant", slices.Repeat([]float64{4}, 500), 1, 0},
		{"every value missing", slices.Repeat([]float64{nan}, 500), 1, 0},
		{"infinite values are missing", append(slices.Repeat([]float64{math.Inf(1)}, 20), sine(480, 12)...), 1, 1},
		{"a cycle beside a constant channel", interleave(sine(600, 10), slices.Repeat([]float64{1}, 600)), 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FindPeaks(tc.rows, tc.channels, PeakOptions{}); len(got) != tc.want {
				t.Errorf("FindPeaks found %d peaks %v, want %d", len(got), periodsOf(got), tc.want)
			}
		})
	}
}

func sine(n int, period float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Sin(2 * math.Pi * float64(i) / period)
	}
	return out
}

func interleave(a, b []float64) []float64 {
	out := make([]float64, 0, 2*len(a))
	for i := range a {
		out = append(out, a[i], b[i])
	}
	return out
}
