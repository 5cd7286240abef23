package main

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/liveview"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

// docsScreenshot is docs/operating.md's picture of the live view, rewritten by
// TestLiveViewInBrowser when FREQLENS_WRITE_DOCS=1.
const docsScreenshot = "../../docs/liveview.png"

// chromium returns the path of Debian's chromium; the test is skipped
// without it unless FREQLENS_REQUIRE_BROWSER=1, which makes its absence a
// failure (CI installs it).
func chromium(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err == nil {
		return bin
	}
	if os.Getenv("FREQLENS_REQUIRE_BROWSER") == "1" {
		t.Fatal("FREQLENS_REQUIRE_BROWSER=1 but chromium is not on PATH; install Debian's chromium (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (Debian package chromium; .ci/run installs it), so the live view is not drawn in a browser; " +
		"set FREQLENS_REQUIRE_BROWSER=1 to make this a failure")
	return ""
}

// runChromium runs headless chromium on url with extra arguments (a fresh
// profile, nothing fetched but url) and returns its standard output. The
// page's console goes to chromium's standard error, and every message
// about the Content-Security-Policy (a script, style or request the policy
// refused) fails the test.
func runChromium(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--hide-scrollbars", "--force-device-scale-factor=1", "--enable-logging=stderr", "--v=0",
		"--user-data-dir=" + t.TempDir()}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(extra, " "), err, stderr.String())
	}
	for line := range strings.Lines(stderr.String()) {
		if strings.Contains(line, "CONSOLE") && strings.Contains(line, "Content Security Policy") {
			t.Errorf("chromium %s: the page broke its Content-Security-Policy: %s", strings.Join(extra, " "), strings.TrimSpace(line))
		}
	}
	return stdout.Bytes()
}

// checkPolicy checks that the page at url is served with the live view's
// Content-Security-Policy, which runChromium then finds unbroken.
func checkPolicy(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("the page's Content-Security-Policy is %q, want the live view's (default-src 'none', script-src 'self', …)", csp)
	}
}

// elementAttrs returns the attributes of the DOM's first element with the
// given id, or of its body when id is "body".
func elementAttrs(t *testing.T, dom, id string) map[string]string {
	t.Helper()
	re := `<[a-z0-9]+\s[^>]*\bid="` + regexp.QuoteMeta(id) + `"[^>]*>`
	if id == "body" {
		re = `<body\b[^>]*>`
	}
	tag := regexp.MustCompile(re).FindString(dom)
	if tag == "" {
		t.Fatalf("the DOM has no element %q", id)
	}
	attrs := map[string]string{}
	for _, m := range regexp.MustCompile(`([a-z-]+)="([^"]*)"`).FindAllStringSubmatch(tag, -1) {
		attrs[m[1]] = html.UnescapeString(m[2])
	}
	return attrs
}

// elementText returns the text of the first element (a div or a p) with
// the given id (tags stripped).
func elementText(t *testing.T, dom, id string) string {
	t.Helper()
	open := regexp.MustCompile(`<(div|p)\s[^>]*\bid="` + regexp.QuoteMeta(id) + `"[^>]*>`).FindStringSubmatchIndex(dom)
	if open == nil {
		t.Fatalf("the DOM has no div or p with id %q", id)
	}
	rest := dom[open[1]:]
	end := strings.Index(rest, "</"+dom[open[2]:open[3]]+">")
	if end < 0 {
		t.Fatalf("the element %q is not closed", id)
	}
	return html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(rest[:end], " "))
}

// TestLiveViewInBrowser runs the demo, waits until forecasts flow and the
// learner has scored some, and draws the live view in headless chromium:
// every plot must be drawn with data (the page writes, after each draw,
// what it drew and how many pixels the data changed; the test reads them
// from the DOM), the parts must be named by period, and a screenshot (in
// the test's artifact directory; go test -artifacts keeps it) must not be
// blank. With FREQLENS_WRITE_DOCS=1 the screenshot becomes
// docs/liveview.png.
func TestLiveViewInBrowser(t *testing.T) {
	bin := chromium(t)
	start := time.Now()
	addr, demoOut := startDemo(t)
	base := "http://" + addr
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\n--- demo output:\n%s", append(args, demoOut.String())...)
	}

	// Forecasts flow with their parts and their intervals (the demo
	// publishes 80% and 95% intervals once a series is calibrated), and the
	// learner has scored steps and measured the frequencies' shares (at its
	// first drift update), so that every plot has something to draw.
	var series liveview.Series
	deadline := time.Now().Add(90 * time.Second)
	for {
		var list liveview.SeriesList
		var rep online.Report
		if getJSONQuiet(base+"/live/series", &list) && len(list.Series) > 0 &&
			getJSONQuiet(base+"/live/forecast?series="+list.Series[0].Series, &series) && len(series.Parts) > 0 && len(series.Intervals) > 0 &&
			getJSONQuiet(base+"/online?worst=0", &rep) && len(rep.Horizon) > 0 &&
			slices.ContainsFunc(rep.Frequencies, func(q online.FrequencyState) bool { return q.Share > 0 }) {
			break
		}
		if time.Now().After(deadline) {
			fail("after 90s the live view still has no series with parts and intervals, or /online no spectrum or horizon error")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if want := "live view: " + base + "/"; !strings.Contains(demoOut.String(), want) {
		t.Errorf("the demo does not print %q", want)
	}
	checkPolicy(t, base+"/")
	t.Logf("forecasts and scored steps after %s", time.Since(start).Round(time.Millisecond))

	// The DOM after the page polled for 6 s of virtual time.
	t0 := time.Now()
	dom := string(runChromium(t, bin, base+"/", "--virtual-time-budget=6000", "--dump-dom"))
	t.Logf("chromium --dump-dom took %s", time.Since(t0).Round(time.Millisecond))
	num := func(id, attr string) int {
		t.Helper()
		v, ok := elementAttrs(t, dom, id)[attr]
		if !ok {
			fail("#%s has no %s attribute: the page did not draw it\n%.3000s", id, attr, dom)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			fail("#%s %s=%q is not a count", id, attr, v)
		}
		return n
	}
	for _, c := range []struct {
		id, attr string
		min      int
		what     string
	}{
		{"plot-forecast", "data-points", series.Lookback, "readings drawn (the window's L steps)"},
		{"plot-forecast", "data-forecast-points", series.Horizon, "forecast steps drawn"},
		{"plot-forecast", "data-drawn-pixels", 500, "pixels of the readings and forecast lines"},
		{"plot-parts", "data-parts", 2, "parts stacked (at least a cycle and the residual)"},
		{"plot-parts", "data-drawn-pixels", 2000, "pixels of the stacked parts"},
		{"plot-spectrum", "data-frequencies", 1, "frequencies in the spectrum"},
		{"plot-spectrum", "data-drawn-pixels", 100, "pixels of the spectrum's bars"},
		{"plot-error", "data-buckets", 1, "horizon buckets of the online error"},
		{"plot-error", "data-drawn-pixels", 100, "pixels of the error bars"},
		{"body", "data-updates", 2, "draws (the page polls)"},
	} {
		if got := num(c.id, c.attr); got < c.min {
			t.Errorf("#%s %s = %d, want at least %d %s", c.id, c.attr, got, c.min, c.what)
		}
	}
	if got := num("plot-forecast", "data-band-pixels"); got < 100 {
		t.Errorf("the forecast has %d intervals but the band covers %d pixels", len(series.Intervals), got)
	}
	if got := elementAttrs(t, dom, "plot-parts")["data-residual"]; got != "residual" {
		t.Errorf("#plot-parts data-residual = %q, want %q: the demo's model reads each series alone", got, "residual")
	}
	legend := elementText(t, dom, "legend-parts")
	if !regexp.MustCompile(`\d+(\.\d)?[smhd] cycle \d+%`).MatchString(legend) || !strings.Contains(legend, "residual") {
		t.Errorf("the parts' legend %q does not name a cycle by its period (\"24h cycle 38%%\") and the residual", legend)
	}
	if s := elementAttrs(t, dom, "body")["data-series"]; s == "" {
		t.Error("the page shows no series")
	}

	// A screenshot, kept in the test's artifact directory.
	shot := filepath.Join(t.ArtifactDir(), "liveview.png")
	t0 = time.Now()
	runChromium(t, bin, base+"/", "--virtual-time-budget=4000", "--window-size=1060,940", "--screenshot="+shot)
	t.Logf("chromium --screenshot took %s", time.Since(t0).Round(time.Millisecond))
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", shot, err)
	}
	if colours, inked := inkOf(img); colours < 50 || inked < 0.05 {
		t.Errorf("the screenshot holds %d colours and %.1f%% non-white pixels: want a drawn page (≥ 50 colours, ≥ 5%%)", colours, 100*inked)
	}
	if os.Getenv("FREQLENS_WRITE_DOCS") == "1" {
		if len(b) > 150<<10 {
			t.Errorf("the screenshot is %d KB; docs/liveview.png should stay under 150 KB: reduce the window size", len(b)>>10)
		} else if err := os.WriteFile(docsScreenshot, b, 0o644); err != nil {
			t.Error(err)
		} else {
			t.Logf("wrote %s (%d KB)", docsScreenshot, len(b)>>10)
		}
	}
	t.Logf("live view drawn with data after %s", time.Since(start).Round(time.Millisecond))
}

// TestLiveViewDrawsIntervalsInBrowser draws a view of two fields whose
// forecast carries 80% and 95% intervals (the demo's forecasts carry none
// until the service calibrates them), opened on the second field by the
// URL: the band must cover pixels, and the field picker must show.
func TestLiveViewDrawsIntervalsInBrowser(t *testing.T) {
	bin := chromium(t)
	v, err := liveview.New(liveview.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	const L, H = 96, 24
	fields := []string{"flow", "speed"}
	f := wiretest.Forecast(rand.New(rand.NewPCG(1, 2)), "road/7", time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC), fields, H, 4)
	// Two rhythms: frequencies 0 and 1 the first's, 2 the second's; 3 is
	// free.
	for i, r := range []int{0, 0, 1} {
		f.Frequencies[i].Cycle, f.Frequencies[i].Rhythm = true, r
	}
	for r := range 2 {
		rp := wire.RhythmPart{Index: r, PeriodSteps: 24 * float64(r+1), Period: time.Duration(24*(r+1)) * time.Hour, Values: make([]float64, len(f.Values))}
		for _, c := range f.Frequencies[:3] {
			if c.Rhythm == r {
				rp.Frequencies = append(rp.Frequencies, c.ID)
				rp.Share += c.Share
				for j, x := range c.Values {
					rp.Values[j] += x
				}
			}
		}
		f.Rhythms = append(f.Rhythms, rp)
	}
	f.ResidualAllChannels = true // as a model with the channel mix issues it
	window := make([]float64, L*len(fields))
	for i := range window {
		window[i] = 400 + 40*math.Sin(2*math.Pi*float64(i/len(fields))/24)
	}
	v.Observe(&f, window, []float64{400, 400})
	mux := http.NewServeMux()
	v.Register(mux)
	rep := online.Report{Horizon: []online.HorizonError{{Bucket: "all", MSE: 0.3}, {Bucket: "1-12", MSE: 0.2}, {Bucket: "13-24", MSE: 0.4}},
		Intervals: []online.Coverage{{Level: 0.8, Scored: 900, Covered: 721, Recent: 0.801, RecentScore: 1.42, RecentWidth: 1.05},
			{Level: 0.95, Scored: 900, Covered: 856, Recent: 0.951, RecentScore: 1.87, RecentWidth: 1.61}}}
	for _, c := range f.Frequencies {
		rep.Frequencies = append(rep.Frequencies, online.FrequencyState{ID: c.ID, Cycle: true, PeriodSteps: c.PeriodSteps, Share: c.Share})
	}
	mux.HandleFunc("GET /online", func(w http.ResponseWriter, r *http.Request) { json.NewEncoder(w).Encode(rep) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	checkPolicy(t, srv.URL+"/")
	url := srv.URL + "/#series=road%2F7&field=speed"
	dom := string(runChromium(t, bin, url, "--virtual-time-budget=3000", "--dump-dom"))
	plot := elementAttrs(t, dom, "plot-forecast")
	if plot["data-bands"] != "2" {
		t.Errorf("#plot-forecast data-bands = %q, want 2 (the 80%% and 95%% intervals)", plot["data-bands"])
	}
	if n, _ := strconv.Atoi(plot["data-band-pixels"]); n < 1000 {
		t.Errorf("#plot-forecast data-band-pixels = %q, want the band to cover at least 1000 pixels", plot["data-band-pixels"])
	}
	// Coverage beside the interval score, which shows a band too wide.
	if got := elementAttrs(t, dom, "intervals-error")["data-levels"]; got != "2" {
		t.Errorf("#intervals-error data-levels = %q, want 2 levels", got)
	}
	if text := elementText(t, dom, "intervals-error"); !strings.Contains(text, "80% intervals: held 80.1% · interval score 1.420 · width 1.050") ||
		!strings.Contains(text, "95% intervals: held 95.1% · interval score 1.870") {
		t.Errorf("#intervals-error reads %q; want each level's coverage beside its interval score and width", text)
	}
	if got := elementAttrs(t, dom, "plot-parts")["data-parts"]; got != "4" {
		t.Errorf("#plot-parts data-parts = %q, want 4 (2 cycles, the other frequencies and the residual)", got)
	}
	if got := elementAttrs(t, dom, "plot-parts")["data-residual"]; got != "residual (all channels)" {
		t.Errorf("#plot-parts data-residual = %q, want %q: the residual of a model with the channel mix reads every field", got, "residual (all channels)")
	}
	if got := elementAttrs(t, dom, "plot-parts")["data-cycles"]; got != "2" {
		t.Errorf("#plot-parts data-cycles = %q, want 2: one colour per rhythm", got)
	}
	// Each cycle's colour is its rhythm's place in the model (strongest
	// first), not the order a load met them: the same on every load.
	if got := elementAttrs(t, dom, "plot-parts")["data-cycle-colours"]; !strings.Contains(got, "24h cycle=#d62728") || !strings.Contains(got, "48h cycle=#1f77b4") {
		t.Errorf("#plot-parts data-cycle-colours = %q, want the 24h cycle (rhythm 0) in the palette's first colour and the 48h cycle (rhythm 1) in its second", got)
	}
	body := elementAttrs(t, dom, "body")
	if body["data-series"] != "road/7" || body["data-field"] != "speed" {
		t.Errorf("the page shows series %q, field %q; want road/7 and speed, as its URL asks", body["data-series"], body["data-field"])
	}
	if _, hidden := elementAttrs(t, dom, "field-label")["hidden"]; hidden || !strings.Contains(dom, `<option value="1">speed</option>`) {
		t.Error("the field picker is hidden or lacks the second field")
	}
	if legend := elementText(t, dom, "legend-forecast"); !strings.Contains(legend, "80% interval") || !strings.Contains(legend, "95% interval") {
		t.Errorf("the forecast's legend %q does not name the 80%% and 95%% intervals", legend)
	}
	// To look at (go test -artifacts keeps it).
	runChromium(t, bin, url, "--virtual-time-budget=3000", "--window-size=1200,1040", "--screenshot="+filepath.Join(t.ArtifactDir(), "intervals.png"))

	// The forecast without the first cycle, toggled off by the URL: its
	// dashed line starts at the forecast less exactly the cycle's part.
	name := "24h cycle"
	dom = string(runChromium(t, bin, url+"&without="+strings.ReplaceAll(name, " ", "%20"), "--virtual-time-budget=3000", "--dump-dom"))
	parts := elementAttrs(t, dom, "plot-parts")
	if parts["data-without"] != name || parts["data-cycles"] != "1" {
		t.Errorf("#plot-parts without %q: data-without %q, data-cycles %q; want the cycle off and one cycle drawn", name, parts["data-without"], parts["data-cycles"])
	}
	got, err := strconv.ParseFloat(parts["data-without-first"], 64)
	want := f.Values[1] - f.Rhythms[0].Values[1] // step 1 of field 1 (speed)
	if err != nil || math.Abs(got-want) > 1e-9*math.Abs(want) {
		t.Errorf("the forecast without the %s starts at %q, want the forecast less its part, %v", name, parts["data-without-first"], want)
	}
	if legend := elementText(t, dom, "legend-parts"); !strings.Contains(legend, "forecast without "+name) {
		t.Errorf("the parts' legend %q does not name the forecast without the %s", legend, name)
	}
}

// inkOf counts the distinct colours of img and the fraction of its pixels
// that are not white.
func inkOf(img image.Image) (colours int, inked float64) {
	seen := map[[3]uint32]bool{}
	r := img.Bounds()
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			seen[[3]uint32{cr >> 8, cg >> 8, cb >> 8}] = true
			if cr>>8 < 245 || cg>>8 < 245 || cb>>8 < 245 {
				n++
			}
		}
	}
	return len(seen), float64(n) / float64(r.Dx()*r.Dy())
}

// getJSONQuiet decodes the JSON of a successful GET into v and reports
// whether it could.
func getJSONQuiet(url string, v any) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}
