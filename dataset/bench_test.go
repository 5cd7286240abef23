package dataset

import (
	"fmt"
	"testing"
	"time"
)

func BenchmarkLoadCSV(b *testing.B) {
	for _, name := range []string{"ETTh1.csv", "ETTm1.csv", "weather.csv"} {
		b.Run("file="+name, func(b *testing.B) {
			path := dataPath(b, name)
			var rows int
			b.ReportAllocs()
			for b.Loop() {
				f, err := LoadCSV(path)
				if err != nil {
					b.Fatal(err)
				}
				rows = f.Rows()
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func BenchmarkSynthetic(b *testing.B) {
	for _, series := range []int{1, 100} {
		b.Run(fmt.Sprintf("series=%d", series), func(b *testing.B) {
			cfg := Traffic(series, 24*7*52, time.Hour, 1)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Synthetic(cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(series*cfg.Steps)*float64(b.N)/b.Elapsed().Seconds(), "values/s")
		})
	}
}
