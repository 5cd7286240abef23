package sink

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/freqlens/freqlens/wire"
)

// WriterConfig configures the writer sink.
type WriterConfig struct {
	// Attributions is full, summary or off.
	//
	// Default: full
	Attributions wire.AttributionMode
	// Topic is the topic label of the sink's metrics.
	//
	// Default: stdout
	Topic string
}

// Writer is the writer sink: it writes every forecast as a line of forecast
// JSON (wire.AppendForecastJSON), followed, unless attributions are off, by a line
// of attribution JSON (wire.AppendAttributionJSON; recognisable by its
// "frequencies" key), for debugging and the demo. A Write is one call of the
// underlying io.Writer (and of its Flush method, if it has one): the
// forecast is "acknowledged" when that returns. It is safe for concurrent
// use; the lines of one Write are never interleaved with another's.
type Writer struct {
	w    io.Writer
	mode wire.AttributionMode
	tm   topicMetrics
	m    *metrics

	sem    chan struct{} // holds the right to write; Close takes it for good
	closed bool          // guarded by sem
	buf    []byte        // guarded by sem
}

var _ Sink = (*Writer)(nil)

// NewWriter returns a sink writing JSON lines to w. It never closes w.
func NewWriter(w io.Writer, cfg WriterConfig, opts ...Option) (*Writer, error) {
	if w == nil {
		return nil, fmt.Errorf("sink: NewWriter needs an io.Writer, such as os.Stdout")
	}
	if cfg.Attributions == "" {
		cfg.Attributions = wire.AttributionsFull
	}
	if cfg.Topic == "" {
		cfg.Topic = "stdout"
	}
	if err := checkMode(cfg.Attributions, "WriterConfig.Attributions"); err != nil {
		return nil, err
	}
	o := newOptions(opts)
	m, err := newMetrics(o.reg)
	if err != nil {
		return nil, fmt.Errorf("sink: register metrics: %w", err)
	}
	return &Writer{w: w, mode: cfg.Attributions, m: m, tm: m.topic(cfg.Topic), sem: make(chan struct{}, 1)}, nil
}

// Write writes the lines of every forecast, or none of them when a forecast
// fails ValidateFor(the writer's mode) or ctx is done before the writer is
// free.
func (w *Writer) Write(ctx context.Context, fs []wire.Forecast) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sink: write %d forecasts: %w", len(fs), err)
	}
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("sink: write %d forecasts: %w", len(fs), ctx.Err())
	}
	defer func() { <-w.sem }()
	if w.closed {
		return ErrClosed
	}
	if len(fs) == 0 {
		return nil
	}
	start := time.Now()
	defer func() { w.m.duration.Observe(time.Since(start).Seconds()) }()
	buf := w.buf[:0]
	var err error
	for i := range fs {
		if err = fs[i].ValidateFor(w.mode); err != nil {
			break
		}
		if buf, err = wire.AppendForecastJSON(buf, &fs[i]); err != nil {
			break
		}
		buf = append(buf, '\n')
		if w.mode != wire.AttributionsOff {
			if buf, err = wire.AppendAttributionJSON(buf, &fs[i], w.mode); err != nil {
				break
			}
			buf = append(buf, '\n')
		}
	}
	w.buf = buf
	if err != nil {
		w.tm.errors.Add(float64(len(fs)))
		return fmt.Errorf("sink: write %d forecasts: %w", len(fs), err)
	}
	if _, err := w.w.Write(buf); err != nil {
		w.tm.errors.Add(float64(len(fs)))
		return fmt.Errorf("sink: write %d forecasts: %w", len(fs), err)
	}
	if fl, ok := w.w.(interface{ Flush() error }); ok {
		if err := fl.Flush(); err != nil {
			w.tm.errors.Add(float64(len(fs)))
			return fmt.Errorf("sink: flush %d forecasts: %w", len(fs), err)
		}
	}
	lines := len(fs)
	if w.mode != wire.AttributionsOff {
		lines *= 2
	}
	w.tm.forecasts.Add(float64(len(fs)))
	w.tm.messages.Add(float64(lines))
	w.tm.bytes.Add(float64(len(buf)))
	return nil
}

// Close waits for the Write in flight, if any, and makes every later Write
// fail with ErrClosed. It does not close the underlying io.Writer. It returns
// ctx's error if ctx ends before the Write in flight does (that Write still
// completes). Calling Close again returns nil.
func (w *Writer) Close(ctx context.Context) error {
	select {
	case w.sem <- struct{}{}: // idle: a done ctx does not matter
	default:
		select {
		case w.sem <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("sink: close: a write is still in flight: %w", ctx.Err())
		}
	}
	w.closed = true
	<-w.sem
	return nil
}
