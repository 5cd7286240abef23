package readings

import "fmt"

// Reasons a message is poison: the bounded set of values of
// DecodeError.Reason, of the reason label of
// freqlens_stream_decode_errors_total (package stream counts them) and of
// the freqlens-dlq-reason header. The pipeline adds reasons of its own for
// readings it refuses after decoding (package pipeline).
const (
	// ReasonUnparsable: the bytes are not the configured format (not a JSON
	// object, not one CSV line, not an Arrow IPC stream, trailing bytes).
	ReasonUnparsable = "unparsable"
	// ReasonMissingField: the time or a value field is absent or null, a
	// CSV field is empty, an Arrow column has nulls, or there is no series
	// field and no key.
	ReasonMissingField = "missing_field"
	// ReasonWrongType: a field has the wrong type (a value that is not a
	// number, a series that is not a string or not UTF-8, a time that is
	// neither a string nor a number).
	ReasonWrongType = "wrong_type"
	// ReasonBadTimestamp: a time that is neither RFC 3339 nor integral
	// epoch milliseconds, or is out of range.
	ReasonBadTimestamp = "bad_timestamp"
	// ReasonNonFinite: a value is NaN or ±Inf (including the strings "NaN"
	// and "Infinity", and numbers too large for a float64).
	ReasonNonFinite = "non_finite"
	// ReasonFutureTimestamp: a reading is later than now + Config.MaxFuture.
	ReasonFutureTimestamp = "future_timestamp"
	// ReasonEmptySeries: the series id is the empty string.
	ReasonEmptySeries = "empty_series"
	// ReasonBadSchema: an Arrow stream lacks a configured column or has
	// one of the wrong type, or a CSV line has the wrong number of columns.
	ReasonBadSchema = "bad_schema"
	// ReasonSeriesTooLong: the series id is longer than
	// Config.MaxSeriesBytes.
	ReasonSeriesTooLong = "series_too_long"
	// ReasonTooOld: a reading is more than Config.MaxPast behind the
	// newest time its partition has seen.
	ReasonTooOld = "too_old"
	// ReasonOutOfRange: a value lies outside Config.ValueRange. The
	// pipeline dead-letters with this reason too the readings its windows
	// refuse as implausible for their series (window.max_jump): the same
	// judgement, made with the series' recent range.
	ReasonOutOfRange = "out_of_range"
)

// Reasons lists every Reason, in a fixed order.
var Reasons = []string{
	ReasonUnparsable, ReasonMissingField, ReasonWrongType, ReasonBadTimestamp,
	ReasonNonFinite, ReasonFutureTimestamp, ReasonEmptySeries, ReasonBadSchema,
	ReasonSeriesTooLong, ReasonTooOld, ReasonOutOfRange,
}

// DecodeError says why a message is poison. Decoders set Reason and Err;
// the consumer (package stream) adds the message's coordinates.
type DecodeError struct {
	Topic     string
	Partition int
	Offset    int64
	// Reason is one of Reasons.
	Reason string
	// Err says what exactly is wrong, naming the field.
	Err error
}

// Error returns "decode <topic>/<partition>@<offset>: <reason>: <err>".
func (e *DecodeError) Error() string {
	if e.Topic == "" {
		return fmt.Sprintf("decode message: %s: %v", e.Reason, e.Err)
	}
	return fmt.Sprintf("decode %s/%d@%d: %s: %v", e.Topic, e.Partition, e.Offset, e.Reason, e.Err)
}

// Unwrap returns Err.
func (e *DecodeError) Unwrap() error { return e.Err }

func poison(reason string, format string, args ...any) *DecodeError {
	return &DecodeError{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// quote renders a value from a message for an error message, cut short.
func quote(b []byte) string {
	const max = 40
	if len(b) > max {
		return fmt.Sprintf("%q…", b[:max])
	}
	return fmt.Sprintf("%q", b)
}
