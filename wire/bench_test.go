package wire_test

import (
	"testing"

	"github.com/freqlens/freqlens/wire"
)

// benchForecasts returns forecasts of horizon 96 with 8 frequencies.
func benchForecasts(n int, fields []string) []wire.Forecast {
	return randomForecasts(42, n, fields, 96, 8)
}

func BenchmarkEncodeJSON(b *testing.B) {
	fs := benchForecasts(64, []string{"value"})
	for _, tc := range []struct {
		name string
		enc  func(dst []byte, f *wire.Forecast) ([]byte, error)
	}{
		{"forecast", wire.AppendForecastJSON},
		{"attribution=full", func(dst []byte, f *wire.Forecast) ([]byte, error) {
			return wire.AppendAttributionJSON(dst, f, wire.AttributionsFull)
		}},
		{"attribution=summary", func(dst []byte, f *wire.Forecast) ([]byte, error) {
			return wire.AppendAttributionJSON(dst, f, wire.AttributionsSummary)
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
	enc := wire.NewArrowEncoder(nil)
	defer enc.Release()
	for _, tc := range []struct {
		name string
		enc  func(dst []byte, f *wire.Forecast) ([]byte, error)
	}{
		{"forecast", enc.AppendForecast},
		{"attribution=full", func(dst []byte, f *wire.Forecast) ([]byte, error) {
			return enc.AppendAttribution(dst, f, wire.AttributionsFull)
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
	fb, _ := wire.AppendForecastJSON(nil, &f)
	ab, _ := wire.AppendAttributionJSON(nil, &f, wire.AttributionsFull)
	b.Run("forecast/H=96", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wire.DecodeForecastJSON(fb); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("attribution/H=96/K=8", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wire.DecodeAttributionJSON(ab); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkKafka writes batches of forecasts through the Kafka sink to an
// in-process kfake broker, waiting for every acknowledgement.
