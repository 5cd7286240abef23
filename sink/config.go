package sink

import (
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/wire"
)

// Config configures the Kafka sink. The zero value of every field means its
// default. Brokers, TLS and SASL come from the kafkaconn.Client given to New.
type Config struct {
	// ForecastTopic receives one message per forecast (topics.forecasts).
	//
	// Default: forecasts
	ForecastTopic string
	// AttributionTopic receives one message per forecast with its
	// attribution (topics.attributions); empty writes no attributions.
	//
	// Default: "" (off)
	AttributionTopic string
	// Format is the encoding of both topics (output.format): wire.FormatJSON or
	// wire.FormatArrow.
	//
	// Default: json
	Format wire.Format
	// Attributions is how much of each attribution is written
	// (output.attributions): wire.AttributionsFull or wire.AttributionsSummary;
	// wire.AttributionsOff writes none, as an empty AttributionTopic does.
	//
	// Default: full
	Attributions wire.AttributionMode
	// BatchTimeout is how long a partly filled batch waits for more messages
	// before it is sent. Write waits for its last batch, so this is the
	// latency the sink adds.
	//
	// Default: 2ms
	BatchTimeout time.Duration
	// BatchSize is the most messages in one produce request per partition.
	//
	// Default: 1000
	BatchSize int
	// BatchBytes bounds one produce request per partition, and therefore one
	// message: keep it at most the topics' max.message.bytes.
	//
	// Default: 1048576 (1 MiB, the brokers' default limit)
	BatchBytes int64
	// WriteTimeout bounds one produce request.
	//
	// Default: 10s
	WriteTimeout time.Duration
	// MaxAttempts is how many times a batch is sent before its Write fails.
	// A retried batch may be stored twice; the forecast-id header tells the
	// copies apart.
	//
	// Default: 10
	MaxAttempts int
	// Compression compresses the produced batches: none, gzip, snappy, lz4
	// or zstd.
	//
	// Default: none
	Compression string
}

// The defaults of Config.
const (
	DefaultForecastTopic = "forecasts"
	DefaultBatchTimeout  = 2 * time.Millisecond
	DefaultBatchSize     = 1000
	DefaultBatchBytes    = 1 << 20
	DefaultWriteTimeout  = 10 * time.Second
	DefaultMaxAttempts   = 10
)

// withDefaults fills in the zero fields and checks the result.
func (cfg Config) withDefaults() (Config, kafka.Compression, error) {
	if cfg.ForecastTopic == "" {
		cfg.ForecastTopic = DefaultForecastTopic
	}
	if cfg.Format == "" {
		cfg.Format = wire.FormatJSON
	}
	if cfg.Attributions == "" {
		cfg.Attributions = wire.AttributionsFull
	}
	if cfg.Attributions == wire.AttributionsOff {
		cfg.AttributionTopic = ""
	}
	if cfg.BatchTimeout == 0 {
		cfg.BatchTimeout = DefaultBatchTimeout
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.BatchBytes == 0 {
		cfg.BatchBytes = DefaultBatchBytes
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Compression == "" {
		cfg.Compression = "none"
	}

	if cfg.AttributionTopic == cfg.ForecastTopic {
		return cfg, 0, fmt.Errorf("sink: Config.AttributionTopic = Config.ForecastTopic = %q: attributions need a topic of their own "+
			"(topics.attributions), or an empty one to turn them off", cfg.ForecastTopic)
	}
	if cfg.Format != wire.FormatJSON && cfg.Format != wire.FormatArrow {
		return cfg, 0, fmt.Errorf("sink: Config.Format = %q is not an output format; use %q or %q (output.format)",
			string(cfg.Format), wire.FormatJSON, wire.FormatArrow)
	}
	if err := checkMode(cfg.Attributions, "Config.Attributions (output.attributions)"); err != nil {
		return cfg, 0, err
	}
	switch {
	case cfg.BatchTimeout < 0:
		return cfg, 0, fmt.Errorf("sink: Config.BatchTimeout = %s is negative; use a few milliseconds, e.g. 2ms", cfg.BatchTimeout)
	case cfg.BatchSize < 0:
		return cfg, 0, fmt.Errorf("sink: Config.BatchSize = %d is negative; leave it 0 for %d", cfg.BatchSize, DefaultBatchSize)
	case cfg.BatchBytes < 0:
		return cfg, 0, fmt.Errorf("sink: Config.BatchBytes = %d is negative; leave it 0 for %d", cfg.BatchBytes, DefaultBatchBytes)
	case cfg.BatchBytes < 1024:
		return cfg, 0, fmt.Errorf("sink: Config.BatchBytes = %d cannot hold a forecast message; use at least 1024, normally the topics' max.message.bytes", cfg.BatchBytes)
	case cfg.WriteTimeout < 0:
		return cfg, 0, fmt.Errorf("sink: Config.WriteTimeout = %s is negative; leave it 0 for %s", cfg.WriteTimeout, DefaultWriteTimeout)
	case cfg.MaxAttempts < 0:
		return cfg, 0, fmt.Errorf("sink: Config.MaxAttempts = %d is negative; leave it 0 for %d", cfg.MaxAttempts, DefaultMaxAttempts)
	}
	var codec kafka.Compression
	switch strings.ToLower(cfg.Compression) {
	case "none":
	case "gzip":
		codec = kafka.Gzip
	case "snappy":
		codec = kafka.Snappy
	case "lz4":
		codec = kafka.Lz4
	case "zstd":
		codec = kafka.Zstd
	default:
		return cfg, 0, fmt.Errorf("sink: Config.Compression = %q is not a codec; use none, gzip, snappy, lz4 or zstd", cfg.Compression)
	}
	return cfg, codec, nil
}

// checkMode reports whether m is an attribution mode, naming key.
func checkMode(m wire.AttributionMode, key string) error {
	switch m {
	case wire.AttributionsFull, wire.AttributionsSummary, wire.AttributionsOff:
		return nil
	}
	return fmt.Errorf("sink: %s = %q is not an attribution mode; use %q, %q or %q",
		key, string(m), wire.AttributionsFull, wire.AttributionsSummary, wire.AttributionsOff)
}
