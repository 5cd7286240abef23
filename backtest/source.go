package backtest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/stream"
)

// source is the pipeline's Source in a backtest: it sends the history's
// readings one step of data time at a time (at most maxRows a batch), as
// live batches, and after each is committed (every forecast it caused
// written) calls after with the step's time, before it sends the next. So
// the learner's rounds, which after runs, fall between the batches at the
// data times they would have in serve, and a promotion serves from the
// next batch on, as the pipeline's swap does. Readings before warmUntil only
// fill the windows (rebuild batches: no forecast).
type source struct {
	h         *History
	g         *grid
	maxRows   int
	warmUntil int64 // step; math.MinInt64 for none
	after     func(ctx context.Context, now time.Time) error
	// now is the data time of the batch in flight, in Unix milliseconds:
	// the pipeline's and the windows' clock.
	now atomic.Int64
	// done is closed once every batch was committed (err says why not).
	done chan struct{}
	err  error

	mu      sync.Mutex
	refused map[string]int // readings the pipeline dead-lettered, by reason
}

// clock is the pipeline's clock: the data time of the batch in flight.
func (s *source) clock() time.Time { return time.UnixMilli(s.now.Load()).UTC() }

// Run sends the batches; once the last is committed it closes done and
// waits for ctx, as a consumer waits for new messages.
func (s *source) Run(ctx context.Context, out chan<- *stream.Batch) error {
	err := s.run(ctx, out)
	if err != nil && ctx.Err() == nil {
		s.err = err
	}
	close(s.done)
	<-ctx.Done()
	return nil
}

func (s *source) run(ctx context.Context, out chan<- *stream.Batch) error {
	h := s.h
	h.sort()
	rb := array.NewRecordBuilder(memory.DefaultAllocator, readings.Schema(h.Fields...))
	defer rb.Release()
	series := rb.Field(readings.SeriesColumn).(*array.StringBuilder)
	ts := rb.Field(readings.TimeColumn).(*array.TimestampBuilder)
	ingest := rb.Field(readings.IngestColumn).(*array.TimestampBuilder)
	F := len(h.Fields)
	vals := make([]*array.Float64Builder, F)
	for f := range vals {
		vals[f] = rb.Field(readings.FirstValueColumn + f).(*array.Float64Builder)
	}
	committed := make(chan struct{}, 1)
	hooks := stream.LocalHooks{
		Commit: func(context.Context) error { committed <- struct{}{}; return nil },
		Refuse: s.refuse,
	}
	rows := h.rows
	for i := 0; i < len(rows); {
		step := s.g.step(rows[i].ms)
		newest := rows[i].ms
		j := i
		for ; j < len(rows) && j-i < s.maxRows && s.g.step(rows[j].ms) == step; j++ {
			r := rows[j]
			series.Append(h.Series[r.series])
			ts.Append(arrow.Timestamp(r.ms))
			ingest.Append(arrow.Timestamp(r.ms))
			for f, v := range h.valuesOf(r) {
				vals[f].Append(v)
			}
			newest = max(newest, r.ms)
		}
		b := stream.Local(rb.NewRecord(), 0, hooks)
		b.Rebuild = step < s.warmUntil
		s.now.Store(newest)
		select {
		case out <- b:
		case <-ctx.Done():
			b.Release()
			return ctx.Err()
		}
		select {
		case <-committed:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := s.after(ctx, time.UnixMilli(step*s.g.cadMs).UTC()); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// refuse counts readings the pipeline dead-lettered.
func (s *source) refuse(rows []int, reason string, _ error) {
	s.mu.Lock()
	s.refused[reason] += len(rows)
	s.mu.Unlock()
}

// Close does nothing: the history is in memory.
func (s *source) Close(context.Context) error { return nil }
