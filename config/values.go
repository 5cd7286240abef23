package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/freqlens/freqlens/service"
)

// Values writes the given keys of cfg as the strings a FREQLENS_* variable
// would give them (a list comma-separated, a duration like 1h0m0s), so that
// FromValues reads the same settings back. A model file records the
// input.* and window.* settings its training data was read with this way,
// and the commands that read such data again start from them. It refuses a
// key that names no setting, and a list whose item holds a comma, which
// the written form cannot keep apart.
func Values(cfg service.Config, keyNames ...string) (map[string]string, error) {
	ks := keys(&cfg)
	out := make(map[string]string, len(keyNames))
	for _, k := range keyNames {
		p, ok := ks[k]
		if !ok {
			return nil, fmt.Errorf("config: no key %s", k)
		}
		s, err := formatValue(p)
		if err != nil {
			return nil, &Error{Key: k, Msg: err.Error()}
		}
		out[k] = s
	}
	return out, nil
}

// FromValues returns service.DefaultConfig() with values (key → the string
// Values writes) applied. A key this build does not know is an error that
// names it, as a misspelt file key is.
func FromValues(values map[string]string) (service.Config, error) {
	cfg := service.DefaultConfig()
	ks := keys(&cfg)
	for _, k := range slices.Sorted(maps.Keys(values)) {
		p, ok := ks[k]
		if !ok {
			return cfg, &Error{Key: k, Msg: "no such key in this version of freqlens"}
		}
		if err := setString(p, values[k]); err != nil {
			return cfg, &Error{Key: k, Msg: fmt.Sprintf("%q: %v", values[k], err)}
		}
	}
	return cfg, nil
}

// formatValue is setString's inverse for the kinds of value a key holds.
func formatValue(p any) (string, error) {
	switch p := p.(type) {
	case *[]string:
		for _, s := range *p {
			if strings.Contains(s, ",") || strings.TrimSpace(s) != s || s == "" {
				return "", fmt.Errorf("%q cannot be written in a comma-separated list", s)
			}
		}
		return strings.Join(*p, ","), nil
	case *[]float64:
		parts := make([]string, len(*p))
		for i, v := range *p {
			parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		return strings.Join(parts, ","), nil
	case *time.Duration:
		return p.String(), nil
	}
	rv := reflect.ValueOf(p).Elem()
	switch rv.Kind() {
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return strconv.FormatBool(rv.Bool()), nil
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), nil
	case reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), nil
	case reflect.Float64:
		return strconv.FormatFloat(rv.Float(), 'g', -1, 64), nil
	}
	return "", fmt.Errorf("cannot be written as a string (a %s)", rv.Type())
}
