package online

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/freqlens/freqlens/model"
)

// Outcome is how a fine-tuning round ended; its value is the outcome label
// of freqlens_finetune_rounds_total.
type Outcome string

// The round outcomes.
const (
	// OutcomePromoted: the candidate scored at least as well as the serving
	// model on the holdout and now serves.
	OutcomePromoted Outcome = "promoted"
	// OutcomeRejectedWorse: the candidate did not score better than the
	// serving model beyond the holdout's noise (or worse than the base
	// model), and the serving model is no worse than the base.
	OutcomeRejectedWorse Outcome = "rejected_worse"
	// OutcomePending: the candidate scored better than the serving model
	// on this round's holdout; it is promoted if it does so again on the
	// next round's, newer pairs (online.promote_z).
	OutcomePending Outcome = "pending"
	// OutcomeReverted: the serving model, a fine-tuned version, scored
	// worse than the base model (model.path) beyond the holdout's noise,
	// and the base model serves again as a new version.
	OutcomeReverted Outcome = "reverted"
	// OutcomeAbortedNonFinite: the candidate or its holdout error became
	// NaN or infinite.
	OutcomeAbortedNonFinite Outcome = "aborted_nonfinite"
	// OutcomeAbortedExploding: the fine-tuning loss grew without bound.
	OutcomeAbortedExploding Outcome = "aborted_exploding"
	// OutcomeSkipped: too few (window, target) pairs to train and judge.
	OutcomeSkipped Outcome = "skipped_insufficient_data"
	// OutcomeError: something else failed (see RoundResult.Err).
	OutcomeError Outcome = "error"
	// OutcomeCanceled: shutdown cut the round short; it is not counted.
	OutcomeCanceled Outcome = "canceled"
)

// outcomes are the counted outcomes, in the order the metric lists them.
var outcomes = []Outcome{OutcomePromoted, OutcomePending, OutcomeReverted, OutcomeRejectedWorse, OutcomeAbortedNonFinite, OutcomeAbortedExploding, OutcomeSkipped, OutcomeError}

// ok reports whether the outcome is one of normal operation (logged at
// info level) rather than a failure (warning level).
func (o Outcome) ok() bool {
	return o == OutcomePromoted || o == OutcomePending || o == OutcomeReverted || o == OutcomeRejectedWorse || o == OutcomeSkipped || o == OutcomeCanceled
}

// RoundResult is one fine-tuning round: how it ended and what it measured.
// Fields a round did not reach are zero.
type RoundResult struct {
	Outcome Outcome
	// Round numbers the rounds of this learner from 1.
	Round int64
	// Version is the serving version the round started from; NewVersion
	// the version it promoted (OutcomePromoted only).
	Version, NewVersion int64
	// Pairs is how many (window, target) pairs the replay buffer held; Need
	// how many a skipped round needed.
	Pairs, Need int
	// TrainPairs and HoldoutPairs are the split the round used.
	TrainPairs, HoldoutPairs int
	// FirstLoss and LastLoss are the fine-tuning loss at the first and the
	// last step.
	FirstLoss, LastLoss float64
	// CycleMoves are the candidate's cycles moved to the recent spectrum's
	// peaks before fine-tuning (model.Model.TrackCycles).
	CycleMoves []model.CycleMove
	// ServingMSE, CandidateMSE and BaseMSE are the holdout errors the
	// judgement compared (normalised units), BaseMSE the base model's
	// (model.path; the serving model's when that is it).
	ServingMSE, CandidateMSE, BaseMSE float64
	// Z is how many standard errors the candidate's holdout error lay
	// below (negative) or above the serving model's; a candidate is
	// promoted at −2 or below.
	Z float64
	// Reverted says the base model was promoted back (OutcomeReverted),
	// and Confirmed that the candidate promoted was the last round's,
	// better again on this round's holdout.
	Reverted, Confirmed bool
	// Duration is the round's wall time.
	Duration time.Duration
	// Checkpoint is the file the promoted version was saved to ("" when
	// online.checkpoint_dir is empty or saving failed).
	Checkpoint string
	// Published says the promoted version reached the models topic.
	Published bool
	// Err says why a round aborted or failed.
	Err error
}

// end returns r with its outcome and error.
func (r RoundResult) end(o Outcome, err error) RoundResult {
	r.Outcome, r.Err = o, err
	return r
}

// LogValue logs a round as a group of its non-zero fields.
func (r RoundResult) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("outcome", string(r.Outcome)), slog.Int64("round", r.Round), slog.Int64("version", r.Version)}
	add := func(ok bool, a slog.Attr) {
		if ok {
			attrs = append(attrs, a)
		}
	}
	add(r.NewVersion != 0, slog.Int64("new_version", r.NewVersion))
	add(r.Need != 0, slog.Int("pairs", r.Pairs))
	add(r.Need != 0, slog.Int("need", r.Need))
	add(r.TrainPairs != 0, slog.Int("train_pairs", r.TrainPairs))
	add(r.HoldoutPairs != 0, slog.Int("holdout_pairs", r.HoldoutPairs))
	add(r.TrainPairs != 0, slog.Float64("first_loss", r.FirstLoss))
	add(r.TrainPairs != 0, slog.Float64("last_loss", r.LastLoss))
	for _, mv := range r.CycleMoves {
		attrs = append(attrs, slog.String(fmt.Sprintf("cycle_%d", mv.ID), fmt.Sprintf("%.3f→%.3f steps", mv.FromPeriod, mv.ToPeriod)))
	}
	add(r.ServingMSE != 0 || r.CandidateMSE != 0, slog.Float64("serving_mse", r.ServingMSE))
	add(r.ServingMSE != 0 || r.CandidateMSE != 0, slog.Float64("candidate_mse", r.CandidateMSE))
	add(r.BaseMSE != 0 && r.BaseMSE != r.ServingMSE, slog.Float64("base_mse", r.BaseMSE))
	add(r.ServingMSE != 0 || r.CandidateMSE != 0, slog.Float64("z", r.Z))
	add(r.Duration != 0, slog.Float64("seconds", r.Duration.Seconds()))
	add(r.Checkpoint != "", slog.String("checkpoint", r.Checkpoint))
	add(r.Published, slog.Bool("published", true))
	add(r.Err != nil, slog.Any("err", r.Err))
	return slog.GroupValue(attrs...)
}
