package stream

import (
	"strings"
	"testing"
	"time"
)

func TestNewConsumerValidates(t *testing.T) {
	ok := Config{Group: "g", Topic: "in", DeadLetterTopic: "dlq"}
	with := func(f func(c *Config)) Config {
		c := ok
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // the YAML key first, then the fix
	}{
		{name: "dead letters into the input", cfg: with(func(c *Config) { c.DeadLetterTopic = "in" }), want: []string{"topics.dead_letter", "another topic"}},
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
		{name: "negative BatchRows", cfg: with(func(c *Config) { c.BatchRows = -1 }), want: []string{"input.batch_rows = -1"}},
		{name: "negative BatchLatency", cfg: with(func(c *Config) { c.BatchLatency = -time.Millisecond }), want: []string{"input.batch_latency"}},
		{name: "MaxBytes below MinBytes", cfg: with(func(c *Config) { c.MinBytes = 10; c.MaxBytes = 5 }), want: []string{"input.fetch_max_bytes = 5", "input.fetch_min_bytes = 10"}},
		{name: "unknown start offset", cfg: with(func(c *Config) { c.StartOffset = "middle" }), want: []string{`input.start_offset = "middle"`, `"first" or "last"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewConsumer(tc.cfg, nil); err == nil {
				t.Fatalf("NewConsumer accepted %+v", tc.cfg)
			}
			_, err := NewConsumer(tc.cfg, nil)
			if !strings.HasPrefix(err.Error(), tc.want[0]) {
				t.Errorf("error %q does not start with the YAML key %s", err, tc.want[0])
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
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
		Group: "freqlens", Topic: "readings", DeadLetterTopic: "readings.dlq",
		Format: FormatJSON, SeriesField: "series", TimeField: "ts", ValueFields: []string{"value"},
		CSVColumns: []string{"series", "ts", "value"}, MaxFuture: time.Hour, BatchRows: 4096,
		BatchLatency: 10 * time.Millisecond, MaxWait: 250 * time.Millisecond, MinBytes: 1, MaxBytes: 10 << 20,
		StartOffset: "first",
	}
	if got.Format != want.Format || got.SeriesField != want.SeriesField || got.TimeField != want.TimeField ||
		strings.Join(got.ValueFields, ",") != strings.Join(want.ValueFields, ",") ||
		strings.Join(got.CSVColumns, ",") != strings.Join(want.CSVColumns, ",") ||
		got.MaxFuture != want.MaxFuture || got.BatchRows != want.BatchRows || got.BatchLatency != want.BatchLatency ||
		got.MaxWait != want.MaxWait || got.MinBytes != want.MinBytes || got.MaxBytes != want.MaxBytes ||
		got.StartOffset != want.StartOffset || got.Group != want.Group || got.Topic != want.Topic || got.DeadLetterTopic != want.DeadLetterTopic {
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
		{"", "*stream.JSONDecoder"},
		{FormatJSON, "*stream.JSONDecoder"},
		{FormatCSV, "*stream.CSVDecoder"},
		{FormatArrow, "*stream.ArrowDecoder"},
	} {
		d, err := NewDecoder(Config{Format: tc.format})
		if err != nil {
			t.Fatal(err)
		}
		if got := typeName(d); got != tc.want {
			t.Errorf("NewDecoder(%q) = %s, want %s", tc.format, got, tc.want)
		}
	}
	if _, err := NewDecoder(Config{Format: "xml"}); err == nil {
		t.Error(`NewDecoder(Format "xml") succeeded`)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *JSONDecoder:
		return "*stream.JSONDecoder"
	case *CSVDecoder:
		return "*stream.CSVDecoder"
	case *ArrowDecoder:
		return "*stream.ArrowDecoder"
	}
	return "other"
}
