package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOutliers: on seeded random frames of ordinary and heavy-tailed
// channels (Gaussian, rain-like mostly-zero bursts, Student-t with 3
// degrees of freedom), the planted error codes and glitches are found, each
// at its row, and nothing else is.
func TestOutliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261127, 9))
	for trial := range 30 {
		rows, chans := 300+rng.IntN(9700), 3
		f := &Frame{Name: "f.csv", Columns: []string{"gauss", "rain", "t3"}, Cadence: time.Hour,
			Times: make([]time.Time, rows), Values: make([]float64, rows*chans)}
		for r := range rows {
			f.Times[r] = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r) * time.Hour)
			rain := 0.0
			if rng.Float64() < 0.05 {
				rain = rng.ExpFloat64() * 2
			}
			chi := 0.0
			for range 3 {
				z := rng.NormFloat64()
				chi += z * z
			}
			f.Values[r*chans] = 20 + 5*math.Sin(float64(r)/4) + rng.NormFloat64()
			f.Values[r*chans+1] = rain
			f.Values[r*chans+2] = rng.NormFloat64() / math.Sqrt(chi/3)
		}
		type spot struct{ row, c int }
		var planted []spot
		for range rng.IntN(4) {
			s := spot{rng.IntN(rows), rng.IntN(chans)}
			if slices.Contains(planted, s) {
				continue
			}
			planted = append(planted, s)
			f.Values[s.row*chans+s.c] = []float64{-9999, 1e9, 99999}[rng.IntN(3)]
		}
		slices.SortFunc(planted, func(a, b spot) int {
			if a.c != b.c {
				return a.c - b.c
			}
			return a.row - b.row
		})
		var found []spot
		for _, o := range f.Outliers() {
			found = append(found, spot{o.Row, slices.Index(f.Columns, o.Column)})
		}
		if !slices.Equal(found, planted) {
			t.Errorf("trial %d: found %v, planted %v", trial, found, planted)
		}
		if note := f.OutlierNote(); (note != "") != (len(planted) > 0) || len(planted) > 0 && !strings.Contains(note, f.Columns[planted[0].c]) {
			t.Errorf("trial %d: note %q for %v", trial, note, planted)
		}
	}
}

// TestPanelOutliers: a glitch in one series of a panel is found at its
// series, field and time, and a series whose readings are ten times
// another's is no outlier: each series is judged by its own readings.
func TestPanelOutliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	b, err := NewPanelBuilder(PanelConfig{Name: "topic readings", Fields: []string{"flow", "speed"}, Cadence: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for s, scale := range []float64{1, 10, 100} {
		for r := range 500 {
			v := []float64{scale * (5 + math.Sin(float64(r)/4) + 0.1*rng.NormFloat64()), 50 + rng.NormFloat64()}
			if s == 1 && r == 321 {
				v[0] = -9999
			}
			b.Add(fmt.Sprint("s-", s), start.Add(time.Duration(r)*time.Hour).UnixMilli(), v)
		}
	}
	p, err := b.Build(10)
	if err != nil {
		t.Fatal(err)
	}
	o := p.Outliers()
	want := SeriesOutlier{Series: "s-1", Field: "flow", Time: start.Add(321 * time.Hour), Value: -9999}
	if len(o) != 1 || o[0] != want {
		t.Fatalf("outliers %+v, want [%+v]", o, want)
	}
	if note := p.OutlierNote(); !strings.Contains(note, `1 readings of 1 series`) || !strings.Contains(note, `series "s-1", flow -9999 at 2024-01-14T09:00:00Z`) {
		t.Errorf("note %q", note)
	}
}
