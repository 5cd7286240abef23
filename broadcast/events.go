package broadcast

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/wire"
)

// Events writes occasional JSON events, such as the online learner's drift
// events, to one topic, keyed so that a compacting or partitioned consumer
// sees one key's events in order. Events are rare, so each Write waits for
// its acknowledgement. It is safe for concurrent use.
type Events struct {
	w *kafka.Writer
}

// NewEvents returns a writer of JSON events to topic through kc.
func NewEvents(kc *kafkaconn.Client, topic string) (*Events, error) {
	if topic == "" {
		return nil, fmt.Errorf("broadcast: events need a topic")
	}
	w := kc.NewWriter(topic)
	w.BatchTimeout = time.Millisecond // events are rare: do not wait to fill a batch
	return &Events{w: w}, nil
}

// Write encodes v as JSON and produces it under key.
func (e *Events) Write(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("broadcast: encode event: %w", err)
	}
	return e.w.WriteMessages(ctx, kafka.Message{Key: []byte(key), Value: b,
		Headers: []kafka.Header{{Key: wire.HeaderContentType, Value: []byte("application/json")}}})
}

// Close flushes and closes the writer.
func (e *Events) Close() error { return e.w.Close() }
