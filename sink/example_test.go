package sink_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/wire"
)

func ExampleNewWriter() {
	w, err := sink.NewWriter(os.Stdout, sink.WriterConfig{Attributions: wire.AttributionsSummary})
	if err != nil {
		panic(err)
	}
	defer w.Close(context.Background())
	err = w.Write(context.Background(), []wire.Forecast{{
		Series: "s-17", TS: time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), ModelVersion: 3, Cadence: time.Hour,
		Fields: []string{"value"}, Horizon: 1, Values: []float64{412.5},
		Alpha: 0.625, Residual: []float64{402.5},
		Frequencies: []wire.Contribution{{ID: 7, PeriodSteps: 24, Period: 24 * time.Hour, Share: 1, Values: []float64{10}}},
	}})
	if err != nil {
		panic(err)
	}
	// Output:
	// {"series":"s-17","ts":"2026-01-05T08:00:00Z","model_version":3,"cadence":"1h0m0s","horizon":[{"ts":"2026-01-05T09:00:00Z","value":412.5}]}
	// {"series":"s-17","ts":"2026-01-05T08:00:00Z","model_version":3,"alpha":0.625,"residual_share":0,"frequencies":[{"id":7,"period_steps":24,"period":"24h0m0s","share":1}]}
}

func ExampleNew() {
	kcfg := kafkaconn.DefaultConfig() // the kafka.* keys: start from the defaults
	kcfg.Brokers = []string{"127.0.0.1:9092"}
	kc, err := kafkaconn.New(kcfg)
	if err != nil {
		panic(err)
	}
	defer kc.Close()
	// The topics.forecasts, topics.attributions and output.* keys: start from
	// the defaults and change what you mean to.
	cfg := sink.DefaultConfig()
	cfg.ForecastTopic, cfg.AttributionTopic = "forecasts", "attributions"
	cfg.Format, cfg.Attributions = wire.FormatJSON, wire.AttributionsFull
	p, err := sink.New(cfg, kc)
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())
	fmt.Println(p.Config().BatchTimeout, p.Config().BatchSize, p.Config().BatchBytes)
	// Output:
	// 50µs 1000 1048576
}
