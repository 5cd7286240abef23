package stream_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/stream"
)

func ExampleAppendJSON() {
	r := stream.Reading{Series: "s-17", Time: time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), Values: []float64{412}}
	fmt.Println(string(stream.AppendJSON(nil, r, stream.Config{})))

	multi := stream.Config{ValueFields: []string{"temp", "humidity"}}
	r = stream.Reading{Series: "st-1", Time: time.UnixMilli(1767600000250), Values: []float64{3.5, 81}}
	fmt.Println(string(stream.AppendJSON(nil, r, multi)))
	fmt.Println(string(stream.AppendCSV(nil, r, multi)))
	// Output:
	// {"series":"s-17","ts":"2026-01-05T08:00:00Z","value":412}
	// {"series":"st-1","ts":"2026-01-05T08:00:00.250Z","temp":3.5,"humidity":81}
	// st-1,2026-01-05T08:00:00.250Z,3.5,81
}

func ExampleJSONDecoder() {
	cfg := stream.Config{ValueFields: []string{"temp", "humidity"}}
	dec, err := stream.NewJSONDecoder(cfg)
	if err != nil {
		log.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, stream.Schema(cfg.ValueFields...))
	defer rb.Release()
	for _, msg := range []string{
		`{"series":"st-1","ts":1767600000000,"temp":3.5,"humidity":81}`,
		`{"series":"st-1","ts":"2026-01-05T09:00:00+01:00","temp":"NaN","humidity":80}`,
	} {
		if err := dec.Decode(rb, []byte("st-1"), []byte(msg), time.Now()); err != nil {
			fmt.Println("poison:", err)
		}
	}
	rec := rb.NewRecord()
	defer rec.Release()
	rs, _ := stream.AppendReadings(nil, rec)
	for _, r := range rs {
		fmt.Println(r.Series, r.Time.Format(time.RFC3339), r.Values)
	}
	// Output:
	// poison: decode message: non_finite: temp = "NaN" is not finite
	// st-1 2026-01-05T08:00:00Z [3.5 81]
}

// A consumer on the embedded broker: produce, consume a batch, commit
// after the outputs are acknowledged, shut down in two steps.
func ExampleConsumer() {
	broker, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 3, "readings.dlq": 1})
	if err != nil {
		log.Fatal(err)
	}
	defer broker.Close()
	kc, err := kafkaconn.New(kafkaconn.Config{Brokers: broker.Addrs()}) // the kafka.* keys: brokers, TLS, SASL
	if err != nil {
		log.Fatal(err)
	}
	defer kc.Close()
	cfg := stream.Config{Group: "freqlens", Topic: "readings", DeadLetterTopic: "readings.dlq"}

	w := kc.NewWriter("readings")
	w.BatchTimeout = time.Millisecond
	r := stream.Reading{Series: "s-17", Time: time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), Values: []float64{412}}
	if err := w.WriteMessages(context.Background(), kafka.Message{Key: []byte(r.Series), Value: stream.AppendJSON(nil, r, cfg)}); err != nil {
		log.Fatal(err)
	}
	w.Close()

	c, err := stream.NewConsumer(cfg, kc)
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
	rs, _ := stream.AppendReadings(nil, b.Record)
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
