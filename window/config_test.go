package window

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestNewValidatesTheShape: New refuses a Shape it cannot work with, naming
// where the field comes from.
func TestNewValidatesTheShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Shape)
		want string // substring of the error; "" = valid
	}{
		{name: "a full shape is valid", edit: func(*Shape) {}},
		{name: "lookback required", edit: func(sh *Shape) { sh.Lookback = 0 }, want: "window lookback = 0"},
		{name: "fields required", edit: func(sh *Shape) { sh.Fields = nil }, want: "input.value_fields is empty"},
		{name: "empty field name", edit: func(sh *Shape) { sh.Fields = []string{"a", ""} }, want: "input.value_fields[1] is empty"},
		{name: "duplicate field", edit: func(sh *Shape) { sh.Fields = []string{"a", "a"} }, want: `input.value_fields[1] = "a" appears twice`},
		{name: "reserved field", edit: func(sh *Shape) { sh.Fields = []string{"ts"} }, want: "reserved"},
		{name: "cadence required", edit: func(sh *Shape) { sh.Cadence = 0 }, want: "input.cadence = 0s"},
		{name: "cadence in whole ms", edit: func(sh *Shape) { sh.Cadence = 1500 * time.Microsecond }, want: "whole number of milliseconds (timestamps are in ms); use e.g. 2ms"},
		{name: "sub-ms cadence", edit: func(sh *Shape) { sh.Cadence = time.Microsecond }, want: "use e.g. 1ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shape := Shape{Lookback: 96, Fields: one, Cadence: time.Hour}
			tc.edit(&shape)
			checkErr(t, shape.Validate(), tc.want)
			_, err := New(shape, DefaultConfig())
			checkErr(t, err, tc.want)
		})
	}
}

// TestNewValidatesTheConfig: every setting is checked as given, a zero
// included, and an error names the YAML key and what to write.
func TestNewValidatesTheConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // substring of the error; "" = valid
	}{
		{name: "DefaultConfig is valid", edit: func(*Config) {}},
		{name: "zero stride", edit: func(c *Config) { c.Stride = 0 }, want: "window.stride = 0; use a positive number of steps"},
		{name: "negative stride", edit: func(c *Config) { c.Stride = -1 }, want: "window.stride = -1"},
		{name: "max gap 0 is valid", edit: func(c *Config) { c.MaxGap = 0 }},
		{name: "negative max gap", edit: func(c *Config) { c.MaxGap = -1 }, want: "window.max_gap = -1 is negative; use 0 to restart on any missing step"},
		{name: "unknown fill", edit: func(c *Config) { c.Fill = "spline" }, want: `window.fill = "spline"; use "linear" or "hold"`},
		{name: "no fill", edit: func(c *Config) { c.Fill = "" }, want: `window.fill = ""; use "linear" or "hold"`},
		{name: "negative lateness", edit: func(c *Config) { c.AllowedLateness = -time.Second }, want: "window.allowed_lateness = -1s"},
		{name: "unknown late", edit: func(c *Config) { c.Late = "keep" }, want: `window.late = "keep"; use "dead_letter"`},
		{name: "no late", edit: func(c *Config) { c.Late = "" }, want: `window.late = ""`},
		{name: "zero ttl", edit: func(c *Config) { c.SeriesTTL = 0 }, want: "window.series_ttl = 0s; use a positive duration"},
		{name: "negative ttl", edit: func(c *Config) { c.SeriesTTL = -time.Second }, want: "window.series_ttl = -1s"},
		{name: "zero max series", edit: func(c *Config) { c.MaxSeries = 0 }, want: "window.max_series = 0; use a positive cap"},
		{name: "negative max series", edit: func(c *Config) { c.MaxSeries = -1 }, want: "window.max_series = -1"},
		{name: "zero max jump", edit: func(c *Config) { c.MaxJump = 0 }, want: "window.max_jump = 0; use a positive finite factor"},
		{name: "NaN max jump", edit: func(c *Config) { c.MaxJump = math.NaN() }, want: "window.max_jump = NaN"},
		{name: "infinite max jump", edit: func(c *Config) { c.MaxJump = math.Inf(1) }, want: "window.max_jump = +Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configWith(tc.edit)
			checkErr(t, cfg.Validate(), tc.want)
			_, err := New(Shape{Lookback: 96, Fields: one, Cadence: time.Hour}, cfg)
			checkErr(t, err, tc.want)
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error = %v, want nil", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error = %v, want one containing %q", err, want)
	}
}

// TestConfigIsTakenAsGiven: DefaultConfig holds the documented defaults, a
// Set keeps its Config as given and its own copy of the Shape's fields.
func TestConfigIsTakenAsGiven(t *testing.T) {
	want := Config{Stride: 1, MaxGap: 3, Fill: FillLinear, AllowedLateness: 0, Late: LateDeadLetter,
		SeriesTTL: 24 * time.Hour, MaxSeries: 1_000_000, MaxJump: 1e4}
	if got := DefaultConfig(); got != want {
		t.Errorf("DefaultConfig() = %+v\nwant %+v", got, want)
	}
	cfg := configWith(func(c *Config) { c.MaxGap, c.AllowedLateness = 0, 0 })
	fields := []string{"value"}
	s := mustNew(t, Shape{Lookback: 96, Fields: fields, Cadence: 5 * time.Minute}, cfg)
	fields[0] = "changed"
	if got := s.Config(); got != cfg {
		t.Errorf("Config() = %+v, want %+v as given", got, cfg)
	}
	if got := s.shape.Fields; len(got) != 1 || got[0] != "value" {
		t.Errorf("the Set's fields = %q after the caller changed its slice, want [value]", got)
	}
}
