package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/freqlens/freqlens/backtest"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/report"
	"github.com/freqlens/freqlens/service"
)

func runBacktest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backtest", flag.ContinueOnError)
	modelPath := fs.String("model", "", "model file written by 'freqlens train'")
	data := fs.String("data", "", "history to replay: a wide CSV, or long-format CSV, Arrow or Parquet as train reads it")
	fromTopic := fs.Bool("from-topic", false, "replay the retained history of topics.input of --config instead of a file")
	configPath := fs.String("config", "", "the serve configuration to replay with (input.*, window.*, service.*, online.*, output.intervals; kafka.* with --from-topic)")
	since := fs.String("since", "", "with --from-topic, only messages of this recent span, e.g. 30d or 720h")
	fineTune := fs.Bool("fine-tune", true, "fine-tune online as online.enabled: true does, and score the frozen model beside it (default: on, or --config's online.enabled)")
	intervals := fs.String("intervals", "", "prediction interval levels, e.g. 0.8,0.95 (default: --config's output.intervals, else 0.8,0.95)")
	from := fs.String("from", "", "start scoring at this time (RFC 3339 or 2006-01-02); the readings before it only fill the windows")
	every := fs.Duration("every", 0, "the timeline's stretch, e.g. 24h (default: a day, or a hundredth of the history)")
	focus := fs.String("focus", "", "keep the timeline to these series, comma-separated (the scores stay every series')")
	workers := fs.Int("workers", 1, "forecasting workers (service.workers); 1 makes a run repeat exactly")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	figures := fs.String("report", "", "also draw the bands' width over time (widths.png and .svg) into this directory")
	logLevel := fs.String("log-level", "warn", "log level of the service's lines on stderr: debug, info, warn, error")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "model"); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case *data == "" && !*fromTopic:
		return fmt.Errorf("give --data FILE, or --from-topic with --config, for the history to replay")
	case *data != "" && *fromTopic:
		return fmt.Errorf("give --data or --from-topic, not both")
	case *fromTopic && *configPath == "":
		return fmt.Errorf("--from-topic reads topics.input through kafka.brokers of --config; give --config")
	case *workers < 1:
		return fmt.Errorf("--workers %d; use at least 1", *workers)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level %q; use debug, info, warn or error", *logLevel)
	}
	m, err := loadModelFile(*modelPath)
	if err != nil {
		return err
	}
	var (
		cfg service.Config
		h   *backtest.History
	)
	if *fromTopic {
		if cfg, err = loadConfig(*configPath); err != nil {
			return err
		}
		if h, err = backtestTopic(ctx, cfg, m, *since, stderr); err != nil {
			return err
		}
	} else {
		if cfg, h, err = backtestFile(ctx, *data, *configPath, m, stderr); err != nil {
			return err
		}
	}
	if given["fine-tune"] || *configPath == "" {
		cfg.Online.Enabled = *fineTune
	}
	switch {
	case *intervals != "":
		levels, err := parseLevels(*intervals)
		if err != nil {
			return err
		}
		cfg.Online.Intervals = levels
	case len(cfg.Online.Intervals) == 0:
		cfg.Online.Intervals = []float64{0.8, 0.95}
	}
	cfg.Pipeline.Workers = *workers
	if err := cfg.Online.Validate(); err != nil {
		return err
	}
	o := backtest.Options{Config: cfg, Every: *every, Progress: stderr,
		Focus: splitList(*focus),
		Log:   slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))}
	if *from != "" {
		t, err := parseAt(*from)
		if err != nil {
			if d, derr := time.Parse("2006-01-02", *from); derr == nil {
				t, err = d, nil
			}
		}
		if err != nil {
			return fmt.Errorf("--from %q is not a time; use RFC 3339 (2026-01-05T08:00:00Z) or a date (2026-01-05)", *from)
		}
		o.From = t
	}
	fmt.Fprintf(stderr, "backtest: replaying %d readings of %d series (%s) through the serving path\n", h.Len(), len(h.Series), h.Stats)
	rep, err := backtest.Run(ctx, m, h, o)
	if err != nil {
		return err
	}
	if *figures != "" {
		files, err := report.WriteWidths(*figures, widthsOf(rep))
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "backtest: drew %s\n", strings.Join(files, ", "))
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	rep.WriteText(stdout)
	return nil
}

// backtestFile reads the history of a file with the serve configuration
// it is read with (detectData): a wide CSV as one series of the model's
// channels, long-format data as train reads it.
func backtestFile(ctx context.Context, path, configPath string, m *model.Model, stderr io.Writer) (service.Config, *backtest.History, error) {
	cfg, format, err := detectData(path, configPath, m, stderr)
	if err != nil {
		return cfg, nil, err
	}
	if format == "" {
		frame, err := loadWide(path, cfg.Readings, stderr)
		if err != nil {
			return cfg, nil, err
		}
		if err := checkFits(m, frame, path); err != nil {
			return cfg, nil, err
		}
		if cfg.Cadence == 0 {
			cfg.Cadence = frame.Cadence
		}
		name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		return cfg, backtest.FromFrame(frame, name), nil
	}
	if cfg.Cadence == 0 {
		cfg.Cadence = m.Meta.Cadence
	}
	h, err := backtest.ReadFile(ctx, path, format, cfg.InputFor(m))
	if err != nil {
		return cfg, nil, err
	}
	return cfg, h, nil
}

// backtestTopic reads the retained history of topics.input.
func backtestTopic(ctx context.Context, cfg service.Config, m *model.Model, since string, stderr io.Writer) (*backtest.History, error) {
	var opts history.TopicOptions
	if since != "" {
		d, err := parseSince(since)
		if err != nil {
			return nil, err
		}
		opts.Since = time.Now().Add(-d)
	}
	if cfg.Cadence == 0 {
		cfg.Cadence = m.Meta.Cadence
	}
	kc, err := kafkaconn.New(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	defer kc.Close()
	if err := kc.Connect(ctx); err != nil {
		return nil, err
	}
	opts.Progress = func(read, total int64) {
		fmt.Fprintf(stderr, "backtest: read %d of %d messages of %s\n", read, total, cfg.Stream.Topic)
	}
	return backtest.ReadTopic(ctx, kc, cfg.Stream.Topic, cfg.InputFor(m), opts)
}

// widthsOf is the timeline of rep as report draws it.
func widthsOf(rep *backtest.Report) report.Widths {
	w := report.Widths{Title: filepath.Base(rep.Data)}
	for _, l := range rep.Intervals {
		w.Levels = append(w.Levels, l.Level)
	}
	w.Width = make([][]float64, len(w.Levels))
	static := len(rep.Timeline) > 0 && len(rep.Timeline[0].StaticWidth) == len(w.Levels)
	if static {
		w.StaticWidth = make([][]float64, len(w.Levels))
	}
	for _, st := range rep.Timeline {
		w.Start = append(w.Start, st.Start)
		w.MAE = append(w.MAE, st.MAE)
		for l := range w.Levels {
			w.Width[l] = append(w.Width[l], st.Width[l])
			if static {
				w.StaticWidth[l] = append(w.StaticWidth[l], st.StaticWidth[l])
			}
		}
	}
	return w
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// parseLevels reads --intervals: levels between 0 and 1, comma-separated.
func parseLevels(s string) ([]float64, error) {
	var out []float64
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || !(v > 0 && v < 1) {
			return nil, fmt.Errorf("--intervals %q: %q is not a level; write levels between 0 and 1, such as 0.8,0.95", s, part)
		}
		out = append(out, v)
	}
	return out, nil
}
