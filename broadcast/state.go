package broadcast

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
)

// StateRecordBytes bounds one record of the state topic: a series' state
// is about half a kilobyte a channel, and a replica's pooled record a few
// kilobytes per channel for a day's profile.
const StateRecordBytes = 1 << 20

// States is a compacted topic of per-series state (topics.state) that
// every replica reads and writes: the online learner's interval
// calibration, keyed by series (online.StateStore). Sync reads what was
// written since its last call and keeps the latest value of every key, as
// compaction does; Put writes and waits for every in-sync replica.
//
// The topic should be compacted (cleanup.policy=compact), so that it holds
// about one record per series however long it runs, and its tombstones
// deleted after a while (delete.retention.ms, a day by default). A replica
// holds the topic's latest values in memory: about half a kilobyte per
// series and channel of the whole deployment.
//
// A States may be used by several goroutines: calls are serialised.
type States struct {
	mu     sync.Mutex
	kc     *kafkaconn.Client
	w      *kafka.Writer
	topic  string
	next   map[int]int64 // per partition, the offset the next Sync reads from
	latest map[string][]byte
}

// NewStates returns the reader and writer of the state topic through kc.
func NewStates(kc *kafkaconn.Client, topic string) (*States, error) {
	if topic == "" {
		return nil, fmt.Errorf("broadcast: state needs a topic")
	}
	w := kc.NewWriter(topic)
	w.BatchTimeout = time.Millisecond
	w.BatchBytes = 4 * StateRecordBytes
	w.BatchSize = 1000
	return &States{kc: kc, w: w, topic: topic, next: map[int]int64{}, latest: map[string][]byte{}}, nil
}

// Name names the topic, for the log.
func (s *States) Name() string { return "topic " + s.topic }

// Sync reads every partition from where the last call stopped (the first
// retained offset, the first time) to its end as the call began, and
// returns the latest value of every key. The map is the States': read it,
// do not change it, and only until the next call.
func (s *States) Sync(ctx context.Context) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts, err := s.kc.Partitions(ctx, s.topic)
	if err != nil {
		return nil, fmt.Errorf("broadcast: state topic: %w (create it, compacted, or leave topics.state empty)", err)
	}
	for _, p := range parts {
		from := max(s.next[p.Partition], p.First)
		err := s.kc.ReadPartition(ctx, s.topic, p.Partition, from, p.End, 2*StateRecordBytes, func(m kafka.Message) error {
			if len(m.Value) == 0 {
				delete(s.latest, string(m.Key))
			} else {
				s.latest[string(m.Key)] = m.Value
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("broadcast: state topic: %w", err)
		}
		s.next[p.Partition] = max(from, p.End)
	}
	return s.latest, nil
}

// Put writes values[i] under keys[i] (a nil value is a tombstone) and
// returns once every in-sync replica of the topic has them.
func (s *States) Put(ctx context.Context, keys []string, values [][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("broadcast: state: %d keys for %d values", len(keys), len(values))
	}
	msgs := make([]kafka.Message, len(keys))
	for i, k := range keys {
		if len(values[i]) > StateRecordBytes {
			return fmt.Errorf("broadcast: state of %q is %d bytes, more than the %d a record may hold", k, len(values[i]), StateRecordBytes)
		}
		msgs[i] = kafka.Message{Key: []byte(k), Value: values[i]}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("broadcast: state topic: %w", err)
	}
	return nil
}

// Close flushes and closes the writer.
func (s *States) Close() error { return s.w.Close() }
