package model

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
)

func TestExpPeaks(t *testing.T) {
	if os.Getenv("EXP") == "" {
		t.Skip()
	}
	for _, name := range []string{"ETTh1", "ETTm1", "weather"} {
		f, err := dataset.LoadCSV("../../shared/data/" + name + ".csv")
		if err != nil {
			t.Fatal(err)
		}
		bm, _ := dataset.Standard(f, 96, 96)
		rows := bm.Train
		_ = rows
		st := time.Now()
		tr := f.Values[:bm.Split.Train.End*f.Channels()]
		ps := FindPeaks(tr, f.Channels(), PeakOptions{MinProminence: envF("PROM", 30)})
		fmt.Printf("%s: %d peaks in %v (cadence %v)\n", name, len(ps), time.Since(st), f.Cadence)
		for _, p := range ps {
			fmt.Printf("   period %.3f steps = %v share %.4f prom %.0f ch %d\n", 1/p.Frequency, time.Duration(float64(f.Cadence)/p.Frequency).Round(time.Minute), p.Share, p.Prominence, p.Channels)
		}
	}
	for s := range 6 {
		c := expFeed(uint64(s+1), 4, 4000, 0.3)
		ps := FindPeaks(c.frame.Values[:2800*4], 4, PeakOptions{})
		fmt.Printf("case %d true %v:", s+1, fmtf(c.periods))
		for _, p := range ps {
			fmt.Printf(" %.3f(%.3f,%.0f)", 1/p.Frequency, p.Share, p.Prominence)
		}
		fmt.Println()
	}
}
