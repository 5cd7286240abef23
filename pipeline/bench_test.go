package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
)

// The streaming benchmarks run the whole service in-process against the
// embedded broker: 1,000 independent-mode series (L=96, H=96, default model
// sizes), JSON readings in, JSON forecasts out. They are one-shot
// measurements: run them with -benchtime 1x.
//
//	go test -run '^$' -bench 'Throughput|Latency' -benchtime 1x ./pipeline/

const benchSeries = 1000

// benchRetainBytes is what the benchmarks' broker keeps of a partition.
const benchRetainBytes = 4 << 20

// benchWorld is a broker, a producer of readings and a model.
type benchWorld struct {
	b      *embedded.Broker
	kc     *kafkaconn.Client
	w      *kafka.Writer
	m      *model.Model
	t0     time.Time
	series []string
	cfg    readings.Config
}

func newBenchWorld(b *testing.B) *benchWorld {
	b.Helper()
	// The broker shares the process: it keeps the newest 4 MiB of each
	// partition, as a real broker's retention would (outside this heap),
	// so that the collector does not mark every forecast of the run beside
	// the service. The readings of a run fit in it whole.
	br, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 6, "forecasts": 6, "attributions": 6, "readings.dlq": 1, "copy": 6, "copy.attributions": 6},
		embedded.RetainBytes(benchRetainBytes))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(br.Close)
	m, err := model.New(model.Config{Horizon: 96, Channels: 1, Mode: model.Independent}, 1)
	if err != nil {
		b.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	kc := kafkatest.Client(b, br.Addrs())
	w := kc.NewWriter("readings")
	// A step is benchSeries readings over six partitions, so a partition's
	// batch never holds more than benchSeries. kafka-go allocates BatchSize
	// message slots for every partition batch it opens: at 5000 that is
	// 4.5 MB every step, a quarter of the process's allocation, on the
	// cores the service shares.
	w.BatchTimeout, w.BatchSize = time.Millisecond, benchSeries
	b.Cleanup(func() { w.Close() })
	bw := &benchWorld{b: br, kc: kc, w: w, m: m, t0: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), cfg: readings.DefaultConfig()}
	for i := range benchSeries {
		bw.series = append(bw.series, fmt.Sprintf("sensor-%04d", i))
	}
	return bw
}

// step produces one reading of every series for hour `step`.
func (bw *benchWorld) step(ctx context.Context, step int) error {
	msgs := make([]kafka.Message, len(bw.series))
	ts := bw.t0.Add(time.Duration(step) * time.Hour)
	for i, s := range bw.series {
		v := 200 + 50*math.Sin(2*math.Pi*float64(step)/24+float64(i)) + float64(i%7)
		msgs[i] = kafka.Message{Key: []byte(s), Value: readings.AppendJSON(nil, readings.Reading{Series: s, Time: ts, Values: []float64{v}}, bw.cfg)}
	}
	return bw.w.WriteMessages(ctx, msgs...)
}

// service starts the pipeline; observe (optional) sees every acked forecast.
func (bw *benchWorld) service(b *testing.B, mode wire.AttributionMode, observe func(*wire.Forecast), extra ...pipeline.Option) (*pipeline.Pipeline, func()) {
	b.Helper()
	reg := prometheus.NewRegistry()
	sc := stream.DefaultConfig() // group freqlens, topics readings and readings.dlq, input.batch_latency 5ms
	src, err := stream.NewConsumer(sc, readingsConfig(nil), bw.kc, stream.WithRegisterer(reg))
	if err != nil {
		b.Fatal(err)
	}
	attr := "attributions"
	if mode == wire.AttributionsOff {
		attr = ""
	}
	sk := sink.DefaultConfig()
	sk.AttributionTopic, sk.Attributions = attr, mode // forecasts to topic forecasts
	snk, err := sink.New(sk, bw.kc, sink.WithRegisterer(reg))
	if err != nil {
		b.Fatal(err)
	}
	opts := []pipeline.Option{pipeline.WithRegisterer(reg)}
	if observe != nil {
		opts = append(opts, pipeline.WithObserver(observe))
	}
	opts = append(opts, extra...)
	w := wiring()
	w.SkipAttributions = mode == wire.AttributionsOff
	w.SharesOnly = mode == wire.AttributionsSummary
	p, err := pipeline.New(w, pipeline.DefaultConfig(), src, window.DefaultConfig(), bw.m, snk, opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return p, func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}
}

// warm fills every series' window (L−1 steps: no forecast yet) and waits
// until the service has consumed them.
func (bw *benchWorld) warm(b *testing.B, p *pipeline.Pipeline) int {
	b.Helper()
	L := bw.m.Lookback()
	for step := range L - 1 {
		if err := bw.step(context.Background(), step); err != nil {
			b.Fatal(err)
		}
	}
	waitUntil(b, func() bool { return p.Stats().Readings >= int64((L-1)*benchSeries) })
	return L - 1
}

func waitUntil(b *testing.B, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatal("condition not met within 5 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// passThrough consumes the readings topic and, committing after each
// acknowledged batch, produces for every reading either the same bytes
// (outputs == nil: the floor any Kafka service on this machine pays) or the
// given pre-encoded messages, one per output topic (the service's own output
// volume without windows or a model). It returns readings/s over n readings.
func (bw *benchWorld) passThrough(b *testing.B, group string, n int, outputs [][]byte) float64 {
	b.Helper()
	r := bw.kc.NewGroupReader(group, "readings", kafka.FirstOffset, kafkaconn.Fetch{MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	topics := []string{"copy", "copy.attributions"}
	writers := make([]*kafka.Writer, max(1, len(outputs)))
	for i := range writers {
		writers[i] = bw.kc.NewWriter(topics[i])
		writers[i].BatchTimeout, writers[i].BatchSize = 2*time.Millisecond, 1000
		defer writers[i].Close()
	}
	ctx := context.Background()
	start := time.Now()
	batch := make([]kafka.Message, 0, 4096)
	for done := 0; done < n; {
		batch = batch[:0]
		fctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		for len(batch) < cap(batch) {
			m, err := r.FetchMessage(fctx)
			if err != nil {
				break
			}
			batch = append(batch, m)
		}
		cancel()
		if len(batch) == 0 {
			continue
		}
		var wg sync.WaitGroup
		for wi, w := range writers {
			out := make([]kafka.Message, len(batch))
			for i, m := range batch {
				out[i] = kafka.Message{Key: m.Key, Value: m.Value}
				if outputs != nil {
					out[i].Value = outputs[wi]
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.WriteMessages(ctx, out...); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		if err := r.CommitMessages(ctx, batch...); err != nil {
			b.Fatal(err)
		}
		done += len(batch)
	}
	return float64(n) / time.Since(start).Seconds()
}

// encodedOutputs returns the messages the service wrote for one forecast in
// the given attribution mode: the forecast, and the attribution unless off.
func encodedOutputs(b *testing.B, f *wire.Forecast, mode wire.AttributionMode) [][]byte {
	b.Helper()
	fc, err := wire.AppendForecastJSON(nil, f)
	if err != nil {
		b.Fatal(err)
	}
	out := [][]byte{fc}
	if mode != wire.AttributionsOff {
		at, err := wire.AppendAttributionJSON(nil, f, mode)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, at)
	}
	return out
}

// BenchmarkThroughput measures sustained readings/s with one forecast per
// reading, for each attribution mode, next to two pass-throughs of the same
// readings measured in the same run: one echoing each reading's bytes
// ("passthrough_readings/s", ratio "ratio") and one producing, per reading,
// the same output messages the service wrote ("equal_output_readings/s",
// ratio "ratio_equal_output"), which isolates the cost of windows, the model
// and encoding from the cost of moving the output bytes.
func BenchmarkThroughput(b *testing.B) {
	const steps = 40 // readings measured per series
	for _, mode := range []wire.AttributionMode{wire.AttributionsOff, wire.AttributionsSummary, wire.AttributionsFull} {
		b.Run("attributions="+string(mode), func(b *testing.B) {
			for b.Loop() {
				bw := newBenchWorld(b)
				var (
					once    sync.Once
					outputs [][]byte
				)
				p, stop := bw.service(b, mode, func(f *wire.Forecast) {
					once.Do(func() { outputs = encodedOutputs(b, f, mode) })
				})
				first, rate := bw.measure(b, p, steps)
				stop()
				total := (first + steps) * benchSeries
				echo := bw.passThrough(b, "passthrough", total, nil)
				equal := bw.passThrough(b, "equal-output", total, outputs)
				b.ReportMetric(rate, "readings/s")
				b.ReportMetric(echo, "passthrough_readings/s")
				b.ReportMetric(rate/echo, "ratio")
				b.ReportMetric(equal, "equal_output_readings/s")
				b.ReportMetric(rate/equal, "ratio_equal_output")
				if raw := bw.kcatRate(b, total); raw > 0 {
					b.ReportMetric(raw, "kcat_readings/s")
					b.ReportMetric(rate/raw, "ratio_kcat")
				}
			}
		})
	}
}

// measure warms every series' window, then produces steps readings of
// each series as fast as the broker takes them and returns the first
// measured step and the readings forecast per second. It reports the
// process's CPU time per reading forecast ("cpu_µs/reading": the service,
// the in-process broker and the producer of the readings together), to
// compare builds by the work they do as well as by their rate. It depends
// on the load too: a service that falls behind forms larger batches and
// spends less per reading.
func (bw *benchWorld) measure(b *testing.B, p *pipeline.Pipeline, steps int) (first int, rate float64) {
	b.Helper()
	first = bw.warm(b, p)
	n := steps * benchSeries
	start, cpu := time.Now(), processCPU()
	defer func() {
		if used := processCPU() - cpu; used > 0 {
			b.ReportMetric(float64(used.Microseconds())/float64(n), "cpu_µs/reading")
		}
	}()
	go func() {
		for s := range steps {
			if err := bw.step(context.Background(), first+s); err != nil {
				b.Error(err)
			}
		}
	}()
	waitUntil(b, func() bool { return p.Stats().Forecasts >= int64(n) })
	return first, float64(n) / time.Since(start).Seconds()
}

// kcatRate times kcat (librdkafka), an independent client, consuming the n
// readings of the topic raw from the beginning to its end, and returns its
// messages per second, or 0 when kcat is not installed: the yardstick the
// throughput ratios are measured against. A read takes a quarter of a
// second, short enough for a moment's slowness of the machine to move it
// by a third, so it is the median of three reads.
func (bw *benchWorld) kcatRate(b *testing.B, n int) float64 {
	b.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		return 0
	}
	rates := []float64{bw.kcatRead(b, path, n), bw.kcatRead(b, path, n), bw.kcatRead(b, path, n)}
	slices.Sort(rates)
	return rates[1]
}

// kcatRead is one timed read of kcatRate.
func (bw *benchWorld) kcatRead(b *testing.B, path string, n int) float64 {
	b.Helper()
	start := time.Now()
	cmd := exec.Command(path, "-C", "-b", bw.b.Addrs()[0], "-t", "readings", "-o", "beginning", "-e", "-q", "-f", "%o\n")
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("kcat: %v", err)
	}
	elapsed := time.Since(start)
	if got := bytes.Count(out, []byte("\n")); got < n {
		b.Fatalf("kcat read %d messages, want at least %d", got, n)
	}
	return float64(n) / elapsed.Seconds()
}

// BenchmarkThroughputOnline measures what the online learner costs the
// serving path, summary attributions: without a learner, with one that
// scores every forecast (as serve always runs it; fine-tuning off), and
// with 80% and 95% prediction intervals too, every forecast carrying them
// from the first (the model has error quantiles). Each variant is its own
// run; "bytes/forecast" is the forecast message's size.
func BenchmarkThroughputOnline(b *testing.B) {
	const steps = 40
	for _, v := range []struct {
		name    string
		learner bool
		levels  []float64
	}{{"no_learner", false, nil}, {"learner", true, nil}, {"learner+intervals", true, []float64{0.8, 0.95}}} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				bw := newBenchWorld(b)
				var extra []pipeline.Option
				if v.learner {
					extra = append(extra, pipeline.WithOnline(newIntervalLearner(b, bw, v.levels)))
				}
				var size atomic.Int64
				p, stop := bw.service(b, wire.AttributionsSummary, func(f *wire.Forecast) {
					if size.Load() == 0 {
						if msg, err := wire.AppendForecastJSON(nil, f); err == nil && (len(v.levels) == 0 || f.Intervals != nil) {
							size.Store(int64(len(msg)))
						}
					}
				}, extra...)
				first, rate := bw.measure(b, p, steps)
				stop()
				b.ReportMetric(rate, "readings/s")
				b.ReportMetric(float64(size.Load()), "bytes/forecast")
				if raw := bw.kcatRate(b, (first+steps)*benchSeries); raw > 0 {
					b.ReportMetric(raw, "kcat_readings/s")
					b.ReportMetric(rate/raw, "ratio_kcat")
				}
			}
		})
	}
}

// newIntervalLearner returns a learner for bw's model that tracks every
// series, fine-tunes nothing, and publishes intervals of these levels from
// each series' first forecast (the model gets error quantiles).
func newIntervalLearner(b *testing.B, bw *benchWorld, levels []float64) *online.Learner {
	b.Helper()
	H := bw.m.Horizon()
	q := &model.ErrorQuantiles{Probs: []float64{0.025, 0.1, 0.9, 0.975}, Horizon: H, Channels: 1, Windows: 1,
		Values: make([]float64, 4*H)}
	for h := range H {
		for k, z := range []float64{-2, -1.3, 1.3, 2} {
			q.Values[k*H+h] = z * (0.2 + float64(h)/float64(H))
		}
	}
	bw.m.Meta.ErrorQuantiles = q
	l, err := online.New(onlineConfig(func(c *online.Config) { c.Intervals, c.TrackSeries = levels, benchSeries }), bw.m, online.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkLatency produces 5,000 readings/s for 1,000 series and reports
// the time from a reading's produce to the acknowledgement of the forecast
// it completed (summary attributions). "steady" sends 50 readings every
// 10 ms; "bursts" sends all 1,000 series at once every 200 ms, so each
// reading also waits for the other 999 forecasts of its burst;
// "steady+finetune" is "steady" with the online learner attached and
// fine-tuning rounds running back to back for the whole measurement.
// The first measured step completes the first window of all 1,000 series
// at once; "max_new_series_ms" is the slowest of their first forecasts.
// "cpu_µs/reading" is the process's CPU (service, broker, producer) per
// reading of the measured flow: what the pace costs, not the most a core
// can do. The consumer runs with the defaults (input.batch_latency 5ms).
func BenchmarkLatency(b *testing.B) {
	for _, pace := range []struct {
		name      string
		every     time.Duration
		chunk     int
		finetune  bool
		intervals bool
	}{{"steady", 10 * time.Millisecond, 50, false, false}, {"steady+finetune", 10 * time.Millisecond, 50, true, false},
		{"steady+intervals", 10 * time.Millisecond, 50, false, true},
		{"bursts", 200 * time.Millisecond, benchSeries, false, false}} {
		b.Run(pace.name, func(b *testing.B) {
			for b.Loop() {
				latencyRun(b, pace.every, pace.chunk, pace.finetune, pace.intervals)
			}
		})
	}
}

// newBenchLearner returns an online learner for bw's model whose replay
// buffer already holds pairs, so that every round fine-tunes and judges.
func newBenchLearner(b *testing.B, bw *benchWorld) *online.Learner {
	b.Helper()
	l, err := online.New(onlineConfig(func(c *online.Config) { c.Enabled, c.Interval, c.MinNewSamples, c.Seed = true, time.Hour, 1<<30, 1 }), bw.m,
		online.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	L, H := bw.m.Lookback(), bw.m.Horizon()
	x, fc := make([]float64, L), make([]float64, H)
	for s := range 8 {
		for step := L; step < L+2*H+100; step++ {
			for i := range x {
				x[i] = 200 + 50*math.Sin(2*math.Pi*float64(step-L+1+i)/24+float64(s))
			}
			l.Observe(&online.Observation{Series: fmt.Sprint("warm-", s), End: bw.t0.Add(time.Duration(step) * time.Hour), Window: x, Forecast: fc})
		}
	}
	return l
}

func latencyRun(b *testing.B, every time.Duration, chunk int, finetune, intervals bool) {
	const seconds = 10
	bw := newBenchWorld(b)
	var extra []pipeline.Option
	var learner *online.Learner
	switch {
	case finetune:
		learner = newBenchLearner(b, bw)
		extra = append(extra, pipeline.WithOnline(learner))
	case intervals:
		// A learner that only scores and publishes 80% and 95% intervals,
		// from the first forecast (the model has error quantiles).
		extra = append(extra, pipeline.WithOnline(newIntervalLearner(b, bw, []float64{0.8, 0.95})))
	}
	var mu sync.Mutex
	sent := map[string]time.Time{} // series|ts → produce time
	var lat []float64
	var firstMax float64 // the slowest of each series' first forecast
	firstSeen := map[string]bool{}
	var measuring atomic.Bool
	p, stop := bw.service(b, wire.AttributionsSummary, func(f *wire.Forecast) {
		if !measuring.Load() {
			return
		}
		now := time.Now()
		mu.Lock()
		if t, ok := sent[f.Series+f.TS.String()]; ok {
			ms := now.Sub(t).Seconds() * 1e3
			lat = append(lat, ms)
			if !firstSeen[f.Series] {
				firstSeen[f.Series] = true
				firstMax = max(firstMax, ms)
			}
		}
		mu.Unlock()
	}, extra...)
	first := bw.warm(b, p)
	measuring.Store(true)
	roundsDone := make(chan int)
	stopRounds := make(chan struct{})
	go func() {
		n := 0
		for learner != nil {
			select {
			case <-stopRounds:
				roundsDone <- n
				return
			default:
			}
			learner.Round(context.Background(), p)
			n++
		}
		<-stopRounds
		roundsDone <- n
	}()
	ticks := int(seconds * time.Second / every)
	cpu := processCPU()
	tick := time.NewTicker(every)
	msgs := make([]kafka.Message, 0, chunk)
	expected := 0
	for k := range ticks {
		<-tick.C
		step := first + k*chunk/benchSeries
		lo := (k * chunk) % benchSeries
		ts := bw.t0.Add(time.Duration(step) * time.Hour)
		msgs = msgs[:0]
		for i := lo; i < lo+chunk; i++ {
			s := bw.series[i]
			v := 200 + 50*math.Sin(2*math.Pi*float64(step)/24+float64(i))
			msgs = append(msgs, kafka.Message{Key: []byte(s), Value: readings.AppendJSON(nil, readings.Reading{Series: s, Time: ts, Values: []float64{v}}, bw.cfg)})
		}
		mu.Lock()
		now := time.Now()
		for i := lo; i < lo+chunk; i++ {
			sent[bw.series[i]+ts.String()] = now
		}
		mu.Unlock()
		if err := bw.w.WriteMessages(context.Background(), msgs...); err != nil {
			b.Fatal(err)
		}
		expected += chunk
	}
	tick.Stop()
	close(stopRounds)
	rounds := <-roundsDone
	waitUntil(b, func() bool { mu.Lock(); defer mu.Unlock(); return len(lat) >= expected })
	used := processCPU() - cpu
	stop()
	if finetune {
		b.ReportMetric(float64(rounds), "finetune_rounds")
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[int(p*float64(len(lat)-1))] }
	b.ReportMetric(q(0.5), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
	b.ReportMetric(lat[len(lat)-1], "max_ms")
	b.ReportMetric(firstMax, "max_new_series_ms")
	b.ReportMetric(float64(expected)/seconds, "readings/s")
	if used > 0 {
		// What the steady flow costs: the service, broker and producer of
		// the process, per reading (the fine-tuning rounds' included).
		b.ReportMetric(float64(used.Microseconds())/float64(expected), "cpu_µs/reading")
	}
}
