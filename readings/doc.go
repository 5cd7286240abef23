// Package readings is the format of the input topic: how sensor readings
// are encoded in Kafka message values (JSON, CSV or Arrow IPC), the
// decoders that turn one message into rows of an Arrow record batch, the
// encoders that write readings in the same formats, and the plausibility
// checks that make a message poison. It is to the input what package wire
// is to the outputs: the consumer (package stream) decodes with it, package
// feed (`freqlens replay`, the demo's simulated sensors) and the tests
// write with it, and a Go producer of readings may import it to write
// them.
//
// # Where it sits
//
//	Kafka topic ──► stream ──► window ──► model ──► sink ──► Kafka topics
//	 (readings)       │
//	                  └─ readings (Decoder, Schema, DecodeError)
//
// readings imports Arrow, internal/arrowipc (the hardened Arrow IPC reader
// it shares with package wire) and internal/jsonstr (the JSON string
// encoder it shares with wire); it imports no Kafka client,
// no Prometheus and no other FreqLens package. It knows messages, not
// partitions or offsets: what depends on them (input.max_past, the
// message's coordinates in a DecodeError, the decode-error metric, dead
// letters) is the consumer's.
//
// # Batches
//
// A decoder appends to a record of the schema
//
//	series utf8 · ts timestamp[ms, UTC] · ingest_ts timestamp[ms, UTC] · <value field> float64 …
//
// (see Schema and the column constants), no nulls, every value finite.
// ingest_ts is the Kafka message timestamp, for end-to-end latency.
//
// # Formats
//
// JSONDecoder, CSVDecoder and ArrowDecoder turn one message into rows
// (NewDecoder picks by Config.Format); AppendJSON, AppendCSV and
// AppendArrow write readings in the same formats, and AppendReadings reads
// a record back into Readings. Each decoder rejects a bad message whole
// with a *DecodeError whose Reason is one of Reasons: unparsable bytes,
// missing or wrongly typed fields, NaN and ±Inf, empty or too long series
// ids, values outside Config.ValueRange, readings later than now +
// Config.MaxFuture and readings older than the bound the caller sets with
// Decoder.SetOldest (input.max_past behind the newest time of their
// partition, in the consumer) never reach a window.
//
// Invariants, checked by the fuzz targets: a decoder never panics on any
// bytes, every error is a *DecodeError with one of Reasons and appends
// nothing, and encode∘decode is the identity (floats compared bit for
// bit). Decoding a valid message allocates nothing once the batch's buffers
// have grown.
//
// # Concurrency
//
// A Decoder keeps scratch space between calls and is not safe for
// concurrent use: use one per goroutine. The encoders are plain functions,
// safe for concurrent use. There is no global state.
package readings
