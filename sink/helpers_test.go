package sink_test

import (
	"math/rand/v2"
	"time"

	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/sink/sinktest"
)

var origin = time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)

// exampleSingle is the single-field example of the documentation: shares
// 24/32 and 8/32 of the absolute attribution.
func exampleSingle() sink.Forecast {
	return sink.Forecast{
		Series:       "s-17",
		TS:           origin,
		ModelVersion: 3,
		Cadence:      time.Hour,
		Fields:       []string{"value"},
		Horizon:      3,
		Values:       []float64{412.5, 398.25, 368.75},
		Alpha:        0.625,
		Residual:     []float64{400, 390, 380},
		Frequencies: []sink.Contribution{
			{ID: 7, PeriodSteps: 24, Period: 24 * time.Hour, Share: 0.75, Values: []float64{8.5, 6.25, -9.25}},
			{ID: 2, PeriodSteps: 12, Period: 12 * time.Hour, Share: 0.25, Values: []float64{4, 2, -2}},
		},
	}
}

// exampleMulti is the multichannel example of the documentation.
func exampleMulti() sink.Forecast {
	return sink.Forecast{
		Series:       "s-17",
		TS:           origin,
		ModelVersion: 3,
		Cadence:      time.Hour,
		Fields:       []string{"temp", "humidity"},
		Horizon:      2,
		Values:       []float64{3.5, 80.25, 2.75, 78},
		Alpha:        0.625,
		Residual:     []float64{3, 75, 2.5, 78},
		Frequencies: []sink.Contribution{
			{ID: 7, PeriodSteps: 24, Period: 24 * time.Hour, Share: 0.75, Values: []float64{0.5, 5, -0.25, 1.75}},
			{ID: 2, PeriodSteps: 12, Period: 12 * time.Hour, Share: 0.25, Values: []float64{0, 0.25, 0.5, -1.75}},
		},
	}
}

// randomForecasts returns n complete forecasts of horizon h and k
// frequencies over fields.
func randomForecasts(seed uint64, n int, fields []string, h, k int) []sink.Forecast {
	rng := rand.New(rand.NewPCG(seed, 1))
	fs := make([]sink.Forecast, n)
	for i := range fs {
		fs[i] = sinktest.Forecast(rng, "s-"+string(rune('a'+i%26)), origin.Add(time.Duration(i)*time.Hour), fields, h, k)
	}
	return fs
}

// forecastPart keeps what the forecast layouts carry.
func forecastPart(f sink.Forecast) sink.Forecast {
	f.Alpha, f.Residual, f.Frequencies = 0, nil, nil
	return f
}

// attributionPart keeps what the attribution layouts carry in mode; the
// JSON layout has no cadence.
func attributionPart(f sink.Forecast, mode sink.AttributionMode, cadence bool) sink.Forecast {
	f.Values = nil
	if !cadence {
		f.Cadence = 0
	}
	if mode == sink.AttributionsSummary {
		f.Horizon, f.Fields, f.Residual = 0, nil, nil
		fr := make([]sink.Contribution, len(f.Frequencies))
		for k, c := range f.Frequencies {
			c.Values = nil
			fr[k] = c
		}
		f.Frequencies = fr
	}
	return f
}
