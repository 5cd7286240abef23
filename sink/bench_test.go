package sink_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

// benchForecasts returns forecasts of horizon 96 with 8 frequencies.
func benchForecasts(n int, fields []string) []wire.Forecast {
	return wiretest.Forecasts(42, n, fields, 96, 8)
}

func BenchmarkKafka(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  sink.Config
	}{
		{"json/attributions=full", sink.DefaultConfig()},
		{"json/attributions=summary", configWith(func(cfg *sink.Config) { cfg.Attributions = wire.AttributionsSummary })},
		{"json/attributions=off", configWith(func(cfg *sink.Config) { cfg.AttributionTopic = "" })},
		{"arrow/attributions=full", configWith(func(cfg *sink.Config) { cfg.Format = wire.FormatArrow })},
	} {
		for _, batch := range []int{64, 512} {
			b.Run(fmt.Sprintf("%s/batch=%d/H=96/K=8", tc.name, batch), func(b *testing.B) {
				p, _, _, _ := newProducer(b, tc.cfg)
				fs := benchForecasts(batch, []string{"value"})
				ctx := context.Background()
				n := 0
				b.ReportAllocs()
				for b.Loop() {
					if err := p.Write(ctx, fs); err != nil {
						b.Fatal(err)
					}
					n += len(fs)
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "forecasts/s")
			})
		}
	}
}
