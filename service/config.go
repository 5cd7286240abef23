package service

import (
	"fmt"
	"net"
	"time"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/liveview"
	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/pipeline"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/window"
	"github.com/freqlens/freqlens/wire"
)

// Config is everything `freqlens serve` needs: each package's own Config
// and the few settings that belong to the service as a whole. Build it from
// DefaultConfig (package config maps the YAML keys onto it); each field
// says which keys it holds.
type Config struct {
	// Kafka is how every client connects: kafka.brokers, kafka.client_id,
	// kafka.dial_timeout, kafka.tls, kafka.tls_ca_file, kafka.sasl.*.
	Kafka kafkaconn.Config
	// Stream is the consumer: kafka.group, kafka.session_timeout,
	// kafka.heartbeat_interval, kafka.rebalance_timeout,
	// kafka.join_group_backoff, topics.input, topics.dead_letter,
	// input.batch_rows, input.batch_latency, input.fetch_*,
	// input.start_offset, input.drop_poison and service.max_inflight_bytes.
	Stream stream.Config
	// Readings is the input format and its plausibility checks:
	// input.format, input.series_field, input.time_field,
	// input.value_fields, input.csv_columns, input.max_future,
	// input.max_past, input.max_series_id_bytes and input.value_range.
	Readings readings.Config
	// Cadence is the step length readings are aligned to, a whole number of
	// milliseconds (input.cadence): the pipeline's and the windows' wiring,
	// and the step of the history a model trains on. Required to serve (it
	// has no default); HistoryPanel infers it from the data when it is 0.
	Cadence time.Duration
	// Align is which step a reading's time belongs to (input.align):
	// window.AlignFloor (the step it falls in), window.AlignNearest (the
	// step whose time is nearest: for a schedule whose stamps jitter around
	// the step times, some a moment early), or empty or "auto" for the
	// model's (see model.Meta.StepAlign), which training finds from the
	// data; HistoryPanel finds it from the data when it is empty or auto.
	Align window.Align
	// Window is the per-series windows' settings: window.*, taken as given
	// (DefaultConfig starts from window.DefaultConfig). The windows' Shape
	// is the pipeline's: the model's lookback, Readings.ValueFields and
	// Cadence.
	Window window.Config
	// Pipeline is the stages' settings: service.* (but
	// service.max_inflight_bytes), taken as given (DefaultConfig starts from
	// pipeline.DefaultConfig). Its pipeline.Wiring is set by New:
	// Readings.ValueFields, Cadence, whether attributions are written and
	// the version of the model served.
	Pipeline pipeline.Config
	// Sink is the producer: topics.forecasts, topics.attributions and
	// output.*.
	Sink sink.Config
	// Online is the learner: online.*.
	Online online.Config

	// ModelPath is a model file written by `freqlens train` (model.path).
	// Required unless New is given WithModel. With Bootstrap on, a missing
	// file is trained from the input topic's history and written there.
	ModelPath string
	// Bootstrap trains the first model when ModelPath does not exist
	// (model.bootstrap.*).
	Bootstrap BootstrapConfig
	// DriftTopic receives the learner's drift events as JSON (topics.drift);
	// "" turns them off.
	//
	// Default: drift
	DriftTopic string
	// ModelsTopic receives every promoted model version, in chunks, on a
	// compacted topic, and a starting service loads the newest version from
	// it (topics.models); "" turns it off.
	//
	// Default: ""
	ModelsTopic string
	// StateTopic keeps every series' interval calibration, keyed by series,
	// on a compacted topic that every replica reads (topics.state), so that
	// a series a restart, a kill -9, a rebalance or a rolling deploy moves
	// to any replica keeps its bands without a shared volume; it takes the
	// place of the calibration files under online.checkpoint_dir, which
	// then keeps the promoted versions only. "" turns it off.
	//
	// Default: ""
	StateTopic string
	// Learner says which replica fine-tunes (online.learner): "auto" elects
	// the member of the consumer group that owns input partition 0, so
	// exactly one replica learns and publishes to topics.models while the
	// others follow it; "always" and "never" name the role outright. With
	// online.enabled false nobody fine-tunes.
	//
	// Default: auto
	Learner string
	// MetricsListen is the address of /metrics, /online, /healthz and
	// /readyz (metrics.listen); "" turns the listener off.
	//
	// Default: 127.0.0.1:9464
	MetricsListen string
	// ProbeListen is an address that serves /healthz and /readyz alone, in
	// plain HTTP and without metrics.web_config's authentication
	// (metrics.probe_listen): what a kubelet probes when the metrics
	// listener asks for a password. "" serves the probes on
	// metrics.listen only.
	//
	// Default: ""
	ProbeListen string
	// MetricsWebConfig is the path of a web configuration file for the
	// metrics listener (metrics.web_config), in the format of Prometheus'
	// and node_exporter's --web.config.file (package
	// github.com/prometheus/exporter-toolkit/web): TLS
	// (tls_server_config), basic authentication (basic_auth_users, bcrypt
	// hashes) and extra response headers (http_server_config.headers).
	// Validate reads and checks it; the listener reads it again on every
	// request and TLS handshake, so users and certificates can change
	// without a restart. "" serves plain HTTP to anyone who can connect.
	//
	// Default: ""
	MetricsWebConfig string
	// MetricsAllowedHosts are host names that requests to the metrics
	// listener may name in their Host header besides those always accepted
	// (any IP address, localhost, the machine's host name and the host of
	// metrics.listen), whatever the port (metrics.allowed_hosts); "*"
	// accepts any. Requests naming another host are refused with 421
	// Misdirected Request, which defeats DNS rebinding.
	//
	// Default: []
	MetricsAllowedHosts []string
	// MetricsPprof serves Go's profiles (net/http/pprof) under
	// /debug/pprof/ on the metrics listener, behind its TLS, authentication
	// and Host check (metrics.pprof): where CPU and memory go in a running
	// replica. Off by default: a profile names the code and can take
	// seconds of CPU to collect.
	//
	// Default: false
	MetricsPprof bool
	// LiveView bounds the live view served at / on the metrics listener
	// (package liveview; metrics.live_view_series). Without a metrics
	// listener there is no live view.
	LiveView liveview.Config
	// EmbeddedBroker, when set, starts an in-process Kafka-protocol broker
	// (franz-go's kfake) on this address, creates the topics and connects
	// to it instead of Kafka.Brokers (the --embedded-broker flag; not a YAML
	// key).
	//
	// Default: "" (use Kafka.Brokers)
	EmbeddedBroker string
}

// DefaultConfig returns every package's defaults and the service's own.
func DefaultConfig() Config {
	return Config{
		Kafka:         kafkaconn.DefaultConfig(),
		Stream:        stream.DefaultConfig(),
		Readings:      readings.DefaultConfig(),
		Window:        window.DefaultConfig(),
		Pipeline:      pipeline.DefaultConfig(),
		Sink:          sink.DefaultConfig(),
		Online:        online.DefaultConfig(),
		DriftTopic:    "drift",
		Learner:       LearnerAuto,
		Align:         AlignAuto,
		MetricsListen: "127.0.0.1:9464",
		LiveView:      liveview.DefaultConfig(),
		Bootstrap:     DefaultBootstrapConfig(),
	}
}

// Validate reports the first setting that cannot work, naming its YAML key
// and saying what to write instead: each package's own checks, then those
// across packages. Whether the model fits is New's check.
func (c Config) Validate() error { return c.validate(true) }

func (c Config) validate(needModelPath bool) error {
	kafka := c.Kafka
	if c.EmbeddedBroker != "" {
		if _, _, err := net.SplitHostPort(c.EmbeddedBroker); err != nil {
			return fmt.Errorf(`--embedded-broker %q is not host:port; use for example "127.0.0.1:9092"`, c.EmbeddedBroker)
		}
		kafka.Brokers = []string{c.EmbeddedBroker}
	} else if len(kafka.Brokers) == 0 {
		return fmt.Errorf("kafka.brokers is empty; list your brokers (or set FREQLENS_KAFKA_BROKERS), or pass --embedded-broker 127.0.0.1:9092")
	}
	fields := c.Readings.ValueFields
	// The wiring's model version and attributions are New's, from the model
	// and the sink: here its fields and cadence, input.* keys, are checked.
	wiring := pipeline.Wiring{Fields: fields, Cadence: c.Cadence, Align: c.wiringAlign()}
	for _, check := range []func() error{
		kafka.Validate, c.Stream.Validate, c.Readings.Validate, wiring.Validate, c.Pipeline.Validate, c.Window.Validate, c.Sink.Validate,
		c.Online.Validate, c.LiveView.Validate,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	if err := wire.ValidateFields(fields, c.Sink.Format); err != nil {
		return fmt.Errorf("input.value_fields %q cannot be written as output.format %s: %w", fields, c.Sink.Format, err)
	}
	switch c.Learner {
	case "", LearnerAuto, LearnerAlways, LearnerNever:
	default:
		return fmt.Errorf("online.learner = %q; use %q (the owner of input partition 0 learns), %q or %q", c.Learner, LearnerAuto, LearnerAlways, LearnerNever)
	}
	if err := c.checkMetrics(); err != nil {
		return err
	}
	if err := c.Bootstrap.validate(); err != nil {
		return err
	}
	if needModelPath && c.ModelPath == "" {
		return fmt.Errorf("model.path is required: a model file written by 'freqlens train'")
	}
	return c.checkTopics()
}

// AlignAuto is input.align's spelling of the default: the model's
// alignment when serving, the data's when training.
const AlignAuto = "auto"

// wiringAlign is input.align as pipeline.Wiring takes it: empty for the
// model's.
func (c Config) wiringAlign() window.Align {
	if c.Align == AlignAuto {
		return ""
	}
	return c.Align
}

// checkMetrics reports a metrics.allowed_hosts entry that is no host
// name, and a metrics.web_config file that cannot be served (read, parsed
// and checked as the listener would).
func (c Config) checkMetrics() error {
	for i, h := range c.MetricsAllowedHosts {
		if err := checkAllowedHost(h); err != nil {
			return fmt.Errorf("metrics.allowed_hosts[%d] = %q %w", i, h, err)
		}
	}
	if p := c.ProbeListen; p != "" {
		if _, _, err := net.SplitHostPort(p); err != nil {
			return fmt.Errorf(`metrics.probe_listen %q is not host:port; use for example "0.0.0.0:9465"`, p)
		}
		if p == c.MetricsListen {
			return fmt.Errorf("metrics.probe_listen %q is metrics.listen too; give the probes a port of their own", p)
		}
	}
	if c.MetricsWebConfig == "" {
		return nil
	}
	_, err := readWebConfig(c.MetricsWebConfig)
	return err
}

// topic is one topic of the configuration and the key that names it.
type topic struct{ key, name string }

// topics returns every topic the service reads or writes with its key,
// without the empty ones (off), the attributions topic when attributions
// are off and the dead-letter topic with input.drop_poison.
func (c Config) topics() []topic {
	attributions, deadLetter := c.Sink.AttributionTopic, c.Stream.DeadLetterTopic
	if c.Sink.Attributions == wire.AttributionsOff {
		attributions = ""
	}
	if c.Stream.DropPoison {
		deadLetter = ""
	}
	var out []topic
	for _, t := range []topic{
		{"topics.input", c.Stream.Topic}, {"topics.forecasts", c.Sink.ForecastTopic}, {"topics.dead_letter", deadLetter},
		{"topics.attributions", attributions}, {"topics.drift", c.DriftTopic}, {"topics.models", c.ModelsTopic},
		{"topics.state", c.StateTopic},
	} {
		if t.name != "" {
			out = append(out, t)
		}
	}
	return out
}

// checkTopics reports two keys that name the same topic.
func (c Config) checkTopics() error {
	seen := map[string]string{}
	for _, t := range c.topics() {
		if other, dup := seen[t.name]; dup {
			return fmt.Errorf("%s = %q is also %s; every topic needs its own name", t.key, t.name, other)
		}
		seen[t.name] = t.key
	}
	return nil
}

// Topics returns every topic the service reads or writes, for creating them
// on the embedded broker.
func (c Config) Topics() []string {
	var names []string
	for _, t := range c.topics() {
		names = append(names, t.name)
	}
	return names
}
