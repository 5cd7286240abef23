package stream

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/internal/registry/registrytest"
	"github.com/freqlens/freqlens/readings"
)

// TestCommitsRecoverAfterACut: batches acknowledged while the brokers were
// cut, whose generation ended with its coordinator connection, do not
// block the pipeline on commits that cannot succeed, while the consumer
// waits to hand it the next batch (as the pipeline's stages wait on each
// other): Commit returns (the commit given up), the member rejoins when
// the brokers answer, commits what was acknowledged in its new generation
// and keeps its partitions' windows (no rebuild, nothing delivered twice).
// Meanwhile the lag gauge keeps counting what is not committed instead of
// falling to 0.
func TestCommitsRecoverAfterACut(t *testing.T) {
	_, proxy := kafkatest.BehindProxy(t, kfake.SeedTopics(2, "in"))
	kc := kafkatest.Client(t, []string{proxy.Addr()})
	const first, waiting, second = 400, 400, 200
	var msgs []kafka.Message
	for _, r := range readingsFor(first+waiting+second, 20, 1) {
		msgs = append(msgs, kafka.Message{Key: []byte(r.Series), Value: readings.AppendJSON(nil, r, readings.DefaultConfig())})
	}
	produce(t, kc, "in", msgs[:first]...)
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison, cfg.BatchRows, cfg.BatchLatency = "g", "in", true, 50, 5*time.Millisecond
	cfg = groupTimings(cfg)
	reg := prometheus.NewRegistry()
	r := startOut(t, kc, cfg, readings.DefaultConfig(), 1, WithRegisterer(reg))
	lag := func() float64 {
		if v, ok := registrytest.Value(reg, "freqlens_stream_consumer_lag_records"); ok {
			return v
		}
		return -1
	}

	// Take every batch of the first messages; commit all but the last.
	var held []*Batch
	seen := deliveries{}
	for n := 0; n < first; {
		b := r.next(t, 20*time.Second)
		seen.note(b)
		n += b.Messages
		held = append(held, b)
	}
	last := held[len(held)-1]
	for _, b := range held[:len(held)-1] {
		if err := b.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	// More messages: the consumer fills the one place between it and the
	// test and waits to send the next batch.
	produce(t, kc, "in", msgs[first:first+waiting]...)
	if !eventually(10*time.Second, func() bool { return lag() == float64(waiting)+float64(last.Messages) }) {
		t.Fatalf("lag = %v; want the %d waiting messages and the last batch's %d fetched", lag(), waiting, last.Messages)
	}
	before := lag()

	// The cut: every connection closes; the generation ends with its
	// heartbeats (every second here). Lag holds its last value.
	proxy.Cut()
	time.Sleep(3 * time.Second)
	if got := lag(); got != before {
		t.Errorf("lag = %v during the cut, want the %v not committed", got, before)
	}
	proxy.Restore()

	// The pipeline acknowledges the last batch after the cut, as it does
	// once its writes succeed again: Commit must return, not retry on a
	// connection that is gone.
	commitAsThePipelineDoes(t, last)
	last.Release()
	// The batches that waited belong to the generation that ended: they are
	// acknowledged too.
	for n := 0; n < waiting; {
		b := r.next(t, 30*time.Second)
		seen.note(b)
		n += b.Messages
		if err := b.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}

	// The member rejoins, commits what was acknowledged and keeps its
	// windows: no rebuild batch, and the next messages come once each.
	kc = kafkatest.Client(t, []string{proxy.Addr()}) // the test's own connections died in the cut too
	produce(t, kc, "in", msgs[first+waiting:]...)
	takeAfterTheRejoin(t, r, second, seen)
	if n := kafkatest.Uncommitted(t, kc, "g", "in"); n != 0 {
		t.Errorf("%d messages uncommitted after the recovery, want 0", n)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("partition %d offset %d delivered %d times, want once", k[0], k[1], n)
		}
	}
	if len(seen) != first+waiting+second {
		t.Errorf("%d messages delivered, want %d", len(seen), first+waiting+second)
	}
}

// deliveries counts how many times each (partition, offset) was
// delivered.
type deliveries map[[2]int64]int

// note counts the deliveries of b's rows.
func (d deliveries) note(b *Batch) {
	for i := range b.Record.NumRows() {
		d[[2]int64{int64(b.Partition(int(i))), b.Offset(int(i))}]++
	}
}

// commitAsThePipelineDoes commits b, retrying every 200 ms as the
// pipeline does, and fails t unless a Commit succeeds within 30 s.
func commitAsThePipelineDoes(t *testing.T, b *Batch) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for {
			err := b.Commit(context.Background())
			if err == nil {
				done <- nil
				return
			}
			time.Sleep(200 * time.Millisecond) // the pipeline's retry
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Commit of a batch acknowledged after the cut did not return within 30s")
	}
}

// takeAfterTheRejoin takes and commits the batches of n messages from r
// after the member rejoined, counting their deliveries in seen; a
// rebuild batch must read nothing back.
func takeAfterTheRejoin(t *testing.T, r *running, n int, seen deliveries) {
	t.Helper()
	for got := 0; got < n; {
		b := r.nextAny(t, 30*time.Second)
		if b.Rebuild {
			// The generation's one rebuild batch says what to forget and
			// reads nothing back when every partition is kept.
			if b.Record.NumRows() != 0 || len(b.Forget) != 0 {
				t.Fatalf("a rebuild of %d readings (forget %v) after the cut: the acknowledged offsets were not committed by the new generation",
					b.Record.NumRows(), b.Forget)
			}
			if err := b.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			b.Release()
			continue
		}
		seen.note(b)
		got += b.Messages
		if err := b.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
}
