package cycles

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkFindPeaks times discovery on what training hands it: 8,640
// hourly rows (a year) of 7 channels with a day, its harmonics, a week and
// noise, the calendar's periods named.
func BenchmarkFindPeaks(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const T, C = 8640, 7
	rows := cycleRows(rng, T, C, []float64{24, 12, 8, 168}, []float64{1, 0.5, 0.3, 0.4}, 0.5, 0.001, 0.01)
	opts := PeakOptions{Calendar: CalendarFrequencies(time.Hour)}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(FindPeaks(rows, C, opts))
	}
	b.ReportMetric(float64(n), "peaks")
}

// BenchmarkFindRhythms times grouping 16 lines, a day's eight harmonics
// and a week's sidebands, into rhythms.
func BenchmarkFindRhythms(b *testing.B) {
	var lines []Line
	for k := 1; k <= 8; k++ {
		lines = append(lines, Line{ID: len(lines), Frequency: float64(k) / 24, Share: 0.3 / float64(k)})
	}
	for _, k := range []int{1, 2, 3, 6, 8, 13, 15, 20} {
		lines = append(lines, Line{ID: len(lines), Frequency: float64(k) / 168, Share: 0.01})
	}
	opts := RhythmOptions{Rows: 8640, Cadence: time.Hour}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(FindRhythms(lines, opts))
	}
	b.ReportMetric(float64(n), "rhythms")
}
