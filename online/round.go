package online

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/measure"
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

// Round runs one fine-tuning round against the serving model and returns
// what happened. Run calls it on schedule; tests call it directly. A round
// cut short by shutdown returns OutcomeCanceled and is neither counted nor
// logged.
func (l *Learner) Round(ctx context.Context, srv Server) RoundResult {
	start := l.now()
	r := l.round(ctx, srv)
	r.Duration = l.now().Sub(start)
	if r.Outcome == OutcomeCanceled {
		return r // shutting down: not a round that succeeded or failed
	}
	l.mu.Lock()
	l.counts[r.Outcome]++
	l.mu.Unlock()
	l.met.rounds.WithLabelValues(string(r.Outcome)).Inc()
	level := slog.LevelInfo
	if !r.Outcome.ok() {
		level = slog.LevelWarn
	}
	l.log.Log(ctx, level, "fine-tuning round", slog.Any("", r)) // the result's fields, inlined
	return r
}

func (l *Learner) round(ctx context.Context, srv Server) RoundResult {
	held, seen := l.rp.len()
	l.lastNew.Store(seen)
	cur, version := srv.Model()
	r := RoundResult{Round: l.rounds.Add(1), Version: version, Pairs: held}
	if need := l.cfg.MinHoldout + l.cfg.BatchSize; held < need {
		r.Outcome, r.Need = OutcomeSkipped, need
		return r
	}
	train, hold := l.rp.split(l.cfg.Holdout, l.cfg.MinHoldout, l.cfg.Steps*l.cfg.BatchSize, l.tr.norm)
	r.TrainPairs, r.HoldoutPairs = train.Len(), hold.Len()
	if train.Len() < l.cfg.BatchSize {
		r.Outcome, r.Need = OutcomeSkipped, l.cfg.BatchSize
		return r
	}
	blocks := hold.blocks(holdoutBlocks, 2*int64(l.tr.H)*int64(l.tr.cadence))
	opts := measure.Options{Workers: l.cfg.Workers, Groups: blocks}
	curM, err := measure.Evaluate(ctx, cur, hold, opts)
	var baseM model.Metrics
	tuned := cur != l.ref // the serving model is a fine-tuned version, not the base
	if err == nil && tuned {
		baseM, err = measure.Evaluate(ctx, l.ref, hold, opts)
	}
	switch {
	case ctx.Err() != nil:
		return r.end(OutcomeCanceled, nil)
	case err != nil:
		return r.end(OutcomeError, err)
	}
	r.ServingMSE, r.BaseMSE = curM.MSE, curM.MSE
	if tuned {
		r.BaseMSE = baseM.MSE
	}
	l.met.holdoutMSE.WithLabelValues("serving").Set(curM.MSE)

	// The last round's candidate, better on its holdout, is promoted if it
	// is better on this one too: pairs no round has judged, newer than
	// what it was tuned on.
	cand, pending := l.pending, l.pendingFrom == version
	l.pending = nil
	if cand != nil && pending {
		candM, err := measure.Evaluate(ctx, cand, hold, opts)
		switch {
		case ctx.Err() != nil:
			return r.end(OutcomeCanceled, nil)
		case err != nil:
			return r.end(OutcomeError, err)
		}
		r.CandidateMSE = candM.MSE
		if z, ok := l.better(candM, curM, r.BaseMSE); ok {
			r.Z, r.Confirmed = z, true
			l.met.holdoutMSE.WithLabelValues("candidate").Set(candM.MSE)
			return l.promote(ctx, srv, r, cand, hold)
		}
	}

	cand = cur.Clone()
	moves := l.trackCycles(cand)
	res, err := FineTune(ctx, cand, train, FineTuneConfig{
		Steps: l.cfg.Steps, BatchSize: l.cfg.BatchSize, LearningRate: l.cfg.LearningRate,
		TrainHeads: l.cfg.TrainHeads, Seed: l.cfg.Seed + uint64(r.Round), Workers: l.cfg.Workers,
		AfterStep: l.pace,
	})
	r.FirstLoss, r.LastLoss, r.CycleMoves = res.FirstLoss, res.LastLoss, moves
	switch {
	case errors.Is(err, model.ErrDiverged):
		return r.end(OutcomeAbortedNonFinite, err)
	case errors.Is(err, ErrExploding):
		return r.end(OutcomeAbortedExploding, err)
	case ctx.Err() != nil:
		return r.end(OutcomeCanceled, nil)
	case err != nil:
		return r.end(OutcomeError, err)
	}
	if l.hook != nil {
		l.hook(cand)
	}
	if !cand.Finite() {
		return r.end(OutcomeAbortedNonFinite, errors.New("the candidate has non-finite parameters"))
	}
	candM, err := measure.Evaluate(ctx, cand, hold, opts)
	switch {
	case ctx.Err() != nil:
		return r.end(OutcomeCanceled, nil)
	case err != nil:
		return r.end(OutcomeError, err)
	}
	l.met.holdoutMSE.WithLabelValues("candidate").Set(candM.MSE)
	r.CandidateMSE = candM.MSE
	if math.IsNaN(candM.MSE) || math.IsInf(candM.MSE, 0) {
		return r.end(OutcomeAbortedNonFinite, nil)
	}
	var ok bool
	r.Z, ok = l.better(candM, curM, r.BaseMSE)
	switch {
	case ok && l.cfg.PromoteZ < 0:
		return l.promote(ctx, srv, r, cand, hold) // no test, no second holdout
	case ok:
		// Better than the serving model beyond the holdout's noise, and
		// no worse than the base model: it waits for the next holdout.
		l.pending, l.pendingFrom = cand, version
		return r.end(OutcomePending, nil)
	case tuned && pairedZ(baseM, curM) <= -max(l.cfg.PromoteZ, 0):
		// The fine-tuned version now does worse than the base model on
		// the newest pairs (what it learnt was a holiday's, say): the
		// base model serves again, as a new version.
		r.Reverted = true
		return l.promote(ctx, srv, r, l.ref.Clone(), hold)
	}
	return r.end(OutcomeRejectedWorse, nil)
}

// better reports whether a candidate's holdout metrics c beat the serving
// model's (cur) and the base model's MSE base as online.promote_z and
// promote_margin ask, with the candidate's z against the serving model.
func (l *Learner) better(c, cur model.Metrics, base float64) (z float64, ok bool) {
	z = pairedZ(c, cur)
	m := 1 + l.cfg.PromoteMargin
	ok = c.MSE <= cur.MSE*m && c.MSE <= base*m && (l.cfg.PromoteZ < 0 || z <= -l.cfg.PromoteZ)
	return z, ok
}

// promote makes cand the next version: it serves, is checkpointed and
// published, and its error quantiles are measured on the holdout.
func (l *Learner) promote(ctx context.Context, srv Server, r RoundResult, cand *model.Model, hold *pairs) RoundResult {
	version := r.Version
	if !l.mayLearn() {
		return r.end(OutcomeCanceled, nil) // another replica became the learner meanwhile
	}
	next := version + 1
	cand.Meta.Version = next
	// Where the promoted version's intervals start after a restart, or on a
	// replica that loads it: its errors on the newest realised pairs (which
	// it was not tuned on), not the test split the base model was trained
	// on, which the data may have left.
	if hold.Len() >= minQuantilePairs {
		if q, err := measure.ErrorQuantiles(ctx, cand, hold, hold.Len()); err == nil {
			cand.Meta.ErrorQuantiles = q
		}
	}
	if err := srv.SetModel(cand, next); err != nil {
		return r.end(OutcomeError, err)
	}
	r.NewVersion = next
	l.met.lastPromotion.Set(float64(l.now().UnixNano()) / 1e9)
	if l.cfg.CheckpointDir != "" {
		path, err := SaveCheckpoint(l.cfg.CheckpointDir, cand, next, l.cfg.Keep)
		if err != nil {
			l.log.Error("checkpoint failed; the promoted version serves but will not survive a restart", "err", err)
		} else {
			r.Checkpoint = path
		}
	}
	if l.publish != nil {
		if err := l.publish(ctx, cand); err != nil {
			l.met.publishErrors.Inc()
			l.log.Error("publishing the promoted version failed; it serves here but other replicas will not load it", "version", next, "err", err)
		} else {
			r.Published = true
		}
	}
	l.Refresh(srv)
	if r.Reverted {
		return r.end(OutcomeReverted, nil)
	}
	return r.end(OutcomePromoted, nil)
}

// A candidate is promoted when its holdout error is lower than the serving
// model's by online.promote_z standard errors of the difference, the
// holdout cut into blocks (up to holdoutBlocks groups of series, each by stretches of
// 2H steps) whose errors are compared pairwise: consecutive windows
// overlap and share their shocks, so single pairs are far from
// independent, while blocks nearly are.
const holdoutBlocks = 16

// pairedZ is how many standard errors a's error lies below (negative) or
// above b's, over the blocks of the holdout (Metrics.GroupMSE) both were
// scored on: the mean of their blocks' differences, weighted by the
// blocks' windows, over its standard error. It is 0 with fewer than four
// blocks: too few to tell.
func pairedZ(a, b model.Metrics) float64 {
	var d, w []float64
	for g := range a.GroupMSE {
		if g < len(b.GroupMSE) && a.GroupWindows[g] > 0 {
			d, w = append(d, a.GroupMSE[g]-b.GroupMSE[g]), append(w, float64(a.GroupWindows[g]))
		}
	}
	n := float64(len(d))
	if n < 4 {
		return 0
	}
	var sw, mean float64
	for i := range d {
		sw += w[i]
		mean += w[i] * d[i]
	}
	mean /= sw
	var v float64
	for i := range d {
		v += w[i] * w[i] * (d[i] - mean) * (d[i] - mean)
	}
	se := math.Sqrt(v / (sw * sw) * n / (n - 1))
	switch {
	case se > 0:
		return mean / se
	case mean < 0:
		return math.Inf(-1)
	case mean > 0:
		return math.Inf(1)
	}
	return 0
}

// mayLearn reports whether this learner may fine-tune and promote now.
func (l *Learner) mayLearn() bool { return l.gate == nil || l.gate() }

// spectrumSeries caps the series whose recent history the spectrum of a
// round reads: enough to average out noise, few enough to stay cheap. They
// are the tracker's full tier, which also measures the error at every
// horizon step.
const spectrumSeries = 64

// trackCycles moves the candidate's cycles to where the spectrum of the
// recent realised values shows them (see model.Model.TrackCycles).
//
// A model with rhythms moves each rhythm as one, re-anchoring its clock at
// the newest observed step so its phase is continuous.
func (l *Learner) trackCycles(cand *model.Model) []model.CycleMove {
	if len(cand.Meta.Peaks) == 0 && len(cand.Meta.Rhythms) == 0 {
		return nil
	}
	rows, width := l.tr.recentRows(l.cfg.SpectrumSteps, spectrumSeries)
	if width == 0 {
		return nil
	}
	peaks := cycles.FindPeaks(rows, width, cycles.PeakOptions{})
	if len(cand.Meta.Rhythms) > 0 {
		return cand.TrackRhythms(peaks, cand.ClockStep(l.tr.newestTime()))
	}
	return cand.TrackCycles(peaks)
}

// pace sleeps after a fine-tuning step so that computing takes Duty of a
// round's wall time.
func (l *Learner) pace(ctx context.Context, took time.Duration) error {
	if l.cfg.Duty >= 1 {
		return nil
	}
	t := time.NewTimer(time.Duration(float64(took) * (1/l.cfg.Duty - 1)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
