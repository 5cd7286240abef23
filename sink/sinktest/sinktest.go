package sinktest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

// Delivered returns every forecast the sink under test has delivered so far
// — merged with its attribution — as the sink's consumers would observe it,
// forecasts of one series in delivery order.
type Delivered func(t testing.TB) []wire.Forecast

// Factory returns a new, empty sink writing full attributions, and the way
// to observe what it delivered. The factory registers its own cleanup.
type Factory func(t *testing.T) (sink.Sink, Delivered)

// Run runs the shared suite against the sinks newSink makes.
func Run(t *testing.T, newSink Factory) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s sink.Sink, delivered Delivered)
	}{
		{"delivers every forecast bit-exact, in order per series", testDelivers},
		{"attributions are complete", testComplete},
		{"empty writes deliver nothing", testEmpty},
		{"an invalid forecast fails the whole write", testInvalid},
		{"the caller may reuse its slices after Write", testReuse},
		{"concurrent writes keep the order of each series", testConcurrent},
		{"a done context delivers nothing", testCancelled},
		{"close then write fails with ErrClosed", testClose},
		{"a write racing close is delivered if it succeeds", testCloseRace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, delivered := newSink(t)
			tc.run(t, s, delivered)
		})
	}
}

var (
	origin = time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	multi  = []string{"temp", "humidity", "wind speed", "température", `"quoted"\n`}
)

// batches returns nb batches of per forecasts each, over series series
// whose times advance by one cadence per forecast; the first seriesMulti
// series are multichannel. Forecasts use H = 6 and K = 3.
func batches(seed uint64, prefix string, nb, per, series int) [][]wire.Forecast {
	rng := rand.New(rand.NewPCG(seed, 7))
	next := make([]int, series)
	out := make([][]wire.Forecast, nb)
	for b := range out {
		for i := 0; i < per; i++ {
			s := rng.IntN(series)
			fields := []string{"value"}
			if s%2 == 1 {
				fields = multi[:2+s%4]
			}
			ts := origin.Add(time.Duration(next[s]) * time.Hour)
			next[s]++
			out[b] = append(out[b], wiretest.Forecast(rng, fmt.Sprintf("%s-%d", prefix, s), ts, fields, 6, 3))
		}
	}
	return out
}

func testDelivers(t *testing.T, s sink.Sink, delivered Delivered) {
	ctx := context.Background()
	bs := batches(1, "s", 3, 20, 5)
	// Numbers that stress the encodings.
	bs[0][0].Values[0] = math.Copysign(0, -1)
	bs[0][0].Residual[0] = bs[0][0].Values[0] - sumAt(bs[0][0].Frequencies, 0)
	bs[0][1].Alpha = 5e-324
	bs[0][2].Frequencies[0].Share = 1.7976931348623157e308
	bs[0][3].Frequencies[1].PeriodSteps = 1.0 / 3
	bs[0][4].ModelVersion = -1
	bs[1][0].Series = "naïve \"series\"\twith\\escapes"
	var want []wire.Forecast
	for _, b := range bs {
		if err := s.Write(ctx, b); err != nil {
			t.Fatalf("Write: %v", err)
		}
		want = append(want, b...)
	}
	checkDelivered(t, delivered(t), want)
}

func testComplete(t *testing.T, s sink.Sink, delivered Delivered) {
	bs := batches(2, "c", 1, 12, 4)
	if err := s.Write(context.Background(), bs[0]); err != nil {
		t.Fatalf("Write: %v", err)
	}
	got := delivered(t)
	if len(got) != len(bs[0]) {
		t.Fatalf("delivered %d forecasts, want %d", len(got), len(bs[0]))
	}
	for _, f := range got {
		if err := wiretest.Complete(f); err != nil {
			t.Error(err)
		}
	}
}

func testEmpty(t *testing.T, s sink.Sink, delivered Delivered) {
	for _, fs := range [][]wire.Forecast{nil, {}} {
		if err := s.Write(context.Background(), fs); err != nil {
			t.Errorf("Write(%v) = %v, want nil", fs, err)
		}
	}
	if got := delivered(t); len(got) != 0 {
		t.Errorf("delivered %d forecasts, want 0", len(got))
	}
}

func testInvalid(t *testing.T, s sink.Sink, delivered Delivered) {
	fs := batches(3, "i", 1, 4, 2)[0]
	fs[2].Values = fs[2].Values[:len(fs[2].Values)-1]
	if err := s.Write(context.Background(), fs); err == nil {
		t.Fatal("Write of a forecast with a short Values = nil, want an error")
	}
	if got := delivered(t); len(got) != 0 {
		t.Errorf("delivered %d forecasts, want 0", len(got))
	}
}

func testReuse(t *testing.T, s sink.Sink, delivered Delivered) {
	fs := batches(4, "r", 1, 6, 3)[0]
	want := make([]wire.Forecast, len(fs))
	for i := range fs {
		want[i] = wire.Clone(fs[i])
	}
	if err := s.Write(context.Background(), fs); err != nil {
		t.Fatalf("Write: %v", err)
	}
	for i := range fs {
		for _, v := range [][]float64{fs[i].Values, fs[i].Residual, fs[i].Frequencies[0].Values} {
			for j := range v {
				v[j] = -1
			}
		}
		fs[i].Fields[0] = "scribbled"
	}
	checkDelivered(t, delivered(t), want)
}

func testConcurrent(t *testing.T, s sink.Sink, delivered Delivered) {
	const writers = 4
	var (
		wg   sync.WaitGroup
		want []wire.Forecast
		errs = make([]error, writers)
	)
	for w := 0; w < writers; w++ {
		bs := batches(uint64(10+w), fmt.Sprintf("w%d", w), 5, 8, 3)
		for _, b := range bs {
			want = append(want, b...)
		}
		wg.Go(func() {
			for _, b := range bs {
				if err := s.Write(context.Background(), b); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Write: %v", err)
	}
	checkDelivered(t, delivered(t), want)
}

func testCancelled(t *testing.T, s sink.Sink, delivered Delivered) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Write(ctx, batches(5, "x", 1, 4, 2)[0])
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Write with a cancelled context = %v, want context.Canceled", err)
	}
	if got := delivered(t); len(got) != 0 {
		t.Errorf("delivered %d forecasts, want 0", len(got))
	}
}

func testClose(t *testing.T, s sink.Sink, delivered Delivered) {
	ctx := context.Background()
	bs := batches(6, "z", 2, 5, 3)
	if err := s.Write(ctx, bs[0]); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close = %v, want nil", err)
	}
	if err := s.Write(ctx, bs[1]); !errors.Is(err, sink.ErrClosed) {
		t.Errorf("Write after Close = %v, want sink.ErrClosed", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Close(done); err != nil {
		t.Errorf("second Close (with a done context) = %v, want nil", err)
	}
	checkDelivered(t, delivered(t), bs[0])
}

func testCloseRace(t *testing.T, s sink.Sink, delivered Delivered) {
	fs := batches(7, "q", 1, 10, 3)[0]
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() { werr = s.Write(context.Background(), fs) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cerr := s.Close(ctx)
	wg.Wait()
	if cerr != nil {
		t.Fatalf("Close = %v, want nil", cerr)
	}
	switch {
	case werr == nil:
		checkDelivered(t, delivered(t), fs)
	case errors.Is(werr, sink.ErrClosed):
		if got := delivered(t); len(got) != 0 {
			t.Errorf("Write failed with %v but %d forecasts were delivered", werr, len(got))
		}
	default:
		t.Errorf("Write racing Close = %v, want nil or sink.ErrClosed", werr)
	}
}

func sumAt(fr []wire.Contribution, i int) float64 {
	var s float64
	for _, c := range fr {
		s += c.Values[i]
	}
	return s
}

// checkDelivered compares what was delivered with what was written: the
// same number of forecasts, and per series the same forecasts in the same
// order, bit for bit.
func checkDelivered(t *testing.T, got, want []wire.Forecast) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("delivered %d forecasts, want %d", len(got), len(want))
	}
	bySeries := func(fs []wire.Forecast) map[string][]wire.Forecast {
		m := map[string][]wire.Forecast{}
		for _, f := range fs {
			m[f.Series] = append(m[f.Series], f)
		}
		return m
	}
	g, w := bySeries(got), bySeries(want)
	for series, wf := range w {
		gf := g[series]
		if len(gf) != len(wf) {
			t.Errorf("series %q: delivered %d forecasts, want %d", series, len(gf), len(wf))
			continue
		}
		for i := range wf {
			if d := wiretest.Diff(gf[i], wf[i]); d != "" {
				t.Errorf("series %q, forecast %d (ts %s): %s", series, i, wf[i].TS.Format(time.RFC3339), d)
			}
		}
	}
	for series := range g {
		if _, ok := w[series]; !ok {
			t.Errorf("delivered forecasts of series %q, which was not written", series)
		}
	}
}
