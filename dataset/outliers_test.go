package dataset

import (
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
