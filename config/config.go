package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/freqlens/freqlens/service"
)

// Error is a problem with a key of the file or of the environment: the key,
// where it was given, and what to do about it. Problems of a value that
// parsed (a negative count, an unknown format) are the packages' Validate
// errors, reported by service.New.
type Error struct {
	// Key is the YAML key, e.g. "input.cadence".
	Key string
	// Where is "line 12" of the file or "environment FREQLENS_INPUT_CADENCE".
	Where string
	// Msg says what is wrong and what to write instead.
	Msg string
}

// Errors are every problem with the file's keys, in the file's order, so
// that a file with two misspelt keys is fixed in one go.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
		if i > 0 {
			msgs[i] = strings.TrimPrefix(msgs[i], "config: ")
		}
	}
	return strings.Join(msgs, "; and ")
}

// Unwrap gives errors.As each problem.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (e *Error) Error() string {
	if e.Where == "" {
		return fmt.Sprintf("config: %s: %s", e.Key, e.Msg)
	}
	return fmt.Sprintf("config: %s (%s): %s", e.Key, e.Where, e.Msg)
}

// Load reads a YAML file and returns service.DefaultConfig() with the
// file's keys and then the FREQLENS_* environment variables (looked up with
// env; nil for none) applied. It checks that every key exists and every
// value has the key's type; service.New (or Config.Validate) checks that the
// values can work.
func Load(path string, env func(string) (string, bool)) (service.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return service.Config{}, fmt.Errorf("config: %w", err)
	}
	return Parse(b, env)
}

// Parse is Load for a file already in memory.
func Parse(b []byte, env func(string) (string, bool)) (service.Config, error) {
	cfg := service.DefaultConfig()
	ks := keys(&cfg)
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return cfg, syntaxError(err)
	}
	if len(doc.Content) > 0 {
		var errs Errors
		apply(ks, "", doc.Content[0], &errs)
		switch len(errs) {
		case 0:
		case 1:
			return cfg, errs[0]
		default:
			return cfg, errs
		}
	}
	if env != nil {
		for _, k := range sortedKeys(ks) {
			name := EnvName(k)
			if s, ok := env(name); ok {
				if err := setString(ks[k], s); err != nil {
					msg := err.Error()
					if !strings.Contains(msg, strconv.Quote(s)) { // say the value once
						msg = fmt.Sprintf("%q %s", s, msg)
					}
					return cfg, &Error{Key: k, Where: "environment " + name, Msg: msg}
				}
			}
		}
	}
	return cfg, nil
}

// EnvName returns the environment variable that overrides key:
// kafka.brokers is FREQLENS_KAFKA_BROKERS.
func EnvName(key string) string {
	return "FREQLENS_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Keys returns every YAML key, sorted.
func Keys() []string {
	var cfg service.Config
	return sortedKeys(keys(&cfg))
}

func sortedKeys(ks map[string]any) []string {
	names := make([]string, 0, len(ks))
	for k := range ks {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// apply sets the keys of the mapping node n, whose path is prefix, and adds
// to errs what is wrong with them.
func apply(ks map[string]any, prefix string, n *yaml.Node, errs *Errors) {
	if n.Kind != yaml.MappingNode {
		if prefix == "" {
			*errs = append(*errs, &Error{Key: "(top level)", Where: fmt.Sprintf("line %d", n.Line), Msg: "want a mapping of sections (kafka:, topics:, input:, …)"})
			return
		}
		*errs = append(*errs, &Error{Key: prefix, Where: fmt.Sprintf("line %d", n.Line), Msg: "is a section; write its keys under it: " + strings.Join(under(ks, prefix), ", ")})
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, val := n.Content[i].Value, n.Content[i+1]
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		where := fmt.Sprintf("line %d", n.Content[i].Line)
		if seen[name] {
			*errs = append(*errs, &Error{Key: key, Where: where, Msg: "is given twice; keep one"})
			continue
		}
		seen[name] = true
		if p, ok := ks[key]; ok {
			if val.Kind == yaml.ScalarNode && val.Tag == "!!null" {
				continue // "key:" with no value keeps the default
			}
			if err := setNode(p, val); err != nil {
				*errs = append(*errs, &Error{Key: key, Where: where, Msg: err.Error()})
			}
			continue
		}
		if len(under(ks, key)) == 0 {
			msg := "is not a key"
			if known := under(ks, prefix); prefix != "" {
				msg += "; the keys of " + prefix + " are " + strings.Join(known, ", ")
			} else {
				msg += "; the sections are " + strings.Join(sections(ks), ", ")
			}
			if best := nearestName(name, prefix, ks); best != "" {
				msg += "; did you mean " + best + "?"
			}
			*errs = append(*errs, &Error{Key: key, Where: where, Msg: msg})
			continue
		}
		apply(ks, key, val, errs)
	}
}

// under returns the keys of section prefix ("" for all), relative to it.
func under(ks map[string]any, prefix string) []string {
	var out []string
	for _, k := range sortedKeys(ks) {
		if prefix == "" {
			out = append(out, k)
		} else if rest, ok := strings.CutPrefix(k, prefix+"."); ok {
			out = append(out, rest)
		}
	}
	return out
}

// setNode decodes the YAML value n into the field p points to.
func setNode(p any, n *yaml.Node) error {
	switch p := p.(type) {
	case *[]string:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%q is not a list; write it as one, like [%s]", n.Value, n.Value)
		}
		var v []string
		if err := n.Decode(&v); err != nil {
			return errors.New("is not a list of names; write it like [a, b]")
		}
		*p = v
		return nil
	case *[]float64:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%q is not a list; write it as one, like [%s]", n.Value, n.Value)
		}
		var v []float64
		if err := n.Decode(&v); err != nil {
			return errors.New("is not a list of numbers; write it like [1, 2.5]")
		}
		*p = v
		return nil
	case *time.Duration:
		return setString(p, n.Value)
	}
	if n.Kind != yaml.ScalarNode {
		return errors.New("is a single value, not a list or a section")
	}
	rv := reflect.ValueOf(p).Elem()
	tmp := reflect.New(rv.Type())
	if err := n.Decode(tmp.Interface()); err != nil {
		return fmt.Errorf("%q %v", n.Value, kindError(rv.Kind()))
	}
	rv.Set(tmp.Elem())
	return nil
}

// setString parses an environment value (lists are comma-separated) into
// the field p points to.
func setString(p any, s string) error {
	switch p := p.(type) {
	case *[]string:
		var parts []string
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f != "" {
				parts = append(parts, f)
			}
		}
		*p = parts
		return nil
	case *[]float64:
		var v []float64
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return fmt.Errorf("%q is not a comma-separated list of numbers; write it like 1,2.5", s)
			}
			v = append(v, x)
		}
		*p = v
		return nil
	case *time.Duration:
		d, err := parseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration; write it like 250ms, 5m, 1h or 14d", s)
		}
		*p = d
		return nil
	}
	rv := reflect.ValueOf(p).Elem()
	var err error
	switch rv.Kind() {
	case reflect.String:
		rv.SetString(s)
	case reflect.Bool:
		var v bool
		v, err = strconv.ParseBool(s)
		rv.SetBool(v)
	case reflect.Int, reflect.Int64:
		var v int64
		v, err = strconv.ParseInt(s, 10, 64)
		rv.SetInt(v)
	case reflect.Uint64:
		var v uint64
		v, err = strconv.ParseUint(s, 10, 64)
		rv.SetUint(v)
	case reflect.Float64:
		var v float64
		v, err = strconv.ParseFloat(s, 64)
		rv.SetFloat(v)
	default:
		return fmt.Errorf("cannot be set from a string (a %s)", rv.Type())
	}
	if err != nil {
		return kindError(rv.Kind())
	}
	return nil
}

func kindError(k reflect.Kind) error {
	switch k {
	case reflect.Bool:
		return errors.New("is not true or false")
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return errors.New("is not a whole number")
	case reflect.Float64:
		return errors.New("is not a number")
	}
	return errors.New("is not a single value")
}

// parseDuration is time.ParseDuration that also takes whole or decimal
// days ("14d", "1.5d"), the unit of history and retention.
func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 || n > 100_000 {
			return 0, fmt.Errorf("bad number of days %q", days)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	return time.ParseDuration(s)
}

// CheckEnviron reports the first variable of environ ("NAME=value" entries,
// as os.Environ returns them) that looks like a misspelt key's variable:
// FREQLENS_, no key's name, and within two edits of one
// (FREQLENS_INPUT_CADENSE, FREQLENS_OUTPT_INTERVALS). Such an override would otherwise be
// ignored without a word, where a misspelt key in the file is refused.
// Names further from every key are left alone, and so are those that
// Kubernetes and Docker give a service's address (FREQLENS_SERVICE_HOST,
// FREQLENS_METRICS_PORT_9464_TCP for Services named freqlens or
// freqlens-metrics), as are the tests' switches (FREQLENS_FAULT_…).
func CheckEnviron(environ []string) error {
	known := map[string]string{} // variable → key
	sections := map[string][]string{}
	for _, k := range Keys() {
		known[EnvName(k)] = k
		sec, _, _ := strings.Cut(k, ".")
		sections[sec] = append(sections[sec], k)
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, "FREQLENS_")
		if !ok {
			continue
		}
		sec, _, _ := strings.Cut(strings.ToLower(rest), "_")
		keys, isSection := sections[sec]
		if _, isKey := known[name]; isKey || sec == "fault" || serviceAddress(name) {
			continue
		}
		if !isSection {
			// A misspelt section (FREQLENS_OUTPT_INTERVALS): every key is
			// a candidate, and only a near one counts.
			keys = Keys()
		}
		best, bestD := "", -1
		for _, k := range keys {
			if d := editDistance(name, EnvName(k)); bestD < 0 || d < bestD {
				best, bestD = k, d
			}
		}
		if bestD > 2 {
			continue
		}
		return &Error{Key: sec, Where: "environment " + name,
			Msg: fmt.Sprintf("%s names no key; did you mean %s (%s)? Unset it or fix its name", name, EnvName(best), best)}
	}
	return nil
}

// serviceAddress reports whether name is one of the variables Kubernetes
// (NAME_SERVICE_HOST, NAME_SERVICE_PORT[_PORTNAME], NAME_PORT,
// NAME_PORT_<port>_<proto>[_…]) or Docker links give a service's address.
func serviceAddress(name string) bool {
	return strings.Contains(name, "_SERVICE_HOST") || strings.Contains(name, "_SERVICE_PORT") ||
		strings.HasSuffix(name, "_PORT") || strings.Contains(name, "_PORT_")
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// syntaxError words a YAML syntax error. The parser names the line where
// the construct it was reading began (an unclosed "[" two lines up, the
// mapping whose indentation broke), so the mistake is on that line or
// below it, which the message says.
func syntaxError(err error) error {
	msg := strings.ReplaceAll(err.Error(), "yaml: ", "")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, text, ok := strings.Cut(rest, ": "); ok {
			if _, err := strconv.Atoi(n); err == nil {
				msg = fmt.Sprintf("YAML syntax at line %s or below: %s", n, text)
			}
		}
	}
	return fmt.Errorf("config: %s", msg)
}

// sections returns the top-level sections of the keys, sorted.
func sections(ks map[string]any) []string {
	var out []string
	for _, k := range sortedKeys(ks) {
		if sec, _, _ := strings.Cut(k, "."); !slices.Contains(out, sec) {
			out = append(out, sec)
		}
	}
	return out
}

// nearestName returns the name at the level of prefix ("" for the
// sections) within two edits of name, or "" when none is.
func nearestName(name, prefix string, ks map[string]any) string {
	var names []string
	if prefix == "" {
		names = sections(ks)
	} else {
		for _, k := range under(ks, prefix) {
			first, _, _ := strings.Cut(k, ".")
			names = append(names, first)
		}
	}
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(name, n); d < bestD && n != name {
			best, bestD = n, d
		}
	}
	return best
}
