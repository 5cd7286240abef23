package calibration

import (
	"testing"
	"time"
)

// TestPoolSource: a restart takes the pooled coverage correction from the
// replica's own file, learnt from its own series, even when another
// replica's is newer; from the newest other file when its own has none (a
// first start, or a file written before the correction was kept); and
// never from a file whose correction has another shape.
func TestPoolSource(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	file := func(path string, newest time.Time, steer ...float64) Kept {
		return Kept{Snapshot: Snapshot{Newest: newest, Steer: steer}, Where: path}
	}
	own, a, b := "/d/intervals-own.gob", "/d/intervals-a.gob", "/d/intervals-b.gob"
	for _, tc := range []struct {
		name  string
		files []Kept
		want  []float64
	}{
		{"own, older than another", []Kept{file(a, now, 2, 2), file(own, now.Add(-time.Hour), 1, 1)}, []float64{1, 1}},
		{"no own file", []Kept{file(a, now.Add(-time.Hour), 2, 2), file(b, now, 3, 3)}, []float64{3, 3}},
		{"own without a correction", []Kept{file(own, now), file(a, now.Add(-time.Hour), 2, 2)}, []float64{2, 2}},
		{"another shape", []Kept{file(own, now, 1, 1, 1), file(a, now.Add(-time.Hour), 2, 2)}, []float64{2, 2}},
		{"none has one", []Kept{file(own, now), file(a, now)}, nil},
	} {
		got := PoolSource(tc.files, own, 2).Steer
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("%s: the correction comes from %v, want %v", tc.name, got, tc.want)
		}
	}
}
