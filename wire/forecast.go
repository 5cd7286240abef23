package wire

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Forecast is one issued forecast with its attribution, in the input's units.
//
// Values, Residual and every Contribution's Values are Horizon×len(Fields),
// row-major (step, then field), and
//
//	Residual[i] + Σ_k Frequencies[k].Values[i] = Values[i]
//
// element by element, to float rounding. Step h (0-based) of the horizon is
// the time TS + (h+1)·Cadence.
//
// Encoders and sinks read a Forecast only during the call: the caller may
// reuse every slice once it has returned.
type Forecast struct {
	// Series is the series id; it is the Kafka key of both output messages.
	Series string
	// TS is the time of the last observed step (the forecast origin).
	TS time.Time
	// ModelVersion identifies the model that issued the forecast.
	ModelVersion int64
	// Cadence is the step length.
	Cadence time.Duration
	// Fields names the channels, in the order of the value layout. With one
	// field the JSON layouts write "value"; with several, "values": {field: v}.
	Fields []string
	// Horizon is H, the number of forecast steps.
	Horizon int
	// Values is the forecast, H×C row-major.
	Values []float64
	// Alpha is the fusion weight of the frequency part.
	Alpha float64
	// Residual is everything not credited to a frequency, H×C row-major.
	Residual []float64
	// ResidualAllChannels says the residual of field c is computed from
	// every field's leftover (a model trained with the channel mix), so
	// its part includes what the other fields say; otherwise it reads
	// field c's own leftover alone.
	ResidualAllChannels bool
	// Frequencies holds one entry per frequency with a part in the
	// forecast, in the order they are written.
	Frequencies []Contribution
	// Rhythms holds one entry per rhythm of the model (a cycle of the data
	// with its harmonics): each the exact sum of its frequencies' parts.
	// Empty for a model without rhythms.
	Rhythms []RhythmPart
	// Intervals are the forecast's prediction intervals, one per nominal
	// level in increasing order of level; nil when intervals are off or not
	// calibrated yet. They belong to the forecast message.
	Intervals []Interval
}

// Interval is a prediction interval of one nominal level around a forecast:
// the realised value of step h, field c is expected within
// [Lower[h·C+c], Upper[h·C+c]] with probability Level. The layouts keep the
// bounds at float32 precision (about 7 significant digits, more than any
// interval's accuracy): a decoded bound is float64(float32(bound)).
type Interval struct {
	// Level is the nominal coverage, in (0, 1): 0.8 for an 80% interval.
	Level float64
	// Lower and Upper are the bounds, H×C row-major like Forecast.Values.
	Lower, Upper []float64
}

// Contribution is one selected frequency's part of a forecast.
type Contribution struct {
	// ID is the frequency's index in the model; it names the same frequency
	// in every forecast of one model version.
	ID int
	// PeriodSteps is the frequency's period in steps (1/f).
	PeriodSteps float64
	// Period is PeriodSteps × Cadence (0 when unknown).
	Period time.Duration
	// Share is Σ|Values| over the total absolute attribution at the level
	// of cycles, in [0, 1]: the residual's part, each free frequency's and
	// each rhythm's summed part (see RhythmPart.Share). The rhythms' and the
	// free frequencies' shares and the residual's make 1; a rhythm's
	// frequencies' shares can sum to more than the rhythm's, when its lines
	// partly cancel.
	Share float64
	// Values is the frequency's contribution, H×C row-major. The summary
	// attribution layouts do not carry it, and their decoders leave it nil.
	Values []float64
	// Cycle says the frequency is a harmonic of a cycle of the data, the
	// rhythm whose index in the model is Rhythm; a free frequency ("other
	// frequencies") has neither.
	Cycle  bool
	Rhythm int
}

// RhythmPart is one rhythm's part of a forecast: the sum of its
// frequencies' contributions.
type RhythmPart struct {
	// Index is the rhythm's index in the model.
	Index int
	// PeriodSteps is its fundamental period in steps; Period the same in
	// time (0 when unknown).
	PeriodSteps float64
	Period      time.Duration
	// Share is what the rhythm adds up to: Σ|its summed part| over the same
	// total as the frequencies' shares (counted where the model attributes:
	// a mixed model trained on z-scored data counts in its normalised
	// units), less than the sum of its frequencies' shares when they partly
	// cancel. An Arrow stream of the layout without the rhythm_share column
	// carries no rhythm share; its decoders then give the sum of its
	// frequencies' shares.
	Share float64
	// Frequencies are the ids of its frequencies.
	Frequencies []int
	// Values is Σ of its frequencies' Values, H×C row-major; nil in the
	// summary layouts.
	Values []float64
}

// rhythmOf returns the index in f.Rhythms of the rhythm whose share the
// Arrow layouts write on fr's row: the first that lists fr's id, or −1.
// The decoders read it back by the same rule, from the rhythms the schema
// lists.
// ResidualShare is the residual MLP's share of the attribution: what the
// rhythms' and the other frequencies' shares leave of 1, since the three
// make 1 together (never below 0).
func (f *Forecast) ResidualShare() float64 {
	s := 1.0
	for k := range f.Rhythms {
		s -= f.Rhythms[k].Share
	}
	for k := range f.Frequencies {
		if fr := &f.Frequencies[k]; f.rhythmOf(fr) < 0 {
			s -= fr.Share
		}
	}
	return max(s, 0)
}

func (f *Forecast) rhythmOf(fr *Contribution) int {
	return slices.IndexFunc(f.Rhythms, func(r RhythmPart) bool { return slices.Contains(r.Frequencies, fr.ID) })
}

// ErrInvalid is wrapped by every error of Validate and of the encoders about
// a forecast that can never be encoded (its shapes disagree, a time is out
// of range, a field name cannot be encoded): retrying cannot help.
var ErrInvalid = errors.New("invalid forecast")

var errAttributionsOff = errors.New("wire: attribution mode is off: there is no attribution message to encode")

// minTime and maxTime bound the times the layouts accept: every timestamp
// must be representable as int64 nanoseconds since the Unix epoch (the Arrow
// layouts' unit), i.e. lie between 1677-09-21 and 2262-04-11.
var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// Validate reports whether f is complete and consistent: a non-empty
// series, a positive horizon and cadence, distinct non-empty field names,
// Values and Residual of Horizon×len(Fields) each, every Contribution's
// Values of that length too, and every step time within the years
// 1678–2262. Every Sink calls it, or ValidateFor, before delivering
// anything.
func (f *Forecast) Validate() error { return f.ValidateFor(AttributionsFull) }

// ValidateFor is Validate for a sink that writes attributions in mode: the
// per-step parts (Residual and every Values of the attribution) are checked
// unless mode is summary or off (any other mode is checked as full). A
// summary forecast carries its parts' shares without their values.
func (f *Forecast) ValidateFor(mode AttributionMode) error {
	err := f.checkForecast()
	if err == nil {
		err = f.checkAttribution(mode)
	}
	if err != nil {
		return fmt.Errorf("wire: %w: %w", ErrInvalid, err)
	}
	return nil
}

// The checks below return errors without the package prefix; Validate, the
// encoders and the decoders add their own.

// checkID checks what identifies a forecast: its series and its ts.
func (f *Forecast) checkID() error {
	if f.Series == "" {
		return errors.New("forecast has an empty series id")
	}
	if f.TS.Before(minTime) || f.TS.After(maxTime) {
		return fmt.Errorf("forecast %s: ts is outside the years 1678–2262", f.label())
	}
	return nil
}

// checkShape checks the horizon and the fields.
func (f *Forecast) checkShape() error {
	if f.Horizon < 1 {
		return fmt.Errorf("forecast %s: horizon = %d, want at least 1", f.label(), f.Horizon)
	}
	if len(f.Fields) == 0 {
		return fmt.Errorf("forecast %s has no fields; name at least one channel", f.label())
	}
	for i, name := range f.Fields {
		if name == "" {
			return fmt.Errorf("forecast %s: field %d has an empty name", f.label(), i)
		}
		for _, prev := range f.Fields[:i] {
			if prev == name {
				return fmt.Errorf("forecast %s: field %q appears twice", f.label(), name)
			}
		}
	}
	return nil
}

// checkCadence checks the cadence and the time of the last step; it needs
// checkID and checkShape to have passed.
func (f *Forecast) checkCadence() error {
	if f.Cadence <= 0 {
		return fmt.Errorf("forecast %s: cadence = %s, want a positive step length", f.label(), f.Cadence)
	}
	// The last step, TS + H·Cadence, must not overflow int64 nanoseconds.
	left := math.MaxInt64 - f.TS.UnixNano()
	if int64(f.Horizon) > left/int64(f.Cadence) {
		return fmt.Errorf("forecast %s: the last step (ts + %d×%s) is after the year 2262", f.label(), f.Horizon, f.Cadence)
	}
	return nil
}

func (f *Forecast) checkValues() error {
	if want := f.Horizon * len(f.Fields); len(f.Values) != want {
		return fmt.Errorf("forecast %s: len(Values) = %d, want Horizon×len(Fields) = %d×%d = %d",
			f.label(), len(f.Values), f.Horizon, len(f.Fields), want)
	}
	return nil
}

// checkAttribution checks the per-step parts of the attribution that mode
// writes (none in summary mode); it needs checkShape to have passed.
func (f *Forecast) checkAttribution(mode AttributionMode) error {
	if mode == AttributionsSummary || mode == AttributionsOff {
		return nil
	}
	want := f.Horizon * len(f.Fields)
	if len(f.Residual) != want {
		return fmt.Errorf("forecast %s: len(Residual) = %d, want Horizon×len(Fields) = %d",
			f.label(), len(f.Residual), want)
	}
	for k := range f.Frequencies {
		if n := len(f.Frequencies[k].Values); n != want {
			return fmt.Errorf("forecast %s: frequency %d (id %d): len(Values) = %d, want Horizon×len(Fields) = %d",
				f.label(), k, f.Frequencies[k].ID, n, want)
		}
	}
	for k := range f.Rhythms {
		if n := len(f.Rhythms[k].Values); n != want {
			return fmt.Errorf("forecast %s: rhythm %d: len(Values) = %d, want Horizon×len(Fields) = %d",
				f.label(), f.Rhythms[k].Index, n, want)
		}
	}
	return nil
}

// checkForecast runs the checks of the forecast layouts.
func (f *Forecast) checkForecast() error {
	if err := f.checkID(); err != nil {
		return err
	}
	if err := f.checkShape(); err != nil {
		return err
	}
	if err := f.checkCadence(); err != nil {
		return err
	}
	if err := f.checkValues(); err != nil {
		return err
	}
	return f.checkIntervals()
}

// checkIntervals checks the intervals: levels in (0, 1), increasing, and
// bounds of Horizon×len(Fields) each.
func (f *Forecast) checkIntervals() error {
	want := f.Horizon * len(f.Fields)
	for k, iv := range f.Intervals {
		var prev float64
		if k > 0 {
			prev = f.Intervals[k-1].Level
		}
		if err := checkLevel(iv.Level, prev); err != nil {
			return fmt.Errorf("forecast %s: interval %d: %w", f.label(), k, err)
		}
		if len(iv.Lower) != want || len(iv.Upper) != want {
			return fmt.Errorf("forecast %s: interval %g: len(Lower), len(Upper) = %d, %d, want Horizon×len(Fields) = %d",
				f.label(), iv.Level, len(iv.Lower), len(iv.Upper), want)
		}
		for i := range iv.Lower {
			if iv.Lower[i] > iv.Upper[i] {
				return fmt.Errorf("forecast %s: interval %g at step %d: lower bound %g above the upper %g",
					f.label(), iv.Level, i/len(f.Fields)+1, iv.Lower[i], iv.Upper[i])
			}
		}
	}
	return nil
}

// levelsOf returns the levels of ivs.
func levelsOf(ivs []Interval) []float64 {
	out := make([]float64, len(ivs))
	for k, iv := range ivs {
		out[k] = iv.Level
	}
	return out
}

// checkLevel checks one nominal level, following prev (0 for the first).
func checkLevel(level, prev float64) error {
	if !(level > 0 && level < 1) {
		return fmt.Errorf("level %g, want a coverage in (0, 1) such as 0.9", level)
	}
	if !(level > prev) {
		return fmt.Errorf("levels %g, %g: want them increasing and distinct", prev, level)
	}
	return nil
}

// checkAttributionLayout runs the checks of the attribution layouts in mode
// (full or summary); summary needs only the id.
func (f *Forecast) checkAttributionLayout(mode AttributionMode) error {
	if err := f.checkID(); err != nil {
		return err
	}
	if mode == AttributionsSummary {
		return nil
	}
	if err := f.checkShape(); err != nil {
		return err
	}
	return f.checkAttribution(mode)
}

// label names a forecast in error messages: series@ts.
func (f *Forecast) label() string {
	return fmt.Sprintf("%q@%s", f.Series, f.TS.UTC().Format(time.RFC3339Nano))
}

// StepTime returns the time of horizon step h (0-based): TS + (h+1)·Cadence.
func (f *Forecast) StepTime(h int) time.Time {
	return f.TS.Add(time.Duration(h+1) * f.Cadence)
}

// Merge joins a forecast decoded from the forecast topic with the attribution
// of the same forecast decoded from the attribution topic: the result is
// forecast (its Values and Intervals) with Alpha, Residual,
// ResidualAllChannels, Frequencies and Rhythms taken from attribution. The
// two must agree on series, ts and model version, and unless attribution is
// a summary (Horizon 0), on horizon and fields.
func Merge(forecast, attribution Forecast) (Forecast, error) {
	switch {
	case forecast.Series != attribution.Series || !forecast.TS.Equal(attribution.TS) ||
		forecast.ModelVersion != attribution.ModelVersion:
		return Forecast{}, fmt.Errorf("wire: merge: forecast %s v%d and attribution %s v%d are different forecasts",
			forecast.label(), forecast.ModelVersion, attribution.label(), attribution.ModelVersion)
	case attribution.Horizon == 0 && attribution.Fields == nil && attribution.Residual == nil:
		// A summary carries no per-step values to check.
	case forecast.Horizon != attribution.Horizon:
		return Forecast{}, fmt.Errorf("wire: merge %s: forecast horizon %d, attribution horizon %d",
			forecast.label(), forecast.Horizon, attribution.Horizon)
	case !slices.Equal(forecast.Fields, attribution.Fields):
		return Forecast{}, fmt.Errorf("wire: merge %s: forecast fields %q, attribution fields %q",
			forecast.label(), forecast.Fields, attribution.Fields)
	}
	forecast.Alpha = attribution.Alpha
	forecast.Residual = attribution.Residual
	forecast.ResidualAllChannels = attribution.ResidualAllChannels
	forecast.Frequencies = attribution.Frequencies
	forecast.Rhythms = attribution.Rhythms
	return forecast, nil
}

// Format is the encoding of the output messages.
type Format string

// The output formats.
const (
	// FormatJSON writes one JSON object per message (content type
	// application/json).
	FormatJSON Format = "json"
	// FormatArrow writes one Arrow IPC stream per message (content type
	// application/vnd.apache.arrow.stream).
	FormatArrow Format = "arrow"
)

// ContentType returns the content-type header value of the format.
func (f Format) ContentType() string {
	if f == FormatArrow {
		return "application/vnd.apache.arrow.stream"
	}
	return "application/json"
}

// AttributionMode says how much of an attribution is written.
type AttributionMode string

// The attribution modes.
const (
	// AttributionsFull writes alpha, the residual and every frequency's
	// per-step values.
	AttributionsFull AttributionMode = "full"
	// AttributionsSummary writes alpha and every frequency's id, period and
	// share, without any per-step values (no residual either): a few hundred
	// bytes per forecast for high-volume deployments.
	AttributionsSummary AttributionMode = "summary"
	// AttributionsOff writes no attributions.
	AttributionsOff AttributionMode = "off"
)

func (m AttributionMode) check(key string) error {
	switch m {
	case AttributionsFull, AttributionsSummary, AttributionsOff:
		return nil
	}
	return fmt.Errorf("wire: %s = %q is not an attribution mode; use %q, %q or %q",
		key, string(m), AttributionsFull, AttributionsSummary, AttributionsOff)
}

// ValidateFields reports whether names can be the fields of forecasts written
// in format: at least one, distinct and non-empty, and for FormatArrow none
// of the fixed column names of the Arrow layouts (series, ts, origin_ts,
// model_version, step, alpha, frequency_id, period_steps, period, share,
// rhythm_share).
// Callers check their configuration with it once, at start-up.
func ValidateFields(names []string, format Format) error {
	f := Forecast{Series: "x", Horizon: 1, Fields: names}
	if err := f.checkShape(); err != nil {
		return fmt.Errorf("wire: %w: %w", ErrInvalid, err)
	}
	if format == FormatArrow {
		for _, name := range names {
			if isReservedColumn(name) {
				return fmt.Errorf("wire: %w: field %q has the name of a fixed column of the arrow layouts; rename the value field", ErrInvalid, name)
			}
		}
	}
	return nil
}

// Clone returns a deep copy of f: no slice of the copy shares storage with f.
func Clone(f Forecast) Forecast {
	n := len(f.Values) + len(f.Residual)
	for k := range f.Frequencies {
		n += len(f.Frequencies[k].Values)
	}
	for k := range f.Intervals {
		n += len(f.Intervals[k].Lower) + len(f.Intervals[k].Upper)
	}
	store := make([]float64, 0, n)
	take := func(v []float64) []float64 {
		if v == nil {
			return nil
		}
		start := len(store)
		store = append(store, v...)
		return store[start:len(store):len(store)]
	}
	c := f
	c.Fields = append([]string(nil), f.Fields...)
	c.Values = take(f.Values)
	c.Residual = take(f.Residual)
	if f.Frequencies != nil {
		c.Frequencies = make([]Contribution, len(f.Frequencies))
		for k, fr := range f.Frequencies {
			fr.Values = take(fr.Values)
			c.Frequencies[k] = fr
		}
	}
	if f.Intervals != nil {
		c.Intervals = make([]Interval, len(f.Intervals))
		for k, iv := range f.Intervals {
			c.Intervals[k] = Interval{Level: iv.Level, Lower: take(iv.Lower), Upper: take(iv.Upper)}
		}
	}
	return c
}
