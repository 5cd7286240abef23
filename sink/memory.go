package sink

import (
	"context"
	"fmt"
	"sync"

	"github.com/freqlens/freqlens/wire"
)

// Memory is the memory sink: it keeps a copy of every forecast written, for
// tests. It is safe for concurrent use.
type Memory struct {
	mode   wire.AttributionMode
	mu     sync.Mutex
	fs     []wire.Forecast
	fail   error
	closed bool
}

var _ Sink = (*Memory)(nil)

// NewMemory returns an empty memory sink of full attributions: a forecast
// written must carry its attribution's per-step values.
func NewMemory() *Memory { return &Memory{mode: wire.AttributionsFull} }

// NewMemoryOf returns an empty memory sink that checks forecasts as a sink
// writing attributions in mode does (wire.Forecast.ValidateFor): a summary
// sink takes the forecasts of a pipeline wired SharesOnly.
func NewMemoryOf(mode wire.AttributionMode) *Memory { return &Memory{mode: mode} }

// Write stores a deep copy of every forecast, or none of them when a forecast
// fails ValidateFor(the sink's mode), ctx is done, or FailWith set an error.
func (m *Memory) Write(ctx context.Context, fs []wire.Forecast) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sink: write %d forecasts: %w", len(fs), err)
	}
	for i := range fs {
		if err := fs[i].ValidateFor(m.mode); err != nil {
			return fmt.Errorf("sink: write %d forecasts: forecast %d: %w", len(fs), i, err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.fail != nil {
		return m.fail
	}
	for i := range fs {
		m.fs = append(m.fs, wire.Clone(fs[i]))
	}
	return nil
}

// Forecasts returns deep copies of the forecasts written so far, in the
// order they were written.
func (m *Memory) Forecasts() []wire.Forecast {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]wire.Forecast, len(m.fs))
	for i := range m.fs {
		out[i] = wire.Clone(m.fs[i])
	}
	return out
}

// Len returns the number of forecasts written so far.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.fs)
}

// FailWith makes every later Write fail with err and store nothing, until
// it is called again with nil.
func (m *Memory) FailWith(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = err
}

// Close makes every later Write fail with ErrClosed; the forecasts stay
// readable. Calling Close again returns nil.
func (m *Memory) Close(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
