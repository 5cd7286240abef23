package window_test

import (
	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/window"
)

func ExampleSet_Append() {
	shape := window.Shape{Lookback: 3, Fields: []string{"value"}, Cadence: time.Hour}
	s, err := window.New(shape, window.DefaultConfig())
	if err != nil {
		panic(err)
	}

	ts := &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "series", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: ts},
		{Name: "ingest_ts", Type: ts},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	t0 := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	for _, r := range []struct {
		at    time.Duration
		value float64
	}{
		{0, 410},
		{time.Hour + 5*time.Minute, 412}, // lands on 09:00
		{3 * time.Hour, 418},             // 10:00 is missing: filled with 415
		{4 * time.Hour, 420},
	} {
		b.Field(0).(*array.StringBuilder).Append("s-17")
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(r.at).UnixMilli()))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(r.at + time.Second).UnixMilli()))
		b.Field(3).(*array.Float64Builder).Append(r.value)
	}
	rec := b.NewRecord()
	defer rec.Release()

	var out window.Batch
	if err := s.Append(rec, nil, &out); err != nil {
		panic(err)
	}
	for i := range out.Len() {
		fmt.Println(out.Series[i], out.End[i].Format("15:04"), out.Window(i))
	}
	fmt.Printf("%+v\n", s.Stats())
	// Output:
	// s-17 11:00 [412 415 418]
	// s-17 12:00 [415 418 420]
	// {Active:1 Created:1 Expired:0 Rejected:0 Restarts:0 GapFilled:1 LateUpdated:0 LateDropped:0 Duplicates:0 Ready:2 OutOfRange:0}
}
