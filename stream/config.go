package stream

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/internal/defaults"
)

// Format names how readings are encoded in Kafka message values.
type Format string

const (
	// FormatJSON is one flat JSON object per message:
	//
	//	{"series": "s-17", "ts": "2026-01-05T08:00:00Z", "value": 412.0}
	FormatJSON Format = "json"
	// FormatCSV is one CSV line per message, columns as in Config.CSVColumns:
	//
	//	s-17,2026-01-05T08:00:00Z,412.0
	FormatCSV Format = "csv"
	// FormatArrow is one Arrow IPC stream per message (a schema and one or
	// more record batches), many readings per message.
	FormatArrow Format = "arrow"
)

// Config configures a Consumer and the decoders. A zero field means its
// default (DefaultConfig) unless its comment says otherwise; each field
// names its YAML key, which Validate's errors name too. The brokers, TLS and
// SASL are the kafkaconn.Client's.
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
	// with headers saying why (see Consumer) (topics.dead_letter). Required
	// (the default names one) unless DropPoison is set.
	//
	// Default: readings.dlq
	DeadLetterTopic string
	// DropPoison counts and logs poison messages but does not write them
	// anywhere (input.drop_poison).
	//
	// Default: false (poison goes to DeadLetterTopic)
	DropPoison bool

	// Format is how message values are encoded (input.format).
	//
	// Default: FormatJSON
	Format Format
	// SeriesField names the series id: a JSON field, a CSV column or an
	// Arrow column (input.series_field). When a message lacks it (the field
	// is absent or null, or CSVColumns does not name it) the message key is
	// the series id.
	//
	// Default: "series"
	SeriesField string
	// TimeField names the event time of a reading (input.time_field): RFC
	// 3339 (for example "2026-01-05T08:00:00Z" or
	// "2026-01-05T09:00:00.250+01:00") or epoch milliseconds (a JSON number
	// or a numeric string; in Arrow an int64 column, or a timestamp column of
	// any unit). Times are kept to the millisecond, rounding down.
	//
	// Default: "ts"
	TimeField string
	// ValueFields names the values of a reading, in channel order
	// (input.value_fields); several make a multichannel reading. They become
	// the float64 columns 3… of a batch, with these names.
	//
	// Default: ["value"]
	ValueFields []string
	// CSVColumns names the columns of a CSV message in order
	// (input.csv_columns). Columns whose name is neither SeriesField,
	// TimeField nor a value field (for example "" or "-") are ignored.
	// TimeField and every value field must appear; SeriesField may be left
	// out, and then the key is the series id.
	//
	// Default: SeriesField, TimeField, ValueFields...
	CSVColumns []string
	// MaxFuture bounds clock skew: a reading whose time is later than now +
	// MaxFuture is poison (reason "future_timestamp") (input.max_future).
	//
	// Default: 1h
	MaxFuture time.Duration
	// MaxPast bounds how far a reading may be behind the newest time its
	// partition has seen: an earlier one is poison (reason "too_old")
	// (input.max_past). It keeps a reading stamped 1970 from starting a
	// series in the past; readings of known series that are merely late are
	// the windows' business (window.allowed_lateness).
	//
	// Default: 168h
	MaxPast time.Duration
	// MaxSeriesBytes bounds the length of a series id: a longer one is
	// poison (reason "series_too_long") (input.max_series_id_bytes).
	//
	// Default: 256
	MaxSeriesBytes int
	// ValueRange, when it holds two numbers [lo, hi], is the plausible range
	// of every value field: a value outside it is poison (reason
	// "out_of_range") (input.value_range). The service derives it from the
	// model's normalisation when the configuration leaves it empty.
	//
	// Default: [] (no static range; window.max_jump still judges each value
	// against its series' recent range)
	ValueRange []float64

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

// The default field names, shared without copying by the encoders.
const (
	defaultSeriesField = "series"
	defaultTimeField   = "ts"
)

var defaultValueFields = []string{"value"}

// DefaultConfig returns the default of every field. CSVColumns stays empty:
// its default follows the other fields.
func DefaultConfig() Config {
	return Config{
		Group:           "freqlens",
		Topic:           "readings",
		DeadLetterTopic: "readings.dlq",
		Format:          FormatJSON,
		SeriesField:     defaultSeriesField,
		TimeField:       defaultTimeField,
		ValueFields:     append([]string(nil), defaultValueFields...),
		MaxFuture:       time.Hour,
		MaxPast:         168 * time.Hour,
		MaxSeriesBytes:  256,
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

// withDefaults returns cfg with every zero field set to its default. It
// does not modify the caller's slices.
func (cfg Config) withDefaults() Config {
	dropped := cfg.DropPoison && cfg.DeadLetterTopic == ""
	values := len(cfg.ValueFields) == 0
	defaults.Fill(&cfg, DefaultConfig())
	if dropped {
		cfg.DeadLetterTopic = "" // DropPoison needs no topic
	}
	if values {
		cfg.ValueFields = defaultValueFields // shared, not copied: nobody writes to it
	}
	if len(cfg.CSVColumns) == 0 {
		cols := make([]string, 0, 2+len(cfg.ValueFields))
		cols = append(cols, cfg.SeriesField, cfg.TimeField)
		cfg.CSVColumns = append(cols, cfg.ValueFields...)
	}
	return cfg
}

// validateDecode reports the first decoding setting that cannot work,
// naming its YAML key and saying what to change. cfg has its defaults.
func (cfg Config) validateDecode() error {
	switch cfg.Format {
	case FormatJSON, FormatCSV, FormatArrow:
	default:
		return fmt.Errorf("input.format = %q is not supported; use %q, %q or %q",
			cfg.Format, FormatJSON, FormatCSV, FormatArrow)
	}
	if cfg.SeriesField == cfg.TimeField {
		return fmt.Errorf("input.series_field and input.time_field are both %q; give the series id and the time their own fields",
			cfg.SeriesField)
	}
	seen := make(map[string]int, len(cfg.ValueFields))
	for i, f := range cfg.ValueFields {
		switch f {
		case "":
			return fmt.Errorf("input.value_fields[%d] is empty; name the field that holds the value", i)
		case cfg.SeriesField, cfg.TimeField:
			return fmt.Errorf("input.value_fields[%d] = %q is also the series or time field; a field is one of series, time or value",
				i, f)
		case fixedColumns[SeriesColumn], fixedColumns[TimeColumn], fixedColumns[IngestColumn]:
			return fmt.Errorf("input.value_fields[%d] = %q collides with the batch column %q that every batch has; rename the value field",
				i, f, f)
		}
		if j, dup := seen[f]; dup {
			return fmt.Errorf("input.value_fields[%d] and input.value_fields[%d] are both %q; list each value field once", j, i, f)
		}
		seen[f] = i
	}
	if cfg.Format == FormatCSV {
		cols := make(map[string]int, len(cfg.CSVColumns))
		for i, c := range cfg.CSVColumns {
			if !cfg.isReadingField(c) {
				continue
			}
			if j, dup := cols[c]; dup {
				return fmt.Errorf("input.csv_columns[%d] and input.csv_columns[%d] are both %q; name each column once", j, i, c)
			}
			cols[c] = i
		}
		if _, ok := cols[cfg.TimeField]; !ok {
			return fmt.Errorf("input.csv_columns %q has no time column %q; add it at its position", cfg.CSVColumns, cfg.TimeField)
		}
		for _, f := range cfg.ValueFields {
			if _, ok := cols[f]; !ok {
				return fmt.Errorf("input.csv_columns %q has no value column %q; add it at its position", cfg.CSVColumns, f)
			}
		}
	}
	if cfg.MaxFuture < 0 {
		return fmt.Errorf("input.max_future = %v is negative; use a positive allowance for clock skew (default 1h)", cfg.MaxFuture)
	}
	if cfg.MaxPast < 0 {
		return fmt.Errorf("input.max_past = %v is negative; use a positive duration (default 168h)", cfg.MaxPast)
	}
	if cfg.MaxSeriesBytes < 0 {
		return fmt.Errorf("input.max_series_id_bytes = %d is negative; use a positive length (default 256)", cfg.MaxSeriesBytes)
	}
	switch r := cfg.ValueRange; {
	case len(r) == 0:
	case len(r) != 2:
		return fmt.Errorf("input.value_range = %v; give two numbers [lo, hi], or [] for no static range", r)
	case !(r[0] < r[1]) || math.IsNaN(r[0]) || math.IsNaN(r[1]):
		return fmt.Errorf("input.value_range = %v; lo must be below hi", r)
	}
	return nil
}

// isReadingField reports whether name is the series, time or a value field.
func (cfg Config) isReadingField(name string) bool {
	if name == cfg.SeriesField || name == cfg.TimeField {
		return true
	}
	for _, f := range cfg.ValueFields {
		if name == f {
			return true
		}
	}
	return false
}

// Validate reports the first setting of a Consumer that cannot work, with
// zero fields taken as their defaults, naming its YAML key and saying what
// to change.
func (cfg Config) Validate() error {
	cfg = cfg.withDefaults()
	if cfg.DeadLetterTopic != "" && cfg.DeadLetterTopic == cfg.Topic {
		return fmt.Errorf("topics.dead_letter is the input topic %q; poison would be read again, use another topic", cfg.Topic)
	}
	if err := cfg.validateDecode(); err != nil {
		return err
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

// Option sets a collaborator of a Consumer or a decoder.
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

// WithClock makes clock the source of "now" for the MaxFuture check and
// for the ingest time of messages without a timestamp. Batching latency
// uses real timers regardless. Default: time.Now.
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
