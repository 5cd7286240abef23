package explain_test

import (
	"runtime"
	"testing"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/internal/modeltest"
	"github.com/freqlens/freqlens/model"
)

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
		{"day_of_eight", modeltest.DayOfEight},
		{"day_of_two", []cycles.Rhythm{{PeriodSteps: 24, Frequencies: []int{10, 15}, Harmonics: []int{1, 2}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, x, ends := modeltest.BenchModel(b, model.Config{Horizon: 96, Channels: 1, Mode: model.Independent}, batch, tc.rhythms)
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
