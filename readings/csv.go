package readings

import (
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
)

// Column roles of a CSV line.
const (
	csvIgnore = -3
	csvTime   = -2
	csvSeries = -1
	// 0… is the index of a value field.
)

// CSVDecoder decodes one CSV line per message, its columns named in order by
// Config.CSVColumns, for example
//
//	s-17,2026-01-05T08:00:00Z,412.0
//
// Fields may be quoted as in RFC 4180 ("s,17" and "say ""hi"""); spaces and
// tabs around an unquoted field are dropped; one trailing line break is
// allowed. A line with another number of columns is poison
// (ReasonBadSchema), as is a second line. Times and values are parsed as in
// JSONDecoder; an empty time or value is ReasonMissingField, an empty series
// ReasonEmptySeries. Without a series column the message key is the series
// id.
//
// Decoding allocates nothing once the batch's buffers have grown, except
// for poison messages.
type CSVDecoder struct {
	f         fields
	roles     []int
	hasSeries bool
	vals      []float64
	spans     []csvSpan
	seriesBuf []byte
	fieldBuf  []byte
}

type csvSpan struct {
	start, end int
	quoted     bool // doubled quotes inside must be undone
}

// NewCSVDecoder returns a CSV decoder for cfg (see NewDecoder); cfg.Format is
// ignored.
func NewCSVDecoder(cfg Config, now func() time.Time) (*CSVDecoder, error) {
	f, err := newFields(cfg, FormatCSV, now)
	if err != nil {
		return nil, err
	}
	columns := cfg.csvColumns()
	d := &CSVDecoder{f: f, roles: make([]int, len(columns)), vals: make([]float64, len(f.values))}
	for i, c := range columns {
		d.roles[i] = csvIgnore
		switch c {
		case f.series:
			d.roles[i] = csvSeries
			d.hasSeries = true
		case f.time:
			d.roles[i] = csvTime
		default:
			for j, v := range f.values {
				if c == v {
					d.roles[i] = j
				}
			}
		}
	}
	return d, nil
}

// Decode implements Decoder.
func (d *CSVDecoder) Decode(rb *array.RecordBuilder, key, value []byte, ingest time.Time) error {
	if perr := d.split(value); perr != nil {
		return perr
	}
	if len(d.spans) != len(d.roles) {
		return poison(ReasonBadSchema, "line has %d columns, CSVColumns names %d", len(d.spans), len(d.roles))
	}
	series := key
	var ts int64
	for i, sp := range d.spans {
		role := d.roles[i]
		if role == csvIgnore {
			continue
		}
		field := value[sp.start:sp.end]
		if sp.quoted {
			buf := d.fieldBuf[:0]
			if role == csvSeries {
				buf = d.seriesBuf[:0]
			}
			buf = unquoteCSV(buf, field)
			if role == csvSeries {
				d.seriesBuf = buf
			} else {
				d.fieldBuf = buf
			}
			field = buf
		}
		var perr *DecodeError
		switch role {
		case csvSeries:
			series = field
			if len(series) == 0 {
				return poison(ReasonEmptySeries, "%s is empty", d.f.series)
			}
		case csvTime:
			ts, perr = parseTimeText(d.f.time, field, d.f.zonelessUTC)
		default:
			if len(field) == 0 {
				return poison(ReasonMissingField, "%s is empty", d.f.values[role])
			}
			d.vals[role], perr = parseValue(d.f.values[role], field)
		}
		if perr != nil {
			return perr
		}
	}
	if !d.hasSeries && len(series) == 0 {
		return poison(ReasonMissingField, "CSVColumns has no %q column and the message has no key", d.f.series)
	}
	if perr := d.f.accept(rb, series, ts, ingest, d.vals); perr != nil {
		return perr
	}
	return nil
}

// split finds the fields of one CSV line into d.spans.
func (d *CSVDecoder) split(b []byte) *DecodeError {
	d.spans = d.spans[:0]
	n := len(b)
	if n > 0 && b[n-1] == '\n' {
		n--
		if n > 0 && b[n-1] == '\r' {
			n--
		}
	}
	if n == 0 {
		return poison(ReasonUnparsable, "empty message")
	}
	p := 0
	for {
		for p < n && (b[p] == ' ' || b[p] == '\t') {
			p++
		}
		if p < n && b[p] == '"' {
			start := p + 1
			p = start
			closed := false
			for p < n {
				if b[p] == '"' {
					if p+1 < n && b[p+1] == '"' {
						p += 2
						continue
					}
					closed = true
					break
				}
				p++
			}
			if !closed {
				return poison(ReasonUnparsable, "unterminated quoted field at byte %d", start-1)
			}
			d.spans = append(d.spans, csvSpan{start: start, end: p, quoted: true})
			p++
			for p < n && (b[p] == ' ' || b[p] == '\t') {
				p++
			}
			if p < n && b[p] != ',' {
				return poison(ReasonUnparsable, "byte %d after a quoted field is %q, want ','", p, b[p])
			}
		} else {
			start := p
			for p < n && b[p] != ',' {
				switch b[p] {
				case '\n', '\r':
					return poison(ReasonUnparsable, "line break at byte %d: a message holds one CSV line", p)
				case '"':
					return poison(ReasonUnparsable, "quote inside an unquoted field at byte %d", p)
				}
				p++
			}
			end := p
			for end > start && (b[end-1] == ' ' || b[end-1] == '\t') {
				end--
			}
			d.spans = append(d.spans, csvSpan{start: start, end: end})
		}
		if p >= n {
			return nil
		}
		p++ // the comma
	}
}

// unquoteCSV appends the quoted field content s with doubled quotes undone.
func unquoteCSV(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		dst = append(dst, s[i])
		if s[i] == '"' {
			i++ // the second quote of a pair
		}
	}
	return dst
}

// AppendCSV appends r as one CSV line without a line break, the value of one
// message, to dst and returns the extended slice; a nil dst allocates.
// Columns follow cfg.CSVColumns (empty: the series, time and value fields in
// order), cfg taken as given (start from DefaultConfig); a column that is
// not a reading field is left empty. The series is quoted when it needs to
// be, the time written as in AppendJSON, a non-finite value as NaN, +Inf or
// -Inf (poison to CSVDecoder). It allocates only to grow dst, and panics if
// cfg names no series or time field or len(r.Values) differs from the
// number of value fields (programmer errors).
func AppendCSV(dst []byte, r Reading, cfg Config) []byte {
	checkEncode(r, cfg)
	series, ts, values := cfg.SeriesField, cfg.TimeField, cfg.ValueFields
	col := func(dst []byte, name string) []byte {
		switch name {
		case series:
			return appendCSVField(dst, r.Series)
		case ts:
			return appendTime(dst, r.Time.UnixMilli(), false)
		}
		for j, f := range values {
			if name == f {
				return appendFloat(dst, r.Values[j], false)
			}
		}
		return dst
	}
	if len(cfg.CSVColumns) > 0 {
		for i, c := range cfg.CSVColumns {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = col(dst, c)
		}
		return dst
	}
	dst = col(dst, series)
	dst = append(dst, ',')
	dst = col(dst, ts)
	for _, f := range values {
		dst = append(dst, ',')
		dst = col(dst, f)
	}
	return dst
}

func appendCSVField(dst []byte, s string) []byte {
	if s != "" && !strings.ContainsAny(s, ",\"\r\n") && s[0] != ' ' && s[0] != '\t' &&
		s[len(s)-1] != ' ' && s[len(s)-1] != '\t' {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}
