// Package dataset prepares offline data for FreqLens: it loads the standard
// long-horizon benchmark CSV files (ETTh1, ETTh2, ETTm1, ETTm2, weather),
// splits them under the standard evaluation protocol of the Informer,
// Autoformer and DLinear code bases, z-scores them with training statistics,
// cuts every stride-1 window as a zero-copy view, and generates synthetic
// sensor data (traffic-like counts, period drift) for tests and demos.
//
// The package sits beside the streaming pipeline, not inside it: the `train`
// and `eval` commands and the tests read from it, while live readings go
// through stream and window. It imports the standard library only (gonum is
// allowed but not needed) and no other FreqLens package.
//
// # Data flow
//
//	LoadCSV ──► Frame ──► Standard ──► Benchmark{Split, Scaler, Normalised, Train/Val/Test *Windows}
//	Synthetic ─┘     └──► FillMissing (synthetic frames carry NaN for missing readings)
//
// Standard picks the protocol from the file name (ProtocolFor), so the window
// counts and metrics compare with published tables: for ETTh1 with a lookback
// and horizon of 96 it yields 8449 training, 2785 validation and 2785 test
// windows.
//
// # Concurrency
//
// The package starts no goroutines and keeps no global state. A Frame, a
// Scaler and a Benchmark are plain values that are not safe for concurrent
// mutation. Windows only hands out read-only views into its buffer; as long
// as nobody writes to that buffer, a *Windows may be shared by any number of
// goroutines, for example one per training worker.
package dataset
