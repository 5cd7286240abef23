package feed_test

import (
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/feed"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/readings/readingstest"
)

// newBroker starts an in-process broker with topics of three partitions and
// returns a client of it; both end with the test.
func newBroker(t *testing.T, topics ...string) *kafkaconn.Client {
	t.Helper()
	return kafkatest.Client(t, kafkatest.NewCluster(t, topics).ListenAddrs())
}

// simulationConfig returns feed.DefaultSimulationConfig changed by edit.
func simulationConfig(edit func(*feed.SimulationConfig)) feed.SimulationConfig {
	return edited(feed.DefaultSimulationConfig(), edit)
}

// replayConfig returns feed.DefaultReplayConfig changed by edit.
func replayConfig(edit func(*feed.ReplayConfig)) feed.ReplayConfig {
	return edited(feed.DefaultReplayConfig(), edit)
}

// edited returns cfg changed by edit.
func edited[T any](cfg T, edit func(*T)) T {
	edit(&cfg)
	return cfg
}

// decode decodes msgs as the consumer would, with the input format's
// decoder of cfg and the clock now, and returns each series' rows in the
// order of msgs (the Kafka order, since a series stays in one partition),
// ingest times zeroed. It fails the test on a message that does not decode
// to exactly one reading keyed by its series.
func decode(t *testing.T, msgs []kafka.Message, cfg readings.Config, now func() time.Time) map[string][]readingstest.Row {
	t.Helper()
	dec, err := readings.NewDecoder(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, readings.Schema(cfg.ValueFields...))
	defer rb.Release()
	out := map[string][]readingstest.Row{}
	for _, m := range msgs {
		if err := dec.Decode(rb, m.Key, m.Value, m.Time); err != nil {
			t.Fatalf("message %q: %v", m.Value, err)
		}
		rec := rb.NewRecord()
		rows := readingstest.Rows(t, rec)
		rec.Release()
		if len(rows) != 1 || rows[0].Series != string(m.Key) {
			t.Fatalf("message %q (key %q) decodes to %v, want one reading of its key's series", m.Value, m.Key, rows)
		}
		rows[0].Ingest = 0
		out[rows[0].Series] = append(out[rows[0].Series], rows[0])
	}
	return out
}

// count returns the number of rows of all series.
func count(bySeries map[string][]readingstest.Row) int {
	n := 0
	for _, rows := range bySeries {
		n += len(rows)
	}
	return n
}
