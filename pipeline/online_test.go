package pipeline_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/broadcast"
	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
)

// TestOnlineLearningEndToEnd: with a learner attached, the readings that
// arrive through Kafka are joined to the forecasts they realise, a
// fine-tuning round runs on those pairs, its candidate is promoted and
// checkpointed, and the forecasts that follow on the forecasts topic carry
// the new model_version.
func TestOnlineLearningEndToEnd(t *testing.T) {
	b, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 3, "forecasts": 3, "readings.dlq": 1, "models": 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	kc := kafkatest.Client(t, b.Addrs())
	models, err := broadcast.NewModels(kc, "models", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer models.Close()
	base := testModel(t, model.Independent, 1)
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	// A huge promotion margin without the test (a negative promote_z)
	// promotes any finite candidate at once: this test is about the
	// wiring; whether rounds help is the online package's and the
	// backtest's business.
	l, err := online.New(onlineConfig(func(c *online.Config) {
		c.Enabled, c.Interval, c.MinNewSamples, c.Steps, c.BatchSize = true, time.Hour, 60, 3, 8
		c.MinHoldout, c.PromoteMargin, c.PromoteZ, c.Duty, c.CheckpointDir, c.Seed = 8, 1e6, -1, 1, dir, 1
	}), base, online.WithRegisterer(reg),
		online.WithPublisher(models.Publish))
	if err != nil {
		t.Fatal(err)
	}
	r := runPipeline(t, kc, base, nil, pipeline.DefaultConfig(), window.DefaultConfig(), stream.DefaultConfig(), sink.DefaultConfig(), pipeline.WithOnline(l))
	p := r.p
	// The pipeline hands the learner its forecasts; its owner (the
	// service) runs its rounds.
	ctx, cancel := context.WithCancel(context.Background())
	learnerDone := make(chan struct{})
	go func() { defer close(learnerDone); l.Run(ctx, p) }()
	t.Cleanup(func() { cancel(); <-learnerDone })

	// 4 series × 30 windows: 4 × (30 − horizon) realised pairs ≥ 60.
	series := []string{"a", "b", "c", "d"}
	produce(t, kc, series, []string{"value"}, 0, lookback+29)
	waitFor(t, func() bool { return l.Outcomes()[online.OutcomePromoted] >= 1 })
	_, v := p.Model()
	if v < 2 {
		t.Fatalf("after a promotion the pipeline serves version %d, want at least 2", v)
	}
	// A round swaps the model in, then saves its checkpoint: wait for it.
	waitFor(t, func() bool {
		cp, err := online.LatestCheckpoint(dir, nil)
		return err == nil && cp != nil && cp.Meta.Version >= v
	})
	// What another replica would load: the promoted version from the
	// models topic, identical to the checkpoint.
	waitFor(t, func() bool {
		pub, err := models.Latest(context.Background(), nil)
		return err == nil && pub != nil && pub.Meta.Version >= v
	})
	pub, _ := models.Latest(context.Background(), nil)
	if got, _ := online.LatestCheckpoint(dir, nil); got.Meta.Version == pub.Meta.Version && !slices.Equal(got.Params().Data, pub.Params().Data) {
		t.Errorf("version %d on the models topic differs from its checkpoint", pub.Meta.Version)
	}

	// New readings are forecast by the promoted version.
	produce(t, kc, series, []string{"value"}, lookback+29, lookback+31)
	msgs := readTopic(t, kc, "forecasts", len(series)*32, 60*time.Second)
	after := 0
	for _, m := range msgs {
		f, err := wire.DecodeForecastJSON(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if f.ModelVersion >= v {
			after++
		}
	}
	if after < len(series)*2 {
		t.Errorf("%d forecasts carry version %d or later; want at least the %d made after the promotion", after, v, len(series)*2)
	}
	if got := metric(t, r.reg, "freqlens_model_version"); got < float64(v) {
		t.Errorf("freqlens_model_version = %v, want at least %d", got, v)
	}
}

// TestIntervalsEndToEnd: with interval levels, forecasts on the forecasts
// topic carry nested lower and upper bounds once their series is
// calibrated, in JSON and in Arrow, and the coverage of what was published
// is exported.
func TestIntervalsEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		format wire.Format
		fields []string
	}{
		{wire.FormatJSON, []string{"value"}},
		{wire.FormatArrow, []string{"value"}},
		// An independent model forecasts each field on its own: each is
		// calibrated as a series of its own.
		{wire.FormatJSON, []string{"temp", "hum"}},
	} {
		format, fields := tc.format, tc.fields
		t.Run(fmt.Sprintf("%s %d fields", format, len(fields)), func(t *testing.T) {
			b, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 2, "forecasts": 2, "readings.dlq": 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)
			kc := kafkatest.Client(t, b.Addrs())
			base := testModel(t, model.Independent, 1)
			reg := prometheus.NewRegistry()
			levels := []float64{0.8, 0.95}
			l, err := online.New(onlineConfig(func(c *online.Config) { c.Intervals = levels }), base, online.WithRegisterer(reg))
			if err != nil {
				t.Fatal(err)
			}
			p := runPipeline(t, kc, base, fields, pipeline.DefaultConfig(), window.DefaultConfig(), stream.DefaultConfig(), sinkConfig(func(sk *sink.Config) { sk.Format = format }),
				pipeline.WithOnline(l)).p

			series := []string{"a", "b", "c", "d"}
			const steps = 400
			produce(t, kc, series, fields, 0, lookback+steps)
			msgs := readTopic(t, kc, "forecasts", len(series)*(steps+1), 60*time.Second)
			with := 0
			for _, m := range msgs {
				var f wire.Forecast
				if format == wire.FormatJSON {
					f, err = wire.DecodeForecastJSON(m.Value)
				} else {
					f, err = wire.DecodeForecastArrow(m.Value, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				if f.Intervals == nil {
					continue
				}
				with++
				if len(f.Intervals) != len(levels) || f.Intervals[0].Level != 0.8 || f.Intervals[1].Level != 0.95 {
					t.Fatalf("forecast %s@%s has intervals of levels %v, want %v", f.Series, f.TS, f.Intervals, levels)
				}
				for i := range f.Values {
					lo80, hi80, lo95, hi95 := f.Intervals[0].Lower[i], f.Intervals[0].Upper[i], f.Intervals[1].Lower[i], f.Intervals[1].Upper[i]
					if !(lo95 <= lo80 && lo80 <= hi80 && hi80 <= hi95) || math.IsNaN(lo95) || math.IsNaN(hi95) {
						t.Fatalf("forecast %s@%s value %d: 80%% [%g, %g] and 95%% [%g, %g] are not nested intervals", f.Series, f.TS, i, lo80, hi80, lo95, hi95)
					}
				}
			}
			// A series is calibrated after 32 forecasts scored over its whole
			// horizon: the later forecasts of each series carry intervals.
			if want := len(series) * (steps + 1 - horizon - 32 - 5); with < want {
				t.Errorf("%d of %d forecasts carry intervals, want at least %d", with, len(msgs), want)
			}
			l.Refresh(p)
			for _, c := range l.Totals().Coverage {
				rate := c.Rate(online.Coverage{})
				t.Logf("%.0f%% intervals held %.1f%% of %d realised steps", 100*c.Level, 100*rate, c.Scored)
				if c.Scored == 0 || math.Abs(rate-c.Level) > 0.05 {
					t.Errorf("%.0f%% intervals held %.1f%% of %d realised steps; want some, near the level", 100*c.Level, 100*rate, c.Scored)
				}
				lv := strconv.FormatFloat(c.Level, 'g', -1, 64)
				if got := labelled(t, reg, "freqlens_interval_scored_total", "level", lv); got != float64(c.Scored) {
					t.Errorf("freqlens_interval_scored_total{level=%q} = %v, want %d", lv, got, c.Scored)
				}
				if got := labelled(t, reg, "freqlens_interval_coverage_ratio", "level", lv); !(got > 0 && got <= 1) {
					t.Errorf("freqlens_interval_coverage_ratio{level=%q} = %v, want a rate", lv, got)
				}
			}
		})
	}
}
