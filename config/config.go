package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// File is the YAML configuration of `freqlens serve`. Other tools write
// these files, so the keys keep their names. Every key is optional except
// where noted; a missing key takes the default given in its comment.
type File struct {
	Kafka   Kafka   `yaml:"kafka"`
	Topics  Topics  `yaml:"topics"`
	Input   Input   `yaml:"input"`
	Window  Window  `yaml:"window"`
	Model   Model   `yaml:"model"`
	Output  Output  `yaml:"output"`
	Metrics Metrics `yaml:"metrics"`
	Service Service `yaml:"service"`
	Online  Online  `yaml:"online"`
}

// Kafka is where the service connects.
type Kafka struct {
	// Brokers is the seed list. Required (or --embedded-broker).
	Brokers []string `yaml:"brokers"`
	// Group is the consumer group. Default: freqlens
	Group string `yaml:"group"`
	// TLS turns on TLS with the system's roots. Default: false
	TLS bool `yaml:"tls"`
	// SASL authenticates the connection.
	SASL SASL `yaml:"sasl"`
}

// SASL holds SASL credentials; an empty Mechanism means none.
type SASL struct {
	// Mechanism is "plain", "scram-sha-256" or "scram-sha-512".
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	Password  string `yaml:"password"`
}

// Topics names every topic the service reads or writes.
type Topics struct {
	// Input carries the readings. Default: readings
	Input string `yaml:"input"`
	// Forecasts receives one forecast per ready window. Default: forecasts
	Forecasts string `yaml:"forecasts"`
	// Attributions receives each forecast's attribution; "" turns it off. Default: attributions
	Attributions *string `yaml:"attributions"`
	// DeadLetter receives unreadable readings with a reason header. Default: readings.dlq
	DeadLetter string `yaml:"dead_letter"`
	// Drift receives the online learner's drift events; "" turns it off. Default: drift
	Drift *string `yaml:"drift"`
	// Models receives every promoted model version, in chunks, on a
	// compacted topic (cleanup.policy=compact), and a starting service
	// loads the newest version from it; "" turns it off. It must differ
	// from the other topics. Default: ""
	Models string `yaml:"models"`
}

// Input says how to read a reading.
type Input struct {
	// Format is json, csv or arrow. Default: json
	Format string `yaml:"format"`
	// SeriesField names the series id (the Kafka key is used when absent). Default: series
	SeriesField string `yaml:"series_field"`
	// TimeField names the timestamp: RFC 3339 or epoch milliseconds. Default: ts
	TimeField string `yaml:"time_field"`
	// ValueFields names the values; several make a multichannel reading. Default: [value]
	ValueFields []string `yaml:"value_fields"`
	// CSVColumns names the CSV columns in order. Default: series, ts, then the value fields
	CSVColumns []string `yaml:"csv_columns"`
	// Cadence is the step length readings are aligned to. Required.
	Cadence Duration `yaml:"cadence"`
	// MaxFuture rejects readings stamped further ahead than this. Default: 1h
	MaxFuture Duration `yaml:"max_future"`
	// BatchRows and BatchLatency bound a decoded batch. Default: 4096 rows, 10ms
	BatchRows    int      `yaml:"batch_rows"`
	BatchLatency Duration `yaml:"batch_latency"`
}

// Window configures the per-series sliding windows.
type Window struct {
	// MaxGap is how many missing steps are filled before a series restarts. Default: 3
	MaxGap *int `yaml:"max_gap"`
	// Fill is linear or hold. Default: linear
	Fill string `yaml:"fill"`
	// AllowedLateness lets late readings update their step. Default: 0
	AllowedLateness Duration `yaml:"allowed_lateness"`
	// SeriesTTL expires idle series. Default: 24h
	SeriesTTL Duration `yaml:"series_ttl"`
	// MaxSeries caps live series. Default: 1000000
	MaxSeries int `yaml:"max_series"`
	// Stride emits a window every Stride steps. Default: 1
	Stride int `yaml:"stride"`
}

// Model names the trained model.
type Model struct {
	// Path is a model file written by `freqlens train`. Required.
	Path string `yaml:"path"`
}

// Output says how forecasts are written.
type Output struct {
	// Format is json or arrow. Default: json
	Format string `yaml:"format"`
	// Attributions is full (per-step values) or summary (shares only). Default: full
	Attributions string `yaml:"attributions"`
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Listen is the address of /metrics; "" turns it off. Default: 127.0.0.1:9464
	Listen *string `yaml:"listen"`
}

// Service holds process-level settings.
type Service struct {
	// Workers is the number of window/model shards. Default: 2
	Workers int `yaml:"workers"`
	// MaxBatch is the most windows in one forward pass. Default: 256
	MaxBatch int `yaml:"max_batch"`
	// ShutdownTimeout bounds draining, flushing and committing on shutdown. Default: 10s
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
}

// Online configures online fine-tuning and drift tracking (package online).
// The online error and drift are tracked whatever Enabled says.
type Online struct {
	// Enabled turns fine-tuning on. Default: false
	Enabled bool `yaml:"enabled"`
	// Interval is the most time between fine-tuning rounds. Default: 5m
	Interval Duration `yaml:"interval"`
	// MinNewSamples starts a round after this many new (window, target) pairs. Default: 500
	MinNewSamples int `yaml:"min_new_samples"`
	// ReplaySize caps the pairs kept for fine-tuning. Default: 20000
	ReplaySize int `yaml:"replay_size"`
	// Replay is recent (keep the newest pairs) or reservoir (a uniform sample). Default: recent
	Replay string `yaml:"replay"`
	// LearningRate is the fine-tuning step size (θ and φ at 5×). Default: 0.001
	LearningRate float64 `yaml:"learning_rate"`
	// Steps is the Adam steps per round. Default: 50
	Steps int `yaml:"steps"`
	// TrainHeads also fine-tunes the per-frequency heads. Default: false
	TrainHeads bool `yaml:"train_heads"`
	// PromoteMargin promotes a candidate if its holdout error <= current × (1 + margin). Default: 0
	PromoteMargin float64 `yaml:"promote_margin"`
	// CheckpointDir receives every promoted version; serve resumes from its newest. Default: "" (none)
	CheckpointDir string `yaml:"checkpoint_dir"`
	// KeepCheckpoints is how many checkpoints stay. Default: 5
	KeepCheckpoints int `yaml:"keep_checkpoints"`
	// DriftThreshold is the relative period change that raises a drift event. Default: 0.05
	DriftThreshold float64 `yaml:"drift_threshold"`
	// MinDuration is how long (in the data's time) a change must last. Default: 30m
	MinDuration Duration `yaml:"min_duration"`
	// TrackSeries caps the series whose forecasts are scored. Default: 500
	TrackSeries int `yaml:"track_series"`
}

// Duration is a time.Duration written as "250ms", "1h" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("%q is not a duration; write it like 250ms, 5m or 1h", n.Value)
	}
	*d = Duration(v)
	return nil
}

// Error is a configuration problem: the key and what to do about it.
type Error struct {
	Key string
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("config: %s: %s", e.Key, e.Msg) }

// Load reads a YAML file, applies FREQLENS_* environment overrides (see
// Env), fills in defaults and validates the result.
func Load(path string, env func(string) (string, bool)) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(b, env)
}

// Parse is Load for a file already in memory. Unknown keys are errors, so a
// typo does not silently fall back to a default.
func Parse(b []byte, env func(string) (string, bool)) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config: %v", cleanYAMLError(err))
	}
	if env != nil {
		if err := applyEnv(reflect.ValueOf(&f).Elem(), "FREQLENS", "", env); err != nil {
			return nil, err
		}
	}
	f.defaults()
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

func cleanYAMLError(err error) string {
	return strings.ReplaceAll(err.Error(), "yaml: ", "")
}

func (f *File) defaults() {
	str := func(p *string, d string) {
		if *p == "" {
			*p = d
		}
	}
	str(&f.Kafka.Group, "freqlens")
	str(&f.Topics.Input, "readings")
	str(&f.Topics.Forecasts, "forecasts")
	if f.Topics.Attributions == nil {
		a := "attributions"
		f.Topics.Attributions = &a
	}
	str(&f.Topics.DeadLetter, "readings.dlq")
	if f.Topics.Drift == nil {
		d := "drift"
		f.Topics.Drift = &d
	}
	str(&f.Input.Format, "json")
	str(&f.Input.SeriesField, "series")
	str(&f.Input.TimeField, "ts")
	if len(f.Input.ValueFields) == 0 {
		f.Input.ValueFields = []string{"value"}
	}
	if len(f.Input.CSVColumns) == 0 {
		f.Input.CSVColumns = append([]string{f.Input.SeriesField, f.Input.TimeField}, f.Input.ValueFields...)
	}
	if f.Input.MaxFuture == 0 {
		f.Input.MaxFuture = Duration(time.Hour)
	}
	if f.Input.BatchRows == 0 {
		f.Input.BatchRows = 4096
	}
	if f.Input.BatchLatency == 0 {
		f.Input.BatchLatency = Duration(10 * time.Millisecond)
	}
	if f.Window.MaxGap == nil {
		g := 3
		f.Window.MaxGap = &g
	}
	str(&f.Window.Fill, "linear")
	if f.Window.SeriesTTL == 0 {
		f.Window.SeriesTTL = Duration(24 * time.Hour)
	}
	if f.Window.MaxSeries == 0 {
		f.Window.MaxSeries = 1000000
	}
	if f.Window.Stride == 0 {
		f.Window.Stride = 1
	}
	str(&f.Output.Format, "json")
	str(&f.Output.Attributions, "full")
	if f.Metrics.Listen == nil {
		l := "127.0.0.1:9464"
		f.Metrics.Listen = &l
	}
	if f.Service.Workers == 0 {
		f.Service.Workers = 2
	}
	if f.Service.MaxBatch == 0 {
		f.Service.MaxBatch = 256
	}
	if f.Service.ShutdownTimeout == 0 {
		f.Service.ShutdownTimeout = Duration(10 * time.Second)
	}
}

// Validate reports the first setting that cannot work, naming its key.
func (f *File) Validate() error {
	oneOf := func(key, v string, allowed ...string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return &Error{key, fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", "))}
	}
	positive := func(key string, v int) error {
		if v < 1 {
			return &Error{key, fmt.Sprintf("%d; it must be at least 1", v)}
		}
		return nil
	}
	nonNegative := func(key string, d Duration) error {
		if d < 0 {
			return &Error{key, fmt.Sprintf("%s is negative", time.Duration(d))}
		}
		return nil
	}
	for _, check := range []func() error{
		func() error {
			for i, b := range f.Kafka.Brokers {
				if !strings.Contains(b, ":") {
					return &Error{fmt.Sprintf("kafka.brokers[%d]", i), fmt.Sprintf("%q has no port; write host:port, e.g. 127.0.0.1:9092", b)}
				}
			}
			return nil
		},
		func() error {
			if f.Kafka.SASL.Mechanism == "" {
				return nil
			}
			return oneOf("kafka.sasl.mechanism", f.Kafka.SASL.Mechanism, "plain", "scram-sha-256", "scram-sha-512")
		},
		func() error { return oneOf("input.format", f.Input.Format, "json", "csv", "arrow") },
		func() error {
			if f.Input.Cadence <= 0 {
				return &Error{"input.cadence", "is required: the step length readings are aligned to, e.g. 5m or 1h"}
			}
			return nil
		},
		func() error { return nonNegative("input.max_future", f.Input.MaxFuture) },
		func() error { return positive("input.batch_rows", f.Input.BatchRows) },
		func() error {
			seen := map[string]bool{}
			for _, v := range f.Input.ValueFields {
				if v == "" || v == f.Input.SeriesField || v == f.Input.TimeField || seen[v] {
					return &Error{"input.value_fields", fmt.Sprintf("%q is empty, repeated or also the series/time field; list distinct value names", v)}
				}
				seen[v] = true
			}
			return nil
		},
		func() error {
			if *f.Window.MaxGap < 0 {
				return &Error{"window.max_gap", fmt.Sprintf("%d; use 0 (restart on any gap) or more", *f.Window.MaxGap)}
			}
			return nil
		},
		func() error { return oneOf("window.fill", f.Window.Fill, "linear", "hold") },
		func() error { return nonNegative("window.allowed_lateness", f.Window.AllowedLateness) },
		func() error { return nonNegative("window.series_ttl", f.Window.SeriesTTL) },
		func() error { return positive("window.max_series", f.Window.MaxSeries) },
		func() error { return positive("window.stride", f.Window.Stride) },
		func() error {
			if f.Model.Path == "" {
				return &Error{"model.path", "is required: a model file written by 'freqlens train'"}
			}
			return nil
		},
		func() error { return oneOf("output.format", f.Output.Format, "json", "arrow") },
		func() error { return oneOf("output.attributions", f.Output.Attributions, "full", "summary") },
		func() error { return positive("service.workers", f.Service.Workers) },
		func() error { return positive("service.max_batch", f.Service.MaxBatch) },
		func() error { return nonNegative("service.shutdown_timeout", f.Service.ShutdownTimeout) },
		func() error {
			if err := f.OnlineConfig().WithDefaults().Validate(); err != nil {
				return &Error{"online", err.Error()}
			}
			return nil
		},
		func() error {
			names := map[string]string{}
			for key, t := range map[string]string{"topics.input": f.Topics.Input, "topics.forecasts": f.Topics.Forecasts,
				"topics.attributions": *f.Topics.Attributions, "topics.dead_letter": f.Topics.DeadLetter, "topics.drift": *f.Topics.Drift,
				"topics.models": f.Topics.Models} {
				if t == "" {
					continue
				}
				if other, dup := names[t]; dup {
					a, b := other, key
					if a > b {
						a, b = b, a
					}
					return &Error{b, fmt.Sprintf("%q is also %s; every topic needs its own name", t, a)}
				}
				names[t] = key
			}
			return nil
		},
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// applyEnv overrides fields from environment variables named after their
// YAML path: FREQLENS_KAFKA_BROKERS, FREQLENS_INPUT_CADENCE,
// FREQLENS_WINDOW_MAX_GAP, ... Lists are comma-separated.
func applyEnv(v reflect.Value, prefix, path string, env func(string) (string, bool)) error {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := strings.Split(sf.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		name := prefix + "_" + strings.ToUpper(tag)
		key := tag
		if path != "" {
			key = path + "." + tag
		}
		fv := v.Field(i)
		if sf.Type.Kind() == reflect.Struct && sf.Type != reflect.TypeFor[Duration]() {
			if err := applyEnv(fv, name, key, env); err != nil {
				return err
			}
			continue
		}
		s, ok := env(name)
		if !ok {
			continue
		}
		if err := setFromString(fv, s); err != nil {
			return &Error{key, fmt.Sprintf("environment %s=%q: %v", name, s, err)}
		}
	}
	return nil
}

func setFromString(v reflect.Value, s string) error {
	if v.Kind() == reflect.Pointer {
		p := reflect.New(v.Type().Elem())
		if err := setFromString(p.Elem(), s); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	switch {
	case v.Type() == reflect.TypeFor[Duration]():
		d, err := time.ParseDuration(s)
		if err != nil {
			return errors.New("not a duration; write it like 250ms, 5m or 1h")
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return errors.New("not a whole number")
		}
		v.SetInt(int64(n))
	case v.Kind() == reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return errors.New("not a number")
		}
		v.SetFloat(x)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return errors.New("not true or false")
		}
		v.SetBool(b)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		var parts []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		v.Set(reflect.ValueOf(parts))
	default:
		return fmt.Errorf("cannot set a %s from the environment", v.Type())
	}
	return nil
}
