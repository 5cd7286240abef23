package pipeline_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/window"
)

// TestReadingsOnTheModelsSteps: a model trained on a schedule whose stamps
// straddle the step times (model.Meta.StepAlign nearest) is served with the
// same alignment when input.align is left out: hourly readings stamped up
// to 40% of an hour early or late, in a seeded random order within each
// step's batch, give one forecast at every step, each window holding the
// readings of its own steps and none filled. With input.align: floor the
// same feed puts early readings a step early, which the test checks too,
// so that it cannot pass without the alignment.
func TestReadingsOnTheModelsSteps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		align  window.Align // the wiring's; empty for the model's
		onTime bool         // every window holds its own steps' readings
	}{{"the model's", "", true}, {"nearest", window.AlignNearest, true}, {"floor", window.AlignFloor, false}} {
		t.Run(tc.name, func(t *testing.T) {
			kc := startBroker(t)
			m := testModel(t, model.Independent, 1)
			m.Meta.StepAlign = string(window.AlignNearest)
			var mu sync.Mutex
			var seen []issued
			w := wiring()
			w.Align = tc.align
			p := observedPipeline(t, kc, m, w, &mu, &seen)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()

			// The value of a reading is its step, so a window shows which
			// readings it holds.
			const steps = lookback + 12
			t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
			rng := rand.New(rand.NewPCG(5, 8))
			cfg := readingsConfig([]string{"value"})
			var msgs []kafka.Message
			for k := range steps {
				off := time.Duration((0.8*rng.Float64() - 0.4) * float64(time.Hour))
				if k == steps-1 {
					off = 0 // the last step is not early: a floored series would still reach it
				}
				r := readings.Reading{Series: "s", Time: t0.Add(time.Duration(k)*time.Hour + off), Values: []float64{float64(k)}}
				msgs = append(msgs, kafka.Message{Key: []byte("s"), Value: readings.AppendJSON(nil, r, cfg)})
			}
			kafkatest.Produce(t, kc, "readings", msgs...)
			waitFor(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(seen) > 0 && seen[len(seen)-1].f.TS.Equal(t0.Add((steps-1)*time.Hour))
			})
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			var origins []int
			onTime := true
			for _, o := range seen {
				end := int(o.f.TS.Sub(t0) / time.Hour)
				origins = append(origins, end)
				for j, v := range o.window {
					if want := float64(end - lookback + 1 + j); math.Abs(v-want) > 1e-9 {
						onTime = false
					}
				}
			}
			wantOrigins := make([]int, 0, steps)
			for k := lookback - 1; k < steps; k++ {
				wantOrigins = append(wantOrigins, k)
			}
			if tc.onTime {
				if !slices.Equal(origins, wantOrigins) || !onTime {
					t.Fatalf("forecasts from steps %v (every window on its own steps: %v); want one from each of steps %v, each window holding its own steps' readings",
						origins, onTime, wantOrigins)
				}
			} else if onTime && slices.Equal(origins, wantOrigins) {
				t.Fatal("input.align: floor read the jittered feed as if it were on time; the feed does not test the alignment")
			}
		})
	}
}
