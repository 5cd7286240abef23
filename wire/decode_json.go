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
// Cadence, Fields, Horizon and Values set; a single-field message names its
// field "value". null numbers decode as NaN. Unknown keys are ignored.
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
			Lower  bounds      `json:"lower"`
			Upper  bounds      `json:"upper"`
		} `json:"horizon"`
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
		if h == 0 && (st.Lower.set || st.Upper.set) {
			f.Intervals = make([]Interval, len(st.Lower.levels))
			for k, l := range st.Lower.levels {
				f.Intervals[k] = Interval{Level: l, Lower: make([]float64, 0, f.Horizon*c), Upper: make([]float64, 0, f.Horizon*c)}
			}
		}
		if err := readStepBounds(&f, h, &st.Lower, &st.Upper, multi); err != nil {
			return Forecast{}, fmt.Errorf("horizon[%d]: %w", h, err)
		}
	}
	if err := f.checkIntervals(); err != nil {
		return Forecast{}, err
	}
	return f, nil
}

// readStepBounds appends step h's bounds of every interval of f, which must
// be given for exactly the levels of step 0 (or not at all when step 0 has
// none).
func readStepBounds(f *Forecast, h int, lower, upper *bounds, multi bool) error {
	if f.Intervals == nil {
		if lower.set || upper.set {
			return errors.New(`has "lower" or "upper" but horizon[0] has no intervals`)
		}
		return nil
	}
	levels := levelsOf(f.Intervals)
	for _, b := range [...]struct {
		name  string
		src   *bounds
		upper bool
	}{{"lower", lower, false}, {"upper", upper, true}} {
		if !b.src.set {
			return fmt.Errorf(`missing %q (horizon[0] has intervals)`, b.name)
		}
		if !slices.Equal(b.src.levels, levels) {
			return fmt.Errorf(`%q has levels %v, horizon[0]'s "lower" has %v`, b.name, b.src.levels, levels)
		}
		if (b.src.objs != nil) != multi {
			return fmt.Errorf(`%q: bounds must be numbers with one field and field objects with several`, b.name)
		}
		for k := range f.Intervals {
			dst := &f.Intervals[k].Lower
			if b.upper {
				dst = &f.Intervals[k].Upper
			}
			if !multi {
				*dst = append(*dst, b.src.nums[k])
				continue
			}
			var err error
			if *dst, err = b.src.objs[k].appendTo(*dst, f.Fields); err != nil {
				return fmt.Errorf("%q %g: %w", b.name, b.src.levels[k], err)
			}
		}
	}
	return nil
}

func levelsOf(ivs []Interval) []float64 {
	out := make([]float64, len(ivs))
	for k, iv := range ivs {
		out[k] = iv.Level
	}
	return out
}

// bounds is one step's lower or upper bounds, an object keyed by level
// whose values are numbers (one field) or field objects (several).
type bounds struct {
	levels []float64
	nums   []float64     // one field
	objs   []fieldObject // several fields
	set    bool
}

func (b *bounds) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("want an object keyed by level, got %.32s", data)
	}
	var prev float64
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // object keys are strings
		level, err := strconv.ParseFloat(key, 64)
		if err != nil {
			return fmt.Errorf("key %q is not a level such as \"0.9\"", key)
		}
		if err := checkLevel(level, prev); err != nil {
			return err
		}
		prev = level
		b.levels = append(b.levels, level)
		tok, err = d.Token()
		if err != nil {
			return err
		}
		switch v := tok.(type) {
		case float64, nil:
			if b.objs != nil {
				return fmt.Errorf("level %s is a number, the first level a field object", key)
			}
			x := math.NaN()
			if v != nil {
				x = v.(float64)
			}
			b.nums = append(b.nums, x)
		case json.Delim:
			if v != '{' || b.nums != nil {
				return fmt.Errorf("level %s: want a number, null or a field object like the first level's", key)
			}
			names, vals, err := readFields(d, nil, nil)
			if err != nil {
				return fmt.Errorf("level %s: %w", key, err)
			}
			b.objs = append(b.objs, fieldObject{names: names, vals: vals, set: true})
		default:
			return fmt.Errorf("level %s: want a number, null or a field object, got %v", key, tok)
		}
	}
	if _, err := d.Token(); err != nil { // '}'
		return err
	}
	if len(b.levels) == 0 {
		return errors.New("an empty object: give at least one level")
	}
	b.set = true
	return nil
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
		Series       *string    `json:"series"`
		TS           *time.Time `json:"ts"`
		ModelVersion *int64     `json:"model_version"`
		Alpha        jsonNumber `json:"alpha"`
		Residual     stepsArray `json:"residual"`
		Frequencies  *[]struct {
			ID          *int       `json:"id"`
			PeriodSteps jsonNumber `json:"period_steps"`
			Period      *string    `json:"period"`
			Share       jsonNumber `json:"share"`
			Values      stepsArray `json:"values"`
		} `json:"frequencies"`
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
		fr := &(*doc.Frequencies)[k]
		switch {
		case fr.ID == nil:
			return Forecast{}, fmt.Errorf(`frequencies[%d]: missing "id"`, k)
		case !fr.PeriodSteps.set:
			return Forecast{}, fmt.Errorf(`frequencies[%d]: missing "period_steps"`, k)
		case fr.Period == nil:
			return Forecast{}, fmt.Errorf(`frequencies[%d]: missing "period"`, k)
		case !fr.Share.set:
			return Forecast{}, fmt.Errorf(`frequencies[%d]: missing "share"`, k)
		case full && !fr.Values.set:
			return Forecast{}, fmt.Errorf(`frequencies[%d]: missing "values" (the message has a residual)`, k)
		case !full && fr.Values.set:
			return Forecast{}, fmt.Errorf(`frequencies[%d] has "values" but the message has no "residual"`, k)
		}
		period, err := time.ParseDuration(*fr.Period)
		if err != nil {
			return Forecast{}, fmt.Errorf(`frequencies[%d]: "period": %w`, k, err)
		}
		c := Contribution{ID: *fr.ID, PeriodSteps: fr.PeriodSteps.v, Period: period, Share: fr.Share.v}
		if full {
			if c.Values, err = fr.Values.reorder(doc.Residual.names); err != nil {
				return Forecast{}, fmt.Errorf("frequencies[%d]: values: %w", k, err)
			}
			if fr.Values.steps != f.Horizon {
				return Forecast{}, fmt.Errorf("frequencies[%d]: values has %d steps, residual has %d", k, fr.Values.steps, f.Horizon)
			}
		}
		f.Frequencies[k] = c
	}
	return f, nil
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
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil { // '{', checked below by readFields
		return err
	}
	names, vals, err := readFields(d, nil, nil)
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
func readFields(d *json.Decoder, names []string, vals []float64) ([]string, []float64, error) {
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
		v, err := readNumber(d)
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

func readNumber(d *json.Decoder) (float64, error) {
	tok, err := d.Token()
	if err != nil {
		return 0, err
	}
	switch v := tok.(type) {
	case float64:
		return v, nil
	case nil:
		return math.NaN(), nil
	}
	return 0, fmt.Errorf("want a number or null, got %v", tok)
}

// stepsArray is a per-step array: numbers (one field) or field objects
// (several), H×C row-major once decoded.
type stepsArray struct {
	names []string // nil for numbers
	vals  []float64
	steps int
	set   bool
}

func (s *stepsArray) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
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
		case float64, nil:
			if objs {
				return fmt.Errorf("step %d is a number, step 0 a field object", steps)
			}
			x := math.NaN()
			if v != nil {
				x = v.(float64)
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
				if names, vals, err = readFields(d, nil, nil); err != nil {
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
			if stepNames, stepVals, err = readFields(d, nil, nil); err != nil {
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
	if fields == nil || equalStrings(s.names, fields) {
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
