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
// port. Every response carries nosniff, X-Frame-Options DENY,
// Referrer-Policy no-referrer and a Content-Security-Policy
// (withSecurityHeaders), unless a handler (the live view's own policy) or
// the web configuration set them.
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
