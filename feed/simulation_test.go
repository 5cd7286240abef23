package feed_test

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/feed"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/readings/readingstest"
)

// simNow is the clock the simulations of these tests end at.
var simNow = time.Date(2026, time.November, 25, 15, 46, 30, 0, time.UTC)

func simClock() time.Time { return simNow }

// simulate runs a simulation of cfg ending at simNow to completion on topic
// and returns what the topic holds, by series.
func simulate(t *testing.T, kc *kafkaconn.Client, topic string, cfg feed.SimulationConfig) map[string][]readingstest.Row {
	t.Helper()
	s, err := feed.NewSimulation(cfg, kc, topic, simClock)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return decode(t, kafkatest.ReadAll(t, kc, topic), readings.DefaultConfig(), simClock)
}

// TestSimulationSeriesAndSteps: a simulation sends the series Series names
// and one reading per series and hourly step (but the generator's 1%
// missing ones), in order, the last step at most a week before its clock and
// not after it, the first on a Monday at 00:00 UTC as the generator's, and
// values rounded to 0.1.
func TestSimulationSeriesAndSteps(t *testing.T) {
	kc := newBroker(t, "readings")
	cfg := simulationConfig(func(c *feed.SimulationConfig) { c.Sensors, c.Steps, c.HistorySteps, c.Seed = 3, 300, 300, 11 })
	s, err := feed.NewSimulation(cfg, kc, "readings", simClock)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Series(), ","); got != "s-0,s-1,s-2" {
		t.Errorf("Series() = %s, want s-0,s-1,s-2", got)
	}
	got := simulate(t, kc, "readings", cfg)
	if len(got) != 3 {
		t.Fatalf("topic holds %d series, want 3", len(got))
	}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for _, rows := range got {
		first, last = min(first, rows[0].TS), max(last, rows[len(rows)-1].TS)
	}
	firstT, lastT := time.UnixMilli(first).UTC(), time.UnixMilli(last).UTC()
	if lastT.After(simNow) || simNow.Sub(lastT) >= 7*24*time.Hour {
		t.Errorf("last step at %v, want within the week up to the clock, %v", lastT, simNow)
	}
	if firstT.Weekday() != time.Monday || firstT.Hour() != 0 || firstT.Minute() != 0 || firstT.Second() != 0 {
		t.Errorf("first step at %v, want a Monday at 00:00 UTC", firstT)
	}
	if steps := lastT.Sub(firstT) / feed.SimulationCadence; steps != 299 {
		t.Errorf("first and last step are %d steps apart, want 299", steps)
	}
	for _, name := range s.Series() {
		rows := got[name]
		if len(rows) < 285 || len(rows) > 300 {
			t.Errorf("series %s has %d readings, want 300 less about 1%% missing", name, len(rows))
		}
		for i, r := range rows {
			if d := time.Duration(r.TS-first) * time.Millisecond; d%feed.SimulationCadence != 0 {
				t.Fatalf("series %s reading %d at %v is off the hourly steps", name, i, time.UnixMilli(r.TS).UTC())
			}
			if i > 0 && r.TS <= rows[i-1].TS {
				t.Fatalf("series %s reading %d at %v is not after the one before", name, i, time.UnixMilli(r.TS).UTC())
			}
			if v := r.Values[0]; !(v > 0) || math.Abs(v*10-math.Round(v*10)) > 1e-6 {
				t.Fatalf("series %s reading %d = %v, want a positive count rounded to 0.1", name, i, v)
			}
		}
	}
}

// TestSimulationEndsAtTheClock: whatever the clock, the last step is at
// most a week before it and never after it, also when the clock is earlier
// than the generator's own dates (2026-01-05 on), which moves the
// simulation back.
func TestSimulationEndsAtTheClock(t *testing.T) {
	clocks := []time.Time{
		time.Date(2025, time.June, 1, 12, 34, 0, 0, time.UTC),     // before the generator's dates
		time.Date(2026, time.January, 7, 23, 59, 59, 0, time.UTC), // inside them
		time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC),    // the generator's first step
		simNow,
		time.Date(2031, time.March, 2, 6, 0, 0, 0, time.UTC), // a Sunday, exactly on a step
	}
	var topics []string
	for i := range clocks {
		topics = append(topics, "readings-"+strconv.Itoa(i))
	}
	kc := newBroker(t, topics...)
	for i, now := range clocks {
		t.Run(now.Format(time.DateTime), func(t *testing.T) {
			topic := topics[i]
			s, err := feed.NewSimulation(simulationConfig(func(c *feed.SimulationConfig) { c.Sensors, c.Steps, c.HistorySteps = 2, 48, 48 }), kc, topic, func() time.Time { return now })
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			last := int64(math.MinInt64)
			for _, m := range kafkatest.ReadAll(t, kc, topic) {
				var r struct{ TS time.Time }
				if err := json.Unmarshal(m.Value, &r); err != nil {
					t.Fatal(err)
				}
				last = max(last, r.TS.UnixMilli())
			}
			if lastT := time.UnixMilli(last).UTC(); lastT.After(now) || now.Sub(lastT) >= 7*24*time.Hour {
				t.Errorf("clock %v: last step at %v, want within the week up to the clock", now, lastT)
			}
		})
	}
}

// TestSimulationIsDeterministic: the same seed and clock give the same
// readings, bit for bit; another seed gives other values.
func TestSimulationIsDeterministic(t *testing.T) {
	kc := newBroker(t, "a", "b", "c")
	cfg := simulationConfig(func(c *feed.SimulationConfig) { c.Sensors, c.Steps, c.HistorySteps, c.Seed = 4, 60, 60, 3 })
	a, b := simulate(t, kc, "a", cfg), simulate(t, kc, "b", cfg)
	cfg.Seed = 4
	c := simulate(t, kc, "c", cfg)
	same, total := 0, 0
	for name, rows := range a {
		if !readingstest.SameRows(rows, b[name]) {
			t.Errorf("series %s differs between two runs of seed 3:\n%v\n%v", name, rows, b[name])
		}
		other := map[int64]float64{}
		for _, r := range c[name] {
			other[r.TS] = r.Values[0]
		}
		for _, r := range rows {
			if v, ok := other[r.TS]; ok {
				total++
				if v == r.Values[0] {
					same++
				}
			}
		}
	}
	if count(a) < 230 || total < 200 || same > total/10 {
		t.Errorf("seeds 3 and 4: %d readings, %d compared, %d of them equal; want over 230 readings and seeds that differ", count(a), total, same)
	}
}

// TestSimulationTrafficRhythms: the simulated traffic has the daily and
// weekly rhythms of road traffic: weekdays busier than weekends, and the
// weekday morning rush hour (08:00) far above the night (03:00).
func TestSimulationTrafficRhythms(t *testing.T) {
	kc := newBroker(t, "readings")
	got := simulate(t, kc, "readings", simulationConfig(func(c *feed.SimulationConfig) { c.Sensors, c.Steps, c.HistorySteps, c.Seed = 4, 14*24, 14*24, 5 }))
	var weekday, weekend, rush, night mean
	for _, rows := range got {
		for _, r := range rows {
			ts, v := time.UnixMilli(r.TS).UTC(), r.Values[0]
			if wd := ts.Weekday(); wd == time.Saturday || wd == time.Sunday {
				weekend.add(v)
				continue
			}
			weekday.add(v)
			switch ts.Hour() {
			case 8:
				rush.add(v)
			case 3:
				night.add(v)
			}
		}
	}
	if d := weekday.get() - weekend.get(); d < 20 {
		t.Errorf("weekday mean %.1f − weekend mean %.1f = %.1f, want at least 20 (weekday rush hours, weekly cycle)", weekday.get(), weekend.get(), d)
	}
	if d := rush.get() - night.get(); d < 100 {
		t.Errorf("weekday 08:00 mean %.1f − 03:00 mean %.1f = %.1f, want at least 100", rush.get(), night.get(), d)
	}
}

type mean struct{ sum, n float64 }

func (m *mean) add(v float64) { m.sum, m.n = m.sum+v, m.n+1 }
func (m *mean) get() float64  { return m.sum / m.n }

// TestSimulationPaces: after the history, one step every 1/Rate seconds: 10
// steps at 20 per second take at least half a second (only that lower
// bound, which a loaded machine cannot break), and every step arrives.
func TestSimulationPaces(t *testing.T) {
	kc := newBroker(t, "readings")
	cfg := simulationConfig(func(c *feed.SimulationConfig) { c.Sensors, c.Steps, c.HistorySteps, c.Rate, c.Seed = 2, 15, 5, 20, 1 })
	start := time.Now()
	got := simulate(t, kc, "readings", cfg)
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("10 steps at 20 per second took %v, want at least 500ms", took)
	}
	steps := map[int64]bool{}
	for _, rows := range got {
		for _, r := range rows {
			steps[r.TS] = true
		}
	}
	if len(steps) != 15 {
		t.Errorf("the topic holds %d steps, want 15", len(steps))
	}
}

// TestSimulationStopsOnCancel: Run returns nil promptly when its context is
// cancelled between steps, and writes no step after that.
func TestSimulationStopsOnCancel(t *testing.T) {
	kc := newBroker(t, "readings")
	s, err := feed.NewSimulation(simulationConfig(func(c *feed.SimulationConfig) { c.Sensors, c.Steps, c.HistorySteps, c.Rate = 2, 100, 3, 0.2 }), kc, "readings", simClock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	kafkatest.ReadN(t, kc, "readings", 1, 30*time.Second)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run still runs 5 s after its context was cancelled")
	}
	if n := len(kafkatest.ReadAll(t, kc, "readings")); n > 2*3 {
		t.Errorf("the topic holds %d readings, want at most the history's 6", n)
	}
}

// TestNewSimulationRejects: settings that cannot work are refused with a
// message naming the setting and what to do.
func TestNewSimulationRejects(t *testing.T) {
	kc := newBroker(t)
	for _, tc := range []struct {
		name  string
		cfg   feed.SimulationConfig
		topic string
		want  string
	}{
		{name: "no topic", cfg: feed.DefaultSimulationConfig(), want: "topic is empty"},
		{name: "negative sensors", cfg: simulationConfig(func(c *feed.SimulationConfig) { c.Sensors = -1 }), topic: "r", want: "Sensors = -1; simulate at least 1 sensor"},
		{name: "negative rate", cfg: simulationConfig(func(c *feed.SimulationConfig) { c.Rate = -1 }), topic: "r", want: "Rate = -1"},
		{name: "NaN rate", cfg: simulationConfig(func(c *feed.SimulationConfig) { c.Rate = math.NaN() }), topic: "r", want: "Rate = NaN"},
		{name: "rate beyond the ticker", cfg: simulationConfig(func(c *feed.SimulationConfig) { c.Rate = 2e9 }), topic: "r", want: "Rate = 2e+09; use a positive number of simulated hours per second up to 1e9"},
		{name: "negative steps", cfg: simulationConfig(func(c *feed.SimulationConfig) { c.Steps = -5 }), topic: "r", want: "Steps = -5; use a positive length in hours"},
		// A zero is a value, not the default: each zero that cannot run is
		// refused, saying the default.
		{name: "zero sensors", cfg: simulationConfig(func(c *feed.SimulationConfig) { c.Sensors = 0 }), topic: "r", want: "Sensors = 0; simulate at least 1 sensor (default 20)"},
		{name: "zero rate", cfg: simulationConfig(func(c *feed.SimulationConfig) { c.Rate = 0 }), topic: "r", want: "Rate = 0; use a positive number of simulated hours per second up to 1e9 (default 10)"},
		{name: "zero steps", cfg: simulationConfig(func(c *feed.SimulationConfig) { c.Steps = 0 }), topic: "r", want: "Steps = 0; use a positive length in hours (default 8760, a year)"},
		{name: "a zero config", topic: "r", want: "Sensors = 0"},
		{name: "history beyond the end", cfg: simulationConfig(func(c *feed.SimulationConfig) { c.Steps, c.HistorySteps = 10, 11 }), topic: "r", want: "HistorySteps = 11 is outside [0, Steps = 10]"},
		{name: "too many values", cfg: simulationConfig(func(c *feed.SimulationConfig) { c.Sensors, c.Steps = 1<<20, 1<<20 }), topic: "r", want: "generate fewer steps or series"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := feed.NewSimulation(tc.cfg, kc, tc.topic, simClock)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewSimulation = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// The zeros that mean something: no history ahead, seed 0.
	if err := simulationConfig(func(c *feed.SimulationConfig) { c.HistorySteps, c.Seed = 0, 0 }).Validate(); err != nil {
		t.Errorf("Validate() with HistorySteps and Seed 0 = %v, want nil", err)
	}
	if d := feed.DefaultSimulationConfig(); d.Sensors != 20 || d.Rate != 10 || d.Steps != 8760 || d.HistorySteps != 0 || d.Seed != 0 {
		t.Errorf("DefaultSimulationConfig() = %+v", d)
	}
}
