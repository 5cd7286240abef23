package readings

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	with := func(f func(c *Config)) Config {
		var c Config
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // the YAML key first, then the fix
	}{
		{name: "unknown format", cfg: with(func(c *Config) { c.Format = "xml" }), want: []string{`input.format = "xml"`, `"json", "csv" or "arrow"`}},
		{name: "series and time share a field", cfg: with(func(c *Config) { c.TimeField = "series" }), want: []string{"input.series_field and input.time_field"}},
		{name: "repeated value field", cfg: with(func(c *Config) { c.ValueFields = []string{"a", "b", "a"} }), want: []string{"input.value_fields[0] and input.value_fields[2]", "once"}},
		{name: "empty value field", cfg: with(func(c *Config) { c.ValueFields = []string{""} }), want: []string{"input.value_fields[0] is empty"}},
		{name: "value field is the time", cfg: with(func(c *Config) { c.ValueFields = []string{"ts"} }), want: []string{`input.value_fields[0] = "ts"`}},
		{name: "value field named like a batch column", cfg: with(func(c *Config) { c.ValueFields = []string{"ingest_ts"} }), want: []string{`input.value_fields[0] = "ingest_ts"`, "rename"}},
		{name: "CSV without the time column", cfg: with(func(c *Config) { c.Format = FormatCSV; c.CSVColumns = []string{"series", "value"} }), want: []string{"input.csv_columns", `time column "ts"`}},
		{name: "CSV without a value column", cfg: with(func(c *Config) {
			c.Format = FormatCSV
			c.ValueFields = []string{"a", "b"}
			c.CSVColumns = []string{"ts", "a"}
		}), want: []string{"input.csv_columns", `value column "b"`}},
		{name: "CSV column twice", cfg: with(func(c *Config) { c.Format = FormatCSV; c.CSVColumns = []string{"ts", "value", "ts"} }), want: []string{"input.csv_columns[0] and input.csv_columns[2]"}},
		{name: "negative MaxFuture", cfg: with(func(c *Config) { c.MaxFuture = -time.Second }), want: []string{"input.max_future = -1s"}},
		{name: "negative MaxPast", cfg: with(func(c *Config) { c.MaxPast = -time.Second }), want: []string{"input.max_past = -1s"}},
		{name: "negative MaxSeriesBytes", cfg: with(func(c *Config) { c.MaxSeriesBytes = -1 }), want: []string{"input.max_series_id_bytes = -1"}},
		{name: "value range of one number", cfg: with(func(c *Config) { c.ValueRange = []float64{1} }), want: []string{"input.value_range = [1]", "two numbers"}},
		{name: "value range upside down", cfg: with(func(c *Config) { c.ValueRange = []float64{1, 0} }), want: []string{"input.value_range = [1 0]", "below"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil {
				t.Fatalf("Validate accepted %+v", tc.cfg)
			}
			if !strings.HasPrefix(err.Error(), tc.want[0]) {
				t.Errorf("error %q does not start with the YAML key %s", err, tc.want[0])
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, derr := NewDecoder(tc.cfg, nil); derr == nil || derr.Error() != err.Error() {
				t.Errorf("NewDecoder error %v, want Validate's %v", derr, err)
			}
		})
	}
	// Zero fields take their defaults, so the zero Config is valid.
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("Config{}.Validate() = %v, want nil", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{}.withDefaults()
	want := Config{
		Format: FormatJSON, SeriesField: "series", TimeField: "ts", ValueFields: []string{"value"},
		CSVColumns: []string{"series", "ts", "value"}, MaxFuture: time.Hour, MaxPast: 168 * time.Hour, MaxSeriesBytes: 256,
	}
	if got.Format != want.Format || got.SeriesField != want.SeriesField || got.TimeField != want.TimeField ||
		strings.Join(got.ValueFields, ",") != strings.Join(want.ValueFields, ",") ||
		strings.Join(got.CSVColumns, ",") != strings.Join(want.CSVColumns, ",") ||
		got.MaxFuture != want.MaxFuture || got.MaxPast != want.MaxPast || got.MaxSeriesBytes != want.MaxSeriesBytes ||
		len(got.ValueRange) != 0 {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	multi := Config{SeriesField: "id", ValueFields: []string{"a", "b"}}.withDefaults()
	if got, want := strings.Join(multi.CSVColumns, ","), "id,ts,a,b"; got != want {
		t.Errorf("default CSVColumns = %s, want %s", got, want)
	}
}

func TestNewDecoderPicksTheFormat(t *testing.T) {
	for _, tc := range []struct {
		format Format
		want   string
	}{
		{"", "*readings.JSONDecoder"},
		{FormatJSON, "*readings.JSONDecoder"},
		{FormatCSV, "*readings.CSVDecoder"},
		{FormatArrow, "*readings.ArrowDecoder"},
	} {
		d, err := NewDecoder(Config{Format: tc.format}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := typeName(d); got != tc.want {
			t.Errorf("NewDecoder(%q) = %s, want %s", tc.format, got, tc.want)
		}
	}
	if _, err := NewDecoder(Config{Format: "xml"}, nil); err == nil {
		t.Error(`NewDecoder(Format "xml") succeeded`)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *JSONDecoder:
		return "*readings.JSONDecoder"
	case *CSVDecoder:
		return "*readings.CSVDecoder"
	case *ArrowDecoder:
		return "*readings.ArrowDecoder"
	}
	return "other"
}
