package online_test

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/online"
)

// TestCalibrationSurvivesARestart: a learner with a checkpoint directory
// keeps what it learned of each series' intervals when Run ends, and a new
// learner on the same directory (a restart) publishes the very intervals
// the old one would have for the series it saw, where one that starts
// afresh publishes bands of other widths (every series from the same
// quantiles, errors a hundredfold apart between series). An unreadable
// file beside it is skipped.
func TestCalibrationSurvivesARestart(t *testing.T) {
	const L, H, series, steps = 24, 12, 120, 300
	levels := []float64{0.8, 0.95}
	dir := t.TempDir()
	cfg := func(dir string) online.Config {
		return configWith(func(c *online.Config) { c.Intervals, c.CheckpointDir = levels, dir })
	}
	m := newIndependent(t, L, H)
	// The test split's error quantiles, where every series starts: one
	// normalised unit's spread at every step.
	m.Meta.ErrorQuantiles = online.UnitErrorQuantiles(H)
	before, err := online.New(cfg(dir), m)
	if err != nil {
		t.Fatal(err)
	}
	feed := online.NewCalibrationFeed(L, H, series, rand.New(rand.NewPCG(3, 30)))
	// observe gives every learner the forecast of every series at step
	// (the window moved on to it, or, again, the last one) and returns the
	// widths of each one's 80% bands at the horizon's end, series by series.
	observe := func(step int, again bool, ls ...*online.Learner) [][]float64 {
		return feed.Observe(step, 0, series, again, ls...)
	}
	for step := range steps {
		observe(step, false, before)
	}
	// Run ends at once, keeping the calibration.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := before.Run(ctx, &server{m: m}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "intervals-*.gob"))
	if len(files) != 1 {
		t.Fatalf("the checkpoint directory holds %v, want one calibration file", files)
	}
	// A file of other levels beside it is skipped.
	if err := os.WriteFile(filepath.Join(dir, "intervals-other.gob"), []byte("not a calibration"), 0o600); err != nil {
		t.Fatal(err)
	}

	after, err := online.New(cfg(dir), m)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := online.New(cfg(t.TempDir()), m)
	if err != nil {
		t.Fatal(err)
	}
	// The last forecast again, as after a restart the service forecasts the
	// windows it had: the running learner reissues it from its thresholds,
	// the restarted ones issue it anew.
	w := observe(steps-1, true, before, after, fresh)
	kept, afresh := 0.0, []float64{}
	for s := range series {
		b, a, f := w[0][s], w[1][s], w[2][s]
		if math.IsNaN(b) || math.IsNaN(a) || math.IsNaN(f) {
			t.Fatalf("%s: published intervals before the restart %v, after %v, afresh %v", feed.Sensors[s].Name, !math.IsNaN(b), !math.IsNaN(a), !math.IsNaN(f))
		}
		kept = max(kept, math.Abs(a-b)/b)
		afresh = append(afresh, math.Abs(f-b)/b)
	}
	slices.Sort(afresh)
	t.Logf("after the restart the bands differ by up to %.2g of their width; afresh by a median %.0f%%", kept, 100*afresh[len(afresh)/2])
	if kept > 1e-9 {
		t.Errorf("after the restart a series' 80%% band at step %d differs from the one the running learner publishes by up to %.3g of its width, want the same", H, kept)
	}
	if med := afresh[len(afresh)/2]; med < 0.2 {
		t.Errorf("a learner started afresh publishes bands within %.0f%% (median) of the calibrated ones: the test cannot tell a kept calibration", 100*med)
	}
}
