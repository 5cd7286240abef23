package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/feed"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/service"
	"github.com/freqlens/freqlens/training"
	"github.com/freqlens/freqlens/wire"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	series := fs.Int("series", 20, "simulated traffic sensors")
	modelPath := fs.String("model", "", "serve this model instead of training one (it must be independent or take one field)")
	brokerAddr := fs.String("embedded-broker", "127.0.0.1:0", "address of the in-process Kafka-protocol broker (port 0: any free port)")
	metricsAddr := fs.String("metrics-addr", "127.0.0.1:9464", "Prometheus /metrics address; empty turns it off")
	rate := fs.Float64("rate", 10, "simulated hours per second (each sensor sends one reading per simulated hour)")
	duration := fs.Duration("duration", 0, "stop after serving this long (training the demo's model first does not count); 0 runs until Ctrl-C")
	epochs := fs.Int("train-epochs", 6, "epochs of the small model trained at start")
	seed := fs.Uint64("seed", 7, "seed of the simulation and the training")
	finetune := fs.Duration("finetune-interval", 20*time.Second, "how often the online learner fine-tunes on realised values; 0 turns fine-tuning off (errors and drift are still tracked)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *series < 1 || *rate <= 0 || *epochs < 1 || *finetune < 0 {
		return fmt.Errorf("--series, --rate and --train-epochs must be positive, --finetune-interval not negative")
	}
	if *metricsAddr != "" {
		// Said now, not after the model has trained.
		ln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr %s: %w; pass a free address (port 0 picks one) or --metrics-addr \"\" for none", *metricsAddr, err)
		}
		ln.Close()
	}
	started := time.Now()
	log := slog.New(slog.NewTextHandler(io.Discard, nil)) // the summary is the demo's output
	if os.Getenv("FREQLENS_DEMO_LOG") != "" {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}

	// 1. A model: the one given, or a small one trained on simulated traffic.
	var m *model.Model
	if *modelPath != "" {
		var err error
		if m, err = loadModelFile(*modelPath); err != nil {
			return err
		}
		if m.Meta.Cadence == 0 {
			m.Meta.Cadence = feed.SimulationCadence
		}
	} else {
		fmt.Fprintf(stdout, "training a small model on simulated traffic (8 sensors, 12 weeks, hourly)...\n")
		var err error
		if m, err = trainDemoModel(ctx, *epochs, *seed, stdout); err != nil {
			return err
		}
	}

	// 2. The service, on an embedded broker.
	cfg := service.DefaultConfig()
	cfg.EmbeddedBroker = *brokerAddr
	cfg.Cadence = feed.SimulationCadence
	cfg.Readings.MaxFuture = 10 * 365 * 24 * time.Hour
	cfg.Stream.BatchLatency = 5 * time.Millisecond
	cfg.Sink.Attributions = wire.AttributionsSummary
	cfg.MetricsListen = *metricsAddr
	cfg.Online.Enabled = *finetune > 0
	cfg.Online.Interval = max(*finetune, time.Second)
	cfg.Online.Intervals = []float64{0.8, 0.95}
	watch := newWatcher("s-0")
	svc, err := service.New(ctx, cfg, service.WithModel(m), service.WithLogger(log), service.WithObserver(watch.observe))
	if err != nil {
		return err
	}
	defer svc.Close()
	cfg = svc.Config()
	sc := feed.DefaultSimulationConfig() // a year of hourly steps
	sc.Sensors, sc.Rate, sc.HistorySteps, sc.Seed = *series, *rate, m.Lookback()+8, *seed+1
	sim, err := feed.NewSimulation(sc, svc.Kafka(), cfg.Stream.Topic, time.Now)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "broker %s; forecasts on topic %q, attributions on %q", strings.Join(cfg.Kafka.Brokers, ","), cfg.Sink.ForecastTopic, cfg.Sink.AttributionTopic)
	if addr := svc.MetricsAddr(); addr != "" {
		fmt.Fprintf(stdout, "; metrics on http://%s/metrics", addr)
	}
	fmt.Fprintf(stdout, "\n%d sensors, one reading per simulated hour, %g simulated hours per second; drift events on %q", *series, *rate, cfg.DriftTopic)
	if *finetune > 0 {
		fmt.Fprintf(stdout, "; fine-tuning every %s or after %d new realised forecasts", *finetune, cfg.Online.MinNewSamples)
	}
	fmt.Fprintf(stdout, "; Ctrl-C stops\n")
	if url := svc.LiveViewURL(); url != "" {
		fmt.Fprintf(stdout, "live view: %s (open it in a browser)\n", url)
	}

	// 3. Sensors, service and summary until ctx ends (or --duration of
	// serving, training not counted), or until one of them fails, which
	// stops the others.
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	err = runTogether(ctx, svc.Run, sim.Run,
		func(ctx context.Context) error { return summarise(ctx, stdout, svc, watch, started) })
	s := svc.Pipeline().Stats()
	fmt.Fprintf(stdout, "\nstopped: %d readings, %d forecasts written in %s\n", s.Readings, s.Forecasts, time.Since(started).Round(time.Second))
	// The learner's report, as /online serves it: the error since the start.
	if r := svc.Learner().Report(svc.Pipeline(), 0); r.ScoredSteps > 0 {
		ref := "the model's test MSE is in its file"
		if mse, ok := m.Meta.Metrics["test_mse"]; ok {
			ref = fmt.Sprintf("the model's test MSE %.3f", mse)
		}
		fmt.Fprintf(stdout, "online: MSE %.3f over %d realised forecast steps (normalised units; %s); serving version %d; fine-tuning rounds: %s\n",
			r.MSE, r.ScoredSteps, ref, r.ModelVersion, roundCounts(r.Rounds))
		for _, c := range r.Intervals {
			if c.Scored > 0 {
				fmt.Fprintf(stdout, "intervals: the %.0f%% intervals held %.1f%% of %d realised steps\n", 100*c.Level, 100*float64(c.Covered)/float64(c.Scored), c.Scored)
			}
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// trainDemoModel trains an independent model on simulated traffic.
func trainDemoModel(ctx context.Context, epochs int, seed uint64, stdout io.Writer) (*model.Model, error) {
	frame, err := dataset.Synthetic(dataset.Traffic(8, 12*7*24, feed.SimulationCadence, seed))
	if err != nil {
		return nil, err
	}
	if _, err := frame.FillMissing(); err != nil {
		return nil, err
	}
	frame.Name = "simulated traffic"
	d, err := history.FromFrame(frame, history.Split{Lookback: 96, Horizon: 24, Mode: model.Independent})
	if err != nil {
		return nil, err
	}
	d.Cadence = feed.SimulationCadence
	// Trained and scored as train does, so the online error has its test
	// MSE to be compared with (freqlens_model_test_mse, the dashboard, the
	// alert).
	res, err := training.Fit(ctx, d, 96, 24, training.Options{Epochs: epochs, Seed: seed, Epoch: func(s training.EpochStats) {
		fmt.Fprintf(stdout, "  epoch %d/%d: validation MSE %.4f (%.1fs)\n", s.Epoch, s.Epochs, s.ValMSE, s.Seconds)
	}})
	if err != nil {
		return nil, err
	}
	if res.Interrupted {
		return nil, ctx.Err()
	}
	m, met := res.Model, res.Test
	fmt.Fprintf(stdout, "  test MSE %.4f (normalised units; the online MSE below compares with it)\n", met.MSE)
	// A cycle too small to show (below explain.MinCycleShare) is counted
	// with the other frequencies, so that the line makes 100%.
	other := otherShare(m, met.Shares, met.RhythmShares, met.ResidualShare)
	var shown []rhythmReport
	var shares []float64
	for _, r := range rhythmsOf(m, met.Shares, met.RhythmShares) {
		if r.Share < explain.MinCycleShare {
			other += r.Share
			continue
		}
		shown, shares = append(shown, r), append(shares, r.Share)
	}
	if n := len(shown); n > 0 {
		pct := percents(append(shares, other, met.ResidualShare))
		found := make([]string, n)
		for i, r := range shown {
			found[i] = fmt.Sprintf("%s %d%% (%d harmonics)", r.Name, pct[i], len(r.Lines))
		}
		fmt.Fprintf(stdout, "  cycles of the traffic: %s; other frequencies %d%%, residual MLP %d%%\n", strings.Join(found, ", "), pct[n], pct[n+1])
	}
	return m, nil
}

// watcher keeps what the summary shows of one sensor's latest forecast.
type watcher struct {
	series string
	mu     sync.Mutex
	ts     time.Time
	next   float64
	band   [2]float64 // the next hour's first interval; NaN without one
	level  float64
	peak   float64
	peakAt time.Time
	parts  []string
	count  int
}

func newWatcher(series string) *watcher { return &watcher{series: series} }

// observe is called by the pipeline for every acknowledged forecast. It
// names the forecast's cycles (its rhythms, each the exact sum of its
// frequencies' parts), the other frequencies together and the residual.
func (w *watcher) observe(f *wire.Forecast) {
	if f.Series != w.series {
		return
	}
	// The cycles', the other frequencies' and the residual's shares make 1.
	residual, other := 1.0, 0.0
	for _, c := range f.Frequencies {
		if !c.Cycle {
			other += c.Share
		}
	}
	residual -= other
	shares := make([]float64, 0, len(f.Rhythms)+2)
	for _, r := range f.Rhythms {
		residual -= r.Share
		shares = append(shares, r.Share)
	}
	pct := percents(append(shares, other, max(residual, 0)))
	var parts []string
	for i, r := range f.Rhythms {
		if pct[i] > 0 {
			parts = append(parts, fmt.Sprintf("%s cycle %d%%", periodLabel(cycles.FormatPeriod(r.Period), r.PeriodSteps), pct[i]))
		}
	}
	n := len(f.Rhythms)
	parts = append(parts, fmt.Sprintf("other frequencies %d%%", pct[n]), fmt.Sprintf("residual %d%%", pct[n+1]))
	peak, at := math.Inf(-1), 0
	for h, v := range f.Values {
		if v > peak {
			peak, at = v, h
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ts, w.next, w.parts, w.count = f.TS, f.Values[0], parts, w.count+1
	w.band, w.level = [2]float64{math.NaN(), math.NaN()}, 0
	if len(f.Intervals) > 0 {
		iv := f.Intervals[0]
		w.band, w.level = [2]float64{iv.Lower[0], iv.Upper[0]}, iv.Level
	}
	w.peak, w.peakAt = peak, f.TS.Add(time.Duration(at+1)*f.Cadence)
}

// summarise prints one line a second: throughput, lag, and the watched
// sensor's latest forecast with its top attributions.
func summarise(ctx context.Context, out io.Writer, svc *service.Service, w *watcher, started time.Time) error {
	p, l := svc.Pipeline(), svc.Learner()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prev, prevAt, prevErr := p.Stats(), time.Now(), l.Totals()
	first := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		s, now := p.Stats(), time.Now()
		dt := now.Sub(prevAt).Seconds()
		w.mu.Lock()
		line := fmt.Sprintf("%6.0f readings/s %6.0f forecasts/s  %d series", float64(s.Readings-prev.Readings)/dt,
			float64(s.Forecasts-prev.Forecasts)/dt, s.ActiveSeries)
		if e := l.Totals(); e.Count > prevErr.Count {
			_, version := p.Model()
			line += fmt.Sprintf("  online MSE %.3f v%d", e.MSE(prevErr), version)
			prevErr = e
		}
		if w.count > 0 {
			if !first {
				first = true
				fmt.Fprintf(out, "first forecast %s after start\n", time.Since(started).Round(100*time.Millisecond))
			}
			band := ""
			if !math.IsNaN(w.band[0]) {
				band = fmt.Sprintf(" (%.0f%%: %.0f–%.0f)", 100*w.level, w.band[0], w.band[1])
			}
			line += fmt.Sprintf(" | %s at %s: next hour %.0f%s, peak %.0f at %s | %s", w.series, w.ts.Format("Mon 15:04"),
				w.next, band, w.peak, w.peakAt.Format("15:04"), strings.Join(w.parts, ", "))
		}
		w.mu.Unlock()
		fmt.Fprintln(out, line)
		prev, prevAt = s, now
	}
}

// runTogether runs every fn until ctx ends or one of them returns an error,
// which cancels the context the others run with; it returns the first
// error.
func runTogether(ctx context.Context, fns ...func(context.Context) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, fn := range fns {
		g.Go(func() error { return fn(gctx) })
	}
	return g.Wait()
}

// roundCounts writes fine-tuning round outcomes as "10 promoted, 30
// rejected_worse" (outcomes sorted), or "none".
func roundCounts[K ~string](rounds map[K]int64) string {
	if len(rounds) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(rounds)) {
		parts = append(parts, fmt.Sprintf("%d %s", rounds[k], k))
	}
	return strings.Join(parts, ", ")
}
