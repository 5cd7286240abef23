package readings

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// with returns DefaultConfig changed by f.
func with(f func(c *Config)) Config {
	c := DefaultConfig()
	f(&c)
	return c
}

func TestConfigValidate(t *testing.T) {
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
		// A zero is a value, not the default: each zero that cannot work is
		// refused, naming its key and the default to write.
		{name: "no format", cfg: with(func(c *Config) { c.Format = "" }), want: []string{`input.format = ""`, `"json", "csv" or "arrow"`}},
		{name: "no series field", cfg: with(func(c *Config) { c.SeriesField = "" }), want: []string{"input.series_field is empty", `(default "series")`}},
		{name: "no time field", cfg: with(func(c *Config) { c.TimeField = "" }), want: []string{"input.time_field is empty", `(default "ts")`}},
		{name: "no value fields", cfg: with(func(c *Config) { c.ValueFields = nil }), want: []string{"input.value_fields is empty", "(default [value])"}},
		{name: "zero MaxFuture", cfg: with(func(c *Config) { c.MaxFuture = 0 }), want: []string{"input.max_future = 0s", "positive", "(default 1h)"}},
		{name: "zero MaxPast", cfg: with(func(c *Config) { c.MaxPast = 0 }), want: []string{"input.max_past = 0s", "positive", "(default 168h)"}},
		{name: "zero MaxSeriesBytes", cfg: with(func(c *Config) { c.MaxSeriesBytes = 0 }), want: []string{"input.max_series_id_bytes = 0", "positive", "(default 256)"}},
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
	if err := (Config{}).Validate(); err == nil {
		t.Error("Config{}.Validate() = nil; a zero Config names no format or fields")
	}
	// An empty CSVColumns and ValueRange mean something: the fields in
	// order, and no static range.
	for _, format := range []Format{FormatJSON, FormatCSV, FormatArrow} {
		if err := with(func(c *Config) { c.Format, c.CSVColumns, c.ValueRange = format, nil, nil }).Validate(); err != nil {
			t.Errorf("Validate() of %s without csv_columns and value_range = %v, want nil", format, err)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	got := DefaultConfig()
	want := Config{
		Format: FormatJSON, SeriesField: "series", TimeField: "ts", ValueFields: []string{"value"},
		MaxFuture: time.Hour, MaxPast: 168 * time.Hour, MaxSeriesBytes: 256,
	}
	if got.Format != want.Format || got.SeriesField != want.SeriesField || got.TimeField != want.TimeField ||
		!slices.Equal(got.ValueFields, want.ValueFields) || len(got.CSVColumns) != 0 ||
		got.MaxFuture != want.MaxFuture || got.MaxPast != want.MaxPast || got.MaxSeriesBytes != want.MaxSeriesBytes ||
		len(got.ValueRange) != 0 {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
	got.ValueFields[0] = "changed"
	if DefaultConfig().ValueFields[0] != "value" {
		t.Error("DefaultConfig shares its ValueFields")
	}
	// Without CSVColumns a CSV message has the series, time and value
	// fields, in that order.
	multi := with(func(c *Config) { c.SeriesField, c.ValueFields = "id", []string{"a", "b"} })
	if got, want := strings.Join(multi.csvColumns(), ","), "id,ts,a,b"; got != want {
		t.Errorf("csvColumns() without CSVColumns = %s, want %s", got, want)
	}
}

func TestNewDecoderPicksTheFormat(t *testing.T) {
	for _, tc := range []struct {
		format Format
		want   string
	}{
		{FormatJSON, "*readings.JSONDecoder"},
		{FormatCSV, "*readings.CSVDecoder"},
		{FormatArrow, "*readings.ArrowDecoder"},
	} {
		d, err := NewDecoder(with(func(c *Config) { c.Format = tc.format }), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := typeName(d); got != tc.want {
			t.Errorf("NewDecoder(%q) = %s, want %s", tc.format, got, tc.want)
		}
	}
	for _, format := range []Format{"xml", ""} {
		if _, err := NewDecoder(with(func(c *Config) { c.Format = format }), nil); err == nil {
			t.Errorf("NewDecoder(Format %q) succeeded", format)
		}
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
