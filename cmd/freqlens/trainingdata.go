package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/service"
)

// trainingSource names where train reads: --data, or --from-topic with
// --config.
type trainingSource struct {
	data, configPath string
	fromTopic        bool
	since            time.Duration
}

// loadTrainingData reads src. A CSV whose header names the series and time
// fields (input.series_field, input.time_field: "series" and "ts" unless
// --config says otherwise), an Arrow IPC or a Parquet file is long-format
// history; another CSV is a wide benchmark file. Of long-format history it
// also returns the settings it was read with, for the model to record
// (recordInput); nil for a wide file.
func loadTrainingData(ctx context.Context, src trainingSource, split history.Split, stderr io.Writer) (*history.Data, map[string]string, error) {
	cfg := service.DefaultConfig()
	if src.configPath != "" {
		var err error
		if cfg, err = loadConfig(src.configPath); err != nil {
			return nil, nil, err
		}
	}
	if src.fromTopic {
		if src.configPath == "" {
			return nil, nil, fmt.Errorf("--from-topic needs --config: the serve configuration names the brokers, the topic and the input fields")
		}
		d, err := topicData(ctx, cfg, src.since, split, stderr)
		return d, recordInput(cfg), err
	}
	format, err := history.Detect(src.data, cfg.Readings)
	if err != nil {
		return nil, nil, err
	}
	if format == "" {
		d, err := history.FromWideCSV(src.data, split)
		if err != nil {
			return nil, nil, withLongHint(err, src.data, cfg.Readings)
		}
		return d, nil, nil
	}
	d, err := history.FromFile(ctx, src.data, format, cfg.Readings, cfg.HistoryPanel(""), split)
	return d, recordInput(cfg), err
}

// topicData reads the retained history of the configured input topic,
// showing its progress.
func topicData(ctx context.Context, cfg service.Config, since time.Duration, split history.Split, stderr io.Writer) (*history.Data, error) {
	kc, err := kafkaconn.New(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	defer kc.Close()
	if err := kc.Connect(ctx); err != nil {
		return nil, err
	}
	topic := cfg.Stream.Topic
	opts := history.TopicOptions{}
	if since > 0 {
		opts.Since = time.Now().Add(-since)
	}
	start := time.Now()
	last := start
	opts.Progress = func(read, total int64) {
		if now := time.Now(); now.Sub(last) >= time.Second || read == total {
			last = now
			fmt.Fprintf(stderr, "\rreading %s: %d of %d messages (%.0f%%)", topic, read, total, 100*float64(read)/float64(max(total, 1)))
		}
	}
	d, err := history.FromTopic(ctx, kc, topic, opts, cfg.Readings, cfg.HistoryPanel(""), split)
	fmt.Fprintf(stderr, "\n")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "read topic %s in %v\n", topic, time.Since(start).Round(100*time.Millisecond))
	return d, nil
}
