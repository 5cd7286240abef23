// Package online keeps a serving FreqLens model learning from the values it
// forecast, and tells operators when the periods it relies on move.
//
// # Where it sits
//
//	window ──► model ──► sink
//	   │          │
//	   └──────────┴──► online: realised values joined to issued forecasts,
//	                   rolling error, replay buffer, guarded fine-tuning,
//	                   drift tracking ──► promoted model (pipeline.SetModel),
//	                                       drift events, checkpoints
//
// The pipeline calls Learner.Observe for every forecast it issues, with the
// window it forecast from. Observe is cheap and allocates nothing for a
// series it already tracks: it keeps what it needs of the forecast until its
// horizon has been observed, scores the realised steps against the
// forecasts that predicted them (two sampled steps of each forecast, every
// step in the full tier: see Memory), and turns each forecast whose horizon
// is complete into a (window, realised target) pair in the replay buffer. With interval levels
// (Config.Intervals) it also answers with the forecast's prediction
// intervals, calibrated from the same realised values by online conformal
// prediction (interval.go). Learner.Run fine-tunes a copy of
// the serving model in the background and promotes it only when it scores at
// least as well as the serving model on the newest pairs, which it was not
// tuned on. The serving path never waits for it. WithGate makes the rounds
// depend on a role: among replicas that share a models topic only the one
// the gate names fine-tunes and promotes.
//
// online imports model, cycles and internal/registry (its metrics) only:
// no Kafka, no Arrow, and not package training, whose loop a round does
// not need. Package online/calibration keeps the intervals' calibration:
// in files (CheckpointDir) or through a StateStore (WithStateStore;
// package broadcast's state topic).
// Drift events leave through a
// callback and promoted versions through a publisher (package service
// connects both to package broadcast, which writes the drift and models
// topics), and promotions take effect through the Server interface (the
// pipeline's atomic model swap). Learner.Round returns a RoundResult whose
// Outcome is also the label of freqlens_finetune_rounds_total.
//
// # Prediction intervals
//
// Intervals are calibrated where the errors are scored: the tracker that
// joins forecasts to realised values keeps each series' thresholds too, so
// Observe writes a forecast's bounds into the caller's slices under the
// lock it scores with, and the pipeline publishes them with the forecast
// (online imports no wire: the pipeline wraps them in wire.Intervals). The
// bounds are rounded to float32, the precision the output layouts keep,
// and the ones published at the sampled steps are stored until their step
// is realised, so the coverage counted is that of what was published, not
// of a recomputation.
//
// A band's offset from the forecast is a product of slow and fast parts
// (interval.go has the formula): g · κ · m(h) · p(τ) · a · σ, with σ the
// series' scale, a its error level, p a pooled profile over the time of
// day, m a pooled shape along the horizon and κ the thresholds, one per
// level, side and channel. The level a is a running mean of the scaled
// errors that a burst cannot wind up: each error counts at most 5× the
// level, a fast companion lifts the band through a burst, its memory
// shortens when the errors stay on one side of it, and far steps take in
// the series' long-run level (interval_pooled.go). κ comes from adaptive conformal inference on three
// learning rates (interval_experts.go), the slowest published unless a
// faster one's pinball loss is lower by three standard errors. κ and p
// learn only while the series is calm (its fast estimate agrees with its
// level): in a burst a miss says the scale lags, not that the shape
// changed, and a storm's misses would otherwise wind the 95% threshold up
// for weeks. What is published in bursts is calibrated by the pooled
// correction g, shared by the tracked series and moved by the same rule on
// every published interval, within a factor of 1.5 either way.
//
// # Rounds and drift
//
// A round's learning is FineTune (finetune.go): Config.Steps optimiser
// steps (model.Stepper) on pairs of the replay buffer outside the
// holdout, drawn from the round's seed, changing only the frequencies, the rhythms' clock terms
// and the fusion weight (and the heads with Config.TrainHeads), aborted
// when the loss stops being finite (model.ErrDiverged) or grows tenfold
// (ErrExploding). A round paces itself: after each step it sleeps so that computing takes
// Config.Duty of its wall time (0.25: three times the step's time) on
// Config.Workers cores (1), so serving keeps its cores. Learner.Advance
// runs the rounds and drift on the data's clock instead (package
// backtest).
//
// Drift is followed per unit: a rhythm, whose frequencies drift as one, or
// a frequency of no rhythm. Only a dominant unit (its recent share at
// least online.dominant_min_share, with hysteresis) raises a period event,
// once, when its period has settled beyond the threshold for
// online.min_duration; the event says whether the unit is a cycle of the
// data (DriftEvent.Cycle). See DriftEvent for the rules.
//
// # Units
//
// Errors are reported in normalised units so that they compare with the
// model's own test MSE: a mixed model's errors are divided by the per-channel
// standard deviation it was trained with, an independent model's by each
// series' running standard deviation (its forecasts are scale-equivariant),
// so that one large series does not dominate the error or a round's
// holdout. Pairs are stored in the input's units and normalised the same
// way when a round learns from them.
//
// # Memory
//
// Every tracked series keeps its last L+H values, the step each of its last
// H forecasts was issued at and, of each, the values at two sampled steps
// (float32); with interval levels also the bounds published at those steps
// and its own thresholds (see interval.go). That is about
//
//	(L+H)·C·4 + H·(8 + 4 + 8·C) + levels·(16·H·C + 16·C) + 300 bytes
//
// per series: 6.3 KB at L = H = 96, one channel, two levels (measured by
// TestTrackedSeriesBytes and BenchmarkObserve), so every series the windows
// hold can be tracked (Config.TrackSeries caps them, 0 by default: no cap
// of its own). The first 64 series tracked (the full tier) also keep every
// value of their last H forecasts (H²·C float32) and SpectrumSteps of
// history, about 40 KB each at L = H = 96: the error at every horizon step,
// and what a round's spectrum reads. Config.ReplaySize caps the pairs.
package online
