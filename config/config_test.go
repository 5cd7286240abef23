package config

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/freqlens/freqlens/service"
	"github.com/freqlens/freqlens/wire"
)

func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const minimal = `
kafka: {brokers: ["127.0.0.1:9092"]}
input: {cadence: 1h}
model: {path: m.safetensors}
`

// flatten lists the leaf keys of a YAML mapping as dotted paths.
func flatten(prefix string, n *yaml.Node) []string {
	if n.Kind != yaml.MappingNode {
		return []string{prefix}
	}
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		if prefix != "" {
			key = prefix + "." + key
		}
		out = append(out, flatten(key, n.Content[i+1])...)
	}
	return out
}

// TestExampleLoads keeps the repository's commented example loadable and
// valid, and makes it list every key there is, no more.
func TestExampleLoads(t *testing.T) {
	cfg, err := Load("../config.example.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the example does not validate: %v", err)
	}
	if got := cfg.Kafka.Brokers; len(got) != 1 || got[0] != "127.0.0.1:9092" {
		t.Errorf("kafka.brokers = %v", got)
	}
	if cfg.Stream.Topic != "readings" || cfg.Sink.ForecastTopic != "forecasts" || cfg.Sink.AttributionTopic != "attributions" ||
		cfg.Stream.DeadLetterTopic != "readings.dlq" || cfg.DriftTopic != "drift" || cfg.ModelsTopic != "" {
		t.Errorf("topics = %+v %+v %q %q", cfg.Stream, cfg.Sink, cfg.DriftTopic, cfg.ModelsTopic)
	}
	if cfg.Cadence != time.Hour || cfg.Window.AllowedLateness != 2*time.Hour || cfg.Window.MaxGap != 3 {
		t.Errorf("input/window = %+v %+v", cfg.Pipeline, cfg.Window)
	}
	o := cfg.Online
	if !o.Enabled || o.Interval != 5*time.Minute || o.MinNewSamples != 500 || o.ReplaySize != 20000 || o.LearningRate != 0.001 ||
		o.Steps != 50 || o.TrainHeads || o.PromoteMargin != 0 || o.CheckpointDir != "" || o.DriftThreshold != 0.05 || o.MinDuration != 30*time.Minute {
		t.Errorf("online = %+v", o)
	}

	b, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	listed := flatten("", doc.Content[0])
	slices.Sort(listed)
	if keys := Keys(); !slices.Equal(listed, keys) {
		for _, k := range keys {
			if !slices.Contains(listed, k) {
				t.Errorf("config.example.yaml does not list the key %s", k)
			}
		}
		for _, k := range listed {
			if !slices.Contains(keys, k) {
				t.Errorf("config.example.yaml lists %s, which is not a key", k)
			}
		}
	}
}

// TestDefaultsAreThePackages: a file that sets only the required keys gives
// the packages' own defaults.
func TestDefaultsAreThePackages(t *testing.T) {
	cfg, err := Parse([]byte(minimal), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := service.DefaultConfig()
	want.Kafka.Brokers, want.Cadence, want.ModelPath = []string{"127.0.0.1:9092"}, time.Hour, "m.safetensors"
	for _, c := range []struct {
		key       string
		got, want any
	}{
		{"kafka", cfg.Kafka.ClientID + cfg.Kafka.DialTimeout.String(), want.Kafka.ClientID + want.Kafka.DialTimeout.String()},
		{"kafka.group", cfg.Stream.Group, "freqlens"},
		{"topics.input", cfg.Stream.Topic, "readings"},
		{"topics.attributions", cfg.Sink.AttributionTopic, "attributions"},
		{"input.format", cfg.Readings.Format, want.Readings.Format},
		{"input.value_fields", strings.Join(cfg.Readings.ValueFields, ","), "value"},
		{"input.batch_latency", cfg.Stream.BatchLatency, 5 * time.Millisecond},
		{"window.max_gap", cfg.Window.MaxGap, 3},
		{"window.series_ttl", cfg.Window.SeriesTTL, 24 * time.Hour},
		{"window.max_series", cfg.Window.MaxSeries, 1000000},
		{"output.attributions", cfg.Sink.Attributions, wire.AttributionsFull},
		{"metrics.listen", cfg.MetricsListen, "127.0.0.1:9464"},
		{"service.shutdown_timeout", cfg.Pipeline.ShutdownTimeout, 10 * time.Second},
		{"online.keep_checkpoints", cfg.Online.Keep, 5},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.key, c.got, c.want)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the minimal file does not validate: %v", err)
	}
}

func TestExplicitZeroesAreKept(t *testing.T) {
	cfg, err := Parse([]byte(minimal+"window: {max_gap: 0}\ntopics: {attributions: \"\", drift: \"\"}\nmetrics: {listen: \"\"}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Window.MaxGap != 0 || cfg.Sink.AttributionTopic != "" || cfg.DriftTopic != "" || cfg.MetricsListen != "" {
		t.Errorf("explicit zero values were replaced by defaults: max_gap→%d %q %q %q", cfg.Window.MaxGap, cfg.Sink.AttributionTopic, cfg.DriftTopic, cfg.MetricsListen)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("window.max_gap: 0 (restart on any missing step) does not validate: %v", err)
	}
}

// TestMeaningfulEmptyTopics: an empty topics.attributions (no attributions)
// and an empty topics.dead_letter with input.drop_poison are values, kept
// and valid, where other explicit zeros of the sink and consumer are
// refused (TestErrorsNameTheKey).
func TestMeaningfulEmptyTopics(t *testing.T) {
	cfg, err := Parse([]byte("kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, drop_poison: true}\n"+
		"topics: {attributions: \"\", dead_letter: \"\"}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sink.AttributionTopic != "" || cfg.Stream.DeadLetterTopic != "" || !cfg.Stream.DropPoison {
		t.Errorf("topics.attributions %q, topics.dead_letter %q, input.drop_poison %v; want \"\", \"\", true",
			cfg.Sink.AttributionTopic, cfg.Stream.DeadLetterTopic, cfg.Stream.DropPoison)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("no attributions and dropped poison do not validate: %v", err)
	}
}

// TestNegativeMaxGap: window.max_gap is a plain whole number; a negative
// one, from the file or the environment, is refused naming the key and
// saying that 0 restarts on any missing step.
func TestNegativeMaxGap(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		env  map[string]string
	}{
		{minimal + "window: {max_gap: -1}", nil},
		{minimal, map[string]string{"FREQLENS_WINDOW_MAX_GAP": "-2"}},
	} {
		cfg, err := Parse([]byte(tc.yaml), envOf(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "window.max_gap = -") || !strings.Contains(err.Error(), "use 0 to restart on any missing step") {
			t.Errorf("Validate() = %v, want window.max_gap refused, saying what 0 does", err)
		}
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	cfg, err := Parse([]byte(minimal), envOf(map[string]string{
		"FREQLENS_KAFKA_BROKERS":         "10.0.0.1:9092, 10.0.0.2:9092",
		"FREQLENS_INPUT_CADENCE":         "5m",
		"FREQLENS_WINDOW_MAX_GAP":        "7",
		"FREQLENS_KAFKA_TLS":             "true",
		"FREQLENS_KAFKA_SASL_USERNAME":   "svc",
		"FREQLENS_TOPICS_INPUT":          "sensors",
		"FREQLENS_ONLINE_LEARNING_RATE":  "0.01",
		"FREQLENS_ONLINE_SEED":           "9",
		"FREQLENS_OUTPUT_FORMAT":         "arrow",
		"FREQLENS_METRICS_WEB_CONFIG":    "/etc/freqlens/web.yml",
		"FREQLENS_METRICS_ALLOWED_HOSTS": "freqlens.example.com, freqlens-1.example.com",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Kafka.Brokers) != 2 || cfg.Kafka.Brokers[1] != "10.0.0.2:9092" || cfg.Cadence != 5*time.Minute ||
		cfg.Window.MaxGap != 7 || !cfg.Kafka.TLS || cfg.Kafka.SASL.Username != "svc" || cfg.Stream.Topic != "sensors" ||
		cfg.Online.LearningRate != 0.01 || cfg.Online.Seed != 9 || cfg.Sink.Format != wire.FormatArrow ||
		cfg.MetricsWebConfig != "/etc/freqlens/web.yml" ||
		!slices.Equal(cfg.MetricsAllowedHosts, []string{"freqlens.example.com", "freqlens-1.example.com"}) {
		t.Errorf("overrides not applied: %+v", cfg)
	}
}

// TestErrorsNameTheKey: every problem, whether the file cannot be read
// into the configuration or a package's Validate refuses a value, names the
// key first, once, without the package wrapping it again.
func TestErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		env  map[string]string
		want string // the key the error starts with (after "config: ")
	}{
		{"missing cadence", "kafka: {brokers: [k:1]}\nmodel: {path: m}", nil, "input.cadence"},
		{"missing model", "kafka: {brokers: [k:1]}\ninput: {cadence: 1h}", nil, "model.path"},
		{"missing brokers", "input: {cadence: 1h}\nmodel: {path: m}", nil, "kafka.brokers"},
		{"unknown key", minimal + "window: {max_gaps: 3}", nil, "window.max_gaps"},
		{"unknown section", minimal + "windows: {max_gap: 3}", nil, "windows"},
		{"key given twice", minimal + "window: {fill: hold, fill: linear}", nil, "window.fill"},
		{"section as a value", minimal + "output: json", nil, "output"},
		{"bad duration", "input: {cadence: hourly}", nil, "input.cadence"},
		{"bad number", "input: {cadence: 1h, batch_rows: many}", nil, "input.batch_rows"},
		{"list as a value", "input: {cadence: 1h, value_fields: value}", nil, "input.value_fields"},
		{"bad format", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, format: xml}", nil, "input.format"},
		{"bad align", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, align: round}", nil, "input.align"},
		{"negative gap", minimal + "window: {max_gap: -1}", nil, "window.max_gap"},
		{"bad fill", minimal + "window: {fill: cubic}", nil, "window.fill"},
		{"zero stride", minimal + "window: {stride: 0}", nil, "window.stride"},
		{"zero series ttl", minimal, map[string]string{"FREQLENS_WINDOW_SERIES_TTL": "0s"}, "window.series_ttl"},
		{"zero batch rows", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, batch_rows: 0}", nil, "input.batch_rows"},
		{"zero fetch max wait", minimal, map[string]string{"FREQLENS_INPUT_FETCH_MAX_WAIT": "0s"}, "input.fetch_max_wait"},
		{"empty dead-letter topic", minimal + "topics: {dead_letter: \"\"}", nil, "topics.dead_letter"},
		{"empty group", "model: {path: m}\ninput: {cadence: 1h}\nkafka: {brokers: [k:1], group: \"\"}", nil, "kafka.group"},
		{"zero session timeout", minimal, map[string]string{"FREQLENS_KAFKA_SESSION_TIMEOUT": "0s"}, "kafka.session_timeout"},
		{"zero in-flight bytes", minimal + "service: {max_inflight_bytes: 0}", nil, "service.max_inflight_bytes"},
		{"empty forecasts topic", minimal + "topics: {forecasts: \"\"}", nil, "topics.forecasts"},
		{"zero output batch size", minimal + "output: {batch_size: 0}", nil, "output.batch_size"},
		{"zero max attempts", minimal, map[string]string{"FREQLENS_OUTPUT_MAX_ATTEMPTS": "0"}, "output.max_attempts"},
		{"empty compression", minimal + "output: {compression: \"\"}", nil, "output.compression"},
		{"empty input format", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, format: \"\"}", nil, "input.format"},
		{"empty series field", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, series_field: \"\"}", nil, "input.series_field"},
		{"empty time field", minimal, map[string]string{"FREQLENS_INPUT_TIME_FIELD": ""}, "input.time_field"},
		{"no value fields", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, value_fields: []}", nil, "input.value_fields"},
		{"zero max future", minimal, map[string]string{"FREQLENS_INPUT_MAX_FUTURE": "0s"}, "input.max_future"},
		{"zero max past", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, max_past: 0s}", nil, "input.max_past"},
		{"zero series id bytes", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, max_series_id_bytes: 0}", nil, "input.max_series_id_bytes"},
		{"cadence under a millisecond", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1500us}", nil, "input.cadence"},
		{"empty client id", "model: {path: m}\ninput: {cadence: 1h}\nkafka: {brokers: [k:1], client_id: \"\"}", nil, "kafka.client_id"},
		{"zero dial timeout", minimal, map[string]string{"FREQLENS_KAFKA_DIAL_TIMEOUT": "0s"}, "kafka.dial_timeout"},
		{"zero connect timeout", "model: {path: m}\ninput: {cadence: 1h}\nkafka: {brokers: [k:1], connect_timeout: 0s}", nil, "kafka.connect_timeout"},
		{"zero unreachable after", minimal, map[string]string{"FREQLENS_KAFKA_UNREACHABLE_AFTER": "0s"}, "kafka.unreachable_after"},
		{"broker without port", "model: {path: m}\ninput: {cadence: 1h}\nkafka: {brokers: [localhost]}", nil, "kafka.brokers[0]"},
		{"unknown SASL mechanism", "model: {path: m}\ninput: {cadence: 1h}\nkafka: {brokers: [k:1], sasl: {mechanism: gssapi, username: u}}", nil, "kafka.sasl.mechanism"},
		{"same topic twice", minimal + "topics: {forecasts: readings}", nil, "topics.forecasts"},
		{"repeated value field", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, value_fields: [a, a]}", nil, "input.value_fields"},
		{"field named like an arrow column", "kafka: {brokers: [k:1]}\nmodel: {path: m}\ninput: {cadence: 1h, value_fields: [step]}\noutput: {format: arrow}", nil, "input.value_fields"},
		{"bad attributions mode", minimal + "output: {attributions: some}", nil, "output.attributions"},
		{"bad compression", minimal + "output: {compression: brotli}", nil, "output.compression"},
		{"no workers", minimal + "service: {workers: -1}", nil, "service.workers"},
		{"zero workers", minimal + "service: {workers: 0}", nil, "service.workers"},
		{"zero max batch", minimal + "service: {max_batch: 0}", nil, "service.max_batch"},
		{"zero shutdown timeout", minimal, map[string]string{"FREQLENS_SERVICE_SHUTDOWN_TIMEOUT": "0s"}, "service.shutdown_timeout"},
		{"zero expire every", minimal + "service: {expire_every: 0s}", nil, "service.expire_every"},
		{"bad env number", minimal, map[string]string{"FREQLENS_WINDOW_MAX_GAP": "three"}, "window.max_gap"},
		{"bad env duration", minimal, map[string]string{"FREQLENS_INPUT_CADENCE": "soon"}, "input.cadence"},
		{"huge learning rate", minimal + "online: {learning_rate: 5}", nil, "online.learning_rate"},
		{"bad env learning rate", minimal, map[string]string{"FREQLENS_ONLINE_LEARNING_RATE": "fast"}, "online.learning_rate"},
		{"zero online interval", minimal + "online: {interval: 0s}", nil, "online.interval"},
		{"zero online steps", minimal, map[string]string{"FREQLENS_ONLINE_STEPS": "0"}, "online.steps"},
		{"bad replay policy", minimal + "online: {replay: oldest}", nil, "online.replay"},
		{"holdout out of range", minimal + "online: {holdout: 1.5}", nil, "online.holdout"},
		{"too few checkpoints", minimal + "online: {keep_checkpoints: -1}", nil, "online.keep_checkpoints"},
		{"a replica name with a slash", minimal + "online: {replica: a/b}", nil, "online.replica"},
		{"a replica name of spaces", minimal + "online: {replica: ' '}", nil, "online.replica"},
		{"interval level above 1", minimal + "output: {intervals: [0.8, 95]}", nil, "output.intervals [0.8 95]"},
		{"interval levels out of order", minimal + "output: {intervals: [0.95, 0.8]}", nil, "output.intervals [0.95 0.8]"},
		{"bad interval rate", minimal + "online: {interval_rate: 2}", nil, "online.interval_rate"},
		{"models topic reused", minimal + "topics: {models: drift}", nil, "topics.models"},
		{"drift topic reused", minimal + "topics: {drift: forecasts}", nil, "topics.drift"},
		{"missing web config", minimal + "metrics: {web_config: /nonexistent/web.yml}", nil, "metrics.web_config"},
		{"missing web config from the environment", minimal, map[string]string{"FREQLENS_METRICS_WEB_CONFIG": "/nonexistent/web.yml"}, "metrics.web_config"},
		{"allowed host with a port", minimal + "metrics: {allowed_hosts: [freqlens.example.com:9464]}", nil, "metrics.allowed_hosts[0]"},
		{"allowed hosts not a list", minimal + "metrics: {allowed_hosts: freqlens.example.com}", nil, "metrics.allowed_hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := noEnv
			if tc.env != nil {
				env = envOf(tc.env)
			}
			cfg, err := Parse([]byte(tc.yaml), env)
			if err != nil {
				var ce *Error
				if !errors.As(err, &ce) || ce.Key != tc.want {
					t.Fatalf("Parse error %v, want a *config.Error of key %s", err, tc.want)
				}
				if strings.HasPrefix(tc.name, "bad env") && !strings.Contains(err.Error(), EnvName(tc.want)) {
					t.Errorf("environment error %v does not name %s", err, EnvName(tc.want))
				}
				for _, v := range tc.env {
					if n := strings.Count(err.Error(), strconv.Quote(v)); strings.HasPrefix(tc.name, "bad env") && n != 1 {
						t.Errorf("environment error %v quotes the value %q %d times, want once", err, v, n)
					}
				}
				return
			}
			err = cfg.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error starting with %s", err, tc.want)
			}
			if n := strings.Count(err.Error(), tc.want); n != 1 && !strings.Contains(err.Error(), tc.want+"[") {
				t.Errorf("error %q names %s %d times; wrapped twice?", err, tc.want, n)
			}
		})
	}
}

// TestEveryKeyReachesItsField: setting any key from the environment changes
// the configuration (so no key is mapped to nothing or to another key's
// field).
func TestEveryKeyReachesItsField(t *testing.T) {
	base, err := Parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	values := []string{"7", "true", "3s", "9s", "x", "0.5", "a,b"}
	seen := map[string]string{}
	for _, key := range Keys() {
		changed := false
		for _, v := range values {
			cfg, err := Parse(nil, envOf(map[string]string{EnvName(key): v}))
			if err != nil {
				continue
			}
			if d := diff(base, cfg); d != "" {
				if other, dup := seen[d]; dup {
					t.Errorf("keys %s and %s set the same field", other, key)
				}
				seen[d], changed = key, true
				break
			}
		}
		if !changed {
			t.Errorf("key %s changes nothing in service.Config", key)
		}
	}
}

// TestDurationsInDays: durations take days, the unit of history, as well
// as Go's units; a bad number of days is refused naming the key.
func TestDurationsInDays(t *testing.T) {
	base := "kafka: {brokers: [\"127.0.0.1:9092\"]}\ninput: {cadence: 1h}\n"
	cfg, err := Parse([]byte(base+"model: {path: m.safetensors, bootstrap: {min_history: 14d, horizon: 24, check_every: 1.5d}}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if b := cfg.Bootstrap; b.MinHistory != 14*24*time.Hour || b.CheckEvery != 36*time.Hour || b.Horizon != 24 || b.Lookback != 96 {
		t.Errorf("bootstrap %+v; want 14 days, 36 h, horizon 24 and the default lookback", b)
	}
	if _, err := Parse([]byte(base+"model: {bootstrap: {min_history: xd}}\n"), noEnv); err == nil || !strings.Contains(err.Error(), "model.bootstrap.min_history") {
		t.Errorf("min_history xd: %v; want an error naming the key", err)
	}
}

// TestCheckEnviron: a FREQLENS_ variable that starts with a section but
// names no key is refused with the key it probably meant; keys' variables,
// other FREQLENS_ variables (the tests' switches) and the rest of the
// environment pass.
func TestCheckEnviron(t *testing.T) {
	for _, tc := range []struct {
		name    string
		environ []string
		want    string // "" = accepted
	}{
		{"keys' variables and others", []string{"PATH=/bin", "FREQLENS_INPUT_CADENCE=15m", "FREQLENS_KAFKA_BROKERS=a:9092", "FREQLENS_CAPACITY=5000", "FREQLENS_FAULT_DEBUG=1"}, ""},
		{"a misspelt key", []string{"FREQLENS_INPUT_CADENCE=1h", "FREQLENS_INPUT_CADENSE=15m"},
			"config: input (environment FREQLENS_INPUT_CADENSE): FREQLENS_INPUT_CADENSE names no key; did you mean FREQLENS_INPUT_CADENCE (input.cadence)?"},
		{"a nested key misspelt", []string{"FREQLENS_MODEL_BOOTSTRAP_MINHISTORY=1h"}, "did you mean FREQLENS_MODEL_BOOTSTRAP_MIN_HISTORY (model.bootstrap.min_history)?"},
		{"Kubernetes service variables", []string{"FREQLENS_SERVICE_HOST=10.0.0.1", "FREQLENS_SERVICE_PORT=9464", "FREQLENS_SERVICE_PORT_METRICS=9464",
			"FREQLENS_METRICS_PORT=tcp://10.0.0.2:9464", "FREQLENS_METRICS_PORT_9464_TCP_ADDR=10.0.0.2", "FREQLENS_KAFKA_SERVICE_HOST=10.0.0.3"}, ""},
		{"a name far from every key", []string{"FREQLENS_ONLINE_DASHBOARD_URL=http://x"}, ""},
		// A misspelt section is caught as a misspelt key is: ignored, the
		// setting would be lost without a word.
		{"a misspelt section", []string{"FREQLENS_OUTPT_INTERVALS=0.5,0.9"}, "did you mean FREQLENS_OUTPUT_INTERVALS (output.intervals)?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckEnviron(tc.environ)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckEnviron = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckEnviron = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestSyntaxErrorsNameWhereToLook: a YAML syntax error names the line the
// parser gives and says the mistake may be below it (the parser names
// where the unclosed construct began).
func TestSyntaxErrorsNameWhereToLook(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"kafka:\n  brokers: [a:9092\ninput: {cadence: 1h}\n", "config: YAML syntax at line 1 or below: did not find expected ',' or ']'"},
		{"kafka:\n\tbrokers: x\n", "config: YAML syntax at line 2 or below: found character that cannot start any token"},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestMisspelledKeysGetASuggestion: a key or section one or two edits
// from a real one is named with it; a section that is nothing like one
// lists the sections.
func TestMisspelledKeysGetASuggestion(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	for _, tc := range []struct{ yaml, want string }{
		{minimal + "windows: {max_gap: 3}", "did you mean window?"},
		{minimal + "inputs: {batch_rows: 3}", "did you mean input?"},
		{minimal + "window: {max_gaps: 3}", "did you mean max_gap?"},
		{minimal + "telemetry: {x: 1}", "; the sections are "},
	} {
		_, err := Parse([]byte(tc.yaml), noEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml[len(minimal):], err, tc.want)
		}
	}
}

// TestEveryKeyProblemIsSaid: a file with several wrong keys names each of
// them, in the file's order, so that one edit fixes them all; errors.As
// still finds each.
func TestEveryKeyProblemIsSaid(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	yaml := minimal + "window: {max_gaps: 3}\noutput: {attribution: full, batch_size: many}\nwindows: {x: 1}\n"
	_, err := Parse([]byte(yaml), noEnv)
	if err == nil {
		t.Fatal("Parse took three wrong keys")
	}
	msg := err.Error()
	at := -1
	for _, want := range []string{"window.max_gaps", "did you mean max_gap?", "output.attribution", "did you mean attributions?", "output.batch_size", "windows", "did you mean window?"} {
		i := strings.Index(msg, want)
		if i < 0 || i < at {
			t.Errorf("error %q does not name %q after what came before it", msg, want)
		}
		at = max(at, i)
	}
	if strings.Count(msg, "config: ") != 1 {
		t.Errorf("error %q repeats its prefix", msg)
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "window.max_gaps" {
		t.Errorf("errors.As found %v, want the first problem", ce)
	}
}

// TestAListGivenAsOneValue: a list key given one value says how to write
// that value as a list, not some other list.
func TestAListGivenAsOneValue(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	for yaml, want := range map[string]string{
		minimal + "output: {intervals: 0.9}":                                                     `output.intervals (line 5): "0.9" is not a list; write it as one, like [0.9]`,
		"kafka:\n  brokers: broker-1:9092\ninput: {cadence: 1h}\nmodel: {path: m.safetensors}\n": `kafka.brokers (line 2): "broker-1:9092" is not a list; write it as one, like [broker-1:9092]`,
	} {
		_, err := Parse([]byte(yaml), noEnv)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}
