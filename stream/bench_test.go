package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
)

// BenchmarkDecode measures each decoder as the Consumer uses it: messages
// decoded into one RecordBuilder, flushed every 4096 rows.
func BenchmarkDecode(b *testing.B) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		perMsg   int // readings per message
		channels int
	}{
		{name: "format=json/channels=1", cfg: Config{Format: FormatJSON}, perMsg: 1, channels: 1},
		{name: "format=json/channels=4", cfg: Config{Format: FormatJSON, ValueFields: []string{"a", "b", "c", "d"}}, perMsg: 1, channels: 4},
		{name: "format=csv/channels=1", cfg: Config{Format: FormatCSV}, perMsg: 1, channels: 1},
		{name: "format=arrow/channels=1/rows=256", cfg: Config{Format: FormatArrow}, perMsg: 256, channels: 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dec, err := NewDecoder(tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			rs := readingsFor(1024*tc.perMsg, 1000, tc.channels)
			for i := range rs {
				rs[i].Series = fmt.Sprintf("sensor-%06d", i%1000)
				for j := range rs[i].Values {
					rs[i].Values[j] = 100 + float64(i%977)*0.173 + float64(j)
				}
			}
			var msgs [][]byte
			bytes := 0
			for i := 0; i < len(rs); i += tc.perMsg {
				for _, m := range encode(b, tc.cfg, rs[i:i+tc.perMsg]) {
					msgs = append(msgs, m)
					bytes += len(m)
				}
			}
			rb := array.NewRecordBuilder(memory.DefaultAllocator, Schema(tc.cfg.ValueFields...))
			defer rb.Release()
			rb.Reserve(DefaultConfig().BatchRows)
			rows := 0
			now := time.Now()
			b.SetBytes(int64(bytes / len(msgs)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := dec.Decode(rb, nil, msgs[i%len(msgs)], now); err != nil {
					b.Fatal(err)
				}
				i++
				if rows += tc.perMsg; rows >= DefaultConfig().BatchRows {
					rb.NewRecord().Release()
					rb.Reserve(DefaultConfig().BatchRows)
					rows = 0
				}
			}
			b.ReportMetric(float64(b.N*tc.perMsg)/b.Elapsed().Seconds(), "readings/s")
		})
	}
}

// BenchmarkConsumer measures the Consumer end to end on the embedded
// broker: b.N JSON readings produced beforehand, then fetched, decoded and
// batched (batches are released, not committed).
func BenchmarkConsumer(b *testing.B) {
	br, err := embedded.Start("127.0.0.1:0", map[string]int{"in": 4})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	cfg := Config{Group: "bench", Topic: "in", DropPoison: true}
	kc := kafkatest.Client(b, br.Addrs())
	w := kc.NewWriter("in")
	w.BatchSize, w.BatchTimeout = 1000, time.Millisecond
	rs := readingsFor(b.N, 1000, 1)
	msgs := make([]kafka.Message, len(rs))
	for i, r := range rs {
		msgs[i] = kafka.Message{Key: []byte(r.Series), Value: AppendJSON(nil, r, cfg)}
	}
	for len(msgs) > 0 {
		n := min(len(msgs), 10000)
		if err := w.WriteMessages(context.Background(), msgs[:n]...); err != nil {
			b.Fatal(err)
		}
		msgs = msgs[n:]
	}
	w.Close()

	c, err := NewConsumer(cfg, kc)
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
