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
		want []string // substrings of the error: the field and the fix
	}{
		{name: "no group", cfg: with(func(c *Config) { c.Group = "" }), want: []string{"Group", "consumer group"}},
		{name: "no topic", cfg: with(func(c *Config) { c.Topic = "" }), want: []string{"Topic", "input topic"}},
		{name: "no dead-letter topic", cfg: with(func(c *Config) { c.DeadLetterTopic = "" }), want: []string{"DeadLetterTopic", "DropPoison"}},
		{name: "dead letters into the input", cfg: with(func(c *Config) { c.DeadLetterTopic = "in" }), want: []string{"DeadLetterTopic", "another topic"}},
		{name: "unknown format", cfg: with(func(c *Config) { c.Format = "xml" }), want: []string{`Format = "xml"`, `"json", "csv" or "arrow"`}},
		{name: "series and time share a field", cfg: with(func(c *Config) { c.TimeField = "series" }), want: []string{"SeriesField and TimeField"}},
		{name: "repeated value field", cfg: with(func(c *Config) { c.ValueFields = []string{"a", "b", "a"} }), want: []string{"ValueFields[0] and ValueFields[2]", "once"}},
		{name: "empty value field", cfg: with(func(c *Config) { c.ValueFields = []string{""} }), want: []string{"ValueFields[0] is empty"}},
		{name: "value field is the time", cfg: with(func(c *Config) { c.ValueFields = []string{"ts"} }), want: []string{`ValueFields[0] = "ts"`}},
		{name: "value field named like a batch column", cfg: with(func(c *Config) { c.ValueFields = []string{"ingest_ts"} }), want: []string{`"ingest_ts"`, "rename"}},
		{name: "CSV without the time column", cfg: with(func(c *Config) { c.Format = FormatCSV; c.CSVColumns = []string{"series", "value"} }), want: []string{"CSVColumns", `time column "ts"`}},
		{name: "CSV without a value column", cfg: with(func(c *Config) {
			c.Format = FormatCSV
			c.ValueFields = []string{"a", "b"}
			c.CSVColumns = []string{"ts", "a"}
		}), want: []string{"CSVColumns", `value column "b"`}},
		{name: "CSV column twice", cfg: with(func(c *Config) { c.Format = FormatCSV; c.CSVColumns = []string{"ts", "value", "ts"} }), want: []string{"CSVColumns[0] and CSVColumns[2]"}},
		{name: "negative MaxFuture", cfg: with(func(c *Config) { c.MaxFuture = -time.Second }), want: []string{"MaxFuture = -1s"}},
		{name: "negative BatchRows", cfg: with(func(c *Config) { c.BatchRows = -1 }), want: []string{"BatchRows = -1"}},
		{name: "negative BatchLatency", cfg: with(func(c *Config) { c.BatchLatency = -time.Millisecond }), want: []string{"BatchLatency"}},
		{name: "MaxBytes below MinBytes", cfg: with(func(c *Config) { c.MinBytes = 10; c.MaxBytes = 5 }), want: []string{"MaxBytes = 5", "MinBytes = 10"}},
		{name: "unknown start offset", cfg: with(func(c *Config) { c.StartOffset = "middle" }), want: []string{`StartOffset = "middle"`, `"first" or "last"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewConsumer(tc.cfg, nil)
			if err == nil {
				t.Fatalf("NewConsumer accepted %+v", tc.cfg)
				_ = c
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "stream: ") {
				t.Errorf("error %q does not start with the package", err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{}.withDefaults()
	want := Config{
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
		got.StartOffset != want.StartOffset {
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
