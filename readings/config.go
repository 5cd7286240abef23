package readings

import (
	"fmt"
	"math"
	"time"
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

// Config says how readings are encoded in Kafka message values and which
// readings are plausible: the input.* keys of the format (the consumer's
// batching and fetching keys are package stream's). Each field names its
// YAML key, which Validate's errors name too. The decoders and encoders
// take it as given: no field is filled in, so start from DefaultConfig and
// change what you mean to. The defaults below are DefaultConfig's.
type Config struct {
	// Format is how message values are encoded (input.format); required.
	//
	// Default: FormatJSON
	Format Format
	// SeriesField names the series id: a JSON field, a CSV column or an
	// Arrow column (input.series_field). When a message lacks it (the field
	// is absent or null, or CSVColumns does not name it) the message key is
	// the series id. Required.
	//
	// Default: "series"
	SeriesField string
	// TimeField names the event time of a reading (input.time_field): RFC
	// 3339 (for example "2026-01-05T08:00:00Z" or
	// "2026-01-05T09:00:00.250+01:00") or epoch milliseconds (a JSON number
	// or a numeric string; in Arrow an int64 column, or a timestamp column of
	// any unit). Times are kept to the millisecond, rounding down.
	// Required.
	//
	// Default: "ts"
	TimeField string
	// ZonelessUTC reads a time written without a zone ("2026-01-05
	// 08:00:00") as UTC, as a wide CSV's dates are. It is for files of
	// history; a live feed keeps it off (no YAML key), so that a producer's
	// local clock is refused rather than taken for UTC.
	//
	// Default: false
	ZonelessUTC bool
	// ValueFields names the values of a reading, in channel order
	// (input.value_fields); several make a multichannel reading. They become
	// the float64 columns 3… of a batch, with these names. At least one.
	//
	// Default: ["value"]
	ValueFields []string
	// CSVColumns names the columns of a CSV message in order
	// (input.csv_columns). Columns whose name is neither SeriesField,
	// TimeField nor a value field (for example "" or "-") are ignored.
	// TimeField and every value field must appear; SeriesField may be left
	// out, and then the key is the series id. Empty means SeriesField,
	// TimeField, ValueFields... in that order.
	//
	// Default: [] (SeriesField, TimeField, ValueFields...)
	CSVColumns []string
	// MaxFuture bounds clock skew: a reading whose time is later than now +
	// MaxFuture is poison (reason "future_timestamp") (input.max_future).
	//
	// Default: 1h
	MaxFuture time.Duration
	// MaxPast bounds how far a reading may be behind the newest time its
	// partition has seen: an earlier one is poison (reason "too_old")
	// (input.max_past); positive. It keeps a reading stamped 1970 from starting a
	// series in the past; readings of known series that are merely late are
	// the windows' business (window.allowed_lateness). A decoder sees
	// messages, not partitions: the consumer (package stream) keeps each
	// partition's newest time and applies MaxPast through
	// Decoder.SetOldest.
	//
	// Default: 168h
	MaxPast time.Duration
	// MaxSeriesBytes bounds the length of a series id: a longer one is
	// poison (reason "series_too_long") (input.max_series_id_bytes); at
	// least 1.
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
}

// defaultValueFields is Schema's field when it is given none.
var defaultValueFields = []string{"value"}

// DefaultConfig returns the default of every field: the Config to start
// from. CSVColumns stays empty: the columns follow the other fields.
func DefaultConfig() Config {
	return Config{
		Format:         FormatJSON,
		SeriesField:    "series",
		TimeField:      "ts",
		ValueFields:    append([]string(nil), defaultValueFields...),
		MaxFuture:      time.Hour,
		MaxPast:        168 * time.Hour,
		MaxSeriesBytes: 256,
	}
}

// csvColumns returns the columns of a CSV message: CSVColumns, or the
// series, time and value fields in that order when it is empty.
func (cfg Config) csvColumns() []string {
	if len(cfg.CSVColumns) > 0 {
		return cfg.CSVColumns
	}
	cols := make([]string, 0, 2+len(cfg.ValueFields))
	cols = append(cols, cfg.SeriesField, cfg.TimeField)
	return append(cols, cfg.ValueFields...)
}

// Validate reports the first setting that cannot work, naming its YAML key
// and saying what to write instead. Every field is checked as it is: a zero
// is a value, not the default, and only an empty CSVColumns and ValueRange
// mean something (the fields in order; no static range).
func (cfg Config) Validate() error {
	d := DefaultConfig()
	switch cfg.Format {
	case FormatJSON, FormatCSV, FormatArrow:
	default:
		return fmt.Errorf("input.format = %q is not supported; use %q, %q or %q",
			cfg.Format, FormatJSON, FormatCSV, FormatArrow)
	}
	switch {
	case cfg.SeriesField == "":
		return fmt.Errorf("input.series_field is empty; name the field that holds the series id (default %q)", d.SeriesField)
	case cfg.TimeField == "":
		return fmt.Errorf("input.time_field is empty; name the field that holds the event time (default %q)", d.TimeField)
	case len(cfg.ValueFields) == 0:
		return fmt.Errorf("input.value_fields is empty; list the reading's value fields (default %v)", d.ValueFields)
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
		columns := cfg.csvColumns()
		cols := make(map[string]int, len(columns))
		for i, c := range columns {
			if !cfg.isReadingField(c) {
				continue
			}
			if j, dup := cols[c]; dup {
				return fmt.Errorf("input.csv_columns[%d] and input.csv_columns[%d] are both %q; name each column once", j, i, c)
			}
			cols[c] = i
		}
		if _, ok := cols[cfg.TimeField]; !ok {
			return fmt.Errorf("input.csv_columns %q has no time column %q; add it at its position", columns, cfg.TimeField)
		}
		for _, f := range cfg.ValueFields {
			if _, ok := cols[f]; !ok {
				return fmt.Errorf("input.csv_columns %q has no value column %q; add it at its position", columns, f)
			}
		}
	}
	switch {
	case cfg.MaxFuture <= 0:
		return fmt.Errorf("input.max_future = %v; use a positive allowance for clock skew (default 1h)", cfg.MaxFuture)
	case cfg.MaxPast <= 0:
		return fmt.Errorf("input.max_past = %v; use a positive duration (default 168h)", cfg.MaxPast)
	case cfg.MaxSeriesBytes < 1:
		return fmt.Errorf("input.max_series_id_bytes = %d; use a positive length in bytes (default %d)", cfg.MaxSeriesBytes, d.MaxSeriesBytes)
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
