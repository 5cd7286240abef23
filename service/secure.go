package service

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"
)

// webConfigFormat says where the format of metrics.web_config (that of
// Prometheus' --web.config.file) is documented, for the errors about it.
const webConfigFormat = "its format: https://prometheus.io/docs/prometheus/latest/configuration/https/"

// readWebConfig reads the web configuration file at path
// (metrics.web_config) and checks it as the listener will serve it: the
// YAML with no unknown key, every user's bcrypt hash, then the
// exporter-toolkit's own checks (web.Validate: the certificate and key
// files, the client CA and client_auth_type, the TLS versions and cipher
// suites, the headers that may be set).
func readWebConfig(path string) (*web.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("metrics.web_config %q cannot be read (%w); give the path of a web configuration file "+
			"(TLS and basic auth; %s), or \"\" to serve plain HTTP", path, err, webConfigFormat)
	}
	var c web.Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil { // as the toolkit reads it
		msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "yaml: ", "")), " ") // one line
		return nil, fmt.Errorf("metrics.web_config %q: %s; fix the file (%s)", path, msg, webConfigFormat)
	}
	for _, user := range slices.Sorted(maps.Keys(c.Users)) {
		if _, err := bcrypt.Cost([]byte(c.Users[user])); err != nil {
			return nil, fmt.Errorf("metrics.web_config %q: basic_auth_users.%s is not a bcrypt hash (%v); "+
				`write the hash of the password, e.g. from htpasswd -nBC 10 "" | tr -d ':\n'`, path, user, err)
		}
	}
	if err := web.Validate(path); err != nil {
		return nil, fmt.Errorf("metrics.web_config %q: %v; fix the file (%s)", path, err, webConfigFormat)
	}
	return &c, nil
}

// checkAllowedHost reports an entry of metrics.allowed_hosts that is not a
// host name (or "*"), saying what to write instead.
func checkAllowedHost(h string) error {
	switch {
	case h == "*":
		return nil
	case strings.TrimSpace(h) == "":
		return errors.New(`is empty; write a host name such as "freqlens.example.com", or remove the entry`)
	case strings.Contains(h, "/"):
		return errors.New(`is not a host name; write the name alone, without scheme or path ("freqlens.example.com")`)
	case strings.Contains(h, "*"):
		return errors.New(`has a wildcard; list each name ("*" alone accepts any host)`)
	case strings.ContainsAny(h, " \t"):
		return errors.New("is not a host name: it holds a space")
	}
	if _, _, err := net.SplitHostPort(h); err == nil {
		return errors.New("has a port; write the name alone (the port of the Host header is not compared)")
	}
	return nil
}

// hostCheck serves a request only when the host name of its Host header is
// one the listener answers to, and refuses any other with 421 Misdirected
// Request. This defeats DNS rebinding: a page on
// http://attacker.example:9464/ whose name the attacker's DNS then points
// at 127.0.0.1 (or at the service's address) makes the browser send its
// requests to the listener, as the page's own origin, so that its script
// could read the answers; but they name Host: attacker.example:9464.
//
// The host name is the Host header without its port, in lower case,
// without the brackets of an IPv6 address and without a trailing dot. It is
// accepted when it is
//
//   - empty: an HTTP/1.0 request without Host, which no browser sends;
//   - an IP address, any: a rebinding needs a name; this is what
//     Prometheus sends when it scrapes a target by address (static or
//     discovered, such as a Kubernetes pod) and what a browser sends for
//     http://127.0.0.1:9464/;
//   - localhost;
//   - the machine's host name (os.Hostname);
//   - the host of metrics.listen, when it is a name;
//   - an entry of metrics.allowed_hosts, or anything when an entry is "*".
//
// The port is not compared: a rebinding page uses the listener's port
// anyway, while a port mapping (docker -p 8080:9464) or a tunnel (ssh -L
// 8080:localhost:9464) changes the port a legitimate browser names. The
// refusal is 421, not 403: the client is not forbidden anything, the
// request names a host this server does not answer for (RFC 9110,
// 15.5.20), and credentials would not change the answer. Refusals are
// logged at WARN at most once a minute, with the host and how many were
// refused.
type hostCheck struct {
	next  http.Handler
	log   *slog.Logger
	any   bool            // metrics.allowed_hosts holds "*"
	names map[string]bool // accepted names, as hostName returns them

	mu      sync.Mutex
	logged  time.Time // of the last WARN
	refused int       // since then
}

// newHostCheck accepts, besides addresses, localhost, the machine's host
// name, the host of listen (metrics.listen) and allowed
// (metrics.allowed_hosts).
func newHostCheck(next http.Handler, listen string, allowed []string, log *slog.Logger) *hostCheck {
	h := &hostCheck{next: next, log: log, names: map[string]bool{"localhost": true}}
	if name, err := os.Hostname(); err == nil && name != "" {
		h.names[hostName(name)] = true
	}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		h.names[hostName(host)] = true
	}
	for _, a := range allowed {
		if a == "*" {
			h.any = true
			continue
		}
		h.names[hostName(a)] = true
	}
	return h
}

// hostName returns the host of a Host header (or of a name) as hostCheck
// compares it: without port, brackets or trailing dot, in lower case.
func hostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// allowed reports whether the listener answers to the Host header host.
func (h *hostCheck) allowed(host string) bool {
	name := hostName(host)
	if h.any || name == "" || h.names[name] {
		return true
	}
	_, err := netip.ParseAddr(name)
	return err == nil
}

func (h *hostCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.allowed(r.Host) {
		h.next.ServeHTTP(w, r)
		return
	}
	h.mu.Lock()
	h.refused++
	n, now := h.refused, time.Now()
	warn := now.Sub(h.logged) >= time.Minute
	if warn {
		h.logged, h.refused = now, 0
	}
	h.mu.Unlock()
	if warn {
		h.log.Warn("refused requests naming a host this service does not answer to (DNS rebinding protection); "+
			"if it is a name of this service, add it to metrics.allowed_hosts", "host", r.Host, "refused", n, "remote", r.RemoteAddr)
	}
	http.Error(w, fmt.Sprintf("freqlens: Host %q is not a name of this service; if it is one, add it to metrics.allowed_hosts", r.Host),
		http.StatusMisdirectedRequest)
}

// withSecurityHeaders sets the listener's security headers on every
// response of next that does not have them when its header is written:
//
//	Content-Security-Policy: default-src 'none'; frame-ancestors 'none'
//	X-Content-Type-Options: nosniff
//	X-Frame-Options: DENY
//	Referrer-Policy: no-referrer
//
// A header already set is kept: one of the web configuration's
// http_server_config.headers (set before the request reaches next), or one
// a handler sets, such as the live view's Content-Security-Policy, which
// lets its page run its own script and styles.
func withSecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hw := &headerWriter{ResponseWriter: w}
		next.ServeHTTP(hw, r)
		hw.fill() // a response without a body or a WriteHeader call
	})
}

// headerWriter fills in the listener's security headers just before the
// header of its response is written.
type headerWriter struct {
	http.ResponseWriter
	filled bool
}

func (w *headerWriter) fill() {
	if w.filled {
		return
	}
	w.filled = true
	h := w.Header()
	for _, kv := range [...][2]string{
		{"Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"},
		{"X-Content-Type-Options", "nosniff"},
		{"X-Frame-Options", "DENY"},
		{"Referrer-Policy", "no-referrer"},
	} {
		if h.Get(kv[0]) == "" {
			h.Set(kv[0], kv[1])
		}
	}
}

func (w *headerWriter) WriteHeader(code int) {
	w.fill()
	w.ResponseWriter.WriteHeader(code)
}

func (w *headerWriter) Write(b []byte) (int, error) {
	w.fill()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *headerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
