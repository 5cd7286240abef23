package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadingKeepsDigitsAtEveryScale(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0.000"}, {12.3456, "12.346"}, {-0.5, "-0.500"}, {0.01, "0.010"},
		{1.234e-12, "1.234e-12"}, {-0.004567, "-0.004567"}, {9.87654e9, "9.877e+09"},
	} {
		if got := reading(tc.v); got != tc.want {
			t.Errorf("reading(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	if got := dateTime(time.Date(2024, 5, 5, 1, 0, 0, 0, time.FixedZone("", 2*3600))); got != "2024-05-05 01:00:00+02:00" {
		t.Errorf("a time with an offset: %q", got)
	}
	if got := dateTime(time.Date(2024, 5, 5, 1, 0, 0, 0, time.UTC)); got != "2024-05-05 01:00:00" {
		t.Errorf("a UTC time: %q", got)
	}
}

// TestPercentsMakeAHundred: shares that make 1, drawn at random, are
// written as whole percents that make 100, each within a point of its
// share; the demo's 51% + 48% + 2% = 101% could not happen.
func TestPercentsMakeAHundred(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for range 2000 {
		shares := make([]float64, 2+rng.IntN(6))
		total := 0.0
		for i := range shares {
			shares[i] = rng.Float64() * rng.Float64()
			total += shares[i]
		}
		for i := range shares {
			shares[i] /= total
		}
		pct := percents(shares)
		sum := 0
		for i, p := range pct {
			sum += p
			if math.Abs(float64(p)-100*shares[i]) >= 1 {
				t.Fatalf("shares %v: %d%% for %.4f", shares, p, shares[i])
			}
		}
		if sum != 100 {
			t.Fatalf("shares %v: percents %v make %d", shares, pct, sum)
		}
	}
}

// TestPercentsOfOddShares: a negative or non-finite share is written as 0%,
// and the others still make their rounded total.
func TestPercentsOfOddShares(t *testing.T) {
	got := percents([]float64{0.555, math.NaN(), 0.445, -0.1, math.Inf(1)})
	if want := []int{56, 0, 44, 0, 0}; !slices.Equal(got, want) && !slices.Equal(got, []int{55, 0, 45, 0, 0}) {
		t.Errorf("percents = %v, want %v", got, want)
	}
}

// TestPartsSizeInEachChannelsStd: with channels of different units the
// size of the parts is said in each channel's window std, not averaged
// across units (mbar beside seconds), and a flat channel is named.
func TestPartsSizeInEachChannelsStd(t *testing.T) {
	r := predictReport{
		Channels: []string{"p (mbar)", "raining (s)", "T (degC)"},
		Level:    []float64{1000, 30, 5},
		// The parts move p by 2 (its std 4), raining by 60 (its std 120),
		// T by nothing (its window flat).
		Forecast:  [][]float64{{1002, 90, 5}, {998, -30, 5}},
		WindowStd: []float64{4, 120, 0},
	}
	got := partsSize(r)
	if !strings.Contains(got, "by 0.50 times the window's own standard deviation") || !strings.Contains(got, `["T (degC)"]`) {
		t.Errorf("partsSize = %q; want 0.50 times the window's std, and T (degC) named as flat", got)
	}
	one := predictReport{Channels: []string{"OT"}, Level: []float64{10}, Forecast: [][]float64{{12}, {8}}, WindowStd: []float64{3}}
	if got := partsSize(one); !strings.Contains(got, "move the forecast 2.000 from") || !strings.Contains(got, "move 3.000 (std)") {
		t.Errorf("partsSize of one channel = %q; want it in the channel's units", got)
	}
}

// TestInspectCountsIdleFrequencies: inspect lists the other frequencies
// that windows selected or that carry a share, and counts those that did
// neither in one line (a new user got 24 rows of zeros); without known
// selections it lists them all.
func TestInspectCountsIdleFrequencies(t *testing.T) {
	r := inspectReport{SelectionFrom: "test split", SharesFrom: "test split", Frequencies: []inspectFrequency{
		{ID: 3, PeriodSteps: 2, Period: "2.0h"},
		{ID: 1, PeriodSteps: 5, Period: "5.0h", Selected: 40, SelectedShare: 0.4, Share: 0.1},
		{ID: 0, PeriodSteps: 96, Period: "4.0d"},
	}}
	r.MostSelected = r.Frequencies[1:2]
	var b strings.Builder
	printInspect(&b, r)
	out := b.String()
	if !strings.Contains(out, "2 more frequencies, with periods between 2.0h and 4.0d: never selected, no share") || !strings.Contains(out, "5.0h") || strings.Contains(out, "   3     0.00000") {
		t.Errorf("inspect's other frequencies:\n%s\nwant id 1 listed and ids 3 and 0 counted in one line", out)
	}
	r.MostSelected, r.SharesFrom = nil, ""
	b.Reset()
	printInspect(&b, r)
	if strings.Contains(b.String(), "never selected") {
		t.Errorf("without known selections inspect counts frequencies as never selected:\n%s", b.String())
	}
}
