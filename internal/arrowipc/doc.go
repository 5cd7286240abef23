// Package arrowipc is the project's one hardened reader of Arrow IPC
// streams from untrusted bytes. Both the input decoder (readings'
// ArrowDecoder, readings from Kafka) and the output decoders (wire's
// DecodeForecastArrow and DecodeAttributionArrow, for consumers of the
// forecast topics) read through Read.
//
// Arrow's Go IPC reader trusts the lengths in its input: it sizes slices
// from flatbuffer vector lengths and buffer descriptors, recurses into
// children, and may panic on offsets out of range, so a few hostile bytes
// could ask for gigabytes, recurse forever or crash the process. Read
// therefore checks the framing and every table, vector and string of the
// metadata before Arrow sees them (Check), bounds what Arrow may allocate
// by the size of the input (MaxAlloc), and recovers what Arrow still
// panics on.
//
// The package imports Arrow only. Its functions are safe for concurrent use.
package arrowipc
