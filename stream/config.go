package stream

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Consumer: its group and topics, batching, fetching
// and the group's timing. Each field names its YAML key, which Validate's
// errors name too. NewConsumer takes it as given: no field is filled in, so
// start from DefaultConfig and change what you mean to. The defaults below
// are DefaultConfig's. The brokers, TLS and SASL are the kafkaconn.Client's;
// how messages are decoded is the readings.Config given to NewConsumer.
type Config struct {
	// Group is the consumer group id; the group's committed offsets say
	// where a restarted consumer resumes (kafka.group); required.
	//
	// Default: freqlens
	Group string
	// Topic is the input topic of readings (topics.input); required.
	//
	// Default: readings
	Topic string
	// DeadLetterTopic receives poison messages: the original key and value
	// with headers saying why, partitioned by key as the forecasts are (see
	// Consumer) (topics.dead_letter). Required unless DropPoison is set;
	// with DropPoison it is not written, and may be empty.
	//
	// Default: readings.dlq
	DeadLetterTopic string
	// DropPoison counts and logs poison messages but does not write them
	// anywhere, not even to DeadLetterTopic (input.drop_poison).
	//
	// Default: false (poison goes to DeadLetterTopic)
	DropPoison bool

	// BatchRows flushes a batch once it holds this many rows (or this many
	// messages, poison included) (input.batch_rows); at least 1. An Arrow
	// message is never split, so a batch may hold more.
	//
	// Default: 4096
	BatchRows int
	// BatchLatency flushes a batch this long after its first message
	// arrived, however few rows it holds (input.batch_latency); positive.
	// Under load batches close on BatchRows first, so it only decides how
	// long a reading waits when the flow is moderate.
	//
	// Each batch is committed after its outputs, a round trip to the
	// brokers, so a shorter latency means more commits a second at a
	// moderate flow (up to 200 at 5ms).
	//
	// Default: 5ms (at 5,000 readings/s its p99 latency is 36 ms against
	// 47–51 ms at 10ms, for about 5% more CPU a reading; go test -run '^$'
	// -bench 'Latency/steady' -benchtime 1x ./pipeline/)
	BatchLatency time.Duration

	// MaxWait bounds how long the broker holds a fetch open waiting for
	// MinBytes when the topic is idle (input.fetch_max_wait); positive. It
	// does not delay messages that are already there.
	//
	// Default: 250ms
	MaxWait time.Duration
	// MinBytes is the least data the broker gathers before it answers a
	// fetch (kafka-go ReaderConfig.MinBytes) (input.fetch_min_bytes); at
	// least 1, which answers at once.
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
	// this long. Positive.
	//
	// Default: 10s
	SessionTimeout time.Duration
	// HeartbeatInterval is how often a member heartbeats, and so how soon
	// it learns of a rebalance (kafka.heartbeat_interval). At most a third
	// of SessionTimeout; positive.
	//
	// Default: 3s
	HeartbeatInterval time.Duration
	// RebalanceTimeout is how long the coordinator waits for every member to
	// rejoin during a rebalance (kafka.rebalance_timeout). A member first
	// drains: the batches in flight are written and committed, for at most
	// half of it, so that the next owner of a partition starts where this
	// one stopped. Positive.
	//
	// Default: 30s
	RebalanceTimeout time.Duration
	// JoinGroupBackoff is the wait before joining again after a failed join
	// (kafka.join_group_backoff); positive.
	//
	// Default: 1s
	JoinGroupBackoff time.Duration
	// MaxInflightBytes bounds the bytes of input messages between the fetch
	// and the pipeline's release of their batch (service.max_inflight_bytes):
	// fetching pauses above it, so a burst waits in Kafka, not in memory.
	// At least MaxBytes.
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

// DefaultConfig returns the default of every field: the Config to start
// from.
func DefaultConfig() Config {
	return Config{
		Group:           "freqlens",
		Topic:           "readings",
		DeadLetterTopic: "readings.dlq",
		BatchRows:       4096,
		BatchLatency:    5 * time.Millisecond,
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

// Validate reports the first setting of a Consumer that cannot work,
// naming its YAML key and saying what to write instead. Every field is
// checked as it is: a zero is a value, not the default. An empty
// topics.dead_letter means something only with input.drop_poison.
func (cfg Config) Validate() error {
	d := DefaultConfig()
	switch {
	case cfg.Group == "":
		return fmt.Errorf("kafka.group is empty; name the consumer group (default %q)", d.Group)
	case cfg.Topic == "":
		return fmt.Errorf("topics.input is empty; name the topic of the readings (default %q)", d.Topic)
	case !cfg.DropPoison && cfg.DeadLetterTopic == "":
		return fmt.Errorf("topics.dead_letter is empty; name the topic poison messages go to (default %q), or set input.drop_poison: true to drop them",
			d.DeadLetterTopic)
	case !cfg.DropPoison && cfg.DeadLetterTopic == cfg.Topic:
		return fmt.Errorf("topics.dead_letter is the input topic %q; poison would be read again, use another topic", cfg.Topic)
	case cfg.BatchRows < 1:
		return fmt.Errorf("input.batch_rows = %d; use at least 1 (default %d)", cfg.BatchRows, d.BatchRows)
	case cfg.BatchLatency <= 0:
		return fmt.Errorf("input.batch_latency = %v; use a positive duration (default %v)", cfg.BatchLatency, d.BatchLatency)
	case cfg.MaxWait <= 0:
		return fmt.Errorf("input.fetch_max_wait = %v; use a positive duration (default %v)", cfg.MaxWait, d.MaxWait)
	case cfg.MinBytes < 1:
		return fmt.Errorf("input.fetch_min_bytes = %d; use at least 1 (default %d)", cfg.MinBytes, d.MinBytes)
	case cfg.MaxBytes < cfg.MinBytes:
		return fmt.Errorf("input.fetch_max_bytes = %d is below input.fetch_min_bytes = %d; raise it above the largest message (default %d)",
			cfg.MaxBytes, cfg.MinBytes, d.MaxBytes)
	case cfg.SessionTimeout <= 0:
		return fmt.Errorf("kafka.session_timeout = %v; use a positive duration (default %v)", cfg.SessionTimeout, d.SessionTimeout)
	case cfg.HeartbeatInterval <= 0:
		return fmt.Errorf("kafka.heartbeat_interval = %v; use a positive duration, at most a third of kafka.session_timeout (default %v)",
			cfg.HeartbeatInterval, d.HeartbeatInterval)
	case cfg.RebalanceTimeout <= 0:
		return fmt.Errorf("kafka.rebalance_timeout = %v; use a positive duration (default %v)", cfg.RebalanceTimeout, d.RebalanceTimeout)
	case cfg.JoinGroupBackoff <= 0:
		return fmt.Errorf("kafka.join_group_backoff = %v; use a positive duration (default %v)", cfg.JoinGroupBackoff, d.JoinGroupBackoff)
	case 3*cfg.HeartbeatInterval > cfg.SessionTimeout:
		return fmt.Errorf("kafka.heartbeat_interval = %v is more than a third of kafka.session_timeout = %v; "+
			"a member would be declared dead between two heartbeats; use at most %v", cfg.HeartbeatInterval, cfg.SessionTimeout, cfg.SessionTimeout/3)
	case cfg.MaxInflightBytes <= 0:
		return fmt.Errorf("service.max_inflight_bytes = %d; use a positive number of bytes (default %d)", cfg.MaxInflightBytes, d.MaxInflightBytes)
	case cfg.MaxInflightBytes < int64(cfg.MaxBytes):
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
