package wire_test

import (
	"fmt"
	"time"

	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

func ExampleAppendForecastJSON() {
	f := wire.Forecast{
		Series:       "s-17",
		TS:           time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC),
		ModelVersion: 3,
		Cadence:      time.Hour,
		Fields:       []string{"value"},
		Horizon:      2,
		Values:       []float64{412.5, 398.25},
	}
	buf, err := wire.AppendForecastJSON(nil, &f)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(buf))
	// Output:
	// {"series":"s-17","ts":"2026-01-05T08:00:00Z","model_version":3,"cadence":"1h0m0s","horizon":[{"ts":"2026-01-05T09:00:00Z","value":412.5},{"ts":"2026-01-05T10:00:00Z","value":398.25}]}
}

func ExampleAppendAttributionJSON() {
	f := wire.Forecast{
		Series:       "s-17",
		TS:           time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC),
		ModelVersion: 3,
		Fields:       []string{"temp", "humidity"},
		Horizon:      1,
		Alpha:        0.625,
		Residual:     []float64{3, 75},
		Frequencies: []wire.Contribution{
			{ID: 7, PeriodSteps: 24, Period: 24 * time.Hour, Share: 1, Values: []float64{0.5, 5.25}},
		},
	}
	for _, mode := range []wire.AttributionMode{wire.AttributionsFull, wire.AttributionsSummary} {
		buf, err := wire.AppendAttributionJSON(nil, &f, mode)
		if err != nil {
			panic(err)
		}
		fmt.Println(string(buf))
	}
	// Output:
	// {"series":"s-17","ts":"2026-01-05T08:00:00Z","model_version":3,"alpha":0.625,"residual_share":0,"residual":[{"temp":3,"humidity":75}],"frequencies":[{"id":7,"period_steps":24,"period":"24h0m0s","share":1,"values":[{"temp":0.5,"humidity":5.25}]}]}
	// {"series":"s-17","ts":"2026-01-05T08:00:00Z","model_version":3,"alpha":0.625,"residual_share":0,"frequencies":[{"id":7,"period_steps":24,"period":"24h0m0s","share":1}]}
}

func ExampleForecastID() {
	fmt.Println(wire.ForecastID("s-17", time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), 3))
	// Output:
	// cc9af6d57dbf6012357acb47909912f4
}

// A consumer of the topics reads a forecast and its attribution back and
// joins them.
func ExampleMerge() {
	f := wiretest.Example()
	fb, _ := wire.AppendForecastJSON(nil, &f)
	ab, _ := wire.AppendAttributionJSON(nil, &f, wire.AttributionsFull)

	forecast, err := wire.DecodeForecastJSON(fb)
	if err != nil {
		panic(err)
	}
	attribution, err := wire.DecodeAttributionJSON(ab)
	if err != nil {
		panic(err)
	}
	full, err := wire.Merge(forecast, attribution)
	if err != nil {
		panic(err)
	}
	fmt.Println(full.Series, full.Values[0], "=", full.Residual[0], "+", full.Frequencies[0].Values[0], "+", full.Frequencies[1].Values[0])
	// Output:
	// s-17 412.5 = 400 + 8.5 + 4
}
