package history

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/readings"
)

// TopicOptions says which of a topic's retained messages to read.
type TopicOptions struct {
	// Since skips messages written before it (their Kafka timestamp); the
	// zero time reads everything retained.
	Since time.Time
	// MaxMessageBytes bounds one fetch; it must exceed the largest message.
	//
	// Default: 4 MiB
	MaxMessageBytes int
	// Progress, when set, is called after each fetch with the messages
	// read so far and the messages the partitions held when the read
	// began.
	Progress func(read, total int64)
}

// DecodeTopic reads every message the partitions of topic hold when it
// starts (from Since on), decodes it as the service would with cfg and
// adds its readings to b. Messages written while it reads are left for
// the service. A refused message is counted in the Stats, not an error.
func DecodeTopic(ctx context.Context, kc *kafkaconn.Client, topic string, cfg readings.Config, b Readings, opts TopicOptions) (Stats, error) {
	var stats Stats
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = 4 << 20
	}
	parts, err := kc.Partitions(ctx, topic)
	if err != nil {
		return stats, err
	}
	var total, read int64
	for _, p := range parts {
		total += p.End - p.First
	}
	d, err := newDecoder(cfg, b, &stats)
	if err != nil {
		return stats, err
	}
	for _, p := range parts {
		err := kc.ReadPartition(ctx, topic, p.Partition, p.First, p.End, opts.MaxMessageBytes, func(m kafka.Message) error {
			read++
			if opts.Progress != nil && read%chunkRows == 0 {
				opts.Progress(read, total)
			}
			if !opts.Since.IsZero() && m.Time.Before(opts.Since) {
				return nil
			}
			return d.decode(m.Key, m.Value, m.Time)
		})
		if err != nil {
			d.close()
			return stats, fmt.Errorf("read the history of topic %s: %w", topic, err)
		}
	}
	d.close()
	if opts.Progress != nil {
		opts.Progress(read, total)
	}
	return stats, nil
}
