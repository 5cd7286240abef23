package online_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/internal/longtest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online"
)

// configWith returns online.DefaultConfig changed by edit.
func configWith(edit func(*online.Config)) online.Config {
	cfg := online.DefaultConfig()
	edit(&cfg)
	return cfg
}

func scenarioConfig(enabled bool) online.Config {
	return configWith(func(c *online.Config) {
		c.Enabled, c.Steps, c.LearningRate, c.ReplaySize, c.MinHoldout = enabled, 50, 3e-3, 4000, 128
		c.MinDuration, c.Duty, c.Seed, c.Intervals = 12*time.Hour, 1, 1, []float64{0.8, 0.95}
	})
}

// TestScenarios runs the learner over two synthetic feeds of 8 series, the
// same until the drift scenario's switch, with one base model trained on
// their first trainSteps rows: a feed whose cycle's period changes
// (driftScenario) and one whose cycles stay put (stationaryScenario).
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model and runs 3,900 online steps (5,100 with FREQLENS_LONG=1)")
	}
	const switchAt = trainSteps + 300
	drift := newScenario(t, 8, switchAt+1200, switchAt)
	// The stationary feed's switch lies past its end: the same generator,
	// so its training rows are the drift feed's.
	stationary := newScenario(t, 8, trainSteps+1200, trainSteps+1200)
	if !slices.Equal(drift.frame.Values[:trainSteps*8], stationary.frame.Values[:trainSteps*8]) {
		t.Fatal("the two feeds differ before the switch; they cannot share a base model")
	}
	base := drift.baseModel(t)
	t.Run("drift", func(t *testing.T) { t.Parallel(); driftScenario(t, drift, base) })
	t.Run("stationary", func(t *testing.T) { t.Parallel(); stationaryScenario(t, stationary, base) })
}

// driftScenario: a feed whose 24-step cycle becomes a 28-step cycle.
// Fine-tuning θ, φ and α (the default) and, in a second run, the heads too
// (with FREQLENS_LONG=1) must each cut the post-switch online error by at least 30% against the
// frozen model; the frequency that carried the 24-step cycle before the
// switch must carry it to within 3% of 28 steps, and the period event must
// name it: reference within 2% of 24 steps, new period within 3% of 28.
// No other frequency's period is reported, and no frequency joins or
// leaves the dominant set more than once.
//
// TestScenarios runs it beside the stationary scenario; both feeds are the
// same until the switch, so one base model serves both.
func driftScenario(t *testing.T, sc *scenario, base *model.Model) {
	switchAt := sc.switchAt
	// The frequency that carries the 24-step cycle: the one training
	// placed on the spectrum's peak nearest 24 steps.
	carrier := -1
	for _, pk := range base.Meta.Peaks {
		if carrier < 0 || math.Abs(pk.PeriodSteps-24) < math.Abs(base.Frequencies()[carrier].PeriodSteps-24) {
			carrier = pk.ID
		}
	}
	if carrier < 0 {
		t.Fatal("training placed no frequency on the feed's cycles")
	}
	if p := base.Frequencies()[carrier].PeriodSteps; math.Abs(p/24-1) > 0.02 {
		t.Fatalf("the frequency nearest the 24-step cycle was trained at %.2f steps, more than 2%% off", p)
	}
	frozenSrv := &server{m: base.Clone()}
	frozen, err := online.New(scenarioConfig(false), base)
	if err != nil {
		t.Fatal(err)
	}
	f0, f1 := sc.run(t, frozen, frozenSrv, 24, false)
	mseFrozen := f1.MSE(f0)
	// The frozen model's errors grow at the switch: its intervals must
	// follow them.
	checkCoverage(t, "drift, frozen model, after the switch", f0, f1)
	for _, trainHeads := range longtest.Cases([]bool{false}, []bool{true}) {
		t.Run(fmt.Sprintf("train_heads=%v", trainHeads), func(t *testing.T) {
			var events []online.DriftEvent
			cfg := scenarioConfig(true)
			cfg.TrainHeads = trainHeads
			tunedSrv := &server{m: base.Clone()}
			tuned, err := online.New(cfg, base, online.WithDriftEvents(func(e online.DriftEvent) { events = append(events, e) }))
			if err != nil {
				t.Fatal(err)
			}
			s0, s1 := sc.run(t, tuned, tunedSrv, 24, true)
			mseTuned := s1.MSE(s0)
			checkCoverage(t, "drift, fine-tuned model, after the switch", s0, s1)
			t.Logf("post-switch online MSE: fine-tuned %.4f, frozen %.4f (%.0f%% lower); rounds %v; version %d",
				mseTuned, mseFrozen, 100*(1-mseTuned/mseFrozen), tuned.Outcomes(), tunedSrv.version)
			for _, e := range events {
				t.Logf("event %+v", e)
			}
			for _, f := range tuned.Frequencies() {
				t.Logf("frequency %2d: %6.2f → %6.2f steps, share %.3f dominant %v cycle %v", f.ID, f.ReferencePeriod, f.PeriodSteps, f.Share, f.Dominant, f.Cycle)
			}
			if !(mseTuned <= 0.7*mseFrozen) {
				t.Errorf("post-switch online MSE %.4f with fine-tuning vs %.4f without; want at least 30%% lower", mseTuned, mseFrozen)
			}
			// The promoted version carries the quantiles of its errors on the
			// newest realised pairs (its round's holdout, all after the
			// switch), where a restart's intervals start.
			served, _ := tunedSrv.Model()
			q, q0 := served.Meta.ErrorQuantiles, base.Meta.ErrorQuantiles
			if q == nil || q == q0 || q.Windows < 200 {
				t.Fatalf("the promoted version's error quantiles %+v are not its own, measured on at least 200 holdout pairs", q)
			}
			t.Logf("80%% error range at step %d: promoted %.3f (on %d holdout pairs), base model %.3f (before the switch)", scH,
				q.Quantile(0.9, scH-1, 0)-q.Quantile(0.1, scH-1, 0), q.Windows, q0.Quantile(0.9, scH-1, 0)-q0.Quantile(0.1, scH-1, 0))
			now := tuned.Frequencies()[carrier]
			if math.Abs(now.PeriodSteps/28-1) > 0.03 {
				t.Errorf("the frequency that carried the 24-step cycle (%d) is at %.2f steps, more than 3%% off 28", carrier, now.PeriodSteps)
			}
			switchTime := sc.frame.Times[switchAt]
			raised := false
			entries := map[int]int{}
			for _, e := range events {
				switch {
				case e.Kind == "period" && e.FrequencyID == carrier:
					if !e.TS.Before(switchTime) && math.Abs(e.ReferencePeriod/24-1) <= 0.02 && math.Abs(e.Period/28-1) <= 0.03 {
						raised = true
					}
				case e.Kind == "period" && math.Abs(e.ReferencePeriod/12-1) <= 0.02 && math.Abs(e.Period/14-1) <= 0.03:
					// the 12-step harmonic moving to 14 steps: true too
				case e.Kind == "period":
					t.Errorf("a period event for frequency %d (%.2f → %.2f steps), which carries no cycle that moved", e.FrequencyID, e.ReferencePeriod, e.Period)
				default:
					// A free frequency may stand in for the rhythm while
					// its period is re-tracked: it enters once and leaves
					// once. More is flapping.
					if entries[e.FrequencyID]++; entries[e.FrequencyID] > 2 {
						t.Errorf("frequency %d joined or left the dominant set more than twice (flapping): %+v", e.FrequencyID, e)
					}
				}
			}
			if !raised {
				t.Errorf("no period event named frequency %d with reference within 2%% of 24 steps and period within 3%% of 28 after the switch", carrier)
			}
		})
	}
}

// stationaryScenario: on a feed whose cycles stay put, fine-tuning must
// raise no period event and leave the online error within 2% of the
// frozen model's, and both keep their intervals' coverage.
func stationaryScenario(t *testing.T, sc *scenario, base *model.Model) {
	var events []online.DriftEvent
	tunedSrv, frozenSrv := &server{m: base.Clone()}, &server{m: base.Clone()}
	tuned, err := online.New(scenarioConfig(true), base, online.WithDriftEvents(func(e online.DriftEvent) { events = append(events, e) }))
	if err != nil {
		t.Fatal(err)
	}
	frozen, _ := online.New(scenarioConfig(false), base)
	s0, s1 := sc.run(t, tuned, tunedSrv, 24, true)
	f0, f1 := sc.run(t, frozen, frozenSrv, 24, false)
	mseTuned, mseFrozen := s1.MSE(s0), f1.MSE(f0)
	checkCoverage(t, "stationary, fine-tuned model", s0, s1)
	checkCoverage(t, "stationary, frozen model", f0, f1)
	t.Logf("stationary online MSE: fine-tuned %.4f, frozen %.4f; rounds %v", mseTuned, mseFrozen, tuned.Outcomes())
	for _, e := range events {
		if e.Kind == "period" {
			t.Errorf("drift event on a stationary feed: %+v", e)
		}
	}
	if mseTuned > 1.02*mseFrozen {
		t.Errorf("fine-tuning made the online MSE worse: %.4f vs %.4f frozen (more than 2%%)", mseTuned, mseFrozen)
	}
}

func TestCorruptCandidateIsRejected(t *testing.T) {
	sc := newScenario(t, 4, trainSteps+300, -1)
	m, err := model.New(model.Config{Lookback: scL, Horizon: scH, Channels: 1, Mode: model.Independent, Frequencies: 8, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	srv := &server{m: m, version: 3}
	l, err := online.New(configWith(func(c *online.Config) { c.Enabled, c.Steps, c.MinHoldout = true, 3, 32 }), m, online.WithCandidateHook(func(c *model.Model) {
		c.Params().Theta[0] = math.NaN()
		c.Refresh()
	}))
	if err != nil {
		t.Fatal(err)
	}
	sc.run(t, l, srv, 1000, false)
	if got := l.Round(context.Background(), srv); got.Outcome != online.OutcomeAbortedNonFinite || got.Err == nil || got.NewVersion != 0 {
		t.Errorf("a NaN candidate ended its round %+v, want outcome %q with an error and no new version", got, online.OutcomeAbortedNonFinite)
	}
	if cur, v := srv.Model(); cur != m || v != 3 || !cur.Finite() {
		t.Errorf("after a rejected candidate the server holds version %d (same model: %v); want the old version 3", v, cur == m)
	}
}

// TestRegistrationErrorsAreReturned: a second learner on the same registry
// cannot register its metrics, and New says so instead of serving with
// metrics nobody sees.
func TestRegistrationErrorsAreReturned(t *testing.T) {
	m, err := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	reg := prometheus.NewRegistry()
	if _, err := online.New(online.DefaultConfig(), m, online.WithRegisterer(reg)); err != nil {
		t.Fatal(err)
	}
	if _, err := online.New(online.DefaultConfig(), m, online.WithRegisterer(reg)); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("a second learner on the same registry: err = %v; want the registration error", err)
	}
}
