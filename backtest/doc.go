// Package backtest is `freqlens backtest`: it replays a history (a file
// that `train --data` reads, or the input topic's retained messages)
// through the pipeline and the online learner that `serve` builds, and
// scores what they publish. Each forecast is scored per horizon step
// beside the frozen model and the seasonal naive forecasts of the day and
// the week, its bands beside a static split-conformal band and two
// hindsight bands (their coverage, width, interval score and nesting, and
// their width over time); the fine-tuning rounds and drift events go into
// the Report, written as text or JSON.
//
// # Where it sits
//
// A backtest is the service without Kafka. It imports what otherwise only
// pipeline and service see (stream, window, sink, online) on purpose: it
// must run the code serve runs, not a copy. stream.Local makes the batches
// a consumer would (rows, partitions, offsets, commit hooks) from the
// decoded history (package history, with the input settings of
// service.Config.InputFor), service.Config.Wiring gives the pipeline the
// wiring serve gives it, and online.Learner.Advance runs the rounds and
// drift on the data's clock, so online.interval and online.min_duration
// mean in a replay what they mean live. Nothing is written: the
// pipeline's sink discards the forecasts, and the scorer sees each one
// through the pipeline's forecast observer. docs/online.md says how to
// read a report.
//
// # Concurrency
//
// Run runs the pipeline on a goroutine of its own and returns once the
// history is replayed and the pipeline has stopped. The model it is given
// is not changed: fine-tuning promotes copies.
package backtest
