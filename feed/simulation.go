package feed

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/readings"
)

// SimulationCadence is the simulated sensors' step: an hour, so a day is
// 24 steps and a week 168, and the cycles a model learns from them have
// names people know. A service fed by a Simulation forecasts at this
// cadence.
const SimulationCadence = time.Hour

// SimulationConfig holds the settings of a Simulation. NewSimulation takes
// it as given: no field is filled in, so start from DefaultSimulationConfig
// and change what you mean to. The defaults below are
// DefaultSimulationConfig's.
type SimulationConfig struct {
	// Sensors is the number of simulated traffic sensors, the series
	// s-0, s-1, …; at least 1.
	//
	// Default: 20
	Sensors int
	// Rate is how many simulated steps (hours) pass per second once the
	// history is sent: each sensor sends one reading per step. Positive, at
	// most 1e9.
	//
	// Default: 10
	Rate float64
	// Steps is the length of the simulation in steps, at least 1; it ends
	// at the present.
	//
	// Default: 8760 (a year)
	Steps int
	// HistorySteps is how many of the first steps are sent at once when Run
	// starts, before the pacing, so that a service's windows fill without
	// waiting (the demo sends its model's lookback and 8 more). Zero sends
	// none ahead; it is at most Steps.
	//
	// Default: 0
	HistorySteps int
	// Seed seeds the generator: the same seed gives the same readings. Every
	// value, zero included, is a seed.
	//
	// Default: 0
	Seed uint64
}

// DefaultSimulationConfig returns the defaults of a SimulationConfig: the
// config to start from.
func DefaultSimulationConfig() SimulationConfig {
	return SimulationConfig{Sensors: 20, Rate: 10, Steps: 365 * 24}
}

// Validate reports the first setting that cannot run, saying what to write
// instead. Every field is checked as it is: a zero is a value, not the
// default.
func (cfg SimulationConfig) Validate() error {
	d := DefaultSimulationConfig()
	switch {
	case cfg.Sensors < 1:
		return fmt.Errorf("feed: simulation Sensors = %d; simulate at least 1 sensor (default %d)", cfg.Sensors, d.Sensors)
	case !(cfg.Rate > 0 && cfg.Rate <= 1e9): // 1e9: one step a nanosecond, the ticker's finest
		return fmt.Errorf("feed: simulation Rate = %v; use a positive number of simulated hours per second up to 1e9 (default %v)", cfg.Rate, d.Rate)
	case cfg.Steps < 1:
		return fmt.Errorf("feed: simulation Steps = %d; use a positive length in hours (default %d, a year)", cfg.Steps, d.Steps)
	case cfg.HistorySteps < 0 || cfg.HistorySteps > cfg.Steps:
		return fmt.Errorf("feed: simulation HistorySteps = %d is outside [0, Steps = %d]; send at most the whole simulation ahead",
			cfg.HistorySteps, cfg.Steps)
	}
	return nil
}

// Simulation produces the readings of simulated road-traffic sensors to a
// topic: dataset.Traffic's series (a daily cycle lowest around 04:00, a
// weekly cycle lower at weekends, weekday rush hours at 08:00 and 17:30,
// noise, 20% variation between sensors), one JSON reading with the value
// field "value" (rounded to 0.1) per sensor and step, keyed by sensor. The
// generator's missing readings (1%) are not sent. Simulated time is moved
// by whole weeks to end at the present, keeping the generator's weekday and
// time of day, so the readings are never in the future.
//
// Run may be called again after it returns; it writes the same readings
// again.
type Simulation struct {
	cfg   SimulationConfig
	kc    *kafkaconn.Client
	topic string
	frame *dataset.Frame
}

// NewSimulation generates the simulation of cfg, taken as given (start from
// DefaultSimulationConfig), its last step in the week up to now(), which
// Run writes to topic through kc.
func NewSimulation(cfg SimulationConfig, kc *kafkaconn.Client, topic string, now func() time.Time) (*Simulation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if topic == "" {
		return nil, fmt.Errorf("feed: the simulation's topic is empty; name the input topic to write the readings to")
	}
	frame, err := dataset.Synthetic(dataset.Traffic(cfg.Sensors, cfg.Steps, SimulationCadence, cfg.Seed))
	if err != nil {
		return nil, fmt.Errorf("feed: simulation of %d sensors over %d steps: %w", cfg.Sensors, cfg.Steps, err)
	}
	// Move the simulation to end now, keeping the generator's weekday and
	// time of day (its rush hours are at 08:00 and 17:30): shift by whole
	// weeks, rounding down, so that the last step is in the week up to now
	// and not after it, also when now is before the generator's dates
	// (Truncate alone rounds towards zero, which moves a negative shift
	// forward, into the future).
	week := 7 * 24 * time.Hour
	behind := now().Sub(frame.Times[cfg.Steps-1])
	shift := behind.Truncate(week)
	if shift > behind {
		shift -= week
	}
	for i := range frame.Times {
		frame.Times[i] = frame.Times[i].Add(shift)
	}
	return &Simulation{cfg: cfg, kc: kc, topic: topic, frame: frame}, nil
}

// Series returns the names of the simulated sensors' series, s-0 first.
func (s *Simulation) Series() []string { return append([]string(nil), s.frame.Columns...) }

// Run writes the first HistorySteps steps at once, then one step every
// 1/Rate seconds, each sensor's reading of a step in one batch acknowledged
// by all in-sync replicas. It returns nil when the last step is written or
// when ctx ends (the step being written may then be written in part), and
// an error when the broker refuses a write.
func (s *Simulation) Run(ctx context.Context) error {
	w := s.kc.NewWriter(s.topic)
	w.BatchTimeout = time.Millisecond
	defer w.Close()
	cfg := readings.DefaultConfig() // JSON, fields series, ts and value
	msgs := make([]kafka.Message, 0, s.cfg.Sensors)
	send := func(step int) error {
		msgs = msgs[:0]
		row := s.frame.Row(step)
		for c, name := range s.frame.Columns {
			if math.IsNaN(row[c]) {
				continue
			}
			r := readings.Reading{Series: name, Time: s.frame.Times[step], Values: []float64{math.Round(row[c]*10) / 10}}
			msgs = append(msgs, message(r, readings.FormatJSON, cfg))
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil && ctx.Err() == nil {
			return writeError(s.topic, fmt.Sprintf("step %d of the simulation", step), err)
		}
		return nil
	}
	for step := range s.cfg.HistorySteps {
		if err := send(step); err != nil || ctx.Err() != nil {
			return err
		}
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / s.cfg.Rate))
	defer tick.Stop()
	for step := s.cfg.HistorySteps; step < s.cfg.Steps; step++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := send(step); err != nil {
			return err
		}
	}
	return nil
}
