// Package pipeline runs the stages of the service: it wires stream → window
// → model → sink (and feeds the online learner) for one process. Package
// service builds it from the configuration; pipeline itself knows nothing
// of YAML, Kafka connections or the models topic.
//
//	stream.Consumer ──batches──► process ──outputs──► write
//	  (fetch, decode,            (route rows by      (sink.Write: encode,
//	   dead letters)              hash(series) to     produce, wait for acks;
//	                              workers; windows;   then Batch.Commit)
//	                              batched forward +
//	                              attribution)
//
// # Delivery
//
// At-least-once. A batch's input offsets are committed only after the sink
// has acknowledged every forecast derived from it, and batches are committed
// in the order they were consumed. A crash or a forced stop may make a
// restarted service reprocess readings (forecasts carry a deterministic
// forecast-id header so consumers can drop the duplicates); it never drops
// one. The windows survive: each worker keeps one window.Set per input
// partition, a batch's Forget drops the Sets of partitions that moved away,
// and rebuild batches (readings from before the committed offsets) go into
// the windows without a forecast, so a partition continues where it was
// committed, and a window forecast again is forecast from the same values
// (RebuildSpan says how far back the consumer must read). A partition's
// windows are a function of its log, so they are rebuilt from it, not
// saved: a compacted topic of window state would have to be written at
// every step and kept consistent with the input offsets, while the replay
// of 10,000 series takes under a second (docs/reliability.md:
// FREQLENS_FAULT_RESUME_SERIES=10000 go test -run TestResumeTime -v
// -timeout 30m ./fault/).
//
// The write stage retries the sink, the dead letters and the commit with
// backoff (100ms to 5s) until they succeed or Run's context ends: giving
// up would drop readings. A sink.ErrInvalid (= wire.ErrInvalid, such as a
// forecast whose shapes disagree) is not retried: no broker can fix it.
//
// A batch whose readings cannot be put into windows (a bug upstream: the
// decoders guarantee the schema) is never committed unread: the write stage
// dead-letters its messages (stream.Batch.DeadLetter, ReasonWindow) and
// counts it before committing. So are, message by message
// (stream.Batch.DeadLetterRows), the readings the windows refuse as out of
// range (window.max_jump, readings.ReasonOutOfRange), the readings too late
// to update their step (window.allowed_lateness with window.late:
// dead_letter, ReasonTooLate) and the readings that completed a window
// whose forecast or attribution had a non-finite value
// (ReasonNonFiniteOutput): such a forecast is never written.
//
// # Limits
//
// window.max_series is one window.Budget for every Set of the process.
// Idle series are expired every ExpireEvery (at most a quarter of the TTL)
// whether batches arrive or not; an expiry that frees 10,000 series or more
// returns the memory to the operating system at once.
//
// # Concurrency
//
// Run starts three stages with errgroup: the consumer, the processor and the
// writer, joined by channels of capacity one so consuming, computing and
// producing overlap. Inside the processor, rows go to a worker by
// maphash(series) % Workers and, within it, to the window.Set of the row's
// input partition, so one series' window lives in exactly one Set, owned
// by one worker with its model workspace, without locks, which keeps
// per-series order. Each worker batches its ready windows into one forward
// pass. Three batches of outputs rotate (one filled, one written, one
// spare), so decoding, the forward pass and Kafka writes overlap. No
// goroutine per series, ever.
//
// The learner (WithOnline) and the forecast observer
// (WithForecastObserver, the live view) are called on the workers'
// goroutines with slices the pipeline reuses after the call: they copy
// what they keep. The learner writes a forecast's prediction intervals
// into the worker's slices, which the pipeline wraps in wire.Intervals
// and publishes with the forecast (package online imports no wire).
//
// # Shutdown
//
// Cancelling Run's context stops fetching; the batches already fetched are
// processed, written and committed within ShutdownTimeout; then the sink and
// the consumer are closed. If the deadline passes first, the rest is
// cancelled: uncommitted readings are consumed again after a restart.
//
// # Models
//
// A mixed model needs exactly its C value fields per reading; an
// independent model (C = 1) serves every series and every field, one
// single-channel window per field. SetModel swaps in a new model version
// atomically: batches in flight finish on the old one.
package pipeline
