package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const minimal = `
input: {cadence: 1h}
model: {path: m.safetensors}
`

// TestExampleLoads keeps the repository's commented example valid and
// checks it says what the sample says.
func TestExampleLoads(t *testing.T) {
	f, err := Load("../config.example.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Kafka.Brokers; len(got) != 1 || got[0] != "127.0.0.1:9092" {
		t.Errorf("kafka.brokers = %v", got)
	}
	if f.Topics.Input != "readings" || f.Topics.Forecasts != "forecasts" || *f.Topics.Attributions != "attributions" || f.Topics.DeadLetter != "readings.dlq" {
		t.Errorf("topics = %+v", f.Topics)
	}
	if time.Duration(f.Input.Cadence) != time.Hour || time.Duration(f.Window.AllowedLateness) != 2*time.Hour || *f.Window.MaxGap != 3 {
		t.Errorf("input/window = %+v %+v", f.Input, f.Window)
	}
	if *f.Metrics.Listen != "127.0.0.1:9464" || f.Output.Attributions != "full" {
		t.Errorf("metrics/output = %+v %+v", f.Metrics, f.Output)
	}
	o := f.OnlineConfig()
	if !o.Enabled || o.Interval != 5*time.Minute || o.MinNewSamples != 500 || o.ReplaySize != 20000 || o.LearningRate != 0.001 ||
		o.Steps != 50 || o.TrainHeads || o.PromoteMargin != 0 || o.CheckpointDir != "" || o.DriftThreshold != 0.05 || o.MinDuration != 30*time.Minute {
		t.Errorf("online = %+v", o)
	}
	if *f.Topics.Drift != "drift" || f.Topics.Models != "" {
		t.Errorf("topics.drift %q, topics.models %q", *f.Topics.Drift, f.Topics.Models)
	}
}

func TestDefaults(t *testing.T) {
	f, err := Parse([]byte(minimal), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"kafka.group", f.Kafka.Group, "freqlens"},
		{"topics.input", f.Topics.Input, "readings"},
		{"topics.attributions", *f.Topics.Attributions, "attributions"},
		{"input.format", f.Input.Format, "json"},
		{"input.value_fields", strings.Join(f.Input.ValueFields, ","), "value"},
		{"input.csv_columns", strings.Join(f.Input.CSVColumns, ","), "series,ts,value"},
		{"input.batch_latency", time.Duration(f.Input.BatchLatency), 10 * time.Millisecond},
		{"window.max_gap", *f.Window.MaxGap, 3},
		{"window.series_ttl", time.Duration(f.Window.SeriesTTL), 24 * time.Hour},
		{"window.max_series", f.Window.MaxSeries, 1000000},
		{"metrics.listen", *f.Metrics.Listen, "127.0.0.1:9464"},
		{"service.shutdown_timeout", time.Duration(f.Service.ShutdownTimeout), 10 * time.Second},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestExplicitZeroesAreKept(t *testing.T) {
	f, err := Parse([]byte(minimal+"window: {max_gap: 0}\ntopics: {attributions: \"\"}\nmetrics: {listen: \"\"}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if *f.Window.MaxGap != 0 || *f.Topics.Attributions != "" || *f.Metrics.Listen != "" {
		t.Errorf("explicit zero values were replaced by defaults: %d %q %q", *f.Window.MaxGap, *f.Topics.Attributions, *f.Metrics.Listen)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	f, err := Parse([]byte(minimal), envOf(map[string]string{
		"FREQLENS_KAFKA_BROKERS":       "10.0.0.1:9092, 10.0.0.2:9092",
		"FREQLENS_INPUT_CADENCE":       "5m",
		"FREQLENS_WINDOW_MAX_GAP":      "7",
		"FREQLENS_KAFKA_TLS":           "true",
		"FREQLENS_KAFKA_SASL_USERNAME": "svc",
		"FREQLENS_TOPICS_INPUT":        "sensors",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Kafka.Brokers) != 2 || f.Kafka.Brokers[1] != "10.0.0.2:9092" || time.Duration(f.Input.Cadence) != 5*time.Minute ||
		*f.Window.MaxGap != 7 || !f.Kafka.TLS || f.Kafka.SASL.Username != "svc" || f.Topics.Input != "sensors" {
		t.Errorf("overrides not applied: %+v", f)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		env  map[string]string
		want string
	}{
		{"missing cadence", "model: {path: m}", nil, "input.cadence"},
		{"missing model", "input: {cadence: 1h}", nil, "model.path"},
		{"unknown key", minimal + "window: {max_gaps: 3}", nil, "max_gaps"},
		{"bad duration", "input: {cadence: hourly}\nmodel: {path: m}", nil, "duration"},
		{"bad format", "model: {path: m}\ninput: {cadence: 1h, format: xml}", nil, "input.format"},
		{"negative gap", minimal + "window: {max_gap: -1}", nil, "window.max_gap"},
		{"bad fill", minimal + "window: {fill: cubic}", nil, "window.fill"},
		{"broker without port", minimal + "kafka: {brokers: [localhost]}", nil, "kafka.brokers[0]"},
		{"same topic twice", minimal + "topics: {forecasts: readings}", nil, "topics"},
		{"repeated value field", "model: {path: m}\ninput: {cadence: 1h, value_fields: [a, a]}", nil, "input.value_fields"},
		{"bad attributions mode", minimal + "output: {attributions: some}", nil, "output.attributions"},
		{"bad env number", minimal, map[string]string{"FREQLENS_WINDOW_MAX_GAP": "three"}, "FREQLENS_WINDOW_MAX_GAP"},
		{"bad env duration", minimal, map[string]string{"FREQLENS_INPUT_CADENCE": "soon"}, "input.cadence"},
		{"huge learning rate", minimal + "online: {learning_rate: 5}", nil, "online.learning_rate"},
		{"bad env learning rate", minimal, map[string]string{"FREQLENS_ONLINE_LEARNING_RATE": "fast"}, "FREQLENS_ONLINE_LEARNING_RATE"},
		{"bad replay policy", minimal + "online: {replay: oldest}", nil, "online.replay"},
		{"models topic reused", minimal + "topics: {models: drift}", nil, "topics.models"},
		{"drift topic reused", minimal + "topics: {drift: forecasts}", nil, "topics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := noEnv
			if tc.env != nil {
				env = envOf(tc.env)
			}
			_, err := Parse([]byte(tc.yaml), env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
			var ce *Error
			if strings.HasPrefix(tc.name, "bad env") && !errors.As(err, &ce) {
				t.Errorf("environment error %v is not a *config.Error", err)
			}
		})
	}
}

func TestModelsTopic(t *testing.T) {
	f, err := Parse([]byte(minimal+"topics: {models: freqlens.models}"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if f.Topics.Models != "freqlens.models" || !slices.Contains(f.TopicNames(), "freqlens.models") {
		t.Errorf("topics.models = %q, topic names %v; want freqlens.models among them", f.Topics.Models, f.TopicNames())
	}
}
