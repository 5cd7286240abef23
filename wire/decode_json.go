package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// DecodeError is the error of every decoder in this package: the bytes are
// not a message of the layout.
type DecodeError struct {
	// Layout names the layout: "forecast json", "attribution json",
	// "forecast arrow" or "attribution arrow".
	Layout string
	// Err says what is wrong.
	Err error
}

func (e *DecodeError) Error() string { return "wire: decode " + e.Layout + ": " + e.Err.Error() }

// Unwrap returns e.Err.
func (e *DecodeError) Unwrap() error { return e.Err }

// DecodeForecastJSON decodes a forecast-topic JSON message (the layout of
// AppendForecastJSON) into a Forecast with Series, TS (in UTC), ModelVersion,
// Cadence, Fields, Horizon and Values set, and Intervals when the message
// has them; a single-field message names its field "value". null numbers
// decode as NaN. Unknown keys are ignored.
//
// It never panics and every error is a *DecodeError. For every forecast f
// with finite values whose single field, if any, is named "value",
// DecodeForecastJSON(AppendForecastJSON(nil, f)) equals f's forecast part bit
// for bit (times compare with Equal). Each horizon ts must equal
// TS + (h+1)·Cadence.
func DecodeForecastJSON(data []byte) (Forecast, error) {
	f, err := decodeForecastJSON(data)
	if err != nil {
		return Forecast{}, &DecodeError{Layout: "forecast json", Err: err}
	}
	return f, nil
}

func decodeForecastJSON(data []byte) (Forecast, error) {
	var doc struct {
		Series       *string    `json:"series"`
		TS           *time.Time `json:"ts"`
		ModelVersion *int64     `json:"model_version"`
		Cadence      *string    `json:"cadence"`
		Horizon      []struct {
			TS     *time.Time  `json:"ts"`
			Value  jsonNumber  `json:"value"`
			Values fieldObject `json:"values"`
		} `json:"horizon"`
		Intervals []struct {
			Level jsonNumber `json:"level"`
			Lower boundSteps `json:"lower"`
			Upper boundSteps `json:"upper"`
		} `json:"intervals"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Forecast{}, err
	}
	switch {
	case doc.Series == nil:
		return Forecast{}, errors.New(`missing "series"`)
	case doc.TS == nil:
		return Forecast{}, errors.New(`missing "ts"`)
	case doc.ModelVersion == nil:
		return Forecast{}, errors.New(`missing "model_version"`)
	case doc.Cadence == nil:
		return Forecast{}, errors.New(`missing "cadence"`)
	case len(doc.Horizon) == 0:
		return Forecast{}, errors.New(`missing or empty "horizon"`)
	}
	cadence, err := time.ParseDuration(*doc.Cadence)
	if err != nil {
		return Forecast{}, fmt.Errorf(`"cadence": %w`, err)
	}
	f := Forecast{
		Series:       *doc.Series,
		TS:           doc.TS.UTC(),
		ModelVersion: *doc.ModelVersion,
		Cadence:      cadence,
		Horizon:      len(doc.Horizon),
	}
	if first := doc.Horizon[0]; first.Values.set {
		f.Fields = first.Values.names
	} else {
		f.Fields = []string{"value"}
	}
	if err := f.checkID(); err != nil {
		return Forecast{}, err
	}
	if err := f.checkShape(); err != nil {
		return Forecast{}, err
	}
	if err := f.checkCadence(); err != nil {
		return Forecast{}, err
	}
	multi := doc.Horizon[0].Values.set
	c := len(f.Fields)
	f.Values = make([]float64, 0, f.Horizon*c)
	for h := range doc.Horizon {
		st := &doc.Horizon[h]
		if st.TS == nil {
			return Forecast{}, fmt.Errorf(`horizon[%d]: missing "ts"`, h)
		}
		if want := f.StepTime(h); !st.TS.Equal(want) {
			return Forecast{}, fmt.Errorf("horizon[%d]: ts = %s, want ts + %d×cadence = %s",
				h, st.TS.Format(time.RFC3339Nano), h+1, want.Format(time.RFC3339Nano))
		}
		switch {
		case st.Value.set && st.Values.set:
			return Forecast{}, fmt.Errorf(`horizon[%d] has both "value" and "values"`, h)
		case multi && !st.Values.set:
			return Forecast{}, fmt.Errorf(`horizon[%d]: missing "values" (horizon[0] has them)`, h)
		case !multi && !st.Value.set:
			return Forecast{}, fmt.Errorf(`horizon[%d]: missing "value"`, h)
		case multi:
			var err error
			if f.Values, err = st.Values.appendTo(f.Values, f.Fields); err != nil {
				return Forecast{}, fmt.Errorf("horizon[%d]: %w", h, err)
			}
		default:
			f.Values = append(f.Values, st.Value.v)
		}
	}
	if err := readIntervals(&f, doc.Intervals, multi); err != nil {
		return Forecast{}, err
	}
	return f, nil
}

// readIntervals sets f.Intervals from the message's "intervals": each a
// level and lower and upper arrays of the horizon's steps, numbers with one
// field and field objects with several, like the forecast's values.
func readIntervals(f *Forecast, ivs []struct {
	Level jsonNumber `json:"level"`
	Lower boundSteps `json:"lower"`
	Upper boundSteps `json:"upper"`
}, multi bool) error {
	if len(ivs) == 0 {
		return nil
	}
	var fields []string // nil: the single-field layout
	if multi {
		fields = f.Fields
	}
	f.Intervals = make([]Interval, len(ivs))
	for k := range ivs {
		iv := &ivs[k]
		if !iv.Level.set {
			return fmt.Errorf(`intervals[%d]: missing "level"`, k)
		}
		out := Interval{Level: iv.Level.v}
		for _, b := range [...]struct {
			name string
			src  *stepsArray
			dst  *[]float64
		}{{"lower", &iv.Lower.stepsArray, &out.Lower}, {"upper", &iv.Upper.stepsArray, &out.Upper}} {
			if !b.src.set {
				return fmt.Errorf(`intervals[%d]: missing %q`, k, b.name)
			}
			if b.src.steps != f.Horizon {
				return fmt.Errorf(`intervals[%d]: %q has %d steps, the horizon %d`, k, b.name, b.src.steps, f.Horizon)
			}
			v, err := b.src.reorder(fields)
			if err != nil {
				return fmt.Errorf(`intervals[%d]: %q: %w`, k, b.name, err)
			}
			*b.dst = v
		}
		f.Intervals[k] = out
	}
	return f.checkIntervals()
}

// DecodeAttributionJSON decodes an attribution-topic JSON message (the layout
// of AppendAttributionJSON) into a Forecast with Series, TS (in UTC),
// ModelVersion, Alpha and Frequencies set and, for a full message, Fields,
// Horizon and Residual too (a single-field message names its field "value").
// A summary message leaves Horizon 0 and Fields, Residual and every
// Contribution's Values nil. Cadence and Values are not part of the message;
// Merge joins the result with the forecast. null numbers decode as NaN.
//
// It never panics and every error is a *DecodeError. For every forecast f
// with finite numbers whose single field, if any, is named "value",
// DecodeAttributionJSON(AppendAttributionJSON(nil, f, mode)) equals f's
// attribution part in mode bit for bit.
func DecodeAttributionJSON(data []byte) (Forecast, error) {
	f, err := decodeAttributionJSON(data)
	if err != nil {
		return Forecast{}, &DecodeError{Layout: "attribution json", Err: err}
	}
	return f, nil
}

func decodeAttributionJSON(data []byte) (Forecast, error) {
	var doc struct {
		Series       *string          `json:"series"`
		TS           *time.Time       `json:"ts"`
		ModelVersion *int64           `json:"model_version"`
		Alpha        jsonNumber       `json:"alpha"`
		Residual     stepsArray       `json:"residual"`
		AllChannels  bool             `json:"residual_all_channels"`
		Frequencies  *[]jsonFrequency `json:"frequencies"`
		Rhythms      []jsonRhythm     `json:"rhythms"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Forecast{}, err
	}
	switch {
	case doc.Series == nil:
		return Forecast{}, errors.New(`missing "series"`)
	case doc.TS == nil:
		return Forecast{}, errors.New(`missing "ts"`)
	case doc.ModelVersion == nil:
		return Forecast{}, errors.New(`missing "model_version"`)
	case !doc.Alpha.set:
		return Forecast{}, errors.New(`missing "alpha"`)
	case doc.Frequencies == nil:
		return Forecast{}, errors.New(`missing "frequencies"`)
	}
	f := Forecast{
		Series:       *doc.Series,
		TS:           doc.TS.UTC(),
		ModelVersion: *doc.ModelVersion,
		Alpha:        doc.Alpha.v,

		ResidualAllChannels: doc.AllChannels,
	}
	if err := f.checkID(); err != nil {
		return Forecast{}, err
	}
	full := doc.Residual.set
	if full {
		f.Fields = doc.Residual.names
		if f.Fields == nil {
			f.Fields = []string{"value"}
		}
		f.Horizon = doc.Residual.steps
		if err := f.checkShape(); err != nil {
			return Forecast{}, fmt.Errorf("residual: %w", err)
		}
		f.Residual = doc.Residual.vals
	}
	f.Frequencies = make([]Contribution, len(*doc.Frequencies))
	for k := range *doc.Frequencies {
		c, err := (*doc.Frequencies)[k].contribution(k, full, doc.Residual.names, f.Horizon)
		if err != nil {
			return Forecast{}, err
		}
		f.Frequencies[k] = c
	}
	for k := range doc.Rhythms {
		r, err := doc.Rhythms[k].part(k, full, doc.Residual.names, f.Horizon)
		if err != nil {
			return Forecast{}, err
		}
		f.Rhythms = append(f.Rhythms, r)
	}
	return f, nil
}

// jsonPart is what a frequency and a rhythm of an attribution message
// have alike, as JSON has it.
type jsonPart struct {
	PeriodSteps jsonNumber `json:"period_steps"`
	Period      *string    `json:"period"`
	Share       jsonNumber `json:"share"`
	Values      stepsArray `json:"values"`
}

// check checks the part at where ("frequencies[3]") of a message (full:
// with values, in the residual's field order names and of horizon steps)
// and returns its period and, when full, its values.
func (p *jsonPart) check(where string, full bool, names []string, horizon int) (time.Duration, []float64, error) {
	switch {
	case !p.PeriodSteps.set:
		return 0, nil, fmt.Errorf(`%s: missing "period_steps"`, where)
	case p.Period == nil:
		return 0, nil, fmt.Errorf(`%s: missing "period"`, where)
	case !p.Share.set:
		return 0, nil, fmt.Errorf(`%s: missing "share"`, where)
	case full && !p.Values.set:
		return 0, nil, fmt.Errorf(`%s: missing "values" (the message has a residual)`, where)
	case !full && p.Values.set:
		return 0, nil, fmt.Errorf(`%s has "values" but the message has no "residual"`, where)
	}
	period, err := time.ParseDuration(*p.Period)
	if err != nil {
		return 0, nil, fmt.Errorf(`%s: "period": %w`, where, err)
	}
	if !full {
		return period, nil, nil
	}
	values, err := p.Values.reorder(names)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: values: %w", where, err)
	}
	if p.Values.steps != horizon {
		return 0, nil, fmt.Errorf("%s: values has %d steps, residual has %d", where, p.Values.steps, horizon)
	}
	return period, values, nil
}

// jsonFrequency is an attribution message's frequency as JSON has it.
type jsonFrequency struct {
	ID     *int `json:"id"`
	Rhythm *int `json:"rhythm"`
	jsonPart
}

// contribution checks frequency k of a message (see jsonPart.check) and
// returns it.
func (fr *jsonFrequency) contribution(k int, full bool, names []string, horizon int) (Contribution, error) {
	where := fmt.Sprintf("frequencies[%d]", k)
	if fr.ID == nil {
		return Contribution{}, fmt.Errorf(`%s: missing "id"`, where)
	}
	period, values, err := fr.check(where, full, names, horizon)
	if err != nil {
		return Contribution{}, err
	}
	c := Contribution{ID: *fr.ID, PeriodSteps: fr.PeriodSteps.v, Period: period, Share: fr.Share.v, Values: values}
	if fr.Rhythm != nil {
		c.Cycle, c.Rhythm = true, *fr.Rhythm
	}
	return c, nil
}

// jsonRhythm is an attribution message's rhythm as JSON has it.
type jsonRhythm struct {
	Index       *int  `json:"index"`
	Frequencies []int `json:"frequencies"`
	jsonPart
}

// part checks rhythm k of a message (see jsonPart.check) and returns it.
func (rp *jsonRhythm) part(k int, full bool, names []string, horizon int) (RhythmPart, error) {
	where := fmt.Sprintf("rhythms[%d]", k)
	if rp.Index == nil {
		return RhythmPart{}, fmt.Errorf(`%s: missing "index"`, where)
	}
	period, values, err := rp.check(where, full, names, horizon)
	if err != nil {
		return RhythmPart{}, err
	}
	return RhythmPart{Index: *rp.Index, PeriodSteps: rp.PeriodSteps.v, Period: period, Share: rp.Share.v, Frequencies: rp.Frequencies, Values: values}, nil
}

// jsonNumber is a JSON number that may be null (NaN) and remembers whether
// it was present.
type jsonNumber struct {
	v   float64
	set bool
}

func (n *jsonNumber) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		n.v, n.set = math.NaN(), true
		return nil
	}
	// encoding/json has checked the syntax; rule out strings, true, false,
	// objects and arrays.
	if b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return fmt.Errorf("want a number or null, got %.32s", b)
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("number %.32s does not fit a float64", b)
	}
	n.v, n.set = v, true
	return nil
}

// fieldObject is a {field: number} object, kept in document order.
type fieldObject struct {
	names []string
	vals  []float64
	set   bool
}

func (o *fieldObject) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	d := newDecoder(b)
	if _, err := d.Token(); err != nil { // '{', checked below by readFields
		return err
	}
	names, vals, err := readFields(d, nil, nil, 64)
	if err != nil {
		return err
	}
	o.names, o.vals, o.set = names, vals, true
	return nil
}

// appendTo appends the values in the order of fields, which must be exactly
// the object's keys.
func (o *fieldObject) appendTo(dst []float64, fields []string) ([]float64, error) {
	if len(o.names) != len(fields) {
		return dst, fmt.Errorf("values has %d fields, want %d (%q)", len(o.names), len(fields), fields)
	}
	for _, name := range fields {
		i := indexOf(o.names, name)
		if i < 0 {
			return dst, fmt.Errorf("values has no field %q", name)
		}
		dst = append(dst, o.vals[i])
	}
	return dst, nil
}

// readFields reads the members of an object whose '{' has been consumed,
// through its '}', appending keys and values; keys must be distinct and
// values numbers or null.
func readFields(d *json.Decoder, names []string, vals []float64, bits int) ([]string, []float64, error) {
	start := len(names)
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("want a field object, got %v", tok)
		}
		if indexOf(names[start:], name) >= 0 {
			return nil, nil, fmt.Errorf("field %q appears twice", name)
		}
		v, err := readNumber(d, bits)
		if err != nil {
			return nil, nil, fmt.Errorf("field %q: %w", name, err)
		}
		names, vals = append(names, name), append(vals, v)
	}
	if tok, err := d.Token(); err != nil || tok != json.Delim('}') {
		return nil, nil, fmt.Errorf("want a field object, got %v (%v)", tok, err)
	}
	return names, vals, nil
}

func readNumber(d *json.Decoder, bits int) (float64, error) {
	tok, err := d.Token()
	if err != nil {
		return 0, err
	}
	return numberOf(tok, bits)
}

// numberOf returns the value of a token of a decoder that uses json.Number:
// the number parsed at float64 (bits 64) or float32 (bits 32) precision, or
// NaN for null.
func numberOf(tok json.Token, bits int) (float64, error) {
	switch v := tok.(type) {
	case json.Number:
		x, err := strconv.ParseFloat(string(v), bits)
		if err != nil {
			return 0, fmt.Errorf("number %.32s does not fit a float%d", v, bits)
		}
		return x, nil
	case nil:
		return math.NaN(), nil
	}
	return 0, fmt.Errorf("want a number or null, got %v", tok)
}

// newDecoder returns a token decoder of b that keeps numbers as text, so
// that they are parsed at the precision they were written with.
func newDecoder(b []byte) *json.Decoder {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d
}

// stepsArray is a per-step array: numbers (one field) or field objects
// (several), H×C row-major once decoded.
type stepsArray struct {
	names []string // nil for numbers
	vals  []float64
	steps int
	set   bool
}

func (s *stepsArray) UnmarshalJSON(b []byte) error { return s.parse(b, 64) }

// boundSteps is a stepsArray of interval bounds, written at float32
// precision.
type boundSteps struct{ stepsArray }

func (s *boundSteps) UnmarshalJSON(b []byte) error { return s.parse(b, 32) }

// parse reads a per-step array whose numbers are at precision bits.
func (s *stepsArray) parse(b []byte, bits int) error {
	if string(b) == "null" {
		return nil
	}
	d := newDecoder(b)
	if tok, err := d.Token(); err != nil || tok != json.Delim('[') {
		return fmt.Errorf("want an array of steps, got %.32s", b)
	}
	var (
		names []string
		vals  []float64
		steps int
		objs  bool
	)
	for ; d.More(); steps++ {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch v := tok.(type) {
		case json.Number, nil:
			if objs {
				return fmt.Errorf("step %d is a number, step 0 a field object", steps)
			}
			x, err := numberOf(tok, bits)
			if err != nil {
				return fmt.Errorf("step %d: %w", steps, err)
			}
			vals = append(vals, x)
		case json.Delim:
			if v != '{' {
				return fmt.Errorf("step %d: want a number, null or a field object, got %v", steps, v)
			}
			if steps > 0 && !objs {
				return fmt.Errorf("step %d is a field object, step 0 a number", steps)
			}
			objs = true
			if steps == 0 {
				if names, vals, err = readFields(d, nil, nil, bits); err != nil {
					return fmt.Errorf("step 0: %w", err)
				}
				if len(names) == 0 {
					return errors.New("step 0 is an empty field object")
				}
				continue
			}
			// Later steps may order their keys differently: map them onto
			// the names of step 0.
			var stepNames []string
			var stepVals []float64
			if stepNames, stepVals, err = readFields(d, nil, nil, bits); err != nil {
				return fmt.Errorf("step %d: %w", steps, err)
			}
			o := fieldObject{names: stepNames, vals: stepVals}
			if vals, err = o.appendTo(vals, names); err != nil {
				return fmt.Errorf("step %d: %w", steps, err)
			}
		default:
			return fmt.Errorf("step %d: want a number, null or a field object, got %v", steps, tok)
		}
	}
	if _, err := d.Token(); err != nil { // ']'
		return err
	}
	s.names, s.vals, s.steps, s.set = names, vals, steps, true
	return nil
}

// reorder returns the values laid out in the order of fields (nil for the
// single-field layout), which must name the same fields as s.
func (s *stepsArray) reorder(fields []string) ([]float64, error) {
	if (s.names == nil) != (fields == nil) {
		return nil, errors.New("the residual and the values have different layouts (numbers and field objects)")
	}
	if fields == nil || slices.Equal(s.names, fields) {
		return s.vals, nil
	}
	c := len(fields)
	if len(s.names) != c {
		return nil, fmt.Errorf("%d fields, the residual has %d (%q)", len(s.names), c, fields)
	}
	out := make([]float64, len(s.vals))
	for j, name := range fields {
		i := indexOf(s.names, name)
		if i < 0 {
			return nil, fmt.Errorf("no field %q", name)
		}
		for h := 0; h < s.steps; h++ {
			out[h*c+j] = s.vals[h*c+i]
		}
	}
	return out, nil
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}
