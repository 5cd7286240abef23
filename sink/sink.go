package sink

import (
	"context"
	"errors"

	"github.com/freqlens/freqlens/wire"
)

// Sink delivers forecasts and their attributions.
//
// Every Sink in this package is safe for concurrent use, validates all
// forecasts of a Write before delivering any, keeps no reference to them
// once Write has returned, and fails every Write after Close with ErrClosed.
type Sink interface {
	// Write delivers the forecasts (and their attributions) and returns once
	// every one is acknowledged; after an error none of them may be assumed
	// delivered. Write with a done ctx delivers nothing and returns ctx's error.
	Write(ctx context.Context, fs []wire.Forecast) error
	// Close waits for the Writes in flight and releases the sink's
	// resources; when ctx ends first it returns ctx's error (the Kafka sink
	// also cancels those Writes). Calling it again returns nil.
	Close(ctx context.Context) error
}

// SinkFunc adapts a function to a Sink whose Close does nothing.
type SinkFunc func(context.Context, []wire.Forecast) error

// Write calls fn(ctx, fs).
func (fn SinkFunc) Write(ctx context.Context, fs []wire.Forecast) error { return fn(ctx, fs) }

// Close returns nil.
func (fn SinkFunc) Close(context.Context) error { return nil }

// ErrClosed is returned by Write on a closed sink.
var ErrClosed = errors.New("sink: closed")

// ErrInvalid is wrapped by Write's errors about a forecast that can never
// be written (wire.ErrInvalid: its shapes disagree, a field name cannot be
// encoded): retrying the write cannot help.
var ErrInvalid = wire.ErrInvalid
