// Package service assembles and runs `freqlens serve` from one Config: the
// one path from a configuration to a running service. cmd/freqlens parses
// flags and the YAML file (package config) into a Config and calls New and
// Run; the demo builds a Config in code and does the same.
//
// # Where it sits
//
//	config ──► service.Config ──► service.New ──► kafkaconn.Client ─┬─► stream.Consumer ──┐
//	                                   │                             ├─► sink.Producer ────┤
//	                                   │                             └─► broadcast (models topic, drift events)
//	                                   ├─► model (model.path, or the newest checkpoint / models-topic version)
//	                                   ├─► online.Learner ───────────────────────────────────┤
//	                                   ├─► liveview.View (with a metrics listener) ───────────┤
//	                                   └─► /metrics, /online, /healthz, /readyz, / (live view)   pipeline.Pipeline ◄┘
//
// service imports every package of the service (kafkaconn and its embedded
// broker, stream, readings, window, model, pipeline, sink, wire, online,
// broadcast, liveview, and history, training and dataset for the first
// model's bootstrap); cmd, config (whose loader fills a Config) and backtest
// (which runs the serving path over history) import it. Config
// holds each package's own Config, so the defaults are the packages'
// (DefaultConfig) and so are the checks (Validate); Config.Validate adds
// the checks across packages (distinct topics, field names the output
// format can carry, a model).
//
// The packages' constructors take their Config as given and fill no zero
// field from defaults (only package model's training configs, which are
// flags rather than YAML keys, keep theirs), so every value means what it
// says: window.max_gap: 0 restarts a series on any missing step, an empty
// topics.attributions writes no attributions, online.min_duration: 0s
// raises a drift event as soon as a period change is seen. Each Validate
// refuses the zeros that cannot work, naming the key and its default, so a
// caller that did not start from DefaultConfig is told, not given zeros. What the
// program decides rather than the user configures is wiring, passed apart:
// window.Shape, pipeline.Wiring (Config.Wiring), feed's client, topic and
// clock.
//
// # Lifecycle
//
// New validates, starts the embedded broker when asked, builds the Kafka
// client and waits for a broker to answer (kafka.connect_timeout; a
// failure is an error that names the key to check), builds everything on
// the client, resumes from the newest promoted version, and binds the
// metrics listener, so that configuration and connection problems surface
// before anything is consumed. Run serves until its context ends, then
// drains within service.shutdown_timeout (see package pipeline: may
// reprocess, never drops) and releases everything; Close releases a
// Service whose Run is never called.
//
// # The metrics listener
//
// metrics.listen serves /metrics, /online, /healthz, /readyz and the live
// view. metrics.web_config, a file in the format of Prometheus'
// --web.config.file, adds TLS, client certificates, basic authentication
// and headers through github.com/prometheus/exporter-toolkit/web, which
// reads the file again on every request and handshake; Validate reads and
// checks it first (readWebConfig), so a bad file stops New before it
// connects to anything. Behind it a Host check (hostCheck) refuses with 421
// a request naming a host the service does not answer to, which defeats
// DNS rebinding: IP addresses, localhost, the machine's host name, the host
// of metrics.listen and metrics.allowed_hosts are accepted, whatever the
// port. Every IP address passes because a rebinding needs a name the
// attacker's DNS answers for, while an address is what Prometheus sends
// for a target given by address and what lets the defaults work on
// 0.0.0.0 without knowing the machine's addresses behind NAT; the port is
// not compared because a rebinding page must use the listener's port
// anyway, while tunnels and port mappings change it. Every response
// carries nosniff, X-Frame-Options DENY, Referrer-Policy no-referrer and a
// Content-Security-Policy (withSecurityHeaders), each filled in when the
// header is written and only where missing: a handler's own value (the
// live view's policy, which lets its page run) wins over the default, and
// the web configuration's http_server_config.headers, which the
// exporter-toolkit sets before the request reaches the handlers, win over
// both.
//
// # Faults and replicas
//
// While Run runs, a watch pings the brokers every 2s on a new connection
// (the kafka-go Transport answers metadata from its cache): it logs one
// ERROR after kafka.unreachable_after without an answer and one INFO when
// they answer again, and exports freqlens_service_brokers_reachable,
// freqlens_service_ready (what /readyz says: in the group, partitions
// assigned, their windows rebuilt, brokers reachable) and
// freqlens_service_learner. The learner is one replica per group
// (online.learner: auto, the owner of input partition 0; the learner's
// gate, online.WithGate, keeps the others from fine-tuning), and every
// replica follows topics.models (broadcast.Models.Follow), serving each
// newer version of the base model's shape as it is published.
//
// # Concurrency
//
// Run is called once; it starts the watch, the models follower and the
// learner's rounds (online.Learner.Run: the pipeline only hands the learner
// its forecasts) beside the pipeline, stops them when the pipeline's Run
// returns, and waits for them before it returns. The accessors (Pipeline, Learner,
// Kafka, Config, MetricsAddr) are safe from any goroutine while it runs;
// the /online, /healthz and /readyz handlers read the learner's report and
// the consumer's status concurrently with serving.
package service
