package kafkaconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/segmentio/kafka-go"
)

// PartitionRange is the offsets of one partition: First is the oldest
// retained offset, End the high watermark (the offset the next message will
// get), so the partition holds offsets [First, End).
type PartitionRange struct {
	Partition  int
	First, End int64
}

// Partitions returns the offset range of every partition of topic, ordered
// by partition. A missing topic is an error that names it.
func (c *Client) Partitions(ctx context.Context, topic string) ([]PartitionRange, error) {
	admin := c.Admin(0)
	meta, err := admin.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("metadata of topic %s: %w", topic, c.explain(err))
	}
	if len(meta.Topics) != 1 {
		return nil, fmt.Errorf("metadata of topic %s: the broker described %d topics", topic, len(meta.Topics))
	}
	if err := meta.Topics[0].Error; err != nil {
		return nil, fmt.Errorf("topic %s: %w; does it exist?", topic, err)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range meta.Topics[0].Partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	offs, err := admin.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("offsets of topic %s: %w", topic, err)
	}
	out := make([]PartitionRange, 0, len(offs.Topics[topic]))
	for _, po := range offs.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("offsets of topic %s partition %d: %w", topic, po.Partition, po.Error)
		}
		out = append(out, PartitionRange{Partition: po.Partition, First: po.FirstOffset, End: po.LastOffset})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out, nil
}

// MissingTopics returns which of topics the brokers do not have, in the
// order given. It asks for their metadata without creating any (a broker
// with auto.create.topics.enable would otherwise create a misspelt one).
func (c *Client) MissingTopics(ctx context.Context, topics []string) ([]string, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	meta, err := c.Admin(0).Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("metadata of topics %v: %w", topics, c.explain(err))
	}
	known := make(map[string]bool, len(meta.Topics))
	for _, t := range meta.Topics {
		switch {
		case t.Error == nil:
			known[t.Name] = true
		case errors.Is(t.Error, kafka.UnknownTopicOrPartition):
		default:
			return nil, fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
	}
	var missing []string
	for _, t := range topics {
		if !known[t] {
			missing = append(missing, t)
		}
	}
	return missing, nil
}

// ReadPartition calls fn with every message of partition p of topic whose
// offset is in [from, to), in offset order, reading from the partition's
// leader. Offsets missing from the range (compacted away, or control
// records) are skipped; reading stops at to, at the first offset the
// partition does not hold yet, or at fn's first error, which it returns.
// maxBytes bounds one fetch and must exceed the largest message. Without a
// deadline on ctx every fetch waits at most 30s.
func (c *Client) ReadPartition(ctx context.Context, topic string, p int, from, to int64, maxBytes int,
	fn func(kafka.Message) error) error {
	if from >= to {
		return nil
	}
	conn, err := c.dialLeader(ctx, topic, p)
	if err != nil {
		return err
	}
	defer conn.Close()
	next := from
	for next < to {
		if dl, ok := ctx.Deadline(); ok {
			conn.SetReadDeadline(dl)
		} else {
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		}
		if _, err := conn.Seek(next, kafka.SeekAbsolute); err != nil {
			return fmt.Errorf("read topic %s partition %d: seek to %d: %w", topic, p, next, err)
		}
		batch := conn.ReadBatch(1, maxBytes)
		start := next
		for next < to {
			m, err := batch.ReadMessage()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					batch.Close()
					return fmt.Errorf("read topic %s partition %d at offset %d: %w", topic, p, next, err)
				}
				break
			}
			if m.Offset < next {
				continue // a batch starts before the offset asked for
			}
			if m.Offset >= to {
				next = to
				break
			}
			next = m.Offset + 1
			if err := fn(m); err != nil {
				batch.Close()
				return err
			}
		}
		if err := batch.Close(); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read topic %s partition %d: %w", topic, p, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if next == start {
			return nil // nothing left before to: the tail was compacted away or is not written yet
		}
	}
	return nil
}

// dialLeader connects to the leader of partition p of topic, found through
// the first seed broker that answers.
func (c *Client) dialLeader(ctx context.Context, topic string, p int) (*kafka.Conn, error) {
	var errs []error
	for _, b := range c.cfg.Brokers {
		conn, err := c.dialer.DialLeader(ctx, "tcp", b, topic, p)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("leader of topic %s partition %d: %w", topic, p, c.explain(errors.Join(errs...)))
}
