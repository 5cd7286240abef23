package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
)

// dashboardPath is the Grafana dashboard, relative to this package.
const dashboardPath = "../../deploy/grafana/freqlens.json"

// panelQuery is one PromQL query of the dashboard: a panel's target or a
// template variable's label_values query.
type panelQuery struct {
	panel, ref string
	expr       string
}

// dashboard is what the tests read of the dashboard's JSON model.
type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Panels        []panel
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	// Panels are a collapsed row's panels.
	Panels []panel `json:"panels"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// allPanels lists every panel, those inside collapsed rows included.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// queries lists every panel's PromQL, in dashboard order.
func (d dashboard) queries() []panelQuery {
	var qs []panelQuery
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			qs = append(qs, panelQuery{panel: p.Title, ref: tg.RefID, expr: tg.Expr})
		}
	}
	return qs
}

// variables returns the query variables' label_values(metric, label) as
// name → {metric, label}, in dashboard order.
func (d dashboard) variables(t *testing.T) (names []string, metric, label map[string]string) {
	t.Helper()
	metric, label = map[string]string{}, map[string]string{}
	lv := regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_]\w*)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		parts := lv.FindStringSubmatch(strings.TrimSpace(q))
		if parts == nil {
			t.Fatalf("variable %s: query %q is not label_values(metric, label)", v.Name, q)
		}
		names = append(names, v.Name)
		metric[v.Name], label[v.Name] = parts[1], parts[2]
	}
	return names, metric, label
}

// metricSelector finds the metric names of a query and their label matchers.
var metricSelector = regexp.MustCompile(`\b(freqlens_[a-z0-9_]+)(\{[^}]*\})?`)

// declaredMetrics returns the metric names written as string literals in
// the repository's Go code (tests excluded), as the style guide asks.
func declaredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	lit := regexp.MustCompile(`"(freqlens_[a-z0-9_]+)"`)
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestDashboardIsWellFormed checks the dashboard's structure and that its
// queries name metrics the code declares, filtered by the job and instance
// variables. It needs no Prometheus.
func TestDashboardIsWellFormed(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want a uid, a title and a schema of Grafana 9 or later", d.UID, d.Title, d.SchemaVersion)
	}
	declared := declaredMetrics(t)
	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range d.allPanels() {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v is outside the 24-column grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Fatalf("panels %q and %q overlap at column %d, row %d", other, p.Title, x, y)
				}
				taken[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d queries; want the ${datasource} variable and at least one query", p.Title, p.Datasource, len(p.Targets))
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: target %q is unnamed, repeated or empty", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
		}
	}
	qs := d.queries()
	if len(qs) < 10 {
		t.Fatalf("the dashboard has %d queries; it should show throughput, lag, latency, errors, periods, drift and fine-tuning", len(qs))
	}
	for _, q := range qs {
		sels := metricSelector.FindAllStringSubmatch(q.expr, -1)
		if len(sels) == 0 {
			t.Errorf("panel %q %s: %s reads no freqlens metric", q.panel, q.ref, q.expr)
		}
		for _, s := range sels {
			name := s[1]
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			if !declared[name] && !declared[base] {
				t.Errorf("panel %q %s: metric %s is declared nowhere in the Go code", q.panel, q.ref, name)
			}
			if !strings.Contains(s[2], `job=~"$job"`) || !strings.Contains(s[2], `instance=~"$instance"`) {
				t.Errorf("panel %q %s: %s%s does not filter by the $job and $instance variables", q.panel, q.ref, name, s[2])
			}
		}
	}
}

// startDemo runs the demo in this process until the test ends: 8 sensors
// at 20 simulated hours per second, a model trained one epoch, fine-tuning
// every second, and its metrics listener (with /online and the live view)
// on a free port, which it returns with the demo's output.
func startDemo(t *testing.T) (metricsAddr string, out *lockedBuffer) {
	t.Helper()
	metricsAddr = kafkatest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out = &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--metrics-addr", metricsAddr, "--series", "8", "--rate", "20",
			"--train-epochs", "1", "--finetune-interval", "1s"}, out, out)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the demo did not stop within 20s of its cancellation")
		}
	})
	return metricsAddr, out
}

// lockedBuffer is a bytes.Buffer that several goroutines may write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// promClient asks a Prometheus server's HTTP API.
type promClient struct {
	base string
	http *http.Client
}

// get decodes the data of a successful API answer into v; an answer with
// status "error" is returned as an error naming Prometheus' reason.
func (c promClient) get(path string, params url.Values, v any) error {
	resp, err := c.http.Get(c.base + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("%s answered %s: %.200s", path, resp.Status, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("prometheus: %s: %s", r.ErrorType, r.Error)
	}
	return json.Unmarshal(r.Data, v)
}

// promTarget is one of the active targets of Prometheus' /api/v1/targets.
type promTarget struct {
	ScrapePool string `json:"scrapePool"`
	Health     string `json:"health"`
	LastError  string `json:"lastError"`
}

// targets returns Prometheus' active targets.
func (c promClient) targets() ([]promTarget, error) {
	var data struct {
		ActiveTargets []promTarget `json:"activeTargets"`
	}
	err := c.get("/api/v1/targets", nil, &data)
	return data.ActiveTargets, err
}

// startPrometheus runs the prometheus binary until the test ends, on a
// free port with a temporary store, scraping and evaluating every second,
// with scrapeConfigs (the YAML list under scrape_configs:), and returns a
// client of its API and its output.
func startPrometheus(t *testing.T, bin, scrapeConfigs string) (promClient, *lockedBuffer) {
	t.Helper()
	dir := t.TempDir()
	promAddr := kafkatest.FreeAddr(t)
	cfg := "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" + scrapeConfigs
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	promOut := &lockedBuffer{}
	prom := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	prom.Stdout, prom.Stderr = promOut, promOut
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		prom.Process.Signal(os.Interrupt)
		stopped := make(chan error, 1)
		go func() { stopped <- prom.Wait() }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			prom.Process.Kill()
			<-stopped
		}
	})
	return promClient{base: "http://" + promAddr, http: &http.Client{Timeout: 5 * time.Second}}, promOut
}

// finiteSamples runs an instant query and counts the samples of its result
// whose value is a finite number.
func (c promClient) finiteSamples(expr string) (int, error) {
	var data struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	}
	if err := c.get("/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return 0, err
	}
	n := 0
	for _, raw := range data.Result {
		var s struct {
			Value [2]any `json:"value"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		str, _ := s.Value[1].(string)
		if v, err := strconv.ParseFloat(str, 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			n++
		}
	}
	return n, nil
}

// TestDashboardQueriesAgainstPrometheus runs the demo, lets a real
// Prometheus scrape it every second, and runs every query of the dashboard
// (read from its JSON, so a panel added later is tested too) until each
// returns at least one finite sample. It is skipped only when the
// prometheus binary is absent.
func TestDashboardQueriesAgainstPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian package prometheus; .ci/run installs it), so the dashboard's queries are not run against it")
	}
	d := loadDashboard(t)
	start := time.Now()

	metricsAddr, demoOut := startDemo(t)

	// Prometheus, scraping the demo every second into a temporary store.
	pc, promOut := startPrometheus(t, bin, fmt.Sprintf("  - job_name: freqlens\n    static_configs:\n      - targets: [%q]\n", metricsAddr))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\n--- demo output:\n%s\n--- prometheus output:\n%s", append(args, demoOut.String(), promOut.String())...)
	}

	// Wait for the target to be up.
	deadline := time.Now().Add(60 * time.Second)
	for {
		targets, err := pc.targets()
		if err == nil && len(targets) == 1 && targets[0].Health == "up" {
			break
		}
		if time.Now().After(deadline) {
			fail("the demo's metrics target is not up after 60s: %v %+v", err, targets)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("target up after %s", time.Since(start).Round(time.Millisecond))

	// The variables: each label_values query must find values; the panels'
	// queries then use the first value found, as a user's choice would.
	names, metric, label := d.variables(t)
	values := map[string]string{}
	subst := func(q string) string {
		q = strings.ReplaceAll(q, "$__rate_interval", "10s")
		for _, n := range names {
			if v, ok := values[n]; ok {
				// As Grafana does: a regex-escaped value inside a PromQL string,
				// whose own escape character doubles the backslashes.
				q = strings.ReplaceAll(q, "$"+n, strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`))
			}
		}
		return q
	}
	for _, n := range names {
		for {
			var vals []string
			err := pc.get("/api/v1/label/"+label[n]+"/values", url.Values{"match[]": {subst(metric[n])}}, &vals)
			if err != nil {
				fail("variable %s: label_values(%s, %s): %v", n, metric[n], label[n], err)
			}
			if len(vals) > 0 {
				slices.Sort(vals)
				values[n] = vals[0]
				break
			}
			if time.Now().After(deadline) {
				fail("variable %s: label_values(%s, %s) found no value", n, metric[n], label[n])
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	if values["instance"] != metricsAddr {
		t.Errorf("variable instance = %q, want the demo's metrics address %s", values["instance"], metricsAddr)
	}

	// Every query, until each has returned a finite sample.
	pending := d.queries()
	for len(pending) > 0 {
		var still []panelQuery
		for _, q := range pending {
			n, err := pc.finiteSamples(subst(q.expr))
			if err != nil {
				fail("panel %q query %s is refused: %v\n%s", q.panel, q.ref, err, subst(q.expr))
			}
			if n == 0 {
				still = append(still, q)
			}
		}
		pending = still
		if len(pending) > 0 && time.Now().After(deadline) {
			var msg []string
			for _, q := range pending {
				msg = append(msg, fmt.Sprintf("panel %q query %s: %s", q.panel, q.ref, subst(q.expr)))
			}
			fail("after %s these queries still return no finite sample:\n%s", time.Since(start).Round(time.Second), strings.Join(msg, "\n"))
		}
		if len(pending) > 0 {
			time.Sleep(time.Second)
		}
	}
	t.Logf("all %d queries of %d panels returned data after %s", len(d.queries()), len(d.allPanels()), time.Since(start).Round(time.Millisecond))
}

// TestPrometheusScrapesOverTLS: a real Prometheus scrapes `freqlens serve`
// whose metrics.web_config sets up TLS and basic auth, with the
// scrape_config of deploy/grafana/README.md (scheme https, tls_config with
// the CA, basic_auth with a password file); without credentials its
// scrape is refused with 401.
func TestPrometheusScrapesOverTLS(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian package prometheus; .ci/run installs it), so no scrape over TLS is tried")
	}
	certFile, keyFile := kafkatest.SelfSignedFiles(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	webConfig, passwordFile := filepath.Join(dir, "web.yml"), filepath.Join(dir, "password")
	os.WriteFile(webConfig, fmt.Appendf(nil, "tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prometheus: %s\n",
		certFile, keyFile, hash), 0o600)
	os.WriteFile(passwordFile, []byte("s3cret"), 0o600)
	metricsAddr := kafkatest.FreeAddr(t)
	startServe(t, fmt.Sprintf("input: {cadence: 1h}\nmetrics: {listen: %q, web_config: %q}\n", metricsAddr, webConfig))

	job := func(name, auth string) string {
		return fmt.Sprintf("  - job_name: %s\n    scheme: https\n    tls_config:\n      ca_file: %s\n%s    static_configs:\n      - targets: [%q]\n",
			name, certFile, auth, metricsAddr)
	}
	pc, promOut := startPrometheus(t, bin, job("freqlens", "    basic_auth:\n      username: prometheus\n      password_file: "+passwordFile+"\n")+
		job("without-credentials", ""))
	want := map[string]func(promTarget) bool{
		"freqlens":            func(tg promTarget) bool { return tg.Health == "up" },
		"without-credentials": func(tg promTarget) bool { return tg.Health == "down" && strings.Contains(tg.LastError, "401") },
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		targets, err := pc.targets()
		ok := err == nil && len(targets) == len(want)
		for _, tg := range targets {
			ok = ok && want[tg.ScrapePool] != nil && want[tg.ScrapePool](tg)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s the targets are %+v (%v); want freqlens up and without-credentials down with 401\n--- prometheus output:\n%s",
				targets, err, promOut.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
	if n, err := pc.finiteSamples(`freqlens_build_info{job="freqlens"}`); err != nil || n != 1 {
		t.Errorf("freqlens_build_info scraped over TLS: %d samples, %v; want 1", n, err)
	}
}
