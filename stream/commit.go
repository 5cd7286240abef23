package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// Commits: a live batch's offsets are committed in the generation that
// sent it, after the pipeline acknowledged its outputs (Batch.Commit). A
// generation that ended drains: its batches in flight are committed
// through its coordinator connection, which the consumer keeps open until
// they are, for at most half of Config.RebalanceTimeout. When that
// connection died with the brokers, the commits are given up (endCommits)
// rather than retried, and the next generation commits what was
// acknowledged (recommit) if the partitions stay with this consumer.

// recommit commits, in the new generation kg, what the pipeline
// acknowledged in the last one but could not commit there because it ended
// first (its coordinator connection gone with a broker cut, say): for each
// partition of parts that this consumer held whole, acknowledged up to
// where it had sent, and whose group offset in offsets is still its last
// commit (nobody else moved it). On success offsets and the partition's
// committed offset move there, so the partition keeps its windows and
// nothing is forecast twice; on failure it is rebuilt from offsets as
// usual.
func (c *Consumer) recommit(kg *kafka.Generation, parts []int, offsets map[int]int64) {
	c.mu.Lock()
	todo := map[int]int64{}
	for _, p := range parts {
		if old := c.parts[p]; old != nil && old.whole && old.next == old.acked && old.acked > old.committed &&
			old.committed == offsets[p] {
			todo[p] = old.acked
		}
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	if err := kg.CommitOffsets(map[string]map[int]int64{c.cfg.Topic: todo}); err != nil {
		c.log.Warn("the offsets acknowledged before the generation ended could not be committed in the new one; those partitions are rebuilt and their last readings forecast again (identical copies)",
			"generation", kg.ID, "offsets", todo, "err", err)
		return
	}
	c.mu.Lock()
	for p, off := range todo {
		c.parts[p].committed = off
		offsets[p] = off
	}
	c.mu.Unlock()
	c.log.Info("committed what was acknowledged before the generation ended", "generation", kg.ID, "offsets", todo)
}

// commit commits a live batch's offsets in its generation.
func (c *Consumer) commit(ctx context.Context, b *Batch) error {
	offsets := make(map[int]int64, len(b.commits))
	for _, m := range b.commits {
		offsets[m.Partition] = m.Offset + 1
	}
	if c.moved(b.gen) {
		return c.skipCommit(b, offsets)
	}
	if err := b.gen.g.CommitOffsets(map[string]map[int]int64{c.cfg.Topic: offsets}); err != nil {
		if c.moved(b.gen) {
			return c.skipCommit(b, offsets)
		}
		if b.gen.hasEnded() {
			// The generation is over and its commits fail (its coordinator
			// connection died with the brokers): retrying cannot help, and
			// the pipeline would wait here while the group waits for this
			// member to rejoin. The next generation commits what was
			// acknowledged (recommit) or the next owner forecasts it again.
			c.endCommits(b.gen, err)
			return c.skipCommit(b, offsets)
		}
		return fmt.Errorf("commit %d messages of %s: %w", b.Messages, c.cfg.Topic, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if b.gen == c.cur {
		for p, off := range offsets {
			if st := c.parts[p]; st != nil {
				st.committed = max(st.committed, off)
				st.acked = max(st.acked, off)
			}
		}
	}
	c.mu.Unlock()
	c.wake()
	return nil
}

// wake tells drain that a commit happened or was given up.
func (c *Consumer) wake() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// endCommits marks gen over after a commit failed once it had ended: its
// later batches are not committed (skipCommit) and drain stops waiting.
func (c *Consumer) endCommits(gen *generation, err error) {
	c.mu.Lock()
	first := !gen.over
	gen.over = true
	c.mu.Unlock()
	if first {
		c.log.Warn("the generation ended and its commits fail; what was acknowledged is committed when the consumer rejoins",
			"generation", gen.id, "err", err)
	}
	c.wake()
}

// moved reports whether gen is no longer the generation that commits.
func (c *Consumer) moved(gen *generation) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return gen != c.cur || gen.over
}

// skipCommit drops the commit of a batch whose generation is over, noting
// its offsets as acknowledged: if the partitions stay with this consumer,
// the next generation commits them (recommit).
func (c *Consumer) skipCommit(b *Batch, offsets map[int]int64) error {
	c.mu.Lock()
	if b.gen == c.cur {
		for p, off := range offsets {
			if st := c.parts[p]; st != nil {
				st.acked = max(st.acked, off)
			}
		}
	}
	c.mu.Unlock()
	c.m.commitsSkipped.Inc()
	c.log.Debug("commit skipped: the generation is over; the offsets are committed when the partitions stay here, else their next owner resumes from their last commit",
		"generation", b.gen.id, "offsets", offsets)
	c.wake()
	return nil
}

// drain waits, after the generation ended, until every live batch sent in
// it is committed, for at most half of RebalanceTimeout.
func (c *Consumer) drain(ctx context.Context, gen *generation) {
	t := time.NewTimer(c.cfg.RebalanceTimeout / 2)
	defer t.Stop()
	for {
		if c.drained(gen) {
			c.log.Debug("generation drained", "generation", gen.id)
			return
		}
		select {
		case <-c.signal:
		case <-t.C:
			c.log.Warn("the generation ended before the batches in flight were committed; what is acknowledged later is committed by the next generation if the partitions stay here, else their next owners forecast it again (identical copies)",
				"generation", gen.id, "waited", c.cfg.RebalanceTimeout/2)
			return
		case <-ctx.Done():
			return
		case <-c.closing:
			return
		}
	}
}

// drained reports whether every live batch sent in gen is committed or,
// once its commits were given up (endCommits), acknowledged.
func (c *Consumer) drained(gen *generation) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range gen.parts {
		st := c.parts[p]
		if st == nil {
			continue
		}
		upTo := st.committed
		if gen.over {
			upTo = st.acked
		}
		if upTo != st.next {
			return false
		}
	}
	return true
}

// sent notes that a live batch of gen covers partition p up to next.
func (g *generation) sent(p int, next int64) {
	c := g.c
	c.mu.Lock()
	if st := c.parts[p]; st != nil && g == c.cur {
		st.next = next
	}
	c.mu.Unlock()
}
