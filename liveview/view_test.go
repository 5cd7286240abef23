package liveview

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// clock is a settable time for the view.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// newView returns a view on a settable clock with its handlers on a mux.
func newView(t testing.TB, cfg Config) (*View, *clock, *http.ServeMux) {
	t.Helper()
	clk := &clock{now: t0}
	v, err := New(cfg, WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	v.Register(mux)
	return v, clk, mux
}

// windowOf returns an L×C window whose step i, field c is 100·c + i.
func windowOf(L, C int) []float64 {
	w := make([]float64, L*C)
	for i := range L {
		for c := range C {
			w[i*C+c] = float64(100*c + i)
		}
	}
	return w
}

func get(t *testing.T, mux *http.ServeMux, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

// getSeries fetches and decodes one series' JSON.
func getSeries(t *testing.T, mux *http.ServeMux, name string) Series {
	t.Helper()
	rec := get(t, mux, "/live/forecast?series="+url.QueryEscape(name))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET series %q: %d %s", name, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var s Series
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatalf("%v in %s", err, rec.Body)
	}
	return s
}

// column returns field c of a row-major n×C array.
func column(xs []float64, C, c int) []Number {
	out := make([]Number, len(xs)/C)
	for i := range out {
		out[i] = Number(xs[i*C+c])
	}
	return out
}

func equalNumbers(a, b []Number) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(float64(a[i])) != math.Float64bits(float64(b[i])) {
			return false
		}
	}
	return true
}

// TestServesTheLatestForecast observes forecasts of two fields and checks
// the JSON of the series, field by field, against what was observed: the
// latest forecast wins, the caller's slices may be reused, and the parts
// and the residual add up to the forecast.
func TestServesTheLatestForecast(t *testing.T) {
	const L, H, K = 8, 4, 3
	fields := []string{"flow", "speed"}
	C := len(fields)
	v, clk, mux := newView(t, DefaultConfig())
	rng := rand.New(rand.NewPCG(1, 2))
	win := windowOf(L, C)
	level := []float64{401, 402}
	first := wiretest.Forecast(rng, "road/7", t0, fields, H, K)
	v.Observe(&first, win, level)
	clk.now = t0.Add(time.Second)
	f := wiretest.Forecast(rng, "road/7", t0.Add(time.Hour), fields, H, K)
	f.Intervals = []wire.Interval{{Level: 0.9, Lower: make([]float64, H*C), Upper: make([]float64, H*C)}}
	for i := range f.Values {
		f.Intervals[0].Lower[i], f.Intervals[0].Upper[i] = f.Values[i]-5, f.Values[i]+5
	}
	v.Observe(&f, win, level)
	want := wire.Clone(f)
	wantWin := append([]float64(nil), win...)
	// The caller reuses its slices: the view must have copied them.
	for i := range f.Values {
		f.Values[i], f.Residual[i], f.Intervals[0].Lower[i] = -1, -1, -1
	}
	for i := range win {
		win[i] = -1
	}

	s := getSeries(t, mux, "road/7")
	if s.Series != "road/7" || !s.TS.Equal(t0.Add(time.Hour)) || !s.Updated.Equal(clk.now) || s.Forecasts != 2 ||
		s.ModelVersion != 3 || s.CadenceSeconds != 3600 || s.Lookback != L || s.Horizon != H || s.Alpha != want.Alpha {
		t.Errorf("header = %+v, want series road/7 at %s, updated %s, 2 forecasts, version 3, cadence 3600, L %d, H %d, alpha %g",
			s, t0.Add(time.Hour), clk.now, L, H, want.Alpha)
	}
	if strings.Join(s.Fields, ",") != "flow,speed" {
		t.Errorf("fields = %v, want [flow speed]", s.Fields)
	}
	if len(s.Readings) != C || len(s.Forecast) != C || len(s.Residual) != C || len(s.Level) != C {
		t.Fatalf("readings, forecast, residual, level hold %d, %d, %d, %d fields, want %d each",
			len(s.Readings), len(s.Forecast), len(s.Residual), len(s.Level), C)
	}
	for c := range C {
		if got, w := s.Readings[c], column(wantWin, C, c); !equalNumbers(got, w) {
			t.Errorf("readings[%d] = %v, want %v", c, got, w)
		}
		if got, w := s.Forecast[c], column(want.Values, C, c); !equalNumbers(got, w) {
			t.Errorf("forecast[%d] = %v, want %v", c, got, w)
		}
		if s.Level[c] != Number(level[c]) {
			t.Errorf("level[%d] = %g, want %g", c, s.Level[c], level[c])
		}
		// The identity the stacked plot relies on: residual + Σ parts = forecast.
		for h := range H {
			sum := float64(s.Residual[c][h])
			for _, p := range s.Parts {
				sum += float64(p.Values[c][h])
			}
			if d := math.Abs(sum - float64(s.Forecast[c][h])); d > 1e-9 {
				t.Errorf("field %d step %d: residual + parts = %g, forecast %g", c, h, sum, s.Forecast[c][h])
			}
		}
	}
	if len(s.Parts) != K {
		t.Fatalf("%d parts, want %d", len(s.Parts), K)
	}
	for k, p := range s.Parts {
		wc := want.Frequencies[k]
		if p.ID != wc.ID || p.PeriodSteps != wc.PeriodSteps || p.PeriodSeconds != wc.Period.Seconds() || p.Share != wc.Share {
			t.Errorf("part %d = id %d, %g steps, %gs, share %g; want id %d, %g steps, %gs, share %g", k,
				p.ID, p.PeriodSteps, p.PeriodSeconds, p.Share, wc.ID, wc.PeriodSteps, wc.Period.Seconds(), wc.Share)
		}
	}
	if len(s.Intervals) != 1 || s.Intervals[0].Level != 0.9 {
		t.Fatalf("intervals = %+v, want one at level 0.9", s.Intervals)
	}
	for c := range C {
		for h := range H {
			lo, hi, y := s.Intervals[0].Lower[c][h], s.Intervals[0].Upper[c][h], s.Forecast[c][h]
			if lo != y-5 || hi != y+5 {
				t.Errorf("interval at field %d step %d = [%g, %g], want [%g, %g]", c, h, lo, hi, y-5, y+5)
			}
		}
	}

	// A forecast without attributions or intervals: the old parts, the old
	// residual and the old band must not show through.
	bare := wire.Forecast{Series: "road/7", TS: t0.Add(2 * time.Hour), ModelVersion: 4, Cadence: time.Hour,
		Fields: fields, Horizon: H, Values: make([]float64, H*C)}
	v.Observe(&bare, windowOf(L, C), nil)
	s = getSeries(t, mux, "road/7")
	if s.Residual != nil || s.Level != nil || len(s.Parts) != 0 || s.Intervals != nil || s.ModelVersion != 4 {
		t.Errorf("after a bare forecast: residual %v, level %v, %d parts, intervals %v, version %d; want none and version 4",
			s.Residual, s.Level, len(s.Parts), s.Intervals, s.ModelVersion)
	}
}

// TestRequests checks the page, the list and the errors a user meets.
func TestRequests(t *testing.T) {
	v, _, mux := newView(t, DefaultConfig())
	rng := rand.New(rand.NewPCG(3, 4))
	for _, name := range []string{"b", "a"} {
		f := wiretest.Forecast(rng, name, t0, []string{"value"}, 4, 2)
		v.Observe(&f, windowOf(8, 1), nil)
	}
	for _, tc := range []struct {
		name, target string
		code         int
		contentType  string
		body         []string // substrings the body must hold
	}{
		{"the page", "/", 200, "text/html; charset=utf-8", []string{"<canvas id=\"plot-forecast\"", "/live/live.js"}},
		{"the script", "/live/live.js", 200, "text/javascript; charset=utf-8", []string{"function drawParts", "data"}},
		{"the styles", "/live/live.css", 200, "text/css; charset=utf-8", []string{"canvas {"}},
		{"the list, by name", "/live/series", 200, "application/json", []string{`"series":[{"series":"a"`, `{"series":"b"`, `"max_series":200`}},
		{"a known series", "/live/forecast?series=a", 200, "application/json", []string{`"series":"a"`, `"parts":[{`}},
		{"an unknown series", "/live/forecast?series=zz", 404, "text/plain; charset=utf-8",
			[]string{`unknown series "zz"`, "GET /live/series lists the series it has"}},
		{"no series", "/live/forecast", 400, "text/plain; charset=utf-8", []string{"missing ?series=NAME"}},
		{"another path is not the page", "/nothing", 404, "text/plain; charset=utf-8", []string{"404 page not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := get(t, mux, tc.target)
			if rec.Code != tc.code {
				t.Errorf("GET %s = %d, want %d: %s", tc.target, rec.Code, tc.code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != tc.contentType {
				t.Errorf("GET %s: Content-Type %q, want %q", tc.target, ct, tc.contentType)
			}
			for _, s := range tc.body {
				if !strings.Contains(rec.Body.String(), s) {
					t.Errorf("GET %s: the body lacks %q:\n%.600s", tc.target, s, rec.Body)
				}
			}
		})
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/live/forecast?series=a", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /live/forecast = %d, want 405", rec.Code)
	}
}

// TestSecurityHeaders: every response of the view carries a
// Content-Security-Policy that allows the page's own script, styles and
// requests only (so the page holds no inline code: a browser would refuse
// to run it), nosniff, no framing and no referrer; a header the server
// around the view has already set is kept.
func TestSecurityHeaders(t *testing.T) {
	v, _, mux := newView(t, DefaultConfig())
	f := wiretest.Forecast(rand.New(rand.NewPCG(5, 6)), "a", t0, []string{"value"}, 4, 2)
	v.Observe(&f, windowOf(8, 1), nil)
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
			"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		"X-Content-Type-Options": "nosniff",
		"X-Frame-Options":        "DENY",
		"Referrer-Policy":        "no-referrer",
	}
	for _, target := range []string{"/", "/live/live.js", "/live/live.css", "/live/series", "/live/forecast?series=a", "/live/forecast?series=zz", "/live/forecast"} {
		rec := get(t, mux, target)
		for name, value := range want {
			if got := rec.Header().Get(name); got != value {
				t.Errorf("GET %s: %s = %q, want %q", target, name, got, value)
			}
		}
	}
	page := get(t, mux, "/").Body.String()
	for _, inline := range []string{`<style`, `<[^>]*\sstyle=`, `<script>`, `<[^>]*\son[a-z]+=`, `javascript:`} {
		if m := regexp.MustCompile(inline).FindString(page); m != "" {
			t.Errorf("the page holds %q: inline code the Content-Security-Policy refuses", m)
		}
	}

	// A header set around the view (the web configuration's) is kept.
	rec := httptest.NewRecorder()
	rec.Header().Set("X-Frame-Options", "sameorigin")
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := rec.Header().Get("X-Frame-Options"); got != "sameorigin" {
		t.Errorf("X-Frame-Options set before the view = %q, want it kept (sameorigin)", got)
	}
}

// TestBoundedSeries: a full view keeps its series while they are fresh and
// gives the stalest one's place to a new series once it is stale.
func TestBoundedSeries(t *testing.T) {
	v, clk, _ := newView(t, Config{MaxSeries: 2, StaleAfter: time.Minute})
	rng := rand.New(rand.NewPCG(5, 6))
	observe := func(name string) {
		f := wiretest.Forecast(rng, name, t0, []string{"value"}, 4, 2)
		v.Observe(&f, windowOf(8, 1), nil)
	}
	names := func() string {
		var out []string
		for _, s := range v.List().Series {
			out = append(out, s.Series)
		}
		return strings.Join(out, ",")
	}
	observe("a")
	clk.now = clk.now.Add(10 * time.Second)
	observe("b")
	observe("c") // full, both fresh: not kept
	if got, dropped := names(), v.List().Dropped; got != "a,b" || dropped != 1 {
		t.Errorf("after a, b, c into 2 places: kept %s, dropped %d; want a,b and 1 dropped", got, dropped)
	}
	clk.now = clk.now.Add(55 * time.Second) // a is 65s old, b 55s
	observe("c")
	if got := names(); got != "b,c" {
		t.Errorf("once a is stale: kept %s, want b,c", got)
	}
	if s, ok := v.Series("c"); !ok || s.Forecasts != 1 {
		t.Errorf("c: kept %v with %d forecasts, want 1 (not a's count)", ok, s.Forecasts)
	}
	if _, ok := v.Series("a"); ok {
		t.Error("a is still served after its place was taken")
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxSeries: -1, StaleAfter: time.Minute}, "metrics.live_view_series = -1; the live view keeps at least 1 series (default 200)"},
		{Config{MaxSeries: 0, StaleAfter: time.Minute}, "metrics.live_view_series = 0; the live view keeps at least 1 series (default 200)"},
		{Config{MaxSeries: 10, StaleAfter: -time.Second}, "StaleAfter = -1s; use a positive duration"},
		{Config{MaxSeries: 10}, "StaleAfter = 0s; use a positive duration"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(DefaultConfig()); err != nil {
		t.Errorf("New(DefaultConfig()) = %v", err)
	}
}

func TestNumberEncodesNonFiniteAsNull(t *testing.T) {
	b, err := json.Marshal([]Number{1.5, Number(math.NaN()), Number(math.Inf(-1)), -2})
	if err != nil || string(b) != "[1.5,null,null,-2]" {
		t.Errorf("Marshal = %s, %v; want [1.5,null,null,-2]", b, err)
	}
}

// TestObserveAllocatesNothing: once a series is kept with its shapes,
// observing its forecasts allocates nothing, with or without intervals,
// and so does giving a stale series' place to a new one.
func TestObserveAllocatesNothing(t *testing.T) {
	const L, H, K = 96, 24, 8
	fields := []string{"a", "b"}
	rng := rand.New(rand.NewPCG(7, 8))
	win := windowOf(L, len(fields))
	level := []float64{1, 2}
	f := wiretest.Forecast(rng, "s", t0, fields, H, K)
	bare := f
	bare.Intervals = nil

	t.Run("known series", func(t *testing.T) {
		v, _, _ := newView(t, DefaultConfig())
		v.Observe(&bare, win, level)
		if n := testing.AllocsPerRun(200, func() { v.Observe(&bare, win, level) }); n != 0 {
			t.Errorf("Observe allocates %g times per forecast once warm, want 0", n)
		}
	})
	t.Run("with intervals", func(t *testing.T) {
		v, _, _ := newView(t, DefaultConfig())
		v.Observe(&f, win, level)
		if len(f.Intervals) != 2 {
			t.Fatalf("the forecast has %d intervals, want wiretest's 2", len(f.Intervals))
		}
		if n := testing.AllocsPerRun(200, func() { v.Observe(&f, win, level) }); n != 0 {
			t.Errorf("Observe with intervals allocates %g times per forecast once warm, want 0", n)
		}
	})
	t.Run("places taken over", func(t *testing.T) {
		v, clk, _ := newView(t, Config{MaxSeries: 4, StaleAfter: time.Second})
		names := make([]string, 16)
		fs := make([]wire.Forecast, len(names))
		for i := range names {
			names[i] = fmt.Sprintf("s-%d", i)
			fs[i] = f
			fs[i].Series = names[i]
		}
		i := 0
		next := func() {
			clk.now = clk.now.Add(time.Second)
			v.Observe(&fs[i%len(fs)], win, level)
			i++
		}
		for range 2 * len(fs) {
			next()
		}
		if n := testing.AllocsPerRun(200, next); n != 0 {
			t.Errorf("Observe of a new series in a stale place allocates %g times, want 0", n)
		}
		if got := len(v.List().Series); got != 4 {
			t.Errorf("%d series kept, want 4", got)
		}
	})
}

// BenchmarkObserve is the cost the live view adds to each forecast the
// pipeline issues (L=96, H=24, K contributions, one field).
func BenchmarkObserve(b *testing.B) {
	for _, k := range []int{4, 16} {
		b.Run(fmt.Sprintf("contributions=%d", k), func(b *testing.B) {
			v, _, _ := newView(b, DefaultConfig())
			rng := rand.New(rand.NewPCG(1, 1))
			fs := make([]wire.Forecast, 200)
			for i := range fs {
				fs[i] = wiretest.Forecast(rng, fmt.Sprintf("s-%d", i), t0, []string{"value"}, 24, k)
			}
			win := windowOf(96, 1)
			level := []float64{400}
			for i := range fs {
				v.Observe(&fs[i], win, level)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				v.Observe(&fs[i%len(fs)], win, level)
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "forecasts/s")
		})
	}
}

// TestConcurrentUse observes from two goroutines (two pipeline workers)
// while the handlers serve; run with -race.
func TestConcurrentUse(t *testing.T) {
	v, _, mux := newView(t, Config{MaxSeries: 4, StaleAfter: DefaultConfig().StaleAfter})
	done := make(chan struct{})
	for w := range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			win := windowOf(8, 1)
			for i := range 200 {
				f := wiretest.Forecast(rng, fmt.Sprintf("s-%d", (i+w)%6), t0, []string{"value"}, 4, 2)
				v.Observe(&f, win, []float64{1})
			}
		}()
	}
	for range 50 {
		get(t, mux, "/live/series")
		if rec := get(t, mux, "/live/forecast?series=s-1"); rec.Code != http.StatusOK && rec.Code != http.StatusNotFound {
			t.Fatalf("GET s-1 = %d: %s", rec.Code, rec.Body)
		}
	}
	<-done
	<-done
	if n := len(v.List().Series); n != 4 {
		t.Errorf("%d series kept, want MaxSeries = 4", n)
	}
}
