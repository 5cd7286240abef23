package explain_test

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/model"
)

// dayOfEight is a daily rhythm of K = 8 frequencies, as ETTh1's.
var dayOfEight = []cycles.Rhythm{{PeriodSteps: 24, Frequencies: []int{10, 15, 17, 20, 22, 25, 27, 30}, Harmonics: []int{1, 2, 3, 4, 5, 7, 8, 11}}}

// benchModelRhythms returns a freshly initialised model of hourly steps
// with the given rhythms (so the clock runs as it does in service), n
// random windows and their end times, as model's benchmarks make them.
func benchModelRhythms(b *testing.B, cfg model.Config, n int, rhythms []cycles.Rhythm) (*model.Model, []float64, []int64) {
	b.Helper()
	m, err := model.New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	m.SetRhythms(rhythms)
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, n*m.Lookback()*m.Channels())
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	ends := make([]int64, n)
	for i := range ends {
		ends[i] = time.Date(2026, 3, 1, i%24, 0, 0, 0, time.UTC).UnixNano()
	}
	return m, x, ends
}

// BenchmarkServingMemory reports the memory a serving explainer holds per
// window of its largest batch (256, service.max_batch), the bound of the
// forward pass in docs/operating.md's memory table: what explain.New and
// its first Forecast and Explain of every window allocate, over 256. The
// model is of the paper's size, one channel, with the day's rhythm of 8
// frequencies (no scorer needed) and, for comparison, with rhythms of 2
// (the scorer picks the other 6).
func BenchmarkServingMemory(b *testing.B) {
	const batch = 256
	for _, tc := range []struct {
		name    string
		rhythms []cycles.Rhythm
	}{
		{"day_of_eight", dayOfEight},
		{"day_of_two", []cycles.Rhythm{{PeriodSteps: 24, Frequencies: []int{10, 15}, Harmonics: []int{1, 2}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, x, ends := benchModelRhythms(b, model.Config{Horizon: 96, Channels: 1, Mode: model.Independent}, batch, tc.rhythms)
			var perWindow float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				ex, err := explain.New(m, 1)
				if err != nil {
					b.Fatal(err)
				}
				ex.Forecast(x, ends)
				var e *explain.Explanation
				for i := range batch {
					e = ex.Explain(i, e)
				}
				runtime.ReadMemStats(&after)
				perWindow = float64(after.TotalAlloc-before.TotalAlloc) / batch
			}
			b.ReportMetric(perWindow, "bytes/window")
		})
	}
}
