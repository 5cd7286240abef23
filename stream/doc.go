// Package stream is the input of the FreqLens streaming service: the Kafka
// consumer group. It reads sensor readings from the input topic, decodes
// them into Arrow record batches with package readings, sends poison
// messages to a dead-letter topic, and hands batches to the pipeline
// together with what to commit.
//
// # Where it sits
//
//	Kafka topic ──► stream ──► window ──► model ──► sink ──► Kafka topics
//	 (readings)    consume,
//	               decode (package readings),
//	               dead letters
//
// stream imports kafka-go (its readers, consumer group and dead-letter
// writer are built by the internal/kafkaconn.Client given to NewConsumer,
// which holds the brokers, TLS and SASL), readings (the input format:
// decoders, Schema, DecodeError and its reasons, given to NewConsumer as a
// readings.Config), Arrow and Prometheus; it never imports window or model.
// The pipeline wires it to the rest.
//
// # Batches
//
// A Batch's Record has the columns of readings.Schema
//
//	series utf8 · ts timestamp[ms, UTC] · ingest_ts timestamp[ms, UTC] · <value field> float64 …
//
// no nulls, every value finite, rows in Kafka order within a partition.
// ingest_ts is the Kafka message timestamp, for end-to-end latency.
// Batch.Partition and Batch.Offset say where each row came from.
//
// # Generations
//
// The Consumer follows the consumer group's generations (kafka-go's
// ConsumerGroup). At each assignment it logs the partitions it got, kept
// and lost, and sends first the rebuild batches: a partition it did not
// hold consistently (new to it, or one whose last batches were not
// committed) is read back from where its event time is
// Config.RebuildSpan before the newest time near its committed offset, up
// to that offset (a binary search on offsets finds the start, decoding
// samples of 32 messages: about log₂(messages/32) fetches), so that the
// pipeline can rebuild its windows without forecasting; the first rebuild
// batch lists in Forget the partitions whose windows must be dropped. Then
// one reader per partition fetches from the committed offset. When a
// rebalance begins, fetching stops, the batch being filled is sent, and
// the member waits (at most half of Config.RebalanceTimeout) until every
// batch it sent is committed before it rejoins: a partition that stays
// needs no rebuild, one that moves continues exactly where it was
// committed. The drain works because kafka-go ends a generation only after
// the functions started in it return, and Kafka and kfake accept commits
// while a group prepares a rebalance. Commits of a generation that is over
// are dropped, not retried and not errors: the partition's next owner
// forecasts those readings again.
//
// # Poison
//
// A message the decoder refuses (a *readings.DecodeError; its Reason is one
// of readings.Reasons) is poison: it is counted, logged and dead-lettered
// whole. The consumer adds what a decoder cannot know: the message's topic,
// partition and offset, and the time bound of input.max_past, which it
// keeps per partition (the newest time the partition has seen) and gives
// the decoder before each message (readings.Decoder.SetOldest), reading
// the message's newest time back after it (Decoder.Newest). Both are field
// accesses, so the hot path still allocates nothing, and the decoder still
// refuses a message too old (too_old) whole, before any row is appended.
//
// # Delivery: may reprocess, never drops
//
// Offsets are committed only by Batch.Commit, which the pipeline calls after
// the sink acknowledged every output of the batch, in the order the batches
// were sent. A poison message is written to the dead-letter topic (original
// key, value and headers, plus freqlens-dlq-reason, freqlens-dlq-error,
// freqlens-source-topic, freqlens-source-partition and
// freqlens-source-offset) before the batch covering it is sent, so its
// offset is committed like any other. Dead letters are partitioned by key
// with the partitioner of every FreqLens writer, the sink's included
// (kafka-go's Hash, FNV-1a), so a series' dead letters keep their order in
// one partition; a re-drive that must restore a reading beside its series
// whatever partitioner wrote the input writes it to the partition in
// freqlens-source-partition (see Consumer). When the pipeline cannot put a batch
// into windows it calls Batch.DeadLetter, which reads the batch's messages
// back by offset (a Batch keeps only the first and last offset of each
// partition and the offsets of its poison, not the messages, so the hot
// path keeps no copies for a case that should never happen) and
// dead-letters them with the reason it gives
// (pipeline.ReasonWindow) before the batch is committed; readings it
// refuses after decoding (out_of_range, non_finite_output) go through
// Batch.DeadLetterRows the same way. A forced stop at any point (a
// cancelled Run, a crash, a rebalance that could not drain) redelivers
// every uncommitted message to the partition's next owner, whose windows
// are rebuilt first: outputs and dead letters may be produced twice,
// identical, nothing is lost.
//
// # Concurrency
//
// While Run runs, a Consumer runs one fetcher per assigned partition, one
// goroutine that refreshes the partitions' end offsets (for the lag) and
// kafka-go's group goroutines; Run's caller decodes and batches. Run waits
// for its fetchers before each generation ends and may be called once.
// Fetching pauses while Config.MaxInflightBytes of messages are in
// batches the pipeline has not released. Lag, Status and Close are safe to
// call from any goroutine, and Batch.Commit from the goroutine that
// acknowledges outputs. A Consumer's decoders are used by Run's goroutine
// only. Shut down in two steps: cancel Run's context, then, after the last
// Commit, Close(ctx) with a deadline.
//
// # Metrics
//
// From the Registerer given with WithRegisterer:
// freqlens_stream_readings_consumed_total{topic},
// freqlens_stream_messages_consumed_total{topic},
// freqlens_stream_decode_errors_total{reason} (reason: one of
// readings.Reasons),
// freqlens_stream_dead_letters_total, freqlens_stream_batch_rows,
// freqlens_stream_consumer_lag_records (the records of the assigned
// partitions not committed yet, read at scrape time through Consumer.Lag:
// the partitions' high watermarks, from every fetch and a ListOffsets
// every 2s, less their committed offsets, and the last generation's
// between generations; not kafka-go's Reader.Stats().Lag, which is the
// fetch position's and reads 0 during a backlog), freqlens_stream_inflight_bytes,
// freqlens_stream_assigned_partitions, freqlens_stream_rebalances_total,
// freqlens_stream_rebuild_readings_total,
// freqlens_stream_rebuild_duration_seconds and
// freqlens_stream_commits_skipped_total.
package stream
