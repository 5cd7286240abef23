package stream_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/stream"
)

// A consumer on the embedded broker: produce, consume a batch, commit
// after the outputs are acknowledged, shut down in two steps.
func ExampleConsumer() {
	broker, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 3, "readings.dlq": 1})
	if err != nil {
		log.Fatal(err)
	}
	defer broker.Close()
	kcfg := kafkaconn.DefaultConfig() // the kafka.* keys: brokers, TLS, SASL
	kcfg.Brokers = broker.Addrs()
	kc, err := kafkaconn.New(kcfg)
	if err != nil {
		log.Fatal(err)
	}
	defer kc.Close()
	// The kafka.group, topics.* and consumer input.* keys: group freqlens,
	// topics readings and readings.dlq.
	cfg := stream.DefaultConfig()
	in := readings.DefaultConfig() // the input.* keys of the format: JSON, fields series, ts and value

	w := kc.NewWriter("readings")
	w.BatchTimeout = time.Millisecond
	r := readings.Reading{Series: "s-17", Time: time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), Values: []float64{412}}
	if err := w.WriteMessages(context.Background(), kafka.Message{Key: []byte(r.Series), Value: readings.AppendJSON(nil, r, in)}); err != nil {
		log.Fatal(err)
	}
	w.Close()

	c, err := stream.NewConsumer(cfg, in, kc)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan *stream.Batch, 1)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, out) }()

	// The first batch of an assignment rebuilds windows from the readings
	// before the committed offsets; committing it says they were applied.
	b := <-out
	for b.Rebuild {
		b.Commit(context.Background())
		b.Release()
		b = <-out
	}
	rs, _ := readings.AppendReadings(nil, b.Record)
	fmt.Println(b.Messages, "message:", rs[0].Series, rs[0].Time.Format(time.RFC3339), rs[0].Values)
	// ... window, model, sink; once the sink acknowledged every output:
	if err := b.Commit(context.Background()); err != nil {
		log.Fatal(err)
	}
	b.Release()

	cancel() // 1. stop fetching
	<-done
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelClose()
	if err := c.Close(closeCtx); err != nil { // 2. after the last commit
		log.Fatal(err)
	}
	// Output:
	// 1 message: s-17 2026-01-05T08:00:00Z [412]
}
