package training

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
)

// BenchmarkAblation is what the recipe's choices buy on a benchmark file
// (ETTh1 by default; FREQLENS_ABLATION_DATA=weather.csv,ETTm1.csv for
// others, FREQLENS_ABLATION_SEEDS=42,1,2 for more seeds): the default
// recipe (train's: batch 128), every frequency selected, and the library's
// batch of 32, H=96, the standard protocol. (The rows of the earlier
// formats' maths in docs/benchmarks.md were measured by the builds that
// computed them.) It reports test MSE, the cycles' share of
// the attribution and the residual's. About 2 minutes per ETTh1 run on 2
// cores:
//
//	go test -run '^$' -bench Ablation -benchtime 1x -timeout 0 ./training/
func BenchmarkAblation(b *testing.B) {
	files := []string{"ETTh1.csv"}
	if v := os.Getenv("FREQLENS_ABLATION_DATA"); v != "" {
		files = strings.Split(v, ",")
	}
	seeds := []uint64{42}
	if v := os.Getenv("FREQLENS_ABLATION_SEEDS"); v != "" {
		seeds = nil
		for _, s := range strings.Split(v, ",") {
			var x uint64
			fmt.Sscan(s, &x)
			seeds = append(seeds, x)
		}
	}
	variants := []struct {
		name  string
		model func(*model.Config)
		train func(*Config)
	}{
		{name: "default"},
		{name: "every frequency selected (K = N = 32)", model: func(c *model.Config) { c.Frequencies, c.TopK = 32, 32 }},
		{name: "batch 32 (the library's default)", train: func(t *Config) { t.BatchSize = 32 }},
	}
	for _, file := range files {
		path := filepath.Join("..", "..", "shared", "data", file)
		if file == "ETTh1.csv" {
			path = filepath.Join("..", "testdata", file) // shipped in the repository
		}
		f, err := dataset.LoadCSV(path)
		if err != nil {
			b.Skipf("%s: %v", file, err)
		}
		bm, err := dataset.Standard(f, 96, 96)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range variants {
			b.Run(file+"/"+v.name, func(b *testing.B) {
				var mse, cycles, residual float64
				for b.Loop() {
					mse, cycles, residual = 0, 0, 0
					for _, seed := range seeds {
						cfg := model.Config{Horizon: 96, Channels: f.Channels()}
						tc := Config{Seed: seed, BatchSize: 128}
						if v.model != nil {
							v.model(&cfg)
						}
						if v.train != nil {
							v.train(&tc)
						}
						m, err := model.New(cfg, seed)
						if err != nil {
							b.Fatal(err)
						}
						m.Meta.Cadence = f.Cadence
						res, err := Train(context.Background(), m, bm.Train, bm.Val, tc, nil)
						if err != nil {
							b.Fatal(err)
						}
						met, err := measure.Evaluate(context.Background(), m, bm.Test, measure.Options{})
						if err != nil {
							b.Fatal(err)
						}
						c := 0.0
						for _, rs := range explain.RhythmShares(m, met.Shares, met.RhythmShares) {
							c += rs.Share
						}
						if len(m.Meta.Rhythms) == 0 { // no rhythms: its placed cycles
							for _, cy := range explain.Cycles(m, met.Shares, 0) {
								c += cy.Share
							}
						}
						n := float64(len(seeds))
						mse += met.MSE / n
						cycles += c / n
						residual += met.ResidualShare / n
						fmt.Fprintf(os.Stderr, "%s %s seed %d: test MSE %.4f [validation %.4f, best epoch %d], cycles %.1f%%, residual %.1f%%\n",
							file, v.name, seed, met.MSE, res.BestValMSE, res.BestEpoch, 100*c, 100*met.ResidualShare)
					}
				}
				b.ReportMetric(mse, "test_mse")
				b.ReportMetric(cycles, "cycles_share")
				b.ReportMetric(residual, "residual_share")
			})
		}
	}
}
