package liveview

import (
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// page holds the page, its script and its styles, embedded in the binary.
//
//go:embed page/index.html page/live.js page/live.css
var page embed.FS

// contentSecurityPolicy is the Content-Security-Policy of every response
// of the view: the page runs its own script and styles only (live.js and
// live.css from its own origin; the page holds no inline script, style or
// event handler, and the script sets styles through the CSSOM only), reads
// JSON from its own origin only (/live/*, /online), loads nothing else,
// and may not be framed.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Register adds the view's handlers to mux:
//
//	GET /                           the page
//	GET /live/live.js               its script
//	GET /live/live.css              its styles
//	GET /live/series                the kept series (SeriesList)
//	GET /live/forecast?series=NAME  one series' latest forecast (Series)
//
// The page also reads GET /online (the learner's report), which the
// service serves. Every response carries security headers
// (setSecurityHeaders): contentSecurityPolicy, which lets the page run only
// its own script and styles and fetch only from its own origin, nosniff, no
// framing and no referrer.
func (v *View) Register(mux *http.ServeMux) {
	handle := func(pattern string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			setSecurityHeaders(w.Header())
			h(w, r)
		})
	}
	handle("GET /{$}", serveFile("page/index.html", "text/html; charset=utf-8"))
	handle("GET /live/live.js", serveFile("page/live.js", "text/javascript; charset=utf-8"))
	handle("GET /live/live.css", serveFile("page/live.css", "text/css; charset=utf-8"))
	handle("GET /live/series", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, v.List()) })
	handle("GET /live/forecast", v.serveSeries)
}

// setSecurityHeaders sets the view's security headers on h, each unless h
// already has it: a header set by the server around the view (such as one
// of the web configuration's http_server_config.headers) is kept.
func setSecurityHeaders(h http.Header) {
	for _, kv := range [...][2]string{
		{"Content-Security-Policy", contentSecurityPolicy},
		{"X-Content-Type-Options", "nosniff"},
		{"X-Frame-Options", "DENY"},
		{"Referrer-Policy", "no-referrer"},
	} {
		if h.Get(kv[0]) == "" {
			h.Set(kv[0], kv[1])
		}
	}
}

// serveFile serves the embedded file name.
func serveFile(name, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := page.ReadFile(name)
		if err != nil { // embedded: cannot happen
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(b)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

func (v *View) serveSeries(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("series")
	if name == "" {
		http.Error(w, "liveview: missing ?series=NAME; GET /live/series lists the series the view keeps", http.StatusBadRequest)
		return
	}
	s, ok := v.Series(name)
	if !ok {
		http.Error(w, fmt.Sprintf("liveview: unknown series %q: no forecast of it is in the live view; GET /live/series lists "+
			"the series it has (it keeps up to %d, metrics.live_view_series)", name, v.cfg.MaxSeries), http.StatusNotFound)
		return
	}
	writeJSON(w, s)
}

// SeriesList is what GET /live/series serves.
type SeriesList struct {
	// MaxSeries is Config.MaxSeries.
	MaxSeries int `json:"max_series"`
	// Dropped counts the forecasts of series not kept because the view was
	// full of series forecast within Config.StaleAfter.
	Dropped int64 `json:"dropped_forecasts"`
	// Series are the kept series, by name.
	Series []SeriesInfo `json:"series"`
}

// SeriesInfo names one kept series.
type SeriesInfo struct {
	Series string    `json:"series"`
	TS     time.Time `json:"ts"`
	Fields []string  `json:"fields"`
}

// List returns the kept series, sorted by name.
func (v *View) List() SeriesList {
	v.mu.Lock()
	out := SeriesList{MaxSeries: v.cfg.MaxSeries, Dropped: v.dropped, Series: make([]SeriesInfo, len(v.slots))}
	for i := range v.slots {
		s := &v.slots[i]
		out.Series[i] = SeriesInfo{Series: s.series, TS: s.ts, Fields: s.fields}
	}
	v.mu.Unlock()
	slices.SortFunc(out.Series, func(a, b SeriesInfo) int { return strings.Compare(a.Series, b.Series) })
	return out
}

// Series is what GET /live/forecast serves: one series' latest forecast,
// with every H×C or L×C array of the wire format split by field
// (Forecast[c][h] is field c at horizon step h+1).
type Series struct {
	Series string `json:"series"`
	// TS is the forecast origin, the time of Readings' last step; step h
	// (0-based) of the horizon is at TS + (h+1)·Cadence.
	TS             time.Time `json:"ts"`
	Updated        time.Time `json:"updated"`
	Forecasts      int64     `json:"forecasts"` // of this series since the view kept it
	ModelVersion   int64     `json:"model_version"`
	CadenceSeconds float64   `json:"cadence_seconds"`
	Fields         []string  `json:"fields"`
	Lookback       int       `json:"lookback"`
	Horizon        int       `json:"horizon"`
	// Readings is the window the forecast was computed from, by field,
	// oldest first (null where a step was missing and not filled).
	Readings [][]Number `json:"readings"`
	Forecast [][]Number `json:"forecast"`
	// Alpha is the model's fusion weight of the frequency part.
	Alpha float64 `json:"alpha"`
	// Residual is what no frequency carries (the level included), by field;
	// null without attributions.
	Residual [][]Number `json:"residual"`
	// ResidualAllChannels says each field's residual is computed from
	// every field's leftover (a model trained with the channel mix), so it
	// includes what the other fields say.
	ResidualAllChannels bool `json:"residual_all_channels"`
	// Level is each field's window mean inside Residual; null when unknown.
	Level []Number `json:"level"`
	// Parts are the frequencies' contributions, as the forecast lists them:
	// Forecast = Residual + Σ Parts, element by element.
	Parts []Part `json:"parts"`
	// Rhythms are the parts of the model's rhythms (cycles of the data with
	// their harmonics), each the sum of its frequencies' parts; the page
	// stacks these, with the frequencies that belong to none as "other
	// frequencies".
	Rhythms []Rhythm `json:"rhythms"`
	// Intervals are the prediction intervals; null when the forecast has
	// none.
	Intervals []Interval `json:"intervals"`
}

// Part is one frequency's contribution to a forecast.
type Part struct {
	ID            int     `json:"id"`
	PeriodSteps   float64 `json:"period_steps"`
	PeriodSeconds float64 `json:"period_seconds"` // 0 when unknown
	Share         float64 `json:"share"`
	// Rhythm is the index of the frequency's rhythm; absent for a free
	// frequency.
	Rhythm *int       `json:"rhythm,omitempty"`
	Values [][]Number `json:"values"`
}

// Rhythm is one rhythm's part of a forecast.
type Rhythm struct {
	Index         int        `json:"index"`
	PeriodSteps   float64    `json:"period_steps"`
	PeriodSeconds float64    `json:"period_seconds"` // 0 when unknown
	Share         float64    `json:"share"`
	Frequencies   []int      `json:"frequencies"`
	Values        [][]Number `json:"values"`
}

// Interval is one prediction interval: Level is its central probability.
type Interval struct {
	Level float64    `json:"level"`
	Lower [][]Number `json:"lower"`
	Upper [][]Number `json:"upper"`
}

// Number is a float64 that encodes a non-finite value as null (JSON has
// no NaN).
type Number float64

// MarshalJSON writes n, or null when it is not finite.
func (n Number) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// Series returns the latest forecast of series, and false when the view
// does not keep it.
func (v *View) Series(series string) (Series, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	i, ok := v.index[series]
	if !ok {
		return Series{}, false
	}
	s := &v.slots[i]
	C := len(s.fields)
	out := Series{
		Series: s.series, TS: s.ts, Updated: s.updated, Forecasts: s.forecasts, ModelVersion: s.version,
		CadenceSeconds: s.cadence.Seconds(), Fields: slices.Clone(s.fields), Lookback: s.lookback, Horizon: s.horizon,
		Readings: byField(s.window, C), Forecast: byField(s.values, C), Alpha: s.alpha,
		Residual: byField(s.residual, C), ResidualAllChannels: s.residualAllChannels, Parts: make([]Part, s.nparts),
	}
	if len(s.level) == C {
		out.Level = make([]Number, C)
		for c, x := range s.level {
			out.Level[c] = Number(x)
		}
	}
	for k, p := range s.parts[:s.nparts] {
		out.Parts[k] = Part{ID: p.id, PeriodSteps: p.periodSteps, PeriodSeconds: p.period.Seconds(), Share: p.share,
			Values: byField(p.values, C)}
		if p.cycle {
			r := p.rhythm
			out.Parts[k].Rhythm = &r
		}
	}
	out.Rhythms = make([]Rhythm, 0, s.nrhythms)
	for _, r := range s.rhythms[:s.nrhythms] {
		out.Rhythms = append(out.Rhythms, Rhythm{Index: r.index, PeriodSteps: r.periodSteps, PeriodSeconds: r.period.Seconds(),
			Share: r.share, Frequencies: slices.Clone(r.frequencies), Values: byField(r.values, C)})
	}
	for _, b := range s.bands[:s.nbands] {
		out.Intervals = append(out.Intervals, Interval{Level: b.level, Lower: byField(b.lower, C), Upper: byField(b.upper, C)})
	}
	return out, true
}

// byField splits a row-major n×C array into C columns; nil for an empty
// one.
func byField(xs []float64, C int) [][]Number {
	if len(xs) == 0 || C == 0 {
		return nil
	}
	n := len(xs) / C
	out := make([][]Number, C)
	for c := range out {
		out[c] = make([]Number, n)
		for i := range n {
			out[c][i] = Number(xs[i*C+c])
		}
	}
	return out
}
