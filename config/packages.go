package config

import (
	"time"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
)

// KafkaConfig returns the connection settings of every Kafka client.
func (f *File) KafkaConfig() kafkaconn.Config {
	return kafkaconn.Config{
		Brokers: f.Kafka.Brokers,
		TLS:     f.Kafka.TLS,
		SASL:    kafkaconn.SASL{Mechanism: f.Kafka.SASL.Mechanism, Username: f.Kafka.SASL.Username, Password: f.Kafka.SASL.Password},
	}
}

// StreamConfig returns the consumer's configuration.
func (f *File) StreamConfig() stream.Config {
	return stream.Config{
		Group:           f.Kafka.Group,
		Topic:           f.Topics.Input,
		DeadLetterTopic: f.Topics.DeadLetter,
		Format:          stream.Format(f.Input.Format),
		SeriesField:     f.Input.SeriesField,
		TimeField:       f.Input.TimeField,
		ValueFields:     f.Input.ValueFields,
		CSVColumns:      f.Input.CSVColumns,
		MaxFuture:       time.Duration(f.Input.MaxFuture),
		BatchRows:       f.Input.BatchRows,
		BatchLatency:    time.Duration(f.Input.BatchLatency),
	}
}

// WindowConfig returns the windows' configuration; the pipeline fills in the
// lookback from the model.
func (f *File) WindowConfig() window.Config {
	gap := *f.Window.MaxGap
	if gap == 0 {
		gap = -1 // window: -1 restarts on any gap; 0 would mean its default
	}
	return window.Config{
		Fields:          f.Input.ValueFields,
		Cadence:         time.Duration(f.Input.Cadence),
		Stride:          f.Window.Stride,
		MaxGap:          gap,
		Fill:            window.Fill(f.Window.Fill),
		AllowedLateness: time.Duration(f.Window.AllowedLateness),
		SeriesTTL:       time.Duration(f.Window.SeriesTTL),
		MaxSeries:       f.Window.MaxSeries,
	}
}

// SinkConfig returns the producer's configuration.
func (f *File) SinkConfig() sink.Config {
	mode := wire.AttributionMode(f.Output.Attributions)
	if *f.Topics.Attributions == "" {
		mode = wire.AttributionsOff
	}
	return sink.Config{
		ForecastTopic:    f.Topics.Forecasts,
		AttributionTopic: *f.Topics.Attributions,
		Format:           wire.Format(f.Output.Format),
		Attributions:     mode,
	}
}

// PipelineConfig returns the service's own configuration.
func (f *File) PipelineConfig() pipeline.Config {
	return pipeline.Config{
		Fields:           f.Input.ValueFields,
		Cadence:          time.Duration(f.Input.Cadence),
		Workers:          f.Service.Workers,
		MaxBatch:         f.Service.MaxBatch,
		ShutdownTimeout:  time.Duration(f.Service.ShutdownTimeout),
		SkipAttributions: *f.Topics.Attributions == "",
	}
}

// TopicNames returns every topic the service uses, for creating them on an
// embedded broker.
func (f *File) TopicNames() []string {
	names := []string{f.Topics.Input, f.Topics.Forecasts, f.Topics.DeadLetter}
	if *f.Topics.Attributions != "" {
		names = append(names, *f.Topics.Attributions)
	}
	if *f.Topics.Drift != "" {
		names = append(names, *f.Topics.Drift)
	}
	if f.Topics.Models != "" {
		names = append(names, f.Topics.Models)
	}
	return names
}

// OnlineConfig returns the online learner's configuration.
func (f *File) OnlineConfig() online.Config {
	o := f.Online
	return online.Config{
		Enabled:        o.Enabled,
		Interval:       time.Duration(o.Interval),
		MinNewSamples:  o.MinNewSamples,
		ReplaySize:     o.ReplaySize,
		Replay:         o.Replay,
		LearningRate:   o.LearningRate,
		Steps:          o.Steps,
		TrainHeads:     o.TrainHeads,
		PromoteMargin:  o.PromoteMargin,
		CheckpointDir:  o.CheckpointDir,
		Keep:           o.KeepCheckpoints,
		DriftThreshold: o.DriftThreshold,
		MinDuration:    time.Duration(o.MinDuration),
		TrackSeries:    o.TrackSeries,
	}
}
