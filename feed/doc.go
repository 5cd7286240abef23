// Package feed produces readings to the input topic: the demo's simulated
// traffic sensors (Simulation) and the rows of a CSV file at the pace of
// their timestamps (Replay, behind `freqlens replay`). It is what stands in
// for the sensors of a deployment, so that `freqlens demo` and `replay`
// are flags and printing around it and the producers are tested on their
// own against the in-process broker.
//
// # Where it sits
//
//	Simulation (dataset.Traffic) ─┐
//	                              ├─► readings.AppendJSON/AppendCSV ─► kafkaconn.Client writer ─► input topic ─► stream ─► …
//	Replay (dataset.LoadCSV rows) ┘
//
// feed imports dataset (the traffic generator and the loaded CSV),
// readings (the input format: the encoders, so that what it writes is what
// the consumer decodes) and internal/kafkaconn (every Kafka writer is built
// from a kafkaconn.Client, with the deployment's brokers, TLS and SASL).
// It imports nothing of the streaming side (stream, window, model, sink,
// online, pipeline, service), no Prometheus and no kfake: the service it
// feeds is reached only through the topic.
//
// # Configuration and wiring
//
// SimulationConfig and ReplayConfig hold the user's settings, taken as
// given (start from DefaultSimulationConfig and DefaultReplayConfig; a
// zero field means zero, and Validate refuses one that cannot run); the
// constructors take the wiring as arguments: the kafkaconn.Client, the
// topic, and the clock a Simulation ends at (NewSimulation) or the data a
// Replay replays (NewReplay). There are no metrics and no global state.
//
// # Delivery
//
// Messages are keyed by series, so a series' readings land in one
// partition, and written by a writer that waits for all in-sync replicas
// (RequireAll) before the next batch, so they keep their order there. A
// write the broker refuses is an error that names the rows or step and asks
// whether the broker is reachable and the topic exists.
//
// # Concurrency and cancellation
//
// Run blocks until the producer is done or its context ends; cancelling
// the context ends it promptly (within one write), with nil from a
// Simulation, for which it is the normal end, and an error wrapping
// ctx.Err() from a Replay, which did not write every row. A Simulation or
// a Replay holds no state between Runs and is safe to Run again after Run
// returns.
package feed
