package sink

import (
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/defaults"
	"github.com/freqlens/freqlens/wire"
)

// Config configures the Kafka sink. A zero field means its default
// (DefaultConfig) unless its comment says otherwise; each field names its
// YAML key, which Validate's errors name too. The brokers, TLS and SASL are
// the kafkaconn.Client's, given to New.
type Config struct {
	// ForecastTopic receives one message per forecast (topics.forecasts).
	//
	// Default: forecasts
	ForecastTopic string
	// AttributionTopic receives one message per forecast with its
	// attribution (topics.attributions). Empty writes no attributions: the
	// zero value turns them off.
	//
	// Default (DefaultConfig): attributions
	AttributionTopic string
	// Format is the encoding of both topics (output.format):
	// wire.FormatJSON or wire.FormatArrow.
	//
	// Default: json
	Format wire.Format
	// Attributions is how much of each attribution is written
	// (output.attributions): wire.AttributionsFull or
	// wire.AttributionsSummary; wire.AttributionsOff writes none, as an
	// empty AttributionTopic does.
	//
	// Default: full
	Attributions wire.AttributionMode
	// BatchTimeout is how long a partly filled batch waits for more messages
	// before it is sent (output.batch_timeout). Write waits for its last
	// batch, so this is the latency the sink adds.
	//
	// Default: 2ms
	BatchTimeout time.Duration
	// BatchSize is the most messages in one produce request per partition
	// (output.batch_size).
	//
	// Default: 1000
	BatchSize int
	// BatchBytes bounds one produce request per partition, and therefore one
	// message (output.batch_bytes): keep it at most the topics'
	// max.message.bytes.
	//
	// Default: 1048576 (1 MiB, the brokers' default limit)
	BatchBytes int64
	// WriteTimeout bounds one produce request (output.write_timeout).
	//
	// Default: 10s
	WriteTimeout time.Duration
	// MaxAttempts is how many times a batch is sent before its Write fails
	// (output.max_attempts). A retried batch may be stored twice; the
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

// DefaultConfig returns the default of every field.
func DefaultConfig() Config {
	return Config{
		ForecastTopic:    "forecasts",
		AttributionTopic: "attributions",
		Format:           wire.FormatJSON,
		Attributions:     wire.AttributionsFull,
		BatchTimeout:     2 * time.Millisecond,
		BatchSize:        1000,
		BatchBytes:       1 << 20,
		WriteTimeout:     10 * time.Second,
		MaxAttempts:      10,
		Compression:      "none",
	}
}

// withDefaults returns cfg with every zero field but AttributionTopic set
// to its default, and no attribution topic when attributions are off.
func (cfg Config) withDefaults() Config {
	topic := cfg.AttributionTopic
	defaults.Fill(&cfg, DefaultConfig())
	cfg.AttributionTopic = topic // "" turns attributions off
	if cfg.Attributions == wire.AttributionsOff {
		cfg.AttributionTopic = ""
	}
	return cfg
}

// codecs are the values of output.compression.
var codecs = map[string]kafka.Compression{"none": 0, "gzip": kafka.Gzip, "snappy": kafka.Snappy, "lz4": kafka.Lz4, "zstd": kafka.Zstd}

// Validate reports the first setting that cannot work, with zero fields
// taken as their defaults, naming its YAML key and saying what to change.
func (cfg Config) Validate() error {
	cfg = cfg.withDefaults()
	d := DefaultConfig()
	if cfg.AttributionTopic == cfg.ForecastTopic {
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
	case cfg.BatchTimeout < 0:
		return fmt.Errorf("output.batch_timeout = %s is negative; use a few milliseconds (default %s)", cfg.BatchTimeout, d.BatchTimeout)
	case cfg.BatchSize < 0:
		return fmt.Errorf("output.batch_size = %d is negative; use at least 1 (default %d)", cfg.BatchSize, d.BatchSize)
	case cfg.BatchBytes < 1024:
		return fmt.Errorf("output.batch_bytes = %d cannot hold a forecast message; use at least 1024, normally the topics' max.message.bytes (default %d)",
			cfg.BatchBytes, d.BatchBytes)
	case cfg.WriteTimeout < 0:
		return fmt.Errorf("output.write_timeout = %s is negative; use a duration such as %s", cfg.WriteTimeout, d.WriteTimeout)
	case cfg.MaxAttempts < 0:
		return fmt.Errorf("output.max_attempts = %d is negative; use at least 1 (default %d)", cfg.MaxAttempts, d.MaxAttempts)
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
