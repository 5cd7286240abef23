package sink_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/freqlens/freqlens/sink"
)

// benchForecasts returns forecasts of horizon 96 with 8 frequencies.
func benchForecasts(n int, fields []string) []sink.Forecast {
	return randomForecasts(42, n, fields, 96, 8)
}

func BenchmarkEncodeJSON(b *testing.B) {
	fs := benchForecasts(64, []string{"value"})
	for _, tc := range []struct {
		name string
		enc  func(dst []byte, f *sink.Forecast) ([]byte, error)
	}{
		{"forecast", sink.AppendForecastJSON},
		{"attribution=full", func(dst []byte, f *sink.Forecast) ([]byte, error) {
			return sink.AppendAttributionJSON(dst, f, sink.AttributionsFull)
		}},
		{"attribution=summary", func(dst []byte, f *sink.Forecast) ([]byte, error) {
			return sink.AppendAttributionJSON(dst, f, sink.AttributionsSummary)
		}},
	} {
		b.Run(tc.name+"/H=96/K=8/C=1", func(b *testing.B) {
			buf := make([]byte, 0, 64<<10)
			var bytes, i int
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = tc.enc(buf[:0], &fs[i%len(fs)])
				bytes += len(buf)
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "forecasts/s")
			b.ReportMetric(float64(bytes)/float64(i), "bytes/forecast")
		})
	}
}

func BenchmarkEncodeArrow(b *testing.B) {
	fs := benchForecasts(64, []string{"value"})
	enc := sink.NewArrowEncoder(nil)
	defer enc.Release()
	for _, tc := range []struct {
		name string
		enc  func(dst []byte, f *sink.Forecast) ([]byte, error)
	}{
		{"forecast", enc.AppendForecast},
		{"attribution=full", func(dst []byte, f *sink.Forecast) ([]byte, error) {
			return enc.AppendAttribution(dst, f, sink.AttributionsFull)
		}},
	} {
		b.Run(tc.name+"/H=96/K=8/C=1", func(b *testing.B) {
			buf := make([]byte, 0, 64<<10)
			var bytes, i int
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = tc.enc(buf[:0], &fs[i%len(fs)])
				bytes += len(buf)
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "forecasts/s")
			b.ReportMetric(float64(bytes)/float64(i), "bytes/forecast")
		})
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	f := benchForecasts(1, []string{"value"})[0]
	fb, _ := sink.AppendForecastJSON(nil, &f)
	ab, _ := sink.AppendAttributionJSON(nil, &f, sink.AttributionsFull)
	b.Run("forecast/H=96", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sink.DecodeForecastJSON(fb); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("attribution/H=96/K=8", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sink.DecodeAttributionJSON(ab); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkKafka writes batches of forecasts through the Kafka sink to an
// in-process kfake broker, waiting for every acknowledgement.
func BenchmarkKafka(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  sink.Config
	}{
		{"json/attributions=full", sink.Config{AttributionTopic: "attributions"}},
		{"json/attributions=summary", sink.Config{AttributionTopic: "attributions", Attributions: sink.AttributionsSummary}},
		{"json/attributions=off", sink.Config{}},
		{"arrow/attributions=full", sink.Config{AttributionTopic: "attributions", Format: sink.FormatArrow}},
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
