package sink

import (
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/wire"
)

// Config configures the Kafka sink; each field names its YAML key, which
// Validate's errors name too. New takes it as given: no field is filled in,
// so start from DefaultConfig and change what you mean to. The defaults
// below are DefaultConfig's. The brokers, TLS and SASL are the
// kafkaconn.Client's, given to New.
type Config struct {
	// ForecastTopic receives one message per forecast (topics.forecasts);
	// required.
	//
	// Default: forecasts
	ForecastTopic string
	// AttributionTopic receives one message per forecast with its
	// attribution (topics.attributions). Empty writes no attributions, as
	// Attributions off does.
	//
	// Default: attributions
	AttributionTopic string
	// Format is the encoding of both topics (output.format):
	// wire.FormatJSON or wire.FormatArrow.
	//
	// Default: json
	Format wire.Format
	// Attributions is how much of each attribution is written
	// (output.attributions): wire.AttributionsFull or
	// wire.AttributionsSummary; wire.AttributionsOff writes none, as an
	// empty AttributionTopic does (the topic is then not written, whatever
	// it names).
	//
	// Default: full
	Attributions wire.AttributionMode
	// BatchTimeout is how long a partly filled batch waits for more messages
	// before it is sent (output.batch_timeout). Write hands the client all of
	// a chunk's messages at once and waits for them, so a batch gets nothing
	// more by waiting unless other Writes run beside it: the wait is latency
	// the sink adds to every Write. Positive.
	//
	// Default: 50µs (against 2ms: the same throughput, and at 5,000
	// readings/s a p99 latency of 28–39 ms instead of 39–71 ms; go test
	// -run '^$' -bench 'Latency/steady' -benchtime 1x ./pipeline/)
	BatchTimeout time.Duration
	// BatchSize is the most messages in one produce request per partition
	// (output.batch_size); at least 1. Values above 512, the most messages
	// the sink hands the client at once, act as 512.
	//
	// Default: 1000
	BatchSize int
	// BatchBytes bounds one produce request per partition, and therefore one
	// message (output.batch_bytes): keep it at most the topics'
	// max.message.bytes. At least 1024.
	//
	// Default: 1048576 (1 MiB, the brokers' default limit)
	BatchBytes int64
	// WriteTimeout bounds one produce request (output.write_timeout);
	// positive.
	//
	// Default: 10s
	WriteTimeout time.Duration
	// MaxAttempts is how many times a batch is sent before its Write fails
	// (output.max_attempts); at least 1. A retried batch may be stored twice; the
	// forecast-id header tells the copies apart.
	//
	// Default: 10
	MaxAttempts int
	// Compression compresses the produced batches (output.compression):
	// none, gzip, snappy, lz4 or zstd.
	//
	// Default: none
	Compression string
}

// DefaultConfig returns the default of every field: the Config to start
// from.
func DefaultConfig() Config {
	return Config{
		ForecastTopic:    "forecasts",
		AttributionTopic: "attributions",
		Format:           wire.FormatJSON,
		Attributions:     wire.AttributionsFull,
		BatchTimeout:     50 * time.Microsecond,
		BatchSize:        1000,
		BatchBytes:       1 << 20,
		WriteTimeout:     10 * time.Second,
		MaxAttempts:      10,
		Compression:      "none",
	}
}

// codecs are the values of output.compression.
var codecs = map[string]kafka.Compression{"none": 0, "gzip": kafka.Gzip, "snappy": kafka.Snappy, "lz4": kafka.Lz4, "zstd": kafka.Zstd}

// attributions reports whether the sink writes attributions: a topic is
// named and output.attributions is not off.
func (cfg Config) attributions() bool {
	return cfg.AttributionTopic != "" && cfg.Attributions != wire.AttributionsOff
}

// Validate reports the first setting that cannot work, naming its YAML key
// and saying what to write instead. Every field is checked as it is: a zero
// is a value, not the default, and only an empty topics.attributions means
// something (no attributions).
func (cfg Config) Validate() error {
	d := DefaultConfig()
	if cfg.ForecastTopic == "" {
		return fmt.Errorf("topics.forecasts is empty; name the topic the forecasts go to (default %q)", d.ForecastTopic)
	}
	if cfg.attributions() && cfg.AttributionTopic == cfg.ForecastTopic {
		return fmt.Errorf("topics.attributions = topics.forecasts = %q: attributions need a topic of their own, "+
			"or an empty topics.attributions to turn them off", cfg.ForecastTopic)
	}
	if cfg.Format != wire.FormatJSON && cfg.Format != wire.FormatArrow {
		return fmt.Errorf("output.format = %q is not an output format; use %q or %q", string(cfg.Format), wire.FormatJSON, wire.FormatArrow)
	}
	switch cfg.Attributions {
	case wire.AttributionsFull, wire.AttributionsSummary, wire.AttributionsOff:
	default:
		return fmt.Errorf("output.attributions = %q is not an attribution mode; use %q, %q or %q",
			string(cfg.Attributions), wire.AttributionsFull, wire.AttributionsSummary, wire.AttributionsOff)
	}
	switch {
	case cfg.BatchTimeout <= 0:
		return fmt.Errorf("output.batch_timeout = %s; use a positive duration, at most a few milliseconds (default %s)", cfg.BatchTimeout, d.BatchTimeout)
	case cfg.BatchSize < 1:
		return fmt.Errorf("output.batch_size = %d; use at least 1 (default %d)", cfg.BatchSize, d.BatchSize)
	case cfg.BatchBytes < 1024:
		return fmt.Errorf("output.batch_bytes = %d cannot hold a forecast message; use at least 1024, normally the topics' max.message.bytes (default %d)",
			cfg.BatchBytes, d.BatchBytes)
	case cfg.WriteTimeout <= 0:
		return fmt.Errorf("output.write_timeout = %s; use a positive duration (default %s)", cfg.WriteTimeout, d.WriteTimeout)
	case cfg.MaxAttempts < 1:
		return fmt.Errorf("output.max_attempts = %d; use at least 1 (default %d)", cfg.MaxAttempts, d.MaxAttempts)
	}
	if _, ok := codecs[strings.ToLower(cfg.Compression)]; !ok {
		return fmt.Errorf("output.compression = %q is not a codec; use none, gzip, snappy, lz4 or zstd", cfg.Compression)
	}
	return nil
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
