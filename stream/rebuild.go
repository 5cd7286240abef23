package stream

import (
	"context"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/readings"
)

// probeMessages is how many messages one probe of the rebuild's search
// decodes.
const probeMessages = 32

// rebuild sends the rebuild batches of a new generation: for every
// partition to rebuild, the messages from where its event time is
// RebuildSpan before the newest time near its committed offset, up to that
// offset. The first batch carries gen.forget and the last one is marked,
// so that its commit says the rebuild is applied; both may be the same
// batch, with no rows.
func (c *Consumer) rebuild(ctx context.Context, gen *generation, out chan<- *Batch) error {
	b := c.newBatcher()
	b.rebuild = true
	defer b.release()
	first := true
	flush := func(last bool) error {
		batch, err := b.take(ctx, gen)
		if err != nil {
			return err
		}
		if first {
			batch.Forget, first = gen.forget, false
		}
		batch.last = last
		return send(ctx, out, batch)
	}
	c.mu.Lock()
	parts := c.parts
	c.mu.Unlock()
	for _, p := range gen.rebuild {
		st := parts[p]
		from, err := c.rebuildFrom(ctx, p, st.committed)
		if err != nil {
			return err
		}
		if from >= st.committed {
			continue
		}
		c.log.Debug("rebuilding windows", "partition", p, "from", from, "to", st.committed)
		err = c.kc.ReadPartition(ctx, c.cfg.Topic, p, from, st.committed, c.cfg.MaxBytes, func(m kafka.Message) error {
			n := int64(len(m.Key) + len(m.Value))
			if !c.flow.tryAcquire(n) {
				if b.messages > 0 {
					if err := flush(false); err != nil {
						return err
					}
				}
				if err := c.flow.acquire(ctx, n); err != nil {
					return err
				}
			}
			rows := b.rows
			b.add(m, st)
			gen.readings += int64(b.rows - rows)
			if b.full() {
				return flush(false)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("stream: rebuild the windows of %s/%d from offset %d: %w", c.cfg.Topic, p, from, err)
		}
	}
	c.m.rebuildReadings.Add(float64(gen.readings))
	if err := flush(true); err != nil {
		return err
	}
	c.mu.Lock()
	for _, p := range gen.rebuild {
		parts[p].whole = true
	}
	c.mu.Unlock()
	return nil
}

// rebuildFrom returns the offset of partition p to read back from so that
// the messages in [from, committed) cover RebuildSpan of event time before
// the newest time near committed. It searches by offset (binary search,
// about log2(messages/32) probes), decoding samples of 32 messages: the
// span begins after the last sample that is entirely older than the
// cutoff, assuming event times grow with offsets up to lateness; readings
// of a series that lags the rest of its partition by more than the span
// are rebuilt partly.
func (c *Consumer) rebuildFrom(ctx context.Context, p int, committed int64) (int64, error) {
	span := c.cfg.RebuildSpan.Milliseconds()
	if span <= 0 || committed <= 0 {
		return committed, nil
	}
	rs, err := c.ranges(ctx)
	if err != nil {
		return 0, err
	}
	first := rs[p].First
	if first >= committed {
		return committed, nil
	}
	const k = probeMessages
	newest, err := c.probe(ctx, p, max(first, committed-k), committed)
	if err != nil || newest == readings.NoTime {
		return committed, err // nothing readable near the commit: nothing to rebuild
	}
	cutoff := newest - span
	if t, err := c.probe(ctx, p, first, min(first+k, committed)); err != nil || t >= cutoff {
		return first, err
	}
	lo, hi := first, max(first, committed-k)
	for hi-lo > k {
		mid := lo + (hi-lo)/2
		t, err := c.probe(ctx, p, mid, min(mid+k, committed))
		if err != nil {
			return 0, err
		}
		if t < cutoff {
			lo = mid
		} else {
			hi = mid
		}
	}
	// The sample at lo is older than the cutoff, all of it.
	return min(lo+k, committed), nil
}

// probe returns the newest event time of the readable messages of
// partition p in [from, to), or readings.NoTime when none is.
func (c *Consumer) probe(ctx context.Context, p int, from, to int64) (int64, error) {
	rb := array.NewRecordBuilder(c.mem, c.schema)
	defer rb.Release()
	newest := readings.NoTime
	err := c.kc.ReadPartition(ctx, c.cfg.Topic, p, from, to, c.cfg.MaxBytes, func(m kafka.Message) error {
		if c.probeDec.Decode(rb, m.Key, m.Value, m.Time) == nil {
			newest = max(newest, c.probeDec.Newest())
		}
		return nil
	})
	rb.NewRecord().Release()
	if err != nil {
		return 0, fmt.Errorf("stream: read %s/%d at offset %d to find where the rebuild starts: %w", c.cfg.Topic, p, from, err)
	}
	return newest, nil
}
