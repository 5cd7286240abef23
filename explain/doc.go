// Package explain forecasts batches of windows given in the data's own
// units and splits each forecast into its exact parts: every frequency's
// contribution, every rhythm's summed part, the residual and the window's
// level, which add up to the forecast (Explainer, Explanation,
// RhythmPart). RhythmShares, OtherShare and Cycles name a model's rhythms
// and discovered cycles by their shares of the attribution, with their
// periods in the data's time; MatchPeriods finds the learned periods
// nearest known ones (a day, a week).
//
// # Why
//
// Package model is the network: its forward and backward passes and its
// attribution (model.Workspace.Attribution) work on model windows in the
// model's units. Every caller that serves or reports forecasts (pipeline,
// backtest, report, the predict command) needs the same few steps on top:
// a mixed model trained on z-scored columns has its normalisation applied
// to the windows and undone on every output, an independent model's window of C fields becomes C
// single-channel model windows whose forecasts and contributions are
// gathered back into one explanation (a frequency one channel did not
// select is zero there), the shares are counted over every channel, and
// the contributions of each rhythm are summed into its part. This package
// does those steps once, so that model stays the network and its callers
// ask for an explanation.
//
// # Where it sits
//
// explain imports model and nothing else of the module's but what model
// imports; no Kafka, Arrow, metrics or service code.
//
// # Concurrency and memory
//
// An Explainer is not safe for concurrent use: make one per goroutine (the
// pipeline has one per worker). It holds a model.Workspace for its largest
// batch and allocates nothing once it has held a batch of its size and an
// Explanation is reused as the destination; ExplainInto puts the numbers a
// caller keeps in storage the caller hands out.
package explain
