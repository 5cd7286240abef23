package readings

import (
	"bytes"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/freqlens/freqlens/internal/jsonstr"
)

// JSONDecoder decodes one flat JSON object per message:
//
//	{"series": "s-17", "ts": "2026-01-05T08:00:00Z", "value": 412.0}
//	{"series": "st-1", "ts": 1767600000000, "temp": 3.5, "humidity": 81}
//
// The series field is a string (absent or null: the message key is used).
// The time field is an RFC 3339 string or epoch milliseconds, as a number
// or a numeric string. A value field is a number or a numeric string;
// "NaN", "Infinity" and numbers beyond the float64 range are poison
// (ReasonNonFinite). Other fields are skipped, whatever their type. A
// repeated field keeps its last value. Anything after the object but white
// space is poison (ReasonUnparsable).
//
// It scans the bytes itself: decoding allocates nothing once the batch's
// buffers have grown, except for poison messages.
type JSONDecoder struct {
	f      fields
	vals   []float64
	seen   []bool
	null   []bool // a value field given as null, told apart from one left out
	keyBuf []byte
	strBuf []byte
	tsBuf  []byte
}

// NewJSONDecoder returns a JSON decoder for cfg (see NewDecoder); cfg.Format
// is ignored.
func NewJSONDecoder(cfg Config, now func() time.Time) (*JSONDecoder, error) {
	f, err := newFields(cfg, FormatJSON, now)
	if err != nil {
		return nil, err
	}
	n := len(f.values)
	return &JSONDecoder{f: f, vals: make([]float64, n), seen: make([]bool, n), null: make([]bool, n)}, nil
}

// maxJSONDepth bounds the nesting of skipped values.
const maxJSONDepth = 64

// Decode implements Decoder.
func (d *JSONDecoder) Decode(rb *array.RecordBuilder, key, value []byte, ingest time.Time) error {
	series, haveSeries, ts, perr := d.parse(value)
	if perr != nil {
		return perr
	}
	if !haveSeries {
		if len(key) == 0 {
			return poison(ReasonMissingField, "no %q field and no message key", d.f.series)
		}
		series = key
	} else if len(series) == 0 {
		return poison(ReasonEmptySeries, "%s is the empty string", d.f.series)
	}
	if perr := d.f.accept(rb, series, ts, ingest, d.vals); perr != nil {
		return perr
	}
	return nil
}

// parse scans one object, filling d.vals. series may alias b or d.strBuf.
func (d *JSONDecoder) parse(b []byte) (series []byte, haveSeries bool, ts int64, perr *DecodeError) {
	clear(d.seen)
	clear(d.null)
	haveTS := false
	p := skipWS(b, 0)
	if p >= len(b) || b[p] != '{' {
		return nil, false, 0, d.syntax(b, p, "want a JSON object")
	}
	p = skipWS(b, p+1)
	if p < len(b) && b[p] == '}' {
		p++
	} else {
		for {
			if p >= len(b) || b[p] != '"' {
				return nil, false, 0, d.syntax(b, p, "want a field name")
			}
			var ok bool
			name, end, perr := d.stringAt(b, p, &d.keyBuf, "a field name")
			if perr != nil {
				return nil, false, 0, perr
			}
			p = skipWS(b, end)
			if p >= len(b) || b[p] != ':' {
				return nil, false, 0, d.syntax(b, p, "want ':' after a field name")
			}
			p = skipWS(b, p+1)
			if p >= len(b) {
				return nil, false, 0, d.syntax(b, p, "want a value")
			}
			switch {
			case string(name) == d.f.series:
				if series, haveSeries, p, perr = d.seriesAt(b, p); perr != nil {
					return nil, false, 0, perr
				}
			case string(name) == d.f.time:
				if ts, haveTS, p, perr = d.timeAt(b, p); perr != nil {
					return nil, false, 0, perr
				}
			default:
				j := d.valueIndex(name)
				if j < 0 {
					if p, ok = skipValue(b, p, 0); !ok {
						return nil, false, 0, d.syntax(b, p, "bad value")
					}
					break
				}
				if p, perr = d.valueAt(b, p, j); perr != nil {
					return nil, false, 0, perr
				}
			}
			p = skipWS(b, p)
			if p >= len(b) {
				return nil, false, 0, d.syntax(b, p, "unterminated object")
			}
			if b[p] == '}' {
				p++
				break
			}
			if b[p] != ',' {
				return nil, false, 0, d.syntax(b, p, "want ',' or '}'")
			}
			p = skipWS(b, p+1)
		}
	}
	if p = skipWS(b, p); p != len(b) {
		return nil, false, 0, d.syntax(b, p, "trailing bytes after the object")
	}
	if !haveTS {
		return nil, false, 0, poison(ReasonMissingField, "no %q field", d.f.time)
	}
	for j, ok := range d.seen {
		switch {
		case ok:
		case d.null[j]:
			return nil, false, 0, poison(ReasonMissingField, "%s is null; a reading needs every value field (leave out a reading that has none)", d.f.values[j])
		default:
			return nil, false, 0, poison(ReasonMissingField, "no %q field", d.f.values[j])
		}
	}
	return series, haveSeries, ts, nil
}

// seriesAt reads the series field's value at b[p]: a string (which may
// alias b or d.strBuf), or null for none. It returns where the value ends.
func (d *JSONDecoder) seriesAt(b []byte, p int) (series []byte, have bool, end int, perr *DecodeError) {
	switch b[p] {
	case '"':
		if series, end, perr = d.stringAt(b, p, &d.strBuf, "a string"); perr != nil {
			return nil, false, 0, perr
		}
		return series, true, end, nil
	case 'n':
		end, ok := literal(b, p, "null")
		if !ok {
			return nil, false, 0, d.syntax(b, end, "bad literal")
		}
		return nil, false, end, nil
	}
	return nil, false, 0, d.wrongType(b, p, d.f.series, "a string")
}

// timeAt reads the time field's value at b[p]: an RFC 3339 string or epoch
// milliseconds, or null for none. It returns where the value ends.
func (d *JSONDecoder) timeAt(b []byte, p int) (ts int64, have bool, end int, perr *DecodeError) {
	switch c := b[p]; {
	case c == '"':
		txt, end, perr := d.stringAt(b, p, &d.tsBuf, "a string")
		if perr != nil {
			return 0, false, 0, perr
		}
		if ts, perr = parseTimeText(d.f.time, txt, d.f.zonelessUTC); perr != nil {
			return 0, false, 0, perr
		}
		return ts, true, end, nil
	case c == '-' || (c >= '0' && c <= '9'):
		end := scanNumber(b, p)
		if ts, perr = parseEpochNumber(d.f.time, b[p:end]); perr != nil {
			return 0, false, 0, perr
		}
		return ts, true, end, nil
	case c == 'n':
		end, ok := literal(b, p, "null")
		if !ok {
			return 0, false, 0, d.syntax(b, end, "bad literal")
		}
		return 0, false, end, nil
	}
	return 0, false, 0, d.wrongType(b, p, d.f.time, "an RFC 3339 string or epoch milliseconds")
}

// valueAt reads value field j's value at b[p] into d.vals[j]: a number, a
// number in a string, or null (d.null[j]). It returns where the value ends.
func (d *JSONDecoder) valueAt(b []byte, p, j int) (int, *DecodeError) {
	field := d.f.values[j]
	var perr *DecodeError
	switch c := b[p]; {
	case c == '-' || (c >= '0' && c <= '9'):
		end := scanNumber(b, p)
		if d.vals[j], perr = parseValue(field, b[p:end]); perr != nil {
			return 0, perr
		}
		d.seen[j] = true
		return end, nil
	case c == '"':
		txt, end, perr := d.stringAt(b, p, &d.tsBuf, "a string")
		if perr != nil {
			return 0, perr
		}
		if d.vals[j], perr = parseValue(field, txt); perr != nil {
			return 0, perr
		}
		d.seen[j] = true
		return end, nil
	case c == 'n':
		end, ok := literal(b, p, "null")
		if !ok {
			return 0, d.syntax(b, end, "bad literal")
		}
		d.seen[j], d.null[j] = false, true
		return end, nil
	}
	return 0, d.wrongType(b, p, field, "a number")
}

func (d *JSONDecoder) valueIndex(name []byte) int {
	for j, f := range d.f.values {
		if string(name) == f {
			return j
		}
	}
	return -1
}

// stringAt returns the text of the JSON string that starts at b[p],
// unescaped into *buf when it holds escapes (what names it in the error),
// and the index just after its closing quote.
func (d *JSONDecoder) stringAt(b []byte, p int, buf *[]byte, what string) (txt []byte, end int, perr *DecodeError) {
	end, esc, ok := scanString(b, p)
	if !ok {
		return nil, p, d.syntax(b, p, "unterminated string")
	}
	txt = b[p+1 : end-1]
	if esc {
		if *buf, ok = unescape((*buf)[:0], txt); !ok {
			return nil, p, d.syntax(b, p, "bad escape in "+what)
		}
		txt = *buf
	}
	return txt, end, nil
}

func (d *JSONDecoder) syntax(b []byte, p int, what string) *DecodeError {
	if p > len(b) {
		p = len(b)
	}
	return poison(ReasonUnparsable, "invalid JSON at byte %d of %d: %s", p, len(b), what)
}

func (d *JSONDecoder) wrongType(b []byte, p int, field, want string) *DecodeError {
	end, ok := skipValue(b, p, 0)
	if !ok || end > len(b) {
		// Not JSON (NaN, a bare word): the token up to the next delimiter.
		end = len(b)
		if i := bytes.IndexAny(b[p:], ",}] \t\r\n"); i >= 0 {
			end = p + i
		}
	}
	tok := quote(b[p:end])
	if ok && end-p <= 40 && printable(b[p:end]) {
		tok = string(b[p:end]) // JSON as sent: true, [1,2], {"v":1}
	}
	return poison(ReasonWrongType, "%s = %s is not %s", field, tok, want)
}

// printable reports whether b is printable ASCII.
func printable(b []byte) bool {
	for _, c := range b {
		if c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

func skipWS(b []byte, p int) int {
	for p < len(b) {
		switch b[p] {
		case ' ', '\t', '\n', '\r':
			p++
		default:
			return p
		}
	}
	return p
}

// scanString returns the index after the closing quote of the string that
// starts at b[p] == '"', and whether it holds escapes.
func scanString(b []byte, p int) (end int, esc, ok bool) {
	for i := p + 1; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1, esc, true
		case '\\':
			esc = true
			i++
		}
	}
	return len(b), esc, false
}

// scanNumber returns the end of the number token at b[p].
func scanNumber(b []byte, p int) int {
	for p < len(b) {
		switch c := b[p]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			p++
		default:
			return p
		}
	}
	return p
}

// literal checks that b[p:] starts with lit and returns the end.
func literal(b []byte, p int, lit string) (int, bool) {
	if len(b)-p < len(lit) || string(b[p:p+len(lit)]) != lit {
		return p, false
	}
	return p + len(lit), true
}

// skipValue returns the end of the JSON value at b[p], checking its syntax.
func skipValue(b []byte, p, depth int) (int, bool) {
	if p >= len(b) {
		return p, false
	}
	switch c := b[p]; {
	case c == '"':
		end, _, ok := scanString(b, p)
		return end, ok
	case c == '-' || (c >= '0' && c <= '9'):
		end := scanNumber(b, p)
		return end, validNumber(b[p:end])
	case c == 't':
		return literal(b, p, "true")
	case c == 'f':
		return literal(b, p, "false")
	case c == 'n':
		return literal(b, p, "null")
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			return p, false
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		p = skipWS(b, p+1)
		if p < len(b) && b[p] == closer {
			return p + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if p >= len(b) || b[p] != '"' {
					return p, false
				}
				if p, _, ok = scanString(b, p); !ok {
					return p, false
				}
				p = skipWS(b, p)
				if p >= len(b) || b[p] != ':' {
					return p, false
				}
				p = skipWS(b, p+1)
			}
			if p, ok = skipValue(b, p, depth+1); !ok {
				return p, false
			}
			p = skipWS(b, p)
			if p >= len(b) {
				return p, false
			}
			if b[p] == closer {
				return p + 1, true
			}
			if b[p] != ',' {
				return p, false
			}
			p = skipWS(b, p+1)
		}
	}
	return p, false
}

// validNumber checks the JSON number grammar.
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == start || (b[start] == '0' && i-start > 1) {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return false
		}
	}
	return i == len(b)
}

// unescape appends the JSON string content s, escapes resolved, to dst.
// Lone surrogates become U+FFFD, as encoding/json does.
func unescape(dst, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(s) {
			return dst, false
		}
		switch s[i] {
		case '"', '\\', '/':
			dst = append(dst, s[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return dst, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(s, i+3); ok && i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						dst = utf8.AppendRune(dst, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}

func hex4(s []byte, i int) (rune, bool) {
	if i < 0 || len(s)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// AppendJSON appends r as one JSON object, the value of one message, to dst
// and returns the extended slice; a nil dst allocates. Field names come
// from cfg (SeriesField, TimeField, ValueFields), taken as given (start
// from DefaultConfig). The time is written as RFC 3339 in UTC to the
// millisecond (epoch milliseconds outside years 0 to 9999); a non-finite
// value as the string "NaN", "+Inf" or "-Inf", which JSONDecoder rejects as
// poison. It allocates only to grow dst, and panics if cfg names no series
// or time field or len(r.Values) differs from the number of value fields
// (programmer errors).
func AppendJSON(dst []byte, r Reading, cfg Config) []byte {
	checkEncode(r, cfg)
	dst = append(dst, '{')
	dst = jsonstr.Append(dst, cfg.SeriesField)
	dst = append(dst, ':')
	dst = jsonstr.Append(dst, r.Series)
	dst = append(dst, ',')
	dst = jsonstr.Append(dst, cfg.TimeField)
	dst = append(dst, ':')
	dst = appendTime(dst, r.Time.UnixMilli(), true)
	for j, f := range cfg.ValueFields {
		dst = append(dst, ',')
		dst = jsonstr.Append(dst, f)
		dst = append(dst, ':')
		dst = appendFloat(dst, r.Values[j], true)
	}
	return append(dst, '}')
}
