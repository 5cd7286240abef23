package online_test

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
)

func TestObserveAllocatesNothingOnceTracked(t *testing.T) {
	m, err := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	l, err := online.New(configWith(func(c *online.Config) { c.ReplaySize, c.MinHoldout, c.Intervals = 200, 10, []float64{0.8, 0.95} }), m)
	if err != nil {
		t.Fatal(err)
	}
	x, fc := make([]float64, 24), make([]float64, 6)
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	o := &online.Observation{Series: "s", Window: x, Forecast: fc, Contributions: []model.Contribution{{Frequency: model.Frequency{ID: 1}, Share: 0.5}},
		Lower: [][]float64{make([]float64, 6), make([]float64, 6)}, Upper: [][]float64{make([]float64, 6), make([]float64, 6)}}
	published := 0
	step := 0
	next := func() {
		for i := range x {
			x[i] = float64((step + i) % 7)
		}
		o.End = t0.Add(time.Duration(step) * time.Hour)
		step++
		if l.Observe(o) {
			published++
		}
	}
	for range 400 { // past the replay buffer's growth
		next()
	}
	if a := testing.AllocsPerRun(200, next); a != 0 {
		t.Errorf("Observe allocates %.1f times per forecast of a tracked series; want 0", a)
	}
	if tot := l.Totals(); tot.Count == 0 || tot.Pairs == 0 || tot.Coverage[0].Scored == 0 {
		t.Errorf("totals %+v: nothing was scored", tot)
	}
	if published == 0 {
		t.Error("no forecast got its intervals")
	}

	// An independent model forecasting two fields: each is tracked on its own.
	x2, fc2 := make([]float64, 2*24), make([]float64, 2*6)
	o2 := &online.Observation{Series: "two", Window: x2, Forecast: fc2,
		Lower: [][]float64{make([]float64, 12), make([]float64, 12)}, Upper: [][]float64{make([]float64, 12), make([]float64, 12)}}
	step2, published2 := 0, 0
	next2 := func() {
		for i := range x2 {
			x2[i] = float64((step2+i/2)%7) * float64(1+i%2)
		}
		o2.End = t0.Add(time.Duration(step2) * time.Hour)
		step2++
		if l.Observe(o2) {
			published2++
		}
	}
	for range 400 {
		next2()
	}
	if a := testing.AllocsPerRun(200, next2); a != 0 {
		t.Errorf("Observe allocates %.1f times per two-field forecast of a tracked series; want 0", a)
	}
	if published2 == 0 {
		t.Error("no two-field forecast got its intervals")
	}
}

// BenchmarkObserve measures Observe for tracked series at L = H = 96, one
// channel, without intervals and with two levels: the cost the learner adds
// to every forecast on the serving path, and the heap each tracked series
// holds (B/series: the learner's heap after every series' first forecast,
// over the series, before the replay buffer fills). With 64 series every one is in the full tier, which
// measures the error at every horizon step; with 10,000 the rest are not.
func BenchmarkObserve(b *testing.B) {
	const L, H = 96, 96
	m, err := model.New(model.Config{Lookback: L, Horizon: H, Channels: 1, Mode: model.Independent, Frequencies: 8, TopK: 4}, 1)
	if err != nil {
		b.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	for _, series := range []int{64, 10_000} {
		for _, levels := range [][]float64{nil, {0.8, 0.95}} {
			b.Run(fmt.Sprintf("series=%d/levels=%d", series, len(levels)), func(b *testing.B) {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				l, err := online.New(configWith(func(c *online.Config) { c.Intervals = levels }), m)
				if err != nil {
					b.Fatal(err)
				}
				x, fc := make([]float64, L), make([]float64, H)
				o := &online.Observation{Window: x, Forecast: fc}
				for range levels {
					o.Lower, o.Upper = append(o.Lower, make([]float64, H)), append(o.Upper, make([]float64, H))
				}
				names := make([]string, series)
				for s := range names {
					names[s] = fmt.Sprint("s", s)
				}
				t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
				step := 0
				next := func() {
					for i := range x {
						x[i] = 100 + 10*math.Sin(float64(step+i)/4)
					}
					for i := range fc {
						fc[i] = 100 + 10*math.Sin(float64(step+L+i)/4) + float64(i%3)
					}
					o.End = t0.Add(time.Duration(step) * time.Hour)
					for _, s := range names {
						o.Series = s
						l.Observe(o)
					}
					step++
				}
				next() // every series' state, before the replay buffer fills
				runtime.GC()
				runtime.ReadMemStats(&after)
				perSeries := float64(after.HeapAlloc-before.HeapAlloc) / float64(series)
				for range H + 8 {
					next()
				}
				b.ResetTimer()
				for b.Loop() {
					next()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*series), "ns/forecast")
				b.ReportMetric(perSeries, "B/series")
				runtime.KeepAlive(l)
			})
		}
	}
}
