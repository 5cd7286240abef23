// Package stream is the input of the FreqLens streaming service: it reads
// sensor readings from a Kafka topic in a consumer group, decodes them into
// Arrow record batches, sends poison messages to a dead-letter topic, and
// hands batches to the pipeline together with what to commit.
//
// # Where it sits
//
//	Kafka topic ──► stream ──► window ──► model ──► sink ──► Kafka topics
//	 (readings)    decode to
//	               Arrow batches
//
// stream imports kafka-go (its reader and dead-letter writer are built from
// the internal/kafkaconn.Client given to NewConsumer, which holds the
// brokers, TLS and SASL), Arrow (Arrow IPC input is read by
// internal/arrowipc, the hardened reader it shares with package wire),
// Prometheus and kfake (for the embedded Broker); it never imports window
// or model. The pipeline wires it to the rest.
//
// # Batches
//
// A Batch's Record has the columns
//
//	series utf8 · ts timestamp[ms, UTC] · ingest_ts timestamp[ms, UTC] · <value field> float64 …
//
// (see Schema), no nulls, every value finite, rows in Kafka order within a
// partition. ingest_ts is the Kafka message timestamp, for end-to-end
// latency.
//
// # Formats
//
// JSONDecoder, CSVDecoder and ArrowDecoder turn one message into rows;
// AppendJSON, AppendCSV and AppendArrow write readings in the same formats
// (for replay, the demo's simulated sensors and tests). Each decoder
// rejects a bad message whole with a *DecodeError whose Reason is one of
// Reasons: unparsable bytes, missing or wrongly typed fields, NaN and ±Inf,
// empty series ids and readings later than now + MaxFuture never reach a
// window.
//
// # Delivery: may reprocess, never drops
//
// Offsets are committed only by Batch.Commit, which the pipeline calls after
// the sink acknowledged every output of the batch, in the order the batches
// were sent. A poison message is written to the dead-letter topic (original
// key, value and headers, plus freqlens-dlq-reason, freqlens-dlq-error,
// freqlens-source-topic, freqlens-source-partition and
// freqlens-source-offset) before the batch covering it is sent, so its
// offset is committed like any other. When the pipeline cannot put a batch
// into windows it calls Batch.DeadLetter, which reads the batch's messages
// back by offset and dead-letters them with reason window_error before the
// batch is committed. A forced stop at any point (a
// cancelled Run, a crash, a failed commit after a rebalance) redelivers
// every uncommitted message after the restart: outputs and dead letters may
// be produced twice, nothing is lost.
//
// # Concurrency
//
// A Consumer runs two goroutines while Run runs: one fetches from kafka-go,
// the other (Run's caller) decodes and batches; Run waits for the fetcher
// before it returns. Run may be called once. Lag and Close are safe to call
// from any goroutine, and Batch.Commit from the goroutine that acknowledges
// outputs. Shut down in two steps: cancel Run's context, then, after the
// last Commit, Close(ctx) with a deadline. Decoders are not safe for
// concurrent use; use one per goroutine. Encoders are plain functions. A
// Broker's methods are safe for concurrent use.
//
// # Metrics
//
// From the Registerer given with WithRegisterer:
// freqlens_stream_readings_consumed_total{topic},
// freqlens_stream_messages_consumed_total{topic},
// freqlens_stream_decode_errors_total{reason},
// freqlens_stream_dead_letters_total, freqlens_stream_batch_rows and
// freqlens_stream_consumer_lag_records (read from kafka-go's
// Reader.Stats at scrape time, through Consumer.Lag, the one caller of
// Stats).
package stream
