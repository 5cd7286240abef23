package readings

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// Decoder turns the value of one Kafka message into rows of a batch.
//
// Decode appends the message's readings to rb, which must have been built
// from Schema(cfg.ValueFields...) (Decode panics on another schema, a
// programmer error). key is the message key (the series id when the
// payload has none) and ingest the message timestamp (the clock's now when
// zero). A message is decoded whole or not at all: on error Decode appends
// nothing and returns a *DecodeError whose Reason says why.
//
// SetOldest and Newest let the caller bound event time by what came before
// on the same partition, which a decoder cannot know (it sees messages, not
// partitions): the consumer (package stream) sets the oldest time allowed,
// the newest time its partition has seen less Config.MaxPast, before each
// Decode, and reads the newest time of the message after a Decode that
// succeeded. Both are plain field accesses and allocate nothing.
//
// A Decoder keeps scratch space between calls; it is not safe for
// concurrent use. It does not retain key or value.
type Decoder interface {
	Decode(rb *array.RecordBuilder, key, value []byte, ingest time.Time) error
	// SetOldest makes every reading earlier than ms (epoch milliseconds)
	// poison with ReasonTooOld, until it is set again; NoTime, the
	// initial value, lifts the bound.
	SetOldest(ms int64)
	// Newest returns the latest event time (epoch milliseconds) of the
	// message of the last Decode that returned nil, or NoTime when it held
	// no reading (an Arrow stream without rows). After a failed Decode its
	// value is meaningless.
	Newest() int64
}

// NoTime is the epoch-millisecond time before every other: SetOldest(NoTime)
// lifts the bound on how old a reading may be, and Newest returns it for a
// message without readings.
const NoTime int64 = math.MinInt64

// NewDecoder returns the decoder of cfg.Format: a *JSONDecoder, a
// *CSVDecoder or an *ArrowDecoder. now is the clock of the MaxFuture check
// and of the ingest time of messages without a timestamp; nil means
// time.Now. cfg is taken as given (start from DefaultConfig): an empty
// Format is refused, not read as JSON. Config.MaxPast is not applied by a
// decoder (see SetOldest).
func NewDecoder(cfg Config, now func() time.Time) (Decoder, error) {
	switch cfg.Format {
	case FormatCSV:
		return NewCSVDecoder(cfg, now)
	case FormatArrow:
		return NewArrowDecoder(cfg, now)
	case FormatJSON:
		return NewJSONDecoder(cfg, now)
	}
	return nil, cfg.Validate()
}

// fields is what every decoder needs from Config, and the time bounds of
// the message being decoded.
type fields struct {
	series, time   string
	zonelessUTC    bool // Config.ZonelessUTC
	values         []string
	maxFutureMs    int64
	maxSeriesBytes int
	lo, hi         float64 // the plausible value range; ±Inf without one
	clock          func() time.Time

	// oldestMs is the earliest time a reading may have (see
	// Decoder.SetOldest); newestMs is the latest time of the last message
	// decoded.
	oldestMs, newestMs int64
}

func newFields(cfg Config, format Format, now func() time.Time) (fields, error) {
	cfg.Format = format
	if err := cfg.Validate(); err != nil {
		return fields{}, err
	}
	if now == nil {
		now = time.Now
	}
	f := fields{
		series:         cfg.SeriesField,
		time:           cfg.TimeField,
		zonelessUTC:    cfg.ZonelessUTC,
		values:         append([]string(nil), cfg.ValueFields...),
		maxFutureMs:    cfg.MaxFuture.Milliseconds(),
		maxSeriesBytes: cfg.MaxSeriesBytes,
		lo:             math.Inf(-1),
		hi:             math.Inf(1),
		clock:          now,
		oldestMs:       NoTime,
		newestMs:       NoTime,
	}
	if len(cfg.ValueRange) == 2 {
		f.lo, f.hi = cfg.ValueRange[0], cfg.ValueRange[1]
	}
	return f, nil
}

// SetOldest implements Decoder.
func (d *JSONDecoder) SetOldest(ms int64) { d.f.oldestMs = ms }

// Newest implements Decoder.
func (d *JSONDecoder) Newest() int64 { return d.f.newestMs }

// SetOldest implements Decoder.
func (d *CSVDecoder) SetOldest(ms int64) { d.f.oldestMs = ms }

// Newest implements Decoder.
func (d *CSVDecoder) Newest() int64 { return d.f.newestMs }

// SetOldest implements Decoder.
func (d *ArrowDecoder) SetOldest(ms int64) { d.f.oldestMs = ms }

// Newest implements Decoder.
func (d *ArrowDecoder) Newest() int64 { return d.f.newestMs }

// begin starts a message: no reading seen yet.
func (f *fields) begin() { f.newestMs = NoTime }

// checkSeries reports a series id longer than MaxSeriesBytes.
func (f *fields) checkSeries(series []byte) *DecodeError {
	if len(series) > f.maxSeriesBytes {
		return poison(ReasonSeriesTooLong, "%s %s is %d bytes, more than input.max_series_id_bytes = %d",
			f.series, quote(series), len(series), f.maxSeriesBytes)
	}
	return nil
}

// checkValue reports a value outside ValueRange.
func (f *fields) checkValue(field string, v float64) *DecodeError {
	if v < f.lo || v > f.hi {
		return poison(ReasonOutOfRange, "%s = %g is outside the plausible range [%g, %g] (input.value_range)", field, v, f.lo, f.hi)
	}
	return nil
}

// checkTime reports a reading later than now + MaxFuture or earlier than
// the oldest time allowed, and notes the newest time of the message.
func (f *fields) checkTime(ts, nowMs int64) *DecodeError {
	if perr := f.checkFuture(ts, nowMs); perr != nil {
		return perr
	}
	if ts < f.oldestMs {
		return poison(ReasonTooOld, "%s %s is before %s: more than input.max_past behind the newest time this partition has seen",
			f.time, formatMs(ts), formatMs(f.oldestMs))
	}
	f.newestMs = max(f.newestMs, ts)
	return nil
}

// checkReading applies the checks of one reading of a JSON or CSV message.
func (f *fields) checkReading(series []byte, ts, nowMs int64, vals []float64) *DecodeError {
	if perr := f.checkSeries(series); perr != nil {
		return perr
	}
	if perr := f.checkTime(ts, nowMs); perr != nil {
		return perr
	}
	for j, v := range vals {
		if perr := f.checkValue(f.values[j], v); perr != nil {
			return perr
		}
	}
	return nil
}

// nowMs returns the clock's now in epoch milliseconds.
func (f *fields) nowMs() int64 { return f.clock().UnixMilli() }

// ingestMs returns the ingest time of a message in epoch milliseconds.
func (f *fields) ingestMs(ingest time.Time, nowMs int64) int64 {
	if ingest.IsZero() {
		return nowMs
	}
	return ingest.UnixMilli()
}

// checkFuture reports a reading later than now + MaxFuture.
func (f *fields) checkFuture(ts, nowMs int64) *DecodeError {
	if ts > nowMs && ts-nowMs > f.maxFutureMs {
		ahead := "centuries"
		if d := ts - nowMs; d < math.MaxInt64/int64(time.Millisecond) {
			ahead = (time.Duration(d) * time.Millisecond).String()
		}
		return poison(ReasonFutureTimestamp, "%s %s is %s after now, more than input.max_future = %v",
			f.time, formatMs(ts), ahead, time.Duration(f.maxFutureMs)*time.Millisecond)
	}
	return nil
}

// accept checks one decoded reading (a series id of valid UTF-8, its time
// and values plausible) and appends it to rb: the end every line-oriented
// decoder shares.
func (f *fields) accept(rb *array.RecordBuilder, series []byte, ts int64, ingest time.Time, vals []float64) *DecodeError {
	if !utf8.Valid(series) {
		return poison(ReasonWrongType, "%s %s is not valid UTF-8", f.series, quote(series))
	}
	now := f.nowMs()
	f.begin()
	if perr := f.checkReading(series, ts, now, vals); perr != nil {
		return perr
	}
	appendRow(rb, series, ts, f.ingestMs(ingest, now), vals)
	return nil
}

// appendRow appends one reading to rb, whose schema is Schema(values...).
func appendRow(rb *array.RecordBuilder, series []byte, ts, ingest int64, vals []float64) {
	rb.Field(SeriesColumn).(*array.StringBuilder).BinaryBuilder.Append(series)
	rb.Field(TimeColumn).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
	rb.Field(IngestColumn).(*array.TimestampBuilder).Append(arrow.Timestamp(ingest))
	for j, v := range vals {
		rb.Field(FirstValueColumn + j).(*array.Float64Builder).Append(v)
	}
}

// bytesOf views s as bytes without copying; the bytes must not be written.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// stringOf views b as a string without copying; b must not change while
// the string is in use.
func stringOf(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// parseValue parses the text of a value: a number, or a non-finite spelling
// (which is poison).
func parseValue(field string, b []byte) (float64, *DecodeError) {
	v, err := strconv.ParseFloat(stringOf(b), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && (math.IsInf(v, 0)) {
			return 0, poison(ReasonNonFinite, "%s = %s is beyond the float64 range", field, quote(b))
		}
		return 0, poison(ReasonWrongType, "%s = %s is not a number", field, quote(b))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, poison(ReasonNonFinite, "%s = %s is not finite", field, quote(b))
	}
	return v, nil
}

// parseTimeText parses RFC 3339 or (optionally signed) epoch milliseconds
// into epoch milliseconds; with zonelessUTC, an RFC 3339 time without its
// zone as UTC.
func parseTimeText(field string, b []byte, zonelessUTC bool) (int64, *DecodeError) {
	if len(b) == 0 {
		return 0, poison(ReasonMissingField, "%s is empty", field)
	}
	if ms, ok := parseInt(b); ok {
		return epochMillis(field, ms, b)
	}
	if ms, ok := parseRFC3339(b); ok {
		return ms, nil
	}
	if v, err := strconv.ParseFloat(stringOf(b), 64); err == nil && v >= 1e8 && v < 1e10 {
		return 0, epochSeconds(field, v, b)
	}
	if zonelessUTC {
		// A file's date and time without a zone, as a wide file writes
		// them: to the second or beyond, to the minute, or a date alone.
		var z [32]byte
		switch {
		case len(b) >= 19 && len(b) <= 29 && b[16] == ':' && !bytes.ContainsAny(b[16:], "Zz+-"):
			if ms, ok := parseRFC3339(append(append(z[:0], b...), 'Z')); ok {
				return ms, nil
			}
		case len(b) == 16 && b[13] == ':':
			if ms, ok := parseRFC3339(append(append(z[:0], b...), ":00Z"...)); ok {
				return ms, nil
			}
		case len(b) == 10 && b[4] == '-' && b[7] == '-':
			if ms, ok := parseRFC3339(append(append(z[:0], b...), "T00:00:00Z"...)); ok {
				return ms, nil
			}
		}
	}
	if len(b) >= 19 && len(b) <= 29 && b[4] == '-' && b[7] == '-' && (b[10] == ' ' || b[10] == 'T') && b[13] == ':' && b[16] == ':' &&
		!bytes.ContainsAny(b[16:], "Zz+-") {
		return 0, poison(ReasonBadTimestamp, "%s = %s has no time zone: a reading's time is RFC 3339 with its zone; write %sZ for UTC, or its offset such as +01:00",
			field, quote(b), b)
	}
	return 0, poison(ReasonBadTimestamp, "%s = %s is neither RFC 3339 nor integral epoch milliseconds", field, quote(b))
}

// epochMillis returns ms, the integer b, as epoch milliseconds, unless it
// is epoch seconds: an integer from 10^8 to 10^10 is a date from 1973 to
// 2286 in seconds, and as milliseconds one in the first four months of
// 1970, which no sensor reads; taken as milliseconds, a feed of epoch
// seconds would put its readings a thousand times too close together
// (a 15-minute cadence at 900 ms), silently.
func epochMillis(field string, ms int64, b []byte) (int64, *DecodeError) {
	if ms >= 1e8 && ms < 1e10 {
		return 0, epochSeconds(field, float64(ms), b)
	}
	return ms, nil
}

// epochSeconds is the error for a time of s epoch seconds (b as sent, or
// nil for a typed column).
func epochSeconds(field string, s float64, b []byte) *DecodeError {
	text := strconv.FormatFloat(s, 'f', -1, 64)
	if b != nil {
		text = quote(b)
	}
	return poison(ReasonBadTimestamp, "%s = %s is epoch seconds (%s), not the epoch milliseconds FreqLens reads; write %.0f or RFC 3339 instead",
		field, text, time.UnixMilli(int64(math.Round(s*1000))).UTC().Format(time.RFC3339Nano), math.Round(s*1000))
}

// parseEpochNumber parses a JSON number of epoch milliseconds. A fraction
// or exponent is accepted when the value is integral and exact in a
// float64.
func parseEpochNumber(field string, b []byte) (int64, *DecodeError) {
	if ms, ok := parseInt(b); ok {
		return epochMillis(field, ms, b)
	}
	v, err := strconv.ParseFloat(stringOf(b), 64)
	if err == nil && v >= 1e8 && v < 1e10 {
		return 0, epochSeconds(field, v, b) // Python's time.time(): seconds with a fraction
	}
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return 0, poison(ReasonBadTimestamp, "%s = %s is not integral epoch milliseconds", field, quote(b))
	}
	return epochMillis(field, int64(v), b)
}

// parseInt parses an optionally signed decimal int64.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// parseRFC3339 parses YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM) ('t' or a space
// may replace 'T', 'z' may replace 'Z') into epoch milliseconds, rounding
// the fraction down. Leap seconds (:60) are rejected, as time.Parse does.
func parseRFC3339(b []byte) (int64, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	switch b[10] {
	case 'T', 't', ' ':
	default:
		return 0, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	minute, ok5 := digits(b[14:16])
	sec, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	p := 19
	frac := int64(0)
	if b[p] == '.' {
		p++
		start := p
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			if p-start < 3 {
				frac = frac*10 + int64(b[p]-'0')
			}
			p++
		}
		n := p - start
		if n == 0 {
			return 0, false
		}
		for ; n < 3; n++ {
			frac *= 10
		}
	}
	if p >= len(b) {
		return 0, false
	}
	offset := int64(0)
	switch b[p] {
	case 'Z', 'z':
		p++
	case '+', '-':
		if len(b)-p != 6 || b[p+3] != ':' {
			return 0, false
		}
		oh, ok1 := digits(b[p+1 : p+3])
		om, ok2 := digits(b[p+4 : p+6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, false
		}
		offset = int64(oh*3600 + om*60)
		if b[p] == '-' {
			offset = -offset
		}
		p += 6
	default:
		return 0, false
	}
	if p != len(b) {
		return 0, false
	}
	secs := daysFromCivil(int64(year), int64(month), int64(day))*86400 +
		int64(hour*3600+minute*60+sec) - offset
	return secs*1000 + frac, true
}

// digits parses a fixed-width run of decimal digits.
func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (H. Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	if z < 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// minRFC3339Ms and maxRFC3339Ms bound the times appendTime writes as
// RFC 3339 (years 0000 to 9999); others are written as epoch milliseconds.
const (
	minRFC3339Ms = -62167219200000 // 0000-01-01T00:00:00Z
	maxRFC3339Ms = 253402300799999 // 9999-12-31T23:59:59.999Z
)

// appendTime appends ms as RFC 3339 in UTC with a millisecond fraction
// when it is not zero, or as a decimal number outside years 0 to 9999.
// quoted says whether an RFC 3339 time is wrapped in double quotes.
func appendTime(dst []byte, ms int64, quoted bool) []byte {
	if ms < minRFC3339Ms || ms > maxRFC3339Ms {
		return strconv.AppendInt(dst, ms, 10)
	}
	secs := floorDiv(ms, 1000)
	frac := ms - secs*1000
	days := floorDiv(secs, 86400)
	sod := secs - days*86400
	y, m, d := civilFromDays(days)
	if quoted {
		dst = append(dst, '"')
	}
	dst = append4(dst, y)
	dst = append(dst, '-')
	dst = append2(dst, m)
	dst = append(dst, '-')
	dst = append2(dst, d)
	dst = append(dst, 'T')
	dst = append2(dst, sod/3600)
	dst = append(dst, ':')
	dst = append2(dst, sod/60%60)
	dst = append(dst, ':')
	dst = append2(dst, sod%60)
	if frac != 0 {
		dst = append(dst, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	}
	dst = append(dst, 'Z')
	if quoted {
		dst = append(dst, '"')
	}
	return dst
}

func append2(dst []byte, v int64) []byte { return append(dst, byte('0'+v/10), byte('0'+v%10)) }

func append4(dst []byte, v int64) []byte {
	return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// formatMs renders epoch milliseconds for error messages.
func formatMs(ms int64) string { return string(appendTime(nil, ms, false)) }

// appendFloat appends v as a JSON-compatible number (as encoding/json
// does), or a non-finite v as "NaN", "+Inf" or "-Inf", quoted when quoted
// is set.
func appendFloat(dst []byte, v float64, quoted bool) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		if quoted {
			dst = append(dst, '"')
		}
		switch {
		case math.IsNaN(v):
			dst = append(dst, "NaN"...)
		case v > 0:
			dst = append(dst, "+Inf"...)
		default:
			dst = append(dst, "-Inf"...)
		}
		if quoted {
			dst = append(dst, '"')
		}
		return dst
	}
	format := byte('f')
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(dst, v, format, -1, 64)
}

// checkEncode panics if cfg names no series or time field or r has not
// one value per value field of cfg: programmer errors of an encoder's
// caller.
func checkEncode(r Reading, cfg Config) {
	if cfg.SeriesField == "" || cfg.TimeField == "" {
		panic(fmt.Sprintf("readings: encoding with series field %q and time field %q; start from DefaultConfig", cfg.SeriesField, cfg.TimeField))
	}
	if len(r.Values) != len(cfg.ValueFields) {
		panic(fmt.Sprintf("readings: reading of series %q has %d values for %d value fields %q",
			r.Series, len(r.Values), len(cfg.ValueFields), cfg.ValueFields))
	}
}
