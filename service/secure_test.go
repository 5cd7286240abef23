package service

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/liveview"
)

// TestHostCheck: requests naming an address, localhost, the machine's
// host name, the host of metrics.listen or a name of metrics.allowed_hosts
// are served, whatever the port; any other name (a DNS rebinding page's)
// is refused with 421.
func TestHostCheck(t *testing.T) {
	hostname, err := os.Hostname()
	if err != nil || hostname == "" {
		t.Fatalf("os.Hostname() = %q, %v", hostname, err)
	}
	for _, tc := range []struct {
		name    string
		listen  string
		allowed []string
		host    string
		want    int
	}{
		{name: "loopback address", listen: "127.0.0.1:9464", host: "127.0.0.1:9464", want: 200},
		{name: "localhost", listen: "127.0.0.1:9464", host: "localhost:9464", want: 200},
		{name: "localhost in capitals with a trailing dot", listen: "127.0.0.1:9464", host: "LOCALHOST.:9464", want: 200},
		{name: "IPv6 loopback", listen: "[::1]:9464", host: "[::1]:9464", want: 200},
		{name: "an address scraped by Prometheus", listen: "0.0.0.0:9464", host: "10.0.0.5:9464", want: 200},
		{name: "another port (a tunnel or a port mapping)", listen: "127.0.0.1:9464", host: "localhost:8080", want: 200},
		{name: "no port", listen: "127.0.0.1:9464", host: "127.0.0.1", want: 200},
		{name: "HTTP/1.0 without Host", listen: "127.0.0.1:9464", host: "", want: 200},
		{name: "the machine's host name", listen: "0.0.0.0:9464", host: hostname + ":9464", want: 200},
		{name: "the host of metrics.listen", listen: "freqlens-1.example:9464", host: "freqlens-1.example:9464", want: 200},
		{name: "an allowed name", listen: "0.0.0.0:9464", allowed: []string{"FreqLens.example.com"}, host: "freqlens.example.com:443", want: 200},
		{name: "any name with *", listen: "0.0.0.0:9464", allowed: []string{"*"}, host: "anything.example:9464", want: 200},
		{name: "a rebinding page's name", listen: "127.0.0.1:9464", host: "attacker.example:9464", want: 421},
		{name: "a name that resolves to loopback", listen: "127.0.0.1:9464", host: "127.0.0.1.nip.io:9464", want: 421},
		{name: "localhost as a subdomain", listen: "127.0.0.1:9464", host: "localhost.attacker.example:9464", want: 421},
		{name: "a name not allowed", listen: "0.0.0.0:9464", allowed: []string{"freqlens.example.com"}, host: "other.example.com:9464", want: 421},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
			h := newHostCheck(ok, tc.listen, tc.allowed, slog.New(slog.DiscardHandler))
			req := httptest.NewRequest(http.MethodGet, "/live/series", nil)
			req.Host = tc.host
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("Host %q: %d %q, want %d", tc.host, rec.Code, rec.Body, tc.want)
			}
			if tc.want == 421 && !strings.Contains(rec.Body.String(), "metrics.allowed_hosts") {
				t.Errorf("the refusal %q does not say to add the name to metrics.allowed_hosts", rec.Body)
			}
		})
	}
}

// TestHostCheckLogsRarely: refused requests are logged once a minute, not
// once each.
func TestHostCheckLogsRarely(t *testing.T) {
	var logs bytes.Buffer
	h := newHostCheck(http.NotFoundHandler(), "127.0.0.1:9464", nil, slog.New(slog.NewTextHandler(&logs, nil)))
	for range 5 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = "attacker.example"
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "host=attacker.example") {
		t.Errorf("5 refusals logged %d WARN lines, want 1 naming the host:\n%s", n, logs.String())
	}
}

// TestListenerHeaders: every response of the listener carries the
// security headers; the live view's carry its own Content-Security-Policy,
// which lets its page run its own script and styles, and every other
// response one that allows nothing.
func TestListenerHeaders(t *testing.T) {
	v, err := liveview.New(liveview.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	v.Register(mux)
	mux.HandleFunc("/silent", func(http.ResponseWriter, *http.Request) {}) // writes nothing
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m, err := listenMetricsForTest(t, Config{MetricsListen: "127.0.0.1:0"}, reg, mux)
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop()
	const none = "default-src 'none'; frame-ancestors 'none'"
	for _, tc := range []struct {
		name, path, host string
		code             int
		csp              string // "" for the live view's
	}{
		{name: "metrics", path: "/metrics", code: 200, csp: none},
		{name: "the live view's page", path: "/", code: 200},
		{name: "the live view's script", path: "/live/live.js", code: 200},
		{name: "the live view's styles", path: "/live/live.css", code: 200},
		{name: "the live view's JSON", path: "/live/series", code: 200},
		{name: "the live view's error", path: "/live/forecast", code: 400},
		{name: "a response without a body", path: "/silent", code: 200, csp: none},
		{name: "not found", path: "/nothing", code: 404, csp: none},
		{name: "another host", path: "/", host: "attacker.example", code: 421, csp: none},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.Host = "127.0.0.1:9464"
			if tc.host != "" {
				req.Host = tc.host
			}
			rec := httptest.NewRecorder()
			m.srv.Handler.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("GET %s: %d, want %d", tc.path, rec.Code, tc.code)
			}
			h := rec.Header()
			for name, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
				if got := h.Get(name); got != want {
					t.Errorf("GET %s: %s = %q, want %q", tc.path, name, got, want)
				}
			}
			csp := h.Get("Content-Security-Policy")
			if tc.csp != "" {
				if csp != tc.csp {
					t.Errorf("GET %s: Content-Security-Policy = %q, want %q", tc.path, csp, tc.csp)
				}
				return
			}
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("GET %s: Content-Security-Policy %q lacks %s", tc.path, csp, want)
				}
			}
			if strings.Contains(csp, "unsafe") {
				t.Errorf("GET %s: Content-Security-Policy %q allows unsafe code", tc.path, csp)
			}
		})
	}
}

// TestWebConfigErrors: a web configuration file that cannot be served is
// refused with one line that names metrics.web_config, the file and what
// is wrong.
func TestWebConfigErrors(t *testing.T) {
	certFile, keyFile := kafkatest.SelfSignedFiles(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tlsOK := "tls_server_config: {cert_file: " + certFile + ", key_file: " + keyFile + "}\n"
	for _, tc := range []struct {
		name, path string
		want       string // in the error, after the key and the path
	}{
		{"missing file", filepath.Join(dir, "nope.yml"), "no such file"},
		{"unknown key", write("typo.yml", "basic_auth_user: {a: b}\n"), "field basic_auth_user not found"},
		{"password instead of a hash", write("plain.yml", tlsOK+"basic_auth_users: {prometheus: secret}\n"), "basic_auth_users.prometheus is not a bcrypt hash"},
		{"missing key file", write("nokey.yml", "tls_server_config: {cert_file: "+certFile+", key_file: "+filepath.Join(dir, "nokey.pem")+"}\n"), "key_file"},
		{"certificate without key", write("nocert.yml", "tls_server_config: {cert_file: "+certFile+"}\n"), "missing one of key or key_file"},
		{"client CA without client auth", write("ca.yml", "tls_server_config: {cert_file: "+certFile+", key_file: "+keyFile+", client_ca_file: "+certFile+"}\n"), "Client Auth"},
		{"unknown TLS version", write("tls10.yml", "tls_server_config: {cert_file: "+certFile+", key_file: "+keyFile+", min_version: TLS9}\n"), "unknown TLS version"},
		{"header that may not be set", write("header.yml", "http_server_config: {headers: {Server: freqlens}}\n"), `"Server" can not be configured`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readWebConfig(tc.path)
			if err == nil {
				t.Fatal("readWebConfig accepted it")
			}
			msg := err.Error()
			if prefix := "metrics.web_config \"" + tc.path + "\""; !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to start with %s and say %q", msg, prefix, tc.want)
			}
		})
	}
	good := write("good.yml", tlsOK+"basic_auth_users: {prometheus: '"+string(hash)+"'}\n")
	c, err := readWebConfig(good)
	if err != nil || !c.TLSConfig.IsEnabled() || len(c.Users) != 1 {
		t.Errorf("readWebConfig(a good file) = %+v, %v; want TLS and one user", c, err)
	}
}

// TestAllowedHostsErrors: an entry of metrics.allowed_hosts that is no
// host name is refused with what to write instead.
func TestAllowedHostsErrors(t *testing.T) {
	for _, tc := range []struct{ entry, want string }{
		{"freqlens.example.com:9464", "has a port"},
		{"https://freqlens.example.com", "without scheme or path"},
		{"*.example.com", "wildcard"},
		{"", "is empty"},
		{"free lens", "space"},
	} {
		err := Config{MetricsAllowedHosts: []string{"localhost", tc.entry}}.checkMetrics()
		if err == nil || !strings.HasPrefix(err.Error(), "metrics.allowed_hosts[1]") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("allowed_hosts entry %q: %v, want an error about metrics.allowed_hosts[1] saying %q", tc.entry, err, tc.want)
		}
	}
	for _, ok := range []string{"*", "freqlens.example.com", "10.0.0.5", "[::1]", "::1"} {
		if err := (Config{MetricsAllowedHosts: []string{ok}}).checkMetrics(); err != nil {
			t.Errorf("allowed_hosts entry %q: %v, want it accepted", ok, err)
		}
	}
}

// TestPprof: Go's profiles are served under /debug/pprof/ only when
// metrics.pprof asks for them, and behind the listener's Host check.
func TestPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		reg, err := NewRegistry()
		if err != nil {
			t.Fatal(err)
		}
		m, err := listenMetricsForTest(t, Config{MetricsListen: "127.0.0.1:0", MetricsPprof: on}, reg, http.NewServeMux())
		if err != nil {
			t.Fatal(err)
		}
		get := func(path, host string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Host = host
			rec := httptest.NewRecorder()
			m.srv.Handler.ServeHTTP(rec, req)
			return rec
		}
		for path, want := range map[string]string{"/debug/pprof/": "goroutine", "/debug/pprof/heap?debug=1": "heap profile", "/debug/pprof/cmdline": ""} {
			rec := get(path, "127.0.0.1:9464")
			switch {
			case !on && rec.Code != http.StatusNotFound:
				t.Errorf("metrics.pprof off: GET %s: %d, want 404", path, rec.Code)
			case on && rec.Code != http.StatusOK:
				t.Errorf("metrics.pprof on: GET %s: %d, want 200", path, rec.Code)
			case on && !strings.Contains(rec.Body.String(), want):
				t.Errorf("metrics.pprof on: GET %s lacks %q:\n%.300s", path, want, rec.Body.String())
			}
		}
		if rec := get("/debug/pprof/heap", "attacker.example"); rec.Code != http.StatusMisdirectedRequest {
			t.Errorf("metrics.pprof %v: GET /debug/pprof/heap naming another host: %d, want 421", on, rec.Code)
		}
		m.stop()
	}
}
