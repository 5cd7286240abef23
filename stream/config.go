package stream

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/internal/defaults"
)

// Config configures a Consumer: its group and topics, batching, fetching
// and the group's timing. A zero field means its default (DefaultConfig)
// unless its comment says otherwise; each field names its YAML key, which
// Validate's errors name too. The brokers, TLS and SASL are the
// kafkaconn.Client's; how messages are decoded is the readings.Config given
// to NewConsumer.
type Config struct {
	// Group is the consumer group id; the group's committed offsets say
	// where a restarted consumer resumes (kafka.group).
	//
	// Default: freqlens
	Group string
	// Topic is the input topic of readings (topics.input).
	//
	// Default: readings
	Topic string
	// DeadLetterTopic receives poison messages: the original key and value
	// with headers saying why, partitioned by key as the forecasts are (see
	// Consumer) (topics.dead_letter). Required (the default names one)
	// unless DropPoison is set.
	//
	// Default: readings.dlq
	DeadLetterTopic string
	// DropPoison counts and logs poison messages but does not write them
	// anywhere (input.drop_poison).
	//
	// Default: false (poison goes to DeadLetterTopic)
	DropPoison bool

	// BatchRows flushes a batch once it holds this many rows (or this many
	// messages, poison included) (input.batch_rows). An Arrow message is
	// never split, so a batch may hold more.
	//
	// Default: 4096
	BatchRows int
	// BatchLatency flushes a batch this long after its first message
	// arrived, however few rows it holds (input.batch_latency).
	//
	// Default: 10ms
	BatchLatency time.Duration

	// MaxWait bounds how long the broker holds a fetch open waiting for
	// MinBytes when the topic is idle (input.fetch_max_wait). It does not
	// delay messages that are already there.
	//
	// Default: 250ms
	MaxWait time.Duration
	// MinBytes is the least data the broker gathers before it answers a
	// fetch (kafka-go ReaderConfig.MinBytes) (input.fetch_min_bytes); 1
	// answers at once.
	//
	// Default: 1
	MinBytes int
	// MaxBytes bounds one fetch response (kafka-go ReaderConfig.MaxBytes)
	// (input.fetch_max_bytes). It must exceed the largest message.
	//
	// Default: 10 MiB
	MaxBytes int
	// StartOffset says where a group without committed offsets starts
	// (input.start_offset): "first" (the oldest retained message) or "last"
	// (only new messages).
	//
	// Default: "first"
	StartOffset string

	// SessionTimeout is how long the group coordinator waits for a
	// heartbeat before it declares a member dead and moves its partitions
	// (kafka.session_timeout): after a crash, its partitions stand still
	// this long.
	//
	// Default: 10s
	SessionTimeout time.Duration
	// HeartbeatInterval is how often a member heartbeats, and so how soon
	// it learns of a rebalance (kafka.heartbeat_interval). At most a third
	// of SessionTimeout.
	//
	// Default: 3s
	HeartbeatInterval time.Duration
	// RebalanceTimeout is how long the coordinator waits for every member to
	// rejoin during a rebalance (kafka.rebalance_timeout). A member first
	// drains: the batches in flight are written and committed, for at most
	// half of it, so that the next owner of a partition starts where this
	// one stopped.
	//
	// Default: 30s
	RebalanceTimeout time.Duration
	// JoinGroupBackoff is the wait before joining again after a failed join
	// (kafka.join_group_backoff).
	//
	// Default: 1s
	JoinGroupBackoff time.Duration
	// MaxInflightBytes bounds the bytes of input messages between the fetch
	// and the pipeline's release of their batch (service.max_inflight_bytes):
	// fetching pauses above it, so a burst waits in Kafka, not in memory.
	//
	// Default: 64 MiB
	MaxInflightBytes int64
	// RebuildSpan is how much event time before a partition's committed
	// offset is read back when the partition is assigned, so that the
	// windows of its series continue where they were (see Consumer). The
	// service sets it to (L + window.max_gap + 1)·input.cadence +
	// window.allowed_lateness. Not a YAML key.
	//
	// Default: 0 (nothing is read back)
	RebuildSpan time.Duration
}

// DefaultConfig returns the default of every field.
func DefaultConfig() Config {
	return Config{
		Group:           "freqlens",
		Topic:           "readings",
		DeadLetterTopic: "readings.dlq",
		BatchRows:       4096,
		BatchLatency:    10 * time.Millisecond,
		MaxWait:         250 * time.Millisecond,
		MinBytes:        1,
		MaxBytes:        10 << 20,
		StartOffset:     "first",

		SessionTimeout:    10 * time.Second,
		HeartbeatInterval: 3 * time.Second,
		RebalanceTimeout:  30 * time.Second,
		JoinGroupBackoff:  time.Second,
		MaxInflightBytes:  64 << 20,
	}
}

// withDefaults returns cfg with every zero field set to its default.
func (cfg Config) withDefaults() Config {
	dropped := cfg.DropPoison && cfg.DeadLetterTopic == ""
	defaults.Fill(&cfg, DefaultConfig())
	if dropped {
		cfg.DeadLetterTopic = "" // DropPoison needs no topic
	}
	return cfg
}

// Validate reports the first setting of a Consumer that cannot work, with
// zero fields taken as their defaults, naming its YAML key and saying what
// to change.
func (cfg Config) Validate() error {
	cfg = cfg.withDefaults()
	if cfg.DeadLetterTopic != "" && cfg.DeadLetterTopic == cfg.Topic {
		return fmt.Errorf("topics.dead_letter is the input topic %q; poison would be read again, use another topic", cfg.Topic)
	}
	d := DefaultConfig()
	switch {
	case cfg.BatchRows < 0:
		return fmt.Errorf("input.batch_rows = %d is negative; use at least 1 (default %d)", cfg.BatchRows, d.BatchRows)
	case cfg.BatchLatency < 0:
		return fmt.Errorf("input.batch_latency = %v is negative; use a positive duration (default %v)", cfg.BatchLatency, d.BatchLatency)
	case cfg.MaxWait < 0:
		return fmt.Errorf("input.fetch_max_wait = %v is negative; use a positive duration (default %v)", cfg.MaxWait, d.MaxWait)
	case cfg.MinBytes < 0:
		return fmt.Errorf("input.fetch_min_bytes = %d is negative; use at least 1 (default %d)", cfg.MinBytes, d.MinBytes)
	case cfg.MaxBytes < cfg.MinBytes:
		return fmt.Errorf("input.fetch_max_bytes = %d is below input.fetch_min_bytes = %d; raise it above the largest message (default %d)",
			cfg.MaxBytes, cfg.MinBytes, d.MaxBytes)
	case cfg.SessionTimeout < 0 || cfg.HeartbeatInterval < 0 || cfg.RebalanceTimeout < 0 || cfg.JoinGroupBackoff < 0:
		return fmt.Errorf("kafka.session_timeout, kafka.heartbeat_interval, kafka.rebalance_timeout and kafka.join_group_backoff "+
			"are %v, %v, %v and %v; none may be negative", cfg.SessionTimeout, cfg.HeartbeatInterval, cfg.RebalanceTimeout, cfg.JoinGroupBackoff)
	case 3*cfg.HeartbeatInterval > cfg.SessionTimeout:
		return fmt.Errorf("kafka.heartbeat_interval = %v is more than a third of kafka.session_timeout = %v; "+
			"a member would be declared dead between two heartbeats; use at most %v", cfg.HeartbeatInterval, cfg.SessionTimeout, cfg.SessionTimeout/3)
	case cfg.MaxInflightBytes < 0:
		return fmt.Errorf("service.max_inflight_bytes = %d is negative; use a positive number of bytes (default %d)", cfg.MaxInflightBytes, d.MaxInflightBytes)
	case cfg.MaxInflightBytes > 0 && cfg.MaxInflightBytes < int64(cfg.MaxBytes):
		return fmt.Errorf("service.max_inflight_bytes = %d is below input.fetch_max_bytes = %d; raise it to at least that", cfg.MaxInflightBytes, cfg.MaxBytes)
	case cfg.RebuildSpan < 0:
		return fmt.Errorf("stream: rebuild span %v is negative", cfg.RebuildSpan)
	}
	switch cfg.StartOffset {
	case "first", "last":
	default:
		return fmt.Errorf(`input.start_offset = %q is not supported; use "first" or "last"`, cfg.StartOffset)
	}
	return nil
}

// Option sets a collaborator of a Consumer.
type Option func(*options)

type options struct {
	reg    prometheus.Registerer
	logger *slog.Logger
	clock  func() time.Time
	mem    memory.Allocator
}

func newOptions(opts []Option) options {
	o := options{
		logger: slog.New(slog.DiscardHandler),
		clock:  time.Now,
		mem:    memory.DefaultAllocator,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.reg == nil {
		o.reg = prometheus.NewRegistry()
	}
	return o
}

// WithRegisterer registers the Consumer's metrics with reg.
// Default: a private registry (the metrics are kept but not exported).
func WithRegisterer(reg prometheus.Registerer) Option {
	return func(o *options) {
		if reg != nil {
			o.reg = reg
		}
	}
}

// WithLogger logs to l. Default: nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithClock makes clock the decoders' source of "now", for the
// input.max_future check and for the ingest time of messages without a
// timestamp (see readings.NewDecoder). Batching latency uses real timers
// regardless. Default: time.Now.
func WithClock(clock func() time.Time) Option {
	return func(o *options) {
		if clock != nil {
			o.clock = clock
		}
	}
}

// WithAllocator allocates the Arrow buffers of batches from mem (the
// temporary buffers of decoding an Arrow message come from the Go
// allocator). Default: memory.DefaultAllocator.
func WithAllocator(mem memory.Allocator) Option {
	return func(o *options) {
		if mem != nil {
			o.mem = mem
		}
	}
}
