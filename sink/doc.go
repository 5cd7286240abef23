// Package sink delivers forecasts and their attributions: to Kafka
// (Producer), to an io.Writer as JSON lines (Writer), or to memory for tests
// (Memory). What the messages look like is package wire's; sink encodes
// with it and owns delivery: batching, acknowledgements, retries inside
// kafka-go, size limits, metrics and shutdown.
//
// # Where it sits
//
//	Kafka ──► stream ──► window ──► model ──► pipeline ──► sink ──► Kafka topics (forecasts, attributions)
//
// The pipeline turns every model output into a wire.Forecast and hands
// batches of them to a Sink; it commits the input offsets only after Write
// has returned nil. sink imports wire, kafka-go (through
// internal/kafkaconn, which holds the brokers, TLS and SASL) and Prometheus;
// it does not import model, window, stream or pipeline. Model versions and
// drift events travel through package broadcast.
//
// # Delivery
//
// Write returns once every message is acknowledged (RequiredAcks = all); after
// an error, none of the batch may be assumed delivered, so the pipeline does
// not commit and the input is reprocessed: delivery is at-least-once. Every
// message is keyed by series and carries the forecast-id, model-version and
// content-type headers (see wire). kafka-go's Hash balancer (FNV-1a of the
// key, not the Java client's murmur2) sends a series to one partition, and
// kafka-go writes the batches of a partition in order, so a series'
// forecasts stay in order. Every FreqLens writer partitions alike
// (internal/kafkaconn.Client.NewWriter), so when the readings were written
// by one (package feed) and the topics have as many partitions, a series'
// forecasts land in the partition number of its readings, as its dead
// letters do (TestOneModelAcrossReplicas in package fault relies on it).
// BatchTimeout (50µs) bounds the latency the sink adds. A forecast that
// can never be encoded fails Write with an error wrapping ErrInvalid
// (= wire.ErrInvalid) before anything is sent; the pipeline retries every
// other error and not this one.
//
// # Concurrency
//
// Producer, Writer and Memory are safe for concurrent use; Producer's Write
// calls run side by side and share kafka-go's batches. Producer.Write encodes
// its chunks on up to GOMAXPROCS goroutines (at most 4) and writes the
// attribution topic on one more, beside the forecast topic; it returns only
// once all of them are done with the forecasts it was given. Close waits
// for the Writes in flight; if its context ends first it cancels them, and
// a forced stop may reprocess, never drop.
//
// # Metrics
//
// Built from the registerer given WithRegisterer:
//
//	freqlens_sink_forecasts_written_total{topic}   forecasts acknowledged on the topic
//	freqlens_sink_messages_written_total{topic}    messages acknowledged (the writer sink: lines)
//	freqlens_sink_bytes_written_total{topic}       their key and value bytes
//	freqlens_sink_write_errors_total{topic}        messages not encoded or not acknowledged
//	freqlens_sink_write_duration_seconds           histogram of Write: encode, produce, acknowledgements
//
// topic is the Kafka topic, or WriterConfig.Topic ("stdout") for the writer
// sink.
package sink
