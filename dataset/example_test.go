package dataset_test

import (
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/freqlens/freqlens/dataset"
)

func ExampleReadCSV() {
	const text = "date,HUFL,OT\r\n" +
		"2016-07-01 00:00:00,5.827,30.531\r\n" +
		"2016-07-01 01:00:00,5.693,27.787\r\n" +
		"2016-07-01 02:00:00,5.157,27.787\r\n"
	f, err := dataset.ReadCSV(strings.NewReader(text), "ETTh1.csv")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.Rows(), "rows of", f.Columns, "every", f.Cadence)
	fmt.Println("row 1:", f.Row(1))

	_, err = dataset.ReadCSV(strings.NewReader(strings.Replace(text, "27.787", "abc", 1)), "ETTh1.csv")
	fmt.Println(err)
	// Output:
	// 3 rows of [HUFL OT] every 1h0m0s
	// row 1: [5.693 27.787]
	// ETTh1.csv line 3: column "OT": "abc" is not a number; write the reading, or drop the row
}

func ExampleStandard() {
	// Four weeks of hourly counts from 8 traffic sensors, 1% of them missing.
	f, err := dataset.Synthetic(dataset.Traffic(8, 24*7*4, time.Hour, 1))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := f.FillMissing(); err != nil {
		log.Fatal(err)
	}
	b, err := dataset.Standard(f, 96, 24)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("protocol:", b.Protocol)
	fmt.Println("split:", b.Split.Train, b.Split.Val, b.Split.Test)
	fmt.Println("windows:", b.Train.Len(), b.Val.Len(), b.Test.Len())
	x, y := b.Test.Input(0), b.Test.Target(0)
	fmt.Println("first test window:", len(x)/b.Test.Channels(), "rows in,", len(y)/b.Test.Channels(), "rows out, forecast from row", b.Test.EndRow(0))
	// Output:
	// protocol: ratio
	// split: [0, 470) [374, 538) [442, 672)
	// windows: 351 45 111
	// first test window: 96 rows in, 24 rows out, forecast from row 537
}

func ExampleSynthetic() {
	// A dominant period that drifts from 24 to 28 steps at step 4: no noise,
	// so the values are exact.
	f, err := dataset.Synthetic(dataset.SyntheticConfig{
		Steps: 8,
		Level: 10,
		Cycles: []dataset.Cycle{
			{PeriodSteps: 24, Amplitude: 2, UntilStep: 4},
			{PeriodSteps: 28, Amplitude: 2, FromStep: 4},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := f.WriteCSV(os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// date,s-0
	// 2026-01-05 00:00:00,10
	// 2026-01-05 01:00:00,10.517638090205041
	// 2026-01-05 02:00:00,11
	// 2026-01-05 03:00:00,11.414213562373096
	// 2026-01-05 04:00:00,11.563662964936059
	// 2026-01-05 05:00:00,11.801937735804838
	// 2026-01-05 06:00:00,11.949855824363647
	// 2026-01-05 07:00:00,12
}
