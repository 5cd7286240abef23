package online

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online/calibration"
)

// Server is the serving side a Learner fine-tunes for: the pipeline's
// current model and its atomic swap.
type Server interface {
	Model() (*model.Model, int64)
	SetModel(m *model.Model, version int64) error
}

// Observation is one issued forecast with the window it came from, both in
// the input's units. The Learner copies what it keeps; the slices may be
// reused as soon as Observe returns.
type Observation struct {
	Series string
	// End is the time of the window's last step.
	End time.Time
	// Window is L×C and Forecast H×C, row-major (step, then channel).
	Window, Forecast []float64
	// Contributions are the forecast's attribution (nil when attributions
	// are off; drift then follows periods only).
	Contributions []model.Contribution
	// Rhythms are the forecast's rhythm parts
	// (explain.Explanation.Rhythms), whose shares drift reports per
	// rhythm; nil when attributions are off.
	Rhythms []explain.RhythmPart
	// Lower and Upper receive the forecast's prediction intervals when the
	// learner has interval levels (Config.Intervals): one H×C slice each per
	// level, in the order of Learner.Levels, filled when Observe returns
	// true. Observe leaves them alone otherwise.
	Lower, Upper [][]float64
}

// Learner is the online module: it scores issued forecasts against what
// happened, keeps the replay buffer, fine-tunes and promotes in the
// background, and tracks the drift of the learned periods.
type Learner struct {
	cfg Config
	ref *model.Model
	tr  *tracker
	// store keeps the interval calibration for a restart and for the
	// other replicas (nil: not kept); states is the state topic given by
	// WithStateStore. fingerprint identifies ref in it; keptAt is when
	// this learner last wrote its calibration file (its modification
	// time), and shared says another replica of the same online.replica
	// was seen writing it.
	store       calibration.Store
	states      StateStore
	fingerprint uint64
	keptAt      time.Time
	shared      bool
	rp          *replay
	dr          *drift
	met         *metrics
	reg         prometheus.Registerer // nil: not exported
	log         *slog.Logger
	events      func(DriftEvent)
	hook        func(*model.Model)
	publish     func(context.Context, *model.Model) error
	gate        func() bool
	now         func() time.Time
	kick        chan struct{}
	// independent: the model forecasts each field on its own, so a forecast
	// of several fields is tracked field by field.
	independent bool
	rounds      atomic.Int64
	lastNew     atomic.Int64 // replay.seen at the last round
	// pending is the last round's candidate, better on its holdout, tuned
	// from serving version pendingFrom; the next round promotes it if it
	// is better on its holdout too. Rounds run one at a time.
	pending     *model.Model
	pendingFrom int64
	// roundAt is the data time of the last round Advance ran (or of its
	// first call).
	roundAt time.Time

	mu       sync.Mutex
	counts   map[Outcome]int64
	exported struct { // totals already added to the counters
		count, sq, abs, pairs, refused float64
		scored, covered                []int64   // per interval level
		score                          []float64 // per interval level
	}
}

// Option configures a Learner.
type Option func(*Learner)

// WithRegisterer registers the online metrics with reg; New returns the
// registration's error (a name already registered, say). Default: they are
// kept but not exported.
func WithRegisterer(reg prometheus.Registerer) Option {
	return func(l *Learner) { l.reg = reg }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(log *slog.Logger) Option { return func(l *Learner) { l.log = log } }

// WithDriftEvents calls f for every drift event (the pipeline writes them to
// the drift topic). f runs on the learner's goroutine.
func WithDriftEvents(f func(DriftEvent)) Option { return func(l *Learner) { l.events = f } }

// WithCandidateHook calls f on every candidate after fine-tuning and before
// it is judged: a test seam to corrupt candidates, and a place to log them.
func WithCandidateHook(f func(*model.Model)) Option { return func(l *Learner) { l.hook = f } }

// WithPublisher calls publish with every promoted version (its
// Meta.Version set) after it serves and is checkpointed: the service
// publishes it to the models topic, so other replicas and restarts load it.
// publish runs on the learner's goroutine; an error is logged and counted,
// and the version keeps serving.
func WithPublisher(publish func(context.Context, *model.Model) error) Option {
	return func(l *Learner) { l.publish = publish }
}

// WithStateStore keeps the interval calibration of every series in
// states, a compacted topic keyed by series that every replica reads
// (broadcast.States on topics.state), instead of in files under
// CheckpointDir: a series a restart, a kill or a rebalance moves to any
// replica goes on from its calibration without a shared volume.
// CheckpointDir still receives the promoted versions.
func WithStateStore(states StateStore) Option { return func(l *Learner) { l.states = states } }

// WithGate makes fine-tuning depend on gate: Run starts a round only while
// gate returns true, and a round promotes only if gate still returns true
// after fine-tuning (a round cut short so ends as OutcomeCanceled). Among
// replicas that share a models topic, gate says which one is the learner;
// the others follow what it publishes. Default: always.
func WithGate(gate func() bool) Option { return func(l *Learner) { l.gate = gate } }

// New returns a Learner for models shaped like reference, whose periods are
// the drift reference and whose stored statistics (if any) normalise errors.
// cfg is taken as given (start from DefaultConfig).
func New(cfg Config, reference *model.Model, opts ...Option) (*Learner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	mc := reference.Config()
	if reference.Meta.Cadence <= 0 {
		return nil, errors.New("online: the model has no cadence; set input.cadence so forecasts can be joined to realised values")
	}
	if mc.Horizon > math.MaxUint16 {
		return nil, fmt.Errorf("online: the model's horizon %d is longer than the %d steps the learner scores", mc.Horizon, math.MaxUint16)
	}
	l := &Learner{cfg: cfg, ref: reference, log: slog.Default(), now: time.Now, kick: make(chan struct{}, 1),
		counts: make(map[Outcome]int64)}
	for _, o := range opts {
		o(l)
	}
	var err error
	if l.met, err = newMetrics(l.reg); err != nil {
		return nil, err
	}
	var norm normaliser
	if mc.Mode == model.Mixed && len(reference.Meta.Std) == mc.Channels {
		norm = normaliser{mean: reference.Meta.Mean, std: reference.Meta.Std}
	}
	l.independent = mc.Mode == model.Independent
	l.rp = newReplay(cfg.ReplaySize, mc.Lookback, mc.Horizon, mc.Channels, cfg.Replay, cfg.Seed)
	if cfg.SpectrumSteps == 0 {
		cfg.SpectrumSteps = 8 * mc.Lookback
		l.cfg.SpectrumSteps = cfg.SpectrumSteps
	}
	iv := newIntervals(cfg.Intervals, cfg.IntervalRate, mc.Horizon, mc.Channels, cfg.ErrorHalfLife, reference.Meta.ErrorQuantiles,
		reference.Meta.Cadence, reference.Location())
	l.exported.scored, l.exported.covered = make([]int64, len(cfg.Intervals)), make([]int64, len(cfg.Intervals))
	l.exported.score = make([]float64, len(cfg.Intervals))
	l.tr = newTracker(mc.Lookback, mc.Horizon, mc.Channels, cfg.SpectrumSteps, reference.Meta.Cadence, norm, cfg.TrackSeries, spectrumSeries, cfg.ErrorHalfLife, l.rp, iv)
	l.tr.errs.hist = l.met.absErr
	if err := l.restoreCalibration(iv != nil); err != nil {
		return nil, err
	}
	l.dr = newDrift(cfg, reference)
	if v, ok := reference.Meta.Metrics["test_mse"]; ok {
		l.met.testMSE.Set(v)
	}
	l.met.driftThreshold.Set(cfg.DriftThreshold)
	for _, level := range cfg.Intervals {
		// Exported from the start, at 0, so that increase() sees the first
		// realised steps and the alert rules have the levels to compare with.
		lv := strconv.FormatFloat(level, 'g', -1, 64)
		l.met.nominal.WithLabelValues(lv).Set(level)
		l.met.intervalsScored.WithLabelValues(lv)
		l.met.intervalsCovered.WithLabelValues(lv)
		l.met.intervalScoreSum.WithLabelValues(lv)
	}
	return l, nil
}

// Observe records one issued forecast and, with interval levels, fills
// o.Lower and o.Upper with its prediction intervals and returns true once
// they are calibrated (see Config.Intervals). It is safe for concurrent use
// and allocates nothing for a series it already tracks.
func (l *Learner) Observe(o *Observation) (intervals bool) {
	// The fields of the forecast: the model's channels, or any number for
	// an independent model, which forecasts each field on its own.
	F := len(o.Forecast) / l.tr.H
	if F < 1 || len(o.Forecast) != l.tr.H*F || len(o.Window) != l.tr.L*F || F != l.tr.C && !(l.independent && l.tr.C == 1) {
		return false // a model of another shape is serving; nothing to join
	}
	lower, upper := o.Lower, o.Upper
	if !l.fits(lower, upper, len(o.Forecast)) {
		lower, upper = nil, nil // no room to write the intervals in
	}
	intervals = l.tr.observe(o.Series, o.End, o.Window, o.Forecast, lower, upper)
	l.dr.observeShares(o.Contributions, o.Rhythms)
	if l.cfg.Enabled {
		if _, seen := l.rp.len(); seen-l.lastNew.Load() >= int64(l.cfg.MinNewSamples) {
			select {
			case l.kick <- struct{}{}:
			default:
			}
		}
	}
	return intervals
}

// minQuantilePairs is the fewest holdout pairs a promoted version's error
// quantiles are measured on; with fewer it keeps its parent's.
const minQuantilePairs = 200

// fits reports whether lower and upper have one slice of n values per
// interval level.
func (l *Learner) fits(lower, upper [][]float64, n int) bool {
	if len(l.cfg.Intervals) == 0 || len(lower) != len(l.cfg.Intervals) || len(upper) != len(lower) {
		return false
	}
	for k := range lower {
		if len(lower[k]) != n || len(upper[k]) != n {
			return false
		}
	}
	return true
}

// Levels returns the nominal levels of the intervals Observe writes, in
// increasing order (nil without intervals).
func (l *Learner) Levels() []float64 { return l.cfg.Intervals }

// Run fine-tunes (when enabled) every Interval that brought a holdout's
// worth of new pairs, or after MinNewSamples new pairs (and a holdout's
// worth), and evaluates drift and refreshes the metrics every second,
// until ctx ends.
func (l *Learner) Run(ctx context.Context, srv Server) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// The calibration is kept beside the loop, which a fine-tuning round
	// holds for as long as it runs, and once more at shutdown.
	kept := make(chan struct{})
	defer func() { <-kept; l.adoptCalibrations(); l.keepCalibration() }()
	keepCtx, stopKeeping := context.WithCancel(ctx)
	defer stopKeeping()
	go func() {
		defer close(kept)
		keep := time.NewTicker(l.cfg.CalibrationEvery)
		defer keep.Stop()
		for {
			select {
			case <-keepCtx.Done():
				return
			case <-keep.C:
				// Read first: a series moved here since the last read is
				// written with the state it adopts, not as new.
				l.adoptCalibrations()
				l.keepCalibration()
			}
		}
	}()
	var rounds <-chan time.Time
	if l.cfg.Enabled {
		t := time.NewTicker(l.cfg.Interval)
		defer t.Stop()
		rounds = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			l.Refresh(srv)
		case <-rounds:
			if l.mayLearn() && l.fresh(1) {
				l.Round(ctx, srv)
			}
		case <-l.kick:
			// A kick sent while the last round was starting may be stale:
			// that round took its pairs.
			if l.mayLearn() && l.fresh(int64(l.cfg.MinNewSamples)) {
				l.Round(ctx, srv)
			}
		}
	}
}

// Advance does at data time now what Run does as time passes, for a caller
// that replays history through the pipeline (package backtest), so that
// rounds follow the data's clock as drift's min_duration does: with
// fine-tuning enabled (and the gate open) it runs a round once MinNewSamples
// new pairs arrived, or once Interval of data time has passed since the
// last round, either way with a holdout's worth of new pairs (fresh), then
// refreshes drift and the metrics. The round
// runs on the caller's goroutine, without the duty cycle's pauses when
// Config.Duty is 1; ran says whether one ran.
func (l *Learner) Advance(ctx context.Context, srv Server, now time.Time) (r RoundResult, ran bool) {
	if l.cfg.Enabled && l.mayLearn() {
		if l.roundAt.IsZero() {
			l.roundAt = now
		}
		if l.fresh(int64(l.cfg.MinNewSamples)) || now.Sub(l.roundAt) >= l.cfg.Interval && l.fresh(1) {
			l.roundAt = now
			r, ran = l.Round(ctx, srv), true
		}
	}
	l.Refresh(srv)
	return r, ran
}

// fresh reports whether at least least realised pairs, and a whole
// holdout's worth, arrived since the last round began, so that a round now
// judges its candidate on pairs no earlier round was judged on. A round on
// the holdout the last one was judged on (a few new pairs beside it)
// would promote on that holdout's noise, round after round.
func (l *Learner) fresh(least int64) bool {
	held, seen := l.rp.len()
	hold := min(max(l.cfg.MinHoldout, int(l.cfg.Holdout*float64(held))), held)
	return seen-l.lastNew.Load() >= max(least, int64(hold), 1)
}

// Refresh evaluates drift against the serving model, emits due events,
// forgets idle series and updates the metrics. Run calls it every second.
func (l *Learner) Refresh(srv Server) {
	m, version := srv.Model()
	l.tr.mu.Lock()
	now := l.tr.newest
	l.tr.mu.Unlock()
	for _, e := range l.dr.evaluate(now, m, version) {
		l.met.events.WithLabelValues(e.Kind).Inc()
		l.log.Warn("period drift", "kind", e.Kind, "frequency", e.FrequencyID, "reference_period_steps", e.ReferencePeriod,
			"period_steps", e.Period, "relative_change", e.RelativeChange, "share", e.Share, "model_version", e.ModelVersion)
		if l.events != nil {
			l.events(e)
		}
	}
	l.tr.expire()
	l.updateMetrics()
}

func (l *Learner) updateMetrics() {
	cad := l.ref.Meta.Cadence.Seconds()
	for _, f := range l.dr.frequencies() {
		id := fmt.Sprint(f.ID)
		l.met.period.WithLabelValues(id).Set(f.PeriodSteps)
		l.met.periodSec.WithLabelValues(id).Set(f.PeriodSteps * cad)
		l.met.ratio.WithLabelValues(id).Set(f.DriftRatio)
		l.met.share.WithLabelValues(id).Set(f.Share)
		dom := 0.0
		if f.Dominant {
			dom = 1
		}
		l.met.dominant.WithLabelValues(id).Set(dom)
	}
	for _, f := range l.dr.frequencies() {
		r := -1.0
		if f.Rhythm != nil {
			r = float64(*f.Rhythm)
		}
		l.met.frequencyRhythm.WithLabelValues(fmt.Sprint(f.ID)).Set(r)
	}
	for _, r := range l.dr.rhythms() {
		id, name := fmt.Sprint(r.Index), l.dr.cycleName(r.Index)
		l.met.rhythmPeriod.WithLabelValues(id, name).Set(r.PeriodSteps * cad)
		l.met.rhythmRatio.WithLabelValues(id, name).Set(r.DriftRatio)
		l.met.rhythmShare.WithLabelValues(id, name).Set(r.Share)
		dom := 0.0
		if r.Dominant {
			dom = 1
		}
		l.met.rhythmDominant.WithLabelValues(id, name).Set(dom)
	}
	l.dr.mu.Lock()
	l.met.alpha.Set(l.dr.alpha)
	l.dr.mu.Unlock()

	for _, b := range l.HorizonErrors() {
		l.met.mse.WithLabelValues(b.Bucket).Set(b.MSE)
		l.met.mae.WithLabelValues(b.Bucket).Set(b.MAE)
	}
	t := l.tr
	t.mu.Lock()
	count, sq, abs := t.errs.count, t.errs.sumSq, t.errs.sumAbs
	pairs, refused, tracked := t.pairs, t.refused, len(t.series)
	cov := t.iv.coverage()
	t.mu.Unlock()

	l.mu.Lock()
	defer l.mu.Unlock()
	// The counters follow the totals: add what is new since the last update.
	ex := &l.exported
	for _, c := range []struct {
		counter prometheus.Counter
		total   float64
		done    *float64
	}{{l.met.errors, float64(count), &ex.count}, {l.met.sqErr, sq, &ex.sq}, {l.met.absErrSum, abs, &ex.abs},
		{l.met.pairs, float64(pairs), &ex.pairs}, {l.met.refused, float64(refused), &ex.refused}} {
		if d := c.total - *c.done; d > 0 {
			c.counter.Add(d)
			*c.done = c.total
		}
	}
	for k, c := range cov {
		level := strconv.FormatFloat(c.Level, 'g', -1, 64)
		l.met.nominal.WithLabelValues(level).Set(c.Level)
		if c.Scored > 0 {
			l.met.coverage.WithLabelValues(level).Set(c.Recent)
			l.met.intervalScore.WithLabelValues(level).Set(c.RecentScore)
			l.met.intervalWidth.WithLabelValues(level).Set(c.RecentWidth)
		}
		l.met.intervalCorrection.WithLabelValues(level, "lower").Set(c.Correction[0])
		l.met.intervalCorrection.WithLabelValues(level, "upper").Set(c.Correction[1])
		if d := c.ScoreSum - ex.score[k]; d > 0 {
			l.met.intervalScoreSum.WithLabelValues(level).Add(d)
			ex.score[k] = c.ScoreSum
		}
		for _, v := range []struct {
			counter *prometheus.CounterVec
			total   int64
			done    *int64
		}{{l.met.intervalsScored, c.Scored, &ex.scored[k]}, {l.met.intervalsCovered, c.Covered, &ex.covered[k]}} {
			if d := v.total - *v.done; d > 0 {
				v.counter.WithLabelValues(level).Add(float64(d))
				*v.done = v.total
			}
		}
	}
	held, _ := l.rp.len()
	l.met.replay.Set(float64(held))
	l.met.tracked.Set(float64(tracked))
}

// Outcomes returns how many rounds ended in each outcome.
func (l *Learner) Outcomes() map[Outcome]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[Outcome]int64, len(l.counts))
	for k, v := range l.counts {
		out[k] = v
	}
	return out
}

// ErrorTotals are the running totals of the online error: scored steps and
// the sums of their squared and absolute normalised errors. The MSE over a
// stretch is the difference of SumSq over the difference of Count.
type ErrorTotals struct {
	Count         int64
	SumSq, SumAbs float64
	Pairs         int64
	// Coverage is that of the published intervals, per level (nil without
	// intervals).
	Coverage []Coverage
}

// Totals returns the running totals of the online error.
func (l *Learner) Totals() ErrorTotals {
	t := l.tr
	t.mu.Lock()
	defer t.mu.Unlock()
	return ErrorTotals{Count: t.errs.count, SumSq: t.errs.sumSq, SumAbs: t.errs.sumAbs, Pairs: t.pairs, Coverage: t.iv.coverage()}
}

// MSE returns the MSE of the stretch between two totals.
func (a ErrorTotals) MSE(since ErrorTotals) float64 {
	return (a.SumSq - since.SumSq) / float64(a.Count-since.Count)
}

// Frequencies returns the drift tracker's view of every frequency.
func (l *Learner) Frequencies() []FrequencyState { return l.dr.frequencies() }

// Rhythms returns the drift tracker's view of every rhythm.
func (l *Learner) Rhythms() []RhythmState { return l.dr.rhythms() }

// WorstSeries returns the n tracked series with the highest rolling MSE.
func (l *Learner) WorstSeries(n int) []SeriesError { return l.tr.worst(n) }

// Calibration returns the tracked series whose intervals have scored at
// least minScored realised steps, those whose own coverage is furthest
// from the nominal levels first, at most n of them (every one when
// n ≤ 0); nil without intervals.
func (l *Learner) Calibration(n, minScored int) []SeriesCalibration {
	return l.tr.calibration(n, minScored)
}

// HorizonError is the rolling online error of one horizon bucket: "all",
// then the quarters of the horizon by step, 1-based ("1-6", "7-12", …).
type HorizonError struct {
	Bucket string  `json:"bucket"`
	MSE    float64 `json:"mse"` // normalised units
	MAE    float64 `json:"mae"`
}

// HorizonErrors returns the rolling online error by horizon bucket (what
// freqlens_online_mse and freqlens_online_mae export), omitting the buckets
// no realised value has reached yet.
func (l *Learner) HorizonErrors() []HorizonError {
	t := l.tr
	t.mu.Lock()
	defer t.mu.Unlock()
	names, bounds := horizonBuckets(t.H)
	var out []HorizonError
	for i, b := range bounds {
		if mse, mae, ok := t.errs.bucket(b[0], b[1]); ok {
			out = append(out, HorizonError{Bucket: names[i], MSE: mse, MAE: mae})
		}
	}
	return out
}

// Report is what the learner knows, for an operator: the serving version,
// the online error (in total and by horizon bucket), the rounds by outcome,
// every frequency's drift state and the series the model forecasts worst. Per-series errors would be too
// many Prometheus series; the service serves this as JSON on /online.
type Report struct {
	ModelVersion int64             `json:"model_version"`
	ScoredSteps  int64             `json:"scored_steps"`
	MSE          float64           `json:"mse"` // since start, normalised units
	Pairs        int64             `json:"pairs"`
	Rounds       map[Outcome]int64 `json:"rounds"`
	Frequencies  []FrequencyState  `json:"frequencies"`
	// Rhythms is every rhythm's drift state: each drifts as one.
	Rhythms []RhythmState `json:"rhythms"`
	// Horizon is the rolling error by horizon bucket (HorizonErrors).
	Horizon     []HorizonError `json:"horizon"`
	WorstSeries []SeriesError  `json:"worst_series"`
	// Intervals is the coverage of the published intervals per level.
	Intervals []Coverage `json:"intervals,omitempty"`
	// WorstCalibrated are the series whose own coverage is furthest from
	// the levels, among those with at least reportMinScored scored steps.
	WorstCalibrated []SeriesCalibration `json:"worst_calibrated,omitempty"`
}

// reportMinScored is the fewest scored steps a series' own coverage needs
// to be reported: with fewer, one miss moves it by more than a point.
const reportMinScored = 100

// Report returns the learner's state with the worst n series, by error and
// by calibration.
func (l *Learner) Report(srv Server, n int) Report {
	_, version := srv.Model()
	t := l.Totals()
	r := Report{ModelVersion: version, ScoredSteps: t.Count, Pairs: t.Pairs, Rounds: l.Outcomes(),
		Frequencies: l.Frequencies(), Rhythms: l.Rhythms(), Horizon: l.HorizonErrors(), WorstSeries: l.WorstSeries(n), Intervals: t.Coverage}
	if n > 0 {
		r.WorstCalibrated = l.Calibration(n, reportMinScored)
	}
	if t.Count > 0 {
		r.MSE = t.MSE(ErrorTotals{})
	}
	return r
}
