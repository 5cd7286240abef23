package readings_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/readings/readingstest"
)

// batchRows is the default input.batch_rows (package stream): how many rows
// the consumer decodes into one RecordBuilder before it flushes.
const batchRows = 4096

// BenchmarkDecode measures each decoder as the consumer uses it: messages
// decoded into one RecordBuilder, flushed every 4096 rows.
func BenchmarkDecode(b *testing.B) {
	for _, tc := range []struct {
		name     string
		cfg      readings.Config
		perMsg   int // readings per message
		channels int
	}{
		{name: "format=json/channels=1", cfg: readings.DefaultConfig(), perMsg: 1, channels: 1},
		{name: "format=json/channels=4", cfg: configWith(func(c *readings.Config) { c.ValueFields = []string{"a", "b", "c", "d"} }), perMsg: 1, channels: 4},
		{name: "format=csv/channels=1", cfg: configWith(func(c *readings.Config) { c.Format = readings.FormatCSV }), perMsg: 1, channels: 1},
		{name: "format=arrow/channels=1/rows=256", cfg: configWith(func(c *readings.Config) { c.Format = readings.FormatArrow }), perMsg: 256, channels: 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dec, err := readings.NewDecoder(tc.cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			rs := readingstest.Sequence(1024*tc.perMsg, 1000, tc.channels, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC))
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
			rb := array.NewRecordBuilder(memory.DefaultAllocator, readings.Schema(tc.cfg.ValueFields...))
			defer rb.Release()
			rb.Reserve(batchRows)
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
				if rows += tc.perMsg; rows >= batchRows {
					rb.NewRecord().Release()
					rb.Reserve(batchRows)
					rows = 0
				}
			}
			b.ReportMetric(float64(b.N*tc.perMsg)/b.Elapsed().Seconds(), "readings/s")
		})
	}
}
