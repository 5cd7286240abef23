// Package window turns readings into the per-series sliding windows the
// model forecasts from.
//
// # Where it sits
//
//	stream ──► window ──► model ──► sink
//
// A pipeline worker feeds each decoded batch of readings (an Arrow record
// with the columns series, ts, ingest_ts and one float64 column per value
// field; see Set.Append) to its Set, and gets back a Batch of the windows
// that became ready: the last L steps of every channel, in the model's input
// layout. window imports Arrow only: no Kafka, no model, no Prometheus, no
// goroutines and no global state. The pipeline exports Stats as metrics and
// calls Expire periodically.
//
// # Shape and Config
//
// New takes two values. A Shape is the wiring: the lookback L (the
// model's), the value fields (input.value_fields) and the cadence
// (input.cadence), which the pipeline takes from the model and the input
// settings. A Config holds the window.* settings, each naming its YAML key.
// Both are taken as given and checked by their Validate: nothing is filled
// in, so a caller starts from DefaultConfig and changes what it means to,
// and every value, 0 included, means what it says (MaxGap 0 restarts a
// series on any missing step).
//
// # Concurrency
//
// A Set is not safe for concurrent use. Series are sharded upstream by
// hash(series) % workers, and each worker owns its Sets (one per input
// partition), which keeps every series' readings in order without locks. A
// Batch belongs to its caller; Append only appends to it. A Budget, the
// cap on live series that several Sets share, is safe for concurrent use.
//
// # Steps
//
// A reading at time t belongs to step
//
//	k = ⌊(t.UnixMilli() + a) / Cadence.Milliseconds()⌋
//
// whose time is k·Cadence (UTC), where a is AlignOffset(Shape.Align): 0 with
// AlignFloor, so that a reading between two step times lands on the earlier
// step, and half a step with AlignNearest, so that it lands on the nearer
// one (a schedule whose stamps jitter around the step times, some a moment
// early). Each series keeps a ring of the last L steps (L =
// Shape.Lookback), C values per step (C = len(Shape.Fields)), and its
// newest step n.
// A reading for step k of an existing series is
//
//   - a new step when k > n. With g = k − n − 1 missing steps: if g ≤ MaxGap
//     the g steps are filled (see below) and counted in GapFilled; if
//     g > MaxGap the series restarts: its window empties and Restarts counts
//     it (with MaxGap 0 any missing step restarts it). Then step k is
//     pushed.
//   - a duplicate when k = n: it overwrites step n (last write wins) and is
//     counted in Duplicates; no window is emitted.
//   - late when k < n: if (n − k)·Cadence ≤ AllowedLateness and step k is
//     still in the ring (and after the last restart), it overwrites step k
//     and is counted in LateUpdated, without emitting a window; the next
//     window sees it. Otherwise it is too late: counted in LateDropped and,
//     with Late = dead_letter (the default), its row listed in
//     Batch.TooLate for the dead-letter topic. A
//     filled step whose real reading arrives afterwards is updated by this
//     rule like any other.
//
// Filled steps take, per channel, the straight line from the value v₀ of
// step n to the new value v₁ (FillLinear),
//
//	v(n+j) = v₀ + (v₁ − v₀)·j/(g+1),  j = 1 … g,
//
// or v₀ (FillHold). When g ≥ L only the last L−1 filled steps are computed.
//
// A reading of an existing series whose value lies more than MaxJump times
// its channel's scale outside the range of the series' recent values is
// refused before any of the above: it is counted in OutOfRange and its row
// listed in Batch.OutOfRange, and the window does not change. The range is
// kept in O(C) per reading: every value written widens it, and at each
// step that is a multiple of L it is tightened to the values the ring
// holds, so it may accept a little more than the window's own range,
// never less.
//
// The first reading of a new series creates it with that reading as its
// only step, unless the Budget is exhausted (MaxSeries live series, counted
// over every Set that shares the Budget): then the reading is rejected and
// counted in Rejected (per reading), and a warning naming the series, the
// cap and the fix is logged at most once per second.
//
// # Ready windows
//
// A window is ready when a reading pushes a new step k, the ring holds L
// steps since the series' last restart, and a due step, a multiple of
// Stride, lies in (n, k], n being the newest step before the reading. With
// Stride 1 every new step emits a window; with a larger Stride a due step
// that was filled moves its window to the next real reading. The phase is
// absolute (step indexes count from the Unix epoch), so neither gaps nor
// restarts nor where a Set's history began shift it. The window appended to
// the Batch carries the series id (the Set's own key string, not a copy),
// End = k·Cadence, Ingest = the ingest_ts of the reading that pushed step
// k, its record row, and L·C values in chronological order, row-major
// (step, then channel).
//
// # Rebuilding
//
// Append with a nil Batch changes the windows and emits nothing. The
// pipeline feeds it the readings a partition held before its committed
// offset when the partition is assigned, so that series continue where
// they were: a Set that replays the readings of the last
// L + MaxGap + AllowedLateness/Cadence + 1 steps before a point, then takes
// the readings after it, emits the same windows, bit for bit, as a Set that
// saw the whole history (TestRebuildFromPartOfTheHistory). Two things make
// it exact: the stride's phase is absolute, and the MaxJump range is
// tightened at steps fixed in time (multiples of L), not counted from
// where a Set's history began.
//
// # Expiry and memory
//
// Append stamps each series with the wall clock (WithClock) when any of its
// readings arrives, dropped ones included; Expire(now) evicts the series
// stamped more than SeriesTTL before now. With MaxSeries this bounds the
// memory of a Set. One series with L = 96 and one channel costs about 900
// bytes of heap (the ring of L·C float64 plus 2·C bounds, its bookkeeping,
// key and map entry; see BenchmarkMemoryPerSeries), well under the 4 KiB
// budget. The map is rebuilt
// smaller when Expire leaves it under a quarter of its peak.
//
// # Cost
//
// Append on existing series allocates nothing once the Batch has grown: the
// series is looked up with the record's key bytes converted in the map index
// expression, and windows are appended into the Batch's reused storage. The
// schema is resolved once per *arrow.Schema. BenchmarkAppend: about 6
// million readings/s on one core of the 2-core development machine for
// 1,000 series × 1 channel, L = 96, a window per reading.
package window
