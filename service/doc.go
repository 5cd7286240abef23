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
//	                                   └─► /metrics and /online listener      pipeline.Pipeline ◄┘
//
// service imports every package of the service (kafkaconn, stream, window,
// model, pipeline, sink, wire, online, broadcast); nothing but cmd and the
// tests imports it. Config holds each package's own Config, so the
// defaults are the packages' (DefaultConfig) and so are the checks
// (Validate); Config.Validate adds the checks across packages (distinct
// topics, field names the output format can carry, a model).
//
// # Lifecycle
//
// New validates, starts the embedded broker when asked, builds the Kafka
// client and everything on it, resumes from the newest promoted version,
// and binds the metrics listener, so that configuration and connection
// problems surface before anything is consumed. Run serves until its
// context ends, then drains within service.shutdown_timeout (see package
// pipeline: may reprocess, never drops) and releases everything; Close
// releases a Service whose Run is never called.
//
// # Concurrency
//
// Run is called once. The accessors (Pipeline, Learner, Kafka, Config,
// MetricsAddr) are safe from any goroutine while it runs; the /online
// handler reads the learner's report concurrently with serving.
package service
