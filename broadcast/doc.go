// Package broadcast carries what the online learner produces to the rest of
// the deployment through Kafka: promoted model versions on a compacted
// models topic (Models: Publish; Latest for a service that starts; Follow,
// which tails the topic with offset-tracking readers, for every replica
// while it runs), drift events as JSON on the drift topic (Events), and
// every series' interval calibration on the compacted state topic
// (States, the online.StateStore of topics.state).
//
// # Where it sits
//
//	online ──► (promotion: Learner's publisher) ──► broadcast.Models ──► models topic ──► Models.Latest (service start), Models.Follow (every replica, live)
//	online ──► (drift events callback)          ──► broadcast.Events ──► drift topic
//
// It carries models to and from Kafka, which is why it is not part of
// sink: sink delivers forecasts and knows nothing of models. online itself stays free of Kafka; the service
// wires the two together. broadcast imports model, wire (the content-type
// header) and internal/kafkaconn.
//
// # Concurrency
//
// Models and Events are safe for concurrent use; a Models serialises its
// calls, except Follow, which runs beside them until its context ends. Each publishes and waits for the acknowledgements of all in-sync
// replicas.
package broadcast
