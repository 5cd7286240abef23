package stream

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/readings"
)

// BenchmarkConsumer measures the Consumer end to end on the embedded
// broker: b.N JSON readings produced beforehand, then fetched, decoded and
// batched (batches are released, not committed).
func BenchmarkConsumer(b *testing.B) {
	br, err := embedded.Start("127.0.0.1:0", map[string]int{"in": 4})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison = "bench", "in", true
	kc := kafkatest.Client(b, br.Addrs())
	w := kc.NewWriter("in")
	w.BatchSize, w.BatchTimeout = 1000, time.Millisecond
	rs := readingsFor(b.N, 1000, 1)
	msgs := make([]kafka.Message, len(rs))
	for i, r := range rs {
		msgs[i] = kafka.Message{Key: []byte(r.Series), Value: readings.AppendJSON(nil, r, readings.DefaultConfig())}
	}
	for len(msgs) > 0 {
		n := min(len(msgs), 10000)
		if err := w.WriteMessages(context.Background(), msgs[:n]...); err != nil {
			b.Fatal(err)
		}
		msgs = msgs[n:]
	}
	w.Close()

	c, err := NewConsumer(cfg, readings.DefaultConfig(), kc)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan *Batch, 16)
	done := make(chan error, 1)
	b.ResetTimer()
	go func() { done <- c.Run(ctx, out) }()
	for got := 0; got < b.N; {
		batch := <-out
		got += int(batch.Record.NumRows())
		batch.Release()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "readings/s")
	cancel()
	<-done
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	if err := c.Close(cctx); err != nil {
		b.Fatal(err)
	}
}
