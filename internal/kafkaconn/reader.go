package kafkaconn

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
)

// Fetch bounds the fetches of a Reader. A zero field takes kafka-go's
// default.
type Fetch struct {
	// MinBytes is the least data the broker gathers before it answers a
	// fetch; 1 answers at once.
	MinBytes int
	// MaxBytes bounds one fetch response. It must exceed the largest
	// message.
	MaxBytes int
	// MaxWait bounds how long the broker holds a fetch open waiting for
	// MinBytes.
	MaxWait time.Duration
}

// readerConfig is the configuration every Reader of the Client starts
// from: the brokers, the shared Dialer (TLS, SASL, client id) and the
// loggers, with f's fetch bounds.
func (c *Client) readerConfig(group, topic string, f Fetch) kafka.ReaderConfig {
	return kafka.ReaderConfig{
		Brokers:     c.Brokers(),
		GroupID:     group,
		Topic:       topic,
		Dialer:      c.dialer,
		Logger:      c.KafkaLogger(slog.LevelDebug, "topic", topic),
		ErrorLogger: c.KafkaLogger(slog.LevelWarn, "topic", topic),
		MinBytes:    f.MinBytes,
		MaxBytes:    f.MaxBytes,
		MaxWait:     f.MaxWait,
	}
}

// NewPartitionReader returns a kafka-go Reader of partition p of topic,
// outside any consumer group, positioned at offset (an absolute offset, or
// kafka.FirstOffset or kafka.LastOffset), dialling through the shared
// Dialer. The caller fetches with FetchMessage and closes it; it commits
// nothing.
func (c *Client) NewPartitionReader(topic string, p int, offset int64, f Fetch) (*kafka.Reader, error) {
	rc := c.readerConfig("", topic, f)
	rc.Partition = p
	r := kafka.NewReader(rc)
	if err := r.SetOffset(offset); err != nil {
		r.Close()
		return nil, fmt.Errorf("start a reader of %s/%d at offset %d: %w", topic, p, offset, err)
	}
	return r, nil
}

// NewGroupReader returns a kafka-go Reader of topic in consumer group
// group, which kafka-go joins and whose offsets it commits (CommitMessages,
// or ReadMessage); a group without committed offsets starts at start
// (kafka.FirstOffset or kafka.LastOffset; 0 means kafka.FirstOffset). It dials through the shared
// Dialer. The caller closes it.
func (c *Client) NewGroupReader(group, topic string, start int64, f Fetch) *kafka.Reader {
	rc := c.readerConfig(group, topic, f)
	rc.StartOffset = start
	return kafka.NewReader(rc)
}

// Group is how a member of a consumer group built by NewConsumerGroup
// behaves. A zero duration takes kafka-go's default.
type Group struct {
	// ID is the consumer group id. Required.
	ID string
	// Topics are the topics whose partitions the group shares. Required.
	Topics []string
	// SessionTimeout is how long the coordinator waits for a heartbeat
	// before it declares a member dead.
	SessionTimeout time.Duration
	// HeartbeatInterval is how often a member heartbeats, and so how soon it
	// learns of a rebalance.
	HeartbeatInterval time.Duration
	// RebalanceTimeout is how long the coordinator waits for every member to
	// rejoin during a rebalance.
	RebalanceTimeout time.Duration
	// JoinGroupBackoff is the wait before joining again after a failed join.
	JoinGroupBackoff time.Duration
	// WatchPartitionChanges rebalances when partitions are added to a
	// topic.
	WatchPartitionChanges bool
	// StartOffset is where a partition without a committed offset starts:
	// kafka.FirstOffset or kafka.LastOffset.
	//
	// Default: kafka.FirstOffset
	StartOffset int64
}

// NewConsumerGroup returns a kafka-go ConsumerGroup member of g, dialling
// through the shared Dialer, with kafka-go's logs going to the Client's
// logger. kafka-go joins in the background; its generations (Next) report
// the assigned partitions and their committed offsets. The caller closes
// it, which leaves the group.
func (c *Client) NewConsumerGroup(g Group) (*kafka.ConsumerGroup, error) {
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                    g.ID,
		Brokers:               c.Brokers(),
		Topics:                g.Topics,
		Dialer:                c.dialer,
		Logger:                c.KafkaLogger(slog.LevelDebug, "group", g.ID),
		ErrorLogger:           c.KafkaLogger(slog.LevelWarn, "group", g.ID),
		SessionTimeout:        g.SessionTimeout,
		HeartbeatInterval:     g.HeartbeatInterval,
		RebalanceTimeout:      g.RebalanceTimeout,
		JoinGroupBackoff:      g.JoinGroupBackoff,
		WatchPartitionChanges: g.WatchPartitionChanges,
		StartOffset:           g.StartOffset,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer group %q: %w", g.ID, err)
	}
	return cg, nil
}
