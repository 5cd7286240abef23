package readings_test

import (
	"fmt"
	"log"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/readings"
)

func ExampleAppendJSON() {
	r := readings.Reading{Series: "s-17", Time: time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), Values: []float64{412}}
	fmt.Println(string(readings.AppendJSON(nil, r, readings.DefaultConfig())))

	multi := readings.DefaultConfig() // the input.* keys of the format
	multi.ValueFields = []string{"temp", "humidity"}
	r = readings.Reading{Series: "st-1", Time: time.UnixMilli(1767600000250), Values: []float64{3.5, 81}}
	fmt.Println(string(readings.AppendJSON(nil, r, multi)))
	fmt.Println(string(readings.AppendCSV(nil, r, multi)))
	// Output:
	// {"series":"s-17","ts":"2026-01-05T08:00:00Z","value":412}
	// {"series":"st-1","ts":"2026-01-05T08:00:00.250Z","temp":3.5,"humidity":81}
	// st-1,2026-01-05T08:00:00.250Z,3.5,81
}

func ExampleJSONDecoder() {
	cfg := readings.DefaultConfig()
	cfg.ValueFields = []string{"temp", "humidity"}
	dec, err := readings.NewJSONDecoder(cfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, readings.Schema(cfg.ValueFields...))
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
	rs, _ := readings.AppendReadings(nil, rec)
	for _, r := range rs {
		fmt.Println(r.Series, r.Time.Format(time.RFC3339), r.Values)
	}
	// Output:
	// poison: decode message: non_finite: temp = "NaN" is not finite
	// st-1 2026-01-05T08:00:00Z [3.5 81]
}
