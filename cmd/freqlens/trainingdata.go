package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/freqlens/freqlens/config"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/service"
)

// trainingData is what train learns from, whichever the source: a wide
// benchmark CSV under the standard protocol, or long-format history (a
// file or the input topic) split by time.
type trainingData struct {
	name     string // file base name, or "topic <name>"
	protocol string // the split: ett-hour, ett-minute, ratio, or time
	mode     model.Mode
	columns  []string
	cadence  time.Duration
	scaler   dataset.Scaler
	sha256   string
	// train, val and test are dataset.Windows or dataset.Collection.
	train, val, test model.Source
	// summary says what became of long-format readings, for the log.
	summary string
}

// trainingSource names where train reads: --data, or --from-topic with
// --config, and the window sizes the splits cut.
type trainingSource struct {
	data, configPath  string
	fromTopic         bool
	since             time.Duration
	lookback, horizon int
	// mode is --mode when given, else "": mixed for a wide file, and
	// independent (one model for every series) for long data.
	mode model.Mode
	// maxWindows caps the training windows of long data (a fifth of it the
	// validation windows), drawn with seed; 0 keeps all.
	maxWindows int
	seed       uint64
}

// loadTrainingData reads src. A CSV whose header names the series and time
// fields (input.series_field, input.time_field: "series" and "ts" unless
// --config says otherwise), an Arrow IPC or a Parquet file is long-format
// history; another CSV is a wide benchmark file.
func loadTrainingData(ctx context.Context, src trainingSource, stderr io.Writer) (*trainingData, error) {
	cfg := service.DefaultConfig()
	if src.configPath != "" {
		var err error
		if cfg, err = config.Load(src.configPath, os.LookupEnv); err != nil {
			return nil, err
		}
	}
	if src.fromTopic {
		return topicData(ctx, cfg, src, stderr)
	}
	format, err := history.Detect(src.data, cfg.Readings)
	if err != nil {
		return nil, err
	}
	if format == "" {
		return wideData(src)
	}
	b, err := dataset.NewPanelBuilder(cfg.HistoryPanel(filepath.Base(src.data)))
	if err != nil {
		return nil, err
	}
	stats, err := history.ReadFile(ctx, src.data, format, cfg.Readings, b)
	if err != nil {
		return nil, err
	}
	return panelData(b, stats, src, format.String()+" "+filepath.Base(src.data))
}

// wideData reads a wide benchmark CSV under the standard protocol.
func wideData(src trainingSource) (*trainingData, error) {
	frame, err := dataset.LoadCSV(src.data)
	if err != nil {
		return nil, err
	}
	bm, err := dataset.Standard(frame, src.lookback, src.horizon)
	if err != nil {
		return nil, err
	}
	mode := src.mode
	if mode == "" {
		mode = model.Mixed
	}
	return &trainingData{
		name: filepath.Base(src.data), protocol: string(bm.Protocol), mode: mode, columns: frame.Columns,
		cadence: frame.Cadence, scaler: bm.Scaler, sha256: frame.SHA256,
		train: bm.Train, val: bm.Val, test: bm.Test,
	}, nil
}

// topicData reads the retained history of the configured input topic.
func topicData(ctx context.Context, cfg service.Config, src trainingSource, stderr io.Writer) (*trainingData, error) {
	if src.configPath == "" {
		return nil, fmt.Errorf("--from-topic needs --config: the serve configuration names the brokers, the topic and the input fields")
	}
	kc, err := kafkaconn.New(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	defer kc.Close()
	if err := kc.Connect(ctx); err != nil {
		return nil, err
	}
	topic := cfg.Stream.Topic
	b, err := dataset.NewPanelBuilder(cfg.HistoryPanel("topic " + topic))
	if err != nil {
		return nil, err
	}
	opts := history.TopicOptions{}
	if src.since > 0 {
		opts.Since = time.Now().Add(-src.since)
	}
	start := time.Now()
	last := start
	opts.Progress = func(read, total int64) {
		if now := time.Now(); now.Sub(last) >= time.Second || read == total {
			last = now
			fmt.Fprintf(stderr, "\rreading %s: %d of %d messages (%.0f%%)", topic, read, total, 100*float64(read)/float64(max(total, 1)))
		}
	}
	stats, err := history.ReadTopic(ctx, kc, topic, cfg.Readings, b, opts)
	fmt.Fprintf(stderr, "\n")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "read topic %s in %v\n", topic, time.Since(start).Round(100*time.Millisecond))
	return panelData(b, stats, src, "topic "+topic)
}

// panelData puts long-format readings on steps and splits them by time.
func panelData(b *dataset.PanelBuilder, stats history.Stats, src trainingSource, name string) (*trainingData, error) {
	if stats.Readings == 0 {
		msg := fmt.Sprintf("%s: no readings among %d", name, stats.Messages)
		if stats.Example != "" {
			msg += "; the first refused: " + stats.Example
		}
		return nil, fmt.Errorf("%s; check input.series_field, input.time_field and input.value_fields in --config", msg)
	}
	p, err := b.Build(src.lookback + src.horizon)
	if err != nil {
		return nil, err
	}
	mode := src.mode
	if mode == "" {
		mode = model.Independent
	}
	bm, err := p.Split(src.lookback, src.horizon, mode == model.Independent)
	if err != nil {
		return nil, err
	}
	r := p.Report
	summary := fmt.Sprintf("%s: %s; %d series, %d segments at %v; %d duplicate readings replaced, %d steps filled, %d gaps restart a series",
		name, stats, r.Series, len(p.Segments), p.Cadence, r.Duplicates, r.Filled, r.Restarts)
	if r.ShortSeries > 0 || r.ShortSegments > 0 {
		summary += fmt.Sprintf("; left out as shorter than lookback + horizon: %d segments (%d steps), %d series with nothing longer",
			r.ShortSegments, r.ShortRows, r.ShortSeries)
	}
	if n := bm.Train.Len(); src.maxWindows > 0 && n > src.maxWindows {
		summary += fmt.Sprintf("; training on %d of %d windows drawn at random (--max-windows)", src.maxWindows, n)
	}
	if stats.Example != "" {
		summary += "\n  first refused: " + stats.Example
	}
	return &trainingData{
		name: name, protocol: "time", mode: mode, columns: p.Fields, cadence: p.Cadence,
		scaler: bm.Scaler, train: bm.Train.Sample(src.maxWindows, src.seed),
		val: bm.Val.Sample(src.maxWindows/5, src.seed+1), test: bm.Test, summary: summary,
	}, nil
}
