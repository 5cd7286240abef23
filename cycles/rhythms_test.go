package cycles

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// lineSet builds lines at harmonics ks of period (steps), amplitude amp·decay^(k−1),
// ids from next on.
type rhythmSpec struct {
	period float64
	ks     []int
	amps   []float64
}

func buildLines(specs []rhythmSpec, jitter float64, rng *rand.Rand) (lines []Line, want [][]int) {
	id := 0
	for _, sp := range specs {
		var ids []int
		for j, k := range sp.ks {
			f := float64(k)/sp.period + jitter*(2*rng.Float64()-1)
			lines = append(lines, Line{ID: id, Frequency: f, Share: sp.amps[j] * sp.amps[j]})
			ids = append(ids, id)
			id++
		}
		want = append(want, ids)
	}
	return lines, want
}

// groups returns each rhythm's frequency ids, sorted, in rhythm order.
func groups(rs []Rhythm) [][]int {
	var out [][]int
	for _, r := range rs {
		g := slices.Clone(r.Frequencies)
		slices.Sort(g)
		out = append(out, g)
	}
	return out
}

// sameGroups compares groupings regardless of order.
func sameGroups(a, b [][]int) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(g []int) string { return fmt.Sprint(g) }
	seen := map[string]int{}
	for _, g := range a {
		seen[key(g)]++
	}
	for _, g := range b {
		s := slices.Clone(g)
		slices.Sort(s)
		seen[key(s)]--
	}
	for _, v := range seen {
		if v != 0 {
			return false
		}
	}
	return true
}

func TestFindRhythms(t *testing.T) {
	const rows = 8640
	day := rhythmSpec{24, []int{1, 2, 3, 4, 5}, []float64{1, 0.45, 0.3, 0.2, 0.15}}
	// The weekday/weekend difference: lines at 168/k hours around the day's,
	// far weaker, and the week's own low lines.
	week := rhythmSpec{168, []int{1, 2, 5, 9, 12, 13, 16, 19}, []float64{0.17, 0.2, 0.24, 0.2, 0.15, 0.2, 0.1, 0.1}}
	weekNoFundamental := rhythmSpec{168, []int{5, 9, 13, 19}, []float64{0.24, 0.2, 0.2, 0.1}}
	for _, tc := range []struct {
		name    string
		specs   []rhythmSpec
		cadence time.Duration
		periods []float64
	}{
		{name: "a daily cycle with harmonics is one rhythm", specs: []rhythmSpec{day}, cadence: time.Hour, periods: []float64{24}},
		{name: "day and week stay two rhythms", specs: []rhythmSpec{day, week}, cadence: time.Hour, periods: []float64{24, 168}},
		{name: "the week without its fundamental is inferred", specs: []rhythmSpec{day, weekNoFundamental}, cadence: time.Hour, periods: []float64{24, 168}},
		{name: "day and week without a cadence", specs: []rhythmSpec{day, week}, periods: []float64{24, 168}},
		{name: "a day whose 12h line is four times its 24h line is one rhythm", specs: []rhythmSpec{{24, []int{1, 2, 3, 4}, []float64{0.2, 0.8, 0.3, 0.2}}}, cadence: time.Hour, periods: []float64{24}},
		{name: "a strong week keeps its hands off the day's lines", specs: []rhythmSpec{
			{24, []int{1, 2, 3}, []float64{0.5, 0.3, 0.2}},
			{168, []int{1, 2, 3, 5, 8, 9}, []float64{1.2, 0.6, 0.4, 0.3, 0.25, 0.2}}}, cadence: time.Hour, periods: []float64{24, 168}},
		{name: "two unrelated cycles are two rhythms",
			specs:   []rhythmSpec{{17.3, []int{1, 2, 3}, []float64{1, 0.5, 0.3}}, {40.1, []int{1, 2}, []float64{0.8, 0.3}}},
			periods: []float64{17.3, 40.1}},
		{name: "a strong second harmonic keeps its fundamental",
			specs:   []rhythmSpec{{200, []int{1, 2, 3, 4, 5}, []float64{0.5, 1, 0.4, 0.3, 0.2}}},
			periods: []float64{200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, want := buildLines(tc.specs, 0.2/rows, rand.New(rand.NewPCG(1, 2)))
			rs := FindRhythms(lines, RhythmOptions{Rows: rows, Cadence: tc.cadence})
			if got := groups(rs); !sameGroups(got, want) {
				t.Fatalf("rhythms %v, want %v", fmt.Sprint(rs), want)
			}
			for _, p := range tc.periods {
				if !slices.ContainsFunc(rs, func(r Rhythm) bool { return math.Abs(r.PeriodSteps/p-1) < 0.002 }) {
					t.Errorf("no rhythm of period %v in %v", p, fmt.Sprint(rs))
				}
			}
			if tc.cadence == time.Hour {
				for _, r := range rs {
					if r.PeriodSteps != 24 && r.PeriodSteps != 168 {
						t.Errorf("period %v not set to the calendar's", r.PeriodSteps)
					}
				}
			}
		})
	}
}

// TestFindRhythmsOnRandomFamilies draws families of lines (a fundamental
// between 4 and 300 steps, some of its first harmonics, decaying
// amplitudes) and checks the grouping is recovered exactly.
func TestFindRhythmsOnRandomFamilies(t *testing.T) {
	const rows = 6000
	rng := rand.New(rand.NewPCG(7, 11))
	fails := 0
	const cases = 300
	for c := range cases {
		var specs []rhythmSpec
		nf := 1 + rng.IntN(3)
		for tries := 0; len(specs) < nf && tries < 1000; tries++ {
			P := math.Exp(math.Log(4) + rng.Float64()*(math.Log(300)-math.Log(4)))
			// Keep families apart: no fundamental near a harmonic ratio of another.
			var ks []int
			var amps []float64
			a := 0.3 + rng.Float64()
			for k := 1; float64(k)/P < 0.5 && len(ks) < 5; k++ {
				if k == 1 || rng.Float64() < 0.6 {
					ks = append(ks, k)
					amps = append(amps, a/float64(k))
				}
			}
			sp := rhythmSpec{P, ks, amps}
			// Keep families apart: no line of one within the resolution of
			// a harmonic (up to the 48th) of the other's fundamental or of a
			// subharmonic of it (a coincidence no rule can tell from a
			// rhythm: both are then harmonics of one longer cycle).
			if slices.ContainsFunc(specs, func(o rhythmSpec) bool { return entangled(sp, o, rows) || entangled(o, sp, rows) }) {
				continue
			}
			specs = append(specs, sp)
		}
		lines, want := buildLines(specs, 0.2/rows, rng)
		rs := FindRhythms(lines, RhythmOptions{Rows: rows})
		if !sameGroups(groups(rs), want) {
			fails++
			if fails <= 5 {
				t.Logf("case %d: %v → %v, want %v", c, specs, fmt.Sprint(rs), want)
			}
		}
	}
	if fails > cases/100 {
		t.Errorf("%d of %d random families grouped wrongly (at most 1%% allowed)", fails, cases)
	}
}

// entangled reports whether a line of a sits within 3 bins (of 1/rows) of
// a harmonic k ≤ 48 of b's fundamental or of a subharmonic b/q (q ≤ 24,
// FindRhythms' MaxHarmonic).
func entangled(a, b rhythmSpec, rows int) bool {
	for q := 1.0; q <= 24; q++ {
		F := 1 / (b.period * q)
		for _, k := range a.ks {
			f := float64(k) / a.period
			n := math.Round(f / F)
			if n >= 1 && n <= 48 && math.Abs(f-n*F) < 3/float64(rows) {
				return true
			}
		}
	}
	return false
}

// TestHarmonicFills: the fills are a multi-line rhythm's missing harmonics
// up to the asked one, lowest first, below the Nyquist frequency, none on a
// harmonic a rhythm already has and none for a rhythm of one line, and no
// more than the budget.
func TestHarmonicFills(t *testing.T) {
	// A day of 24 steps with lines at k = 1, 2, 4; a lone 7-step line.
	freq := map[int]float64{0: 1.0 / 24, 1: 2.0 / 24, 2: 4.0 / 24, 3: 1.0 / 7}
	rs := []Rhythm{
		{PeriodSteps: 24, Frequencies: []int{0, 1, 2}, Harmonics: []int{1, 2, 4}},
		{PeriodSteps: 7, Frequencies: []int{3}, Harmonics: []int{1}},
	}
	of := func(id int) float64 { return freq[id] }
	tol := 1e-6
	for _, tc := range []struct {
		max, budget int
		want        []int // harmonics of the day
	}{
		{6, 16, []int{3, 5, 6}},
		{16, 16, []int{3, 5, 6, 7, 8, 9, 10, 11}}, // 12/24 is the Nyquist frequency
		{16, 2, []int{3, 5}},
		{2, 16, nil},
	} {
		got := HarmonicFills(rs, of, tc.max, tc.budget, 0.001, tol)
		if len(got) != len(tc.want) {
			t.Fatalf("up to %d, budget %d: fills %v, want the day's harmonics %v", tc.max, tc.budget, got, tc.want)
		}
		for i, k := range tc.want {
			if math.Abs(got[i]-float64(k)/24) > 1e-12 {
				t.Errorf("up to %d, budget %d: fill %d at %v, want %d/24", tc.max, tc.budget, i, got[i], k)
			}
		}
	}
}

func TestFormatPeriod(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{24 * time.Hour, "24.0h"}, {168 * time.Hour, "7.0d"}, {15 * time.Minute, "15.0m"}, {90 * time.Second, "1.5m"}, {0, ""}} {
		if got := FormatPeriod(tc.d); got != tc.want {
			t.Errorf("FormatPeriod(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
