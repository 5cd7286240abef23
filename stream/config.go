package stream

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
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

// Config configures a Consumer and the decoders. The zero value of every
// field that is not marked Required means its default.
type Config struct {
	// Group is the consumer group id; the group's committed offsets say
	// where a restarted consumer resumes. Required.
	Group string
	// Topic is the input topic of readings. Required.
	Topic string
	// DeadLetterTopic receives poison messages: the original key and value
	// with headers saying why (see Consumer). Required unless DropPoison is
	// set.
	DeadLetterTopic string
	// DropPoison counts and logs poison messages but does not write them
	// anywhere. Default: false (poison goes to DeadLetterTopic).
	DropPoison bool

	// Format is how message values are encoded.
	//
	// Default: FormatJSON
	Format Format
	// SeriesField names the series id: a JSON field, a CSV column or an
	// Arrow column. When a message lacks it (the field is absent or null,
	// or CSVColumns does not name it) the message key is the series id.
	//
	// Default: "series"
	SeriesField string
	// TimeField names the event time of a reading: RFC 3339 (for example
	// "2026-01-05T08:00:00Z" or "2026-01-05T09:00:00.250+01:00") or epoch
	// milliseconds (a JSON number or a numeric string; in Arrow an int64
	// column, or a timestamp column of any unit). Times are kept to the
	// millisecond, rounding down.
	//
	// Default: "ts"
	TimeField string
	// ValueFields names the values of a reading, in channel order; several
	// make a multichannel reading. They become the float64 columns 3… of a
	// batch, with these names.
	//
	// Default: ["value"]
	ValueFields []string
	// CSVColumns names the columns of a CSV message in order. Columns whose
	// name is neither SeriesField, TimeField nor a value field (for example
	// "" or "-") are ignored. TimeField and every value field must appear;
	// SeriesField may be left out, and then the key is the series id.
	//
	// Default: SeriesField, TimeField, ValueFields...
	CSVColumns []string
	// MaxFuture bounds clock skew: a reading whose time is later than now +
	// MaxFuture is poison (reason "future_timestamp").
	//
	// Default: 1h
	MaxFuture time.Duration

	// BatchRows flushes a batch once it holds this many rows (or this many
	// messages, poison included). An Arrow message is never split, so a
	// batch may hold more.
	//
	// Default: 4096
	BatchRows int
	// BatchLatency flushes a batch this long after its first message
	// arrived, however few rows it holds.
	//
	// Default: 10ms
	BatchLatency time.Duration

	// MaxWait bounds how long the broker holds a fetch open waiting for
	// MinBytes when the topic is idle. It does not delay messages that are
	// already there.
	//
	// Default: 250ms
	MaxWait time.Duration
	// MinBytes is the least data the broker gathers before it answers a
	// fetch (kafka-go ReaderConfig.MinBytes); 1 answers at once.
	//
	// Default: 1
	MinBytes int
	// MaxBytes bounds one fetch response (kafka-go ReaderConfig.MaxBytes).
	// It must exceed the largest message.
	//
	// Default: 10 MiB
	MaxBytes int
	// StartOffset says where a group without committed offsets starts:
	// "first" (the oldest retained message) or "last" (only new messages).
	//
	// Default: "first"
	StartOffset string
}

// Defaults of Config.
const (
	DefaultSeriesField  = "series"
	DefaultTimeField    = "ts"
	DefaultValueField   = "value"
	DefaultMaxFuture    = time.Hour
	DefaultBatchRows    = 4096
	DefaultBatchLatency = 10 * time.Millisecond
	DefaultMaxWait      = 250 * time.Millisecond
	DefaultMinBytes     = 1
	DefaultMaxBytes     = 10 << 20
)

var defaultValueFields = []string{DefaultValueField}

// withDefaults returns cfg with every zero field set to its default. It
// does not modify the caller's slices.
func (cfg Config) withDefaults() Config {
	if cfg.Format == "" {
		cfg.Format = FormatJSON
	}
	if cfg.SeriesField == "" {
		cfg.SeriesField = DefaultSeriesField
	}
	if cfg.TimeField == "" {
		cfg.TimeField = DefaultTimeField
	}
	if len(cfg.ValueFields) == 0 {
		cfg.ValueFields = defaultValueFields
	}
	if len(cfg.CSVColumns) == 0 {
		cols := make([]string, 0, 2+len(cfg.ValueFields))
		cols = append(cols, cfg.SeriesField, cfg.TimeField)
		cfg.CSVColumns = append(cols, cfg.ValueFields...)
	}
	if cfg.MaxFuture == 0 {
		cfg.MaxFuture = DefaultMaxFuture
	}
	if cfg.BatchRows == 0 {
		cfg.BatchRows = DefaultBatchRows
	}
	if cfg.BatchLatency == 0 {
		cfg.BatchLatency = DefaultBatchLatency
	}
	if cfg.MaxWait == 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.MinBytes == 0 {
		cfg.MinBytes = DefaultMinBytes
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.StartOffset == "" {
		cfg.StartOffset = "first"
	}
	return cfg
}

// validateDecode reports the first decoding setting that cannot work,
// saying what to change. cfg has its defaults.
func (cfg Config) validateDecode() error {
	switch cfg.Format {
	case FormatJSON, FormatCSV, FormatArrow:
	default:
		return fmt.Errorf("stream: Format = %q is not supported; use %q, %q or %q",
			cfg.Format, FormatJSON, FormatCSV, FormatArrow)
	}
	if cfg.SeriesField == cfg.TimeField {
		return fmt.Errorf("stream: SeriesField and TimeField are both %q; give the series id and the time their own fields",
			cfg.SeriesField)
	}
	seen := make(map[string]int, len(cfg.ValueFields))
	for i, f := range cfg.ValueFields {
		switch f {
		case "":
			return fmt.Errorf("stream: ValueFields[%d] is empty; name the field that holds the value", i)
		case cfg.SeriesField, cfg.TimeField:
			return fmt.Errorf("stream: ValueFields[%d] = %q is also the series or time field; a field is one of series, time or value",
				i, f)
		case fixedColumns[SeriesColumn], fixedColumns[TimeColumn], fixedColumns[IngestColumn]:
			return fmt.Errorf("stream: ValueFields[%d] = %q collides with the batch column %q that every batch has; rename the value field",
				i, f, f)
		}
		if j, dup := seen[f]; dup {
			return fmt.Errorf("stream: ValueFields[%d] and ValueFields[%d] are both %q; list each value field once", j, i, f)
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
				return fmt.Errorf("stream: CSVColumns[%d] and CSVColumns[%d] are both %q; name each column once", j, i, c)
			}
			cols[c] = i
		}
		if _, ok := cols[cfg.TimeField]; !ok {
			return fmt.Errorf("stream: CSVColumns %q has no time column %q; add it at its position", cfg.CSVColumns, cfg.TimeField)
		}
		for _, f := range cfg.ValueFields {
			if _, ok := cols[f]; !ok {
				return fmt.Errorf("stream: CSVColumns %q has no value column %q; add it at its position", cfg.CSVColumns, f)
			}
		}
	}
	if cfg.MaxFuture < 0 {
		return fmt.Errorf("stream: MaxFuture = %v is negative; use a positive allowance for clock skew (default 1h)", cfg.MaxFuture)
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

// validate reports the first setting of a Consumer that cannot work,
// saying what to change. cfg has its defaults.
func (cfg Config) validate() error {
	if cfg.Group == "" {
		return fmt.Errorf("stream: Group is empty; name the consumer group (its committed offsets are where a restart resumes)")
	}
	if cfg.Topic == "" {
		return fmt.Errorf("stream: Topic is empty; name the input topic of readings")
	}
	if cfg.DeadLetterTopic == "" && !cfg.DropPoison {
		return fmt.Errorf("stream: DeadLetterTopic is empty; name a topic for poison messages, or set DropPoison to discard them")
	}
	if cfg.DeadLetterTopic != "" && cfg.DeadLetterTopic == cfg.Topic {
		return fmt.Errorf("stream: DeadLetterTopic is the input topic %q; poison would be read again, use another topic", cfg.Topic)
	}
	if err := cfg.validateDecode(); err != nil {
		return err
	}
	switch {
	case cfg.BatchRows < 0:
		return fmt.Errorf("stream: BatchRows = %d is negative; use at least 1 (default %d)", cfg.BatchRows, DefaultBatchRows)
	case cfg.BatchLatency < 0:
		return fmt.Errorf("stream: BatchLatency = %v is negative; use a positive duration (default %v)", cfg.BatchLatency, DefaultBatchLatency)
	case cfg.MaxWait < 0:
		return fmt.Errorf("stream: MaxWait = %v is negative; use a positive duration (default %v)", cfg.MaxWait, DefaultMaxWait)
	case cfg.MinBytes < 0:
		return fmt.Errorf("stream: MinBytes = %d is negative; use at least 1 (default %d)", cfg.MinBytes, DefaultMinBytes)
	case cfg.MaxBytes < cfg.MinBytes:
		return fmt.Errorf("stream: MaxBytes = %d is below MinBytes = %d; raise MaxBytes above the largest message (default %d)",
			cfg.MaxBytes, cfg.MinBytes, DefaultMaxBytes)
	}
	switch cfg.StartOffset {
	case "first", "last":
	default:
		return fmt.Errorf(`stream: StartOffset = %q is not supported; use "first" or "last"`, cfg.StartOffset)
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
