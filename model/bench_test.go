package model_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/internal/modeltest"
	"github.com/freqlens/freqlens/model"
)

// benchModel returns a freshly initialised model with the rhythm a model
// trained on ETTh1 has (the day: 8 frequencies at harmonics 1, 2, 3, 4, 5,
// 7, 8 and 11 of 24 hourly steps, so the clock runs as it does in
// service), n random windows and their end times.
func benchModel(b *testing.B, cfg model.Config, n int) (*model.Model, []float64, []int64) {
	return modeltest.BenchModel(b, cfg, n, modeltest.DayOfEight)
}

// dayOfThree is a daily rhythm of three frequencies at a 10-minute
// cadence, as Weather's (24h, 12h, 8h): five of the K = 8 places are left to
// the other frequencies, which read the window less the day.
var dayOfThree = []cycles.Rhythm{{PeriodSteps: 144, Frequencies: []int{3, 6, 9}, Harmonics: []int{1, 2, 3}}}

// weekAndDay are rhythms of 16 frequencies, the week's ten and the day's
// six as training finds them on the demo's traffic: more than K = 8, so
// every window selects all 16.
var weekAndDay = []cycles.Rhythm{
	{PeriodSteps: 168, Frequencies: []int{0, 1, 3, 5, 9, 11, 13, 16, 18, 21}, Harmonics: []int{1, 2, 3, 5, 6, 8, 13, 15, 20, 22}},
	{PeriodSteps: 24, Frequencies: []int{2, 6, 8, 12, 14, 19}, Harmonics: []int{1, 2, 3, 4, 5, 6}},
}

// BenchmarkForwardWindow is the latency of one window's forecast, alone and
// with its full attribution (L=H=96, defaults), on one goroutine.
func BenchmarkForwardWindow(b *testing.B) {
	for _, c := range []struct {
		name    string
		cfg     model.Config
		rhythms []cycles.Rhythm
	}{
		{"mixed C=7", model.Config{Horizon: 96, Channels: 7}, modeltest.DayOfEight},
		{"mixed C=7, channel mix", model.Config{Horizon: 96, Channels: 7, ChannelMix: true}, modeltest.DayOfEight},
		{"independent C=1", model.Config{Horizon: 96, Channels: 1, Mode: model.Independent}, modeltest.DayOfEight},
		{"independent C=1, week and day (16 frequencies)", model.Config{Horizon: 96, Channels: 1, Mode: model.Independent}, weekAndDay},
		{"mixed C=21, a day of 3 frequencies (5 places left to the others)", model.Config{Horizon: 96, Channels: 21}, dayOfThree},
		{"mixed C=21, a day of 3 frequencies, channel mix", model.Config{Horizon: 96, Channels: 21, ChannelMix: true}, dayOfThree},
		{"independent C=1, a day of 3 frequencies (5 places left to the others)", model.Config{Horizon: 96, Channels: 1, Mode: model.Independent}, dayOfThree},
	} {
		for _, explain := range []bool{false, true} {
			name := c.name + "/forecast"
			if explain {
				name = c.name + "/forecast+attribution"
			}
			b.Run(name, func(b *testing.B) {
				m, x, ends := modeltest.BenchModel(b, c.cfg, 1, c.rhythms)
				ws := m.NewWorkspace(1)
				dst := m.Forward(ws, nil, x, ends)
				var a *model.Attribution
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					dst = m.Forward(ws, dst, x, ends)
					if explain {
						a = ws.Attribution(0, a)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/window")
			})
		}
	}
}

// BenchmarkForwardBatched is the throughput of batched forecasting on all
// cores, one workspace per goroutine (C=7, L=H=96, batches of 256), with
// and without the channel mix.
func BenchmarkForwardBatched(b *testing.B) {
	const batch = 256
	for _, c := range []struct {
		name string
		cfg  model.Config
	}{
		{"mixed C=7", model.Config{Horizon: 96, Channels: 7}},
		{"mixed C=7, channel mix", model.Config{Horizon: 96, Channels: 7, ChannelMix: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			m, x, ends := benchModel(b, c.cfg, batch)
			workers := runtime.GOMAXPROCS(0)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			per := (b.N + workers - 1) / workers
			for range workers {
				wg.Go(func() {
					ws := m.NewWorkspace(batch)
					dst := make([]float64, batch*m.Horizon()*m.Channels())
					for range per {
						dst = m.Forward(ws, dst, x, ends)
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(per*workers*batch)/b.Elapsed().Seconds(), "windows/s")
		})
	}
}

// BenchmarkAttribution is the cost of explaining one already forecast
// window (C=7, H=96): K contributions of H×C values, the residual and the
// shares.
func BenchmarkAttribution(b *testing.B) {
	m, x, ends := benchModel(b, model.Config{Horizon: 96, Channels: 7}, 1)
	ws := m.NewWorkspace(1)
	m.Forward(ws, nil, x, ends)
	a := ws.Attribution(0, nil)
	b.ReportAllocs()
	for b.Loop() {
		a = ws.Attribution(0, a)
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N), "µs/window")
}
