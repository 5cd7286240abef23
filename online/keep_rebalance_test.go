package online

import (
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/model"
)

// TestCalibrationFollowsARebalance: replicas a and b share a checkpoint
// directory. When a stops (a rolling deploy) and a rebalance moves its
// series to b, which keeps running, b publishes for them the bands a
// would have published, whether b reads a's file before the series arrive
// (a's bands, but for how the two replicas' shapes of the error along the
// horizon differ: 2e-4) or after they have forecast there. Three steps
// on, a has scored the forecasts it issued before the move and b has not,
// a few of the calibration's small steps (9% a miss). A replica that does
// not read the other's file publishes bands a median 87–130% off. A series
// that took a state takes no other when the files are read again; one that
// moves on from b before b read a's file takes a's state, not b's fresh
// one.
func TestCalibrationFollowsARebalance(t *testing.T) {
	const L, H = 24, 6
	m := keepModel(t)
	m.Meta.ErrorQuantiles = UnitErrorQuantiles(H)
	// Series 0 … series-1 are a's, the others b's.
	r := &rebalance{m: m, levels: []float64{0.8, 0.95}, feed: NewCalibrationFeed(L, H, 2*rebalanceSeries, rand.New(rand.NewPCG(11, 7)))}
	for _, early := range []bool{true, false} {
		name := map[bool]string{true: "read before the series arrive", false: "read after they arrive"}[early]
		t.Run(name, func(t *testing.T) { r.moveToB(t, early) })
	}

	// The copy b took on arrival is from a's last minute's write; a's
	// write as it stopped, 20 steps later, replaces it at b's next read.
	// And when the series go back to a (b stops in turn), a goes on from
	// b's state, not from its own of before.
	t.Run("the latest write wins, also on the way back", r.latestWriteWins)

	// A second move before b read a's file (a rolling deploy stops b
	// within the minute): b writes the moved series as fresh, seen later
	// than a's states, and c, started next, still takes a's.
	t.Run("moved on before b read", r.movedOnBeforeBRead)
}

// rebalanceSeries is how many series each of replicas a and b serves in
// TestCalibrationFollowsARebalance, and rebalanceSteps how many steps
// they run before the move.
const rebalanceSeries, rebalanceSteps = 60, 200

// rebalance is what the subtests of TestCalibrationFollowsARebalance
// share: the model, the bands' levels and the feed of every series.
type rebalance struct {
	m      *model.Model
	levels []float64
	feed   *CalibrationFeed
}

// learner returns a learner of the model and levels as replica, with
// its checkpoints in dir.
func (r *rebalance) learner(t *testing.T, dir, replica string) *Learner {
	cfg := DefaultConfig()
	cfg.Intervals, cfg.CheckpointDir, cfg.Replica = r.levels, dir, replica
	l, err := New(cfg, r.m)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// compare returns the median and largest relative difference of the
// widths got (published by learner gl) from want's (by wl), for
// forecasts issued at step (want's at wantStep when given), once each
// is divided by its replica's
// shared shapes of the error (along the horizon and over the day),
// which each replica learns from its own series: what is left is the
// series' own calibration.
func (r *rebalance) compare(t *testing.T, got, want []float64, gl, wl *Learner, step int, wantStep ...int) (median, largest float64) {
	ws := step
	if len(wantStep) > 0 {
		ws = wantStep[0]
	}
	ratio := sharedUnit(gl, r.feed, step) / sharedUnit(wl, r.feed, ws)
	var d []float64
	for s := range want {
		if math.IsNaN(got[s]) || math.IsNaN(want[s]) {
			t.Fatalf("%s: published %v, the reference %v", r.feed.Sensors[s].Name, !math.IsNaN(got[s]), !math.IsNaN(want[s]))
		}
		d = append(d, math.Abs(got[s]/ratio-want[s])/want[s])
	}
	slices.Sort(d)
	return d[len(d)/2], d[len(d)-1]
}

// warm runs a on its series and b (with also, for comparison) on the
// others for the first steps, on dir, and returns the next step.
func (r *rebalance) warm(t *testing.T, dir string, also ...*Learner) (a, b *Learner, step int) {
	a, b = r.learner(t, dir, "a"), r.learner(t, dir, "b")
	for ; step < rebalanceSteps; step++ {
		r.feed.Observe(step, 0, rebalanceSeries, false, a)
		r.feed.Observe(step, rebalanceSeries, 2*rebalanceSeries, false, append([]*Learner{b}, also...)...)
	}
	return a, b, step
}

// moveToB stops a and moves its series to b, which reads a's file before
// they arrive (early) or after, and checks b's bands against a's, still
// fed them, and against a replica that never reads a's file; and that the
// series take a's state once.
func (r *rebalance) moveToB(t *testing.T, early bool) {
	const series = rebalanceSeries
	observe := r.feed.Observe
	dir := t.TempDir()
	alone := r.learner(t, t.TempDir(), "alone")
	a, b, step := r.warm(t, dir, alone)
	a.keepCalibration() // a stops
	b.keepCalibration()
	if early {
		b.adoptCalibrations()
	}
	// The series move to b, which reads them again from the last
	// committed offset: their last window again first. a, still fed
	// them, is the reference: the bands without the move.
	w := observe(step-1, 0, series, true, a, b)
	if !early {
		// Two new steps before b reads a's file: the running scale
		// b adopts is a's with b's steps since added, as a's is.
		for range 2 {
			observe(step, 0, series, false, a, b, alone)
			observe(step, series, 2*series, false, b, alone)
			step++
		}
		if n, err := b.tr.adoptCalibrations(b.store, b.fingerprint); err != nil || n != series {
			t.Fatalf("b adopted %d series (%v), want the %d moved", n, err, series)
		}
		for _, sn := range r.feed.Sensors[:series] {
			wa, wb := a.tr.series[sn.Name].welford[0], b.tr.series[sn.Name].welford[0]
			if wa.n != wb.n || math.Abs(wa.mean-wb.mean) > 1e-12*math.Abs(wa.mean) || math.Abs(wa.m2-wb.m2) > 1e-9*wa.m2 {
				t.Fatalf("%s: b's running scale after the move is %+v, a's %+v, want the same", sn.Name, wb, wa)
			}
		}
	}
	if med, top := r.compare(t, w[1], w[0], b, a, step-1); early {
		t.Logf("the last window again after the move: b's bands differ from a's by a median %.2g, at most %.2g", med, top)
		if top > 0.01 {
			t.Errorf("b's bands for the moved series differ from a's by up to %.3g of their width, want the same within the shapes' 1%%", top)
		}
	}
	for range 3 {
		observe(step, 0, series, false, a, b, alone)
		observe(step, series, 2*series, false, b, alone)
		step++
	}
	w = observe(step, 0, series, false, a, b, alone)
	med, top := r.compare(t, w[1], w[0], b, a, step)
	afresh, _ := r.compare(t, w[2], w[0], alone, a, step)
	t.Logf("three steps after the move b's bands differ from a's by a median %.2g (at most %.2g); a replica that does not read a's file by a median %.2g", med, top, afresh)
	if med > 0.1 || top > 0.5 {
		t.Errorf("b's bands for the moved series differ from a's by a median %.3g, at most %.3g, want under 0.1 and 0.5", med, top)
	}
	if afresh < 0.2 {
		t.Errorf("bands started afresh are within a median %.2g of the calibrated ones: the test cannot tell an adopted calibration", afresh)
	}
	// The first read counts the series that took a's state on
	// arrival (the log line says how many); none takes it again.
	first, _ := b.tr.adoptCalibrations(b.store, b.fingerprint)
	if want := map[bool]int{true: series, false: 0}[early]; first != want {
		t.Errorf("the next read counts %d series taken on arrival, want %d", first, want)
	}
	if n, err := b.tr.adoptCalibrations(b.store, b.fingerprint); err != nil || n != 0 {
		t.Errorf("reading a's file again, %d series took its state again (%v), want none", n, err)
	}
}

// latestWriteWins checks that b, having taken a's minute's write on
// arrival, takes a's last write at its next read, and that a, when the
// series go back to it, goes on from b's state.
func (r *rebalance) latestWriteWins(t *testing.T) {
	const series = rebalanceSeries
	observe := r.feed.Observe
	dir := t.TempDir()
	a, b, step := r.warm(t, dir)
	a.keepCalibration() // a's minute's write
	b.adoptCalibrations()
	for range 20 {
		observe(step, 0, series, false, a)
		step++
	}
	a.keepCalibration() // a stops
	observe(step-1, 0, series, true, b)
	b.adoptCalibrations()
	w := observe(step-1, 0, series, true, a, b)
	med, top := r.compare(t, w[1], w[0], b, a, step-1)
	t.Logf("b after reading a's last write: a median %.2g off a's bands, at most %.2g", med, top)
	if top > 0.01 {
		t.Errorf("b's bands differ from a's last by up to %.3g, want within 1%%: the copy taken on arrival was kept", top)
	}
	// b serves them 20 steps, stops; they go back to a.
	for range 20 {
		observe(step, 0, series, false, b)
		step++
	}
	b.keepCalibration()
	a.adoptCalibrations()
	ref := observe(step-1, 0, series, true, b)
	observe(step, 0, series, false, a) // a's first forecast back, then its minute's read
	a.adoptCalibrations()
	got := observe(step, 0, series, true, a)
	med, top = r.compare(t, got[0], ref[0], a, b, step, step-1)
	t.Logf("back on a: a median %.2g off b's bands, at most %.2g", med, top)
	if med > 0.05 {
		t.Errorf("back on a, the bands differ from b's last by a median %.3g, want within 5%%: a went on from its own old state", med)
	}
}

// movedOnBeforeBRead checks that series moved from a to b and on to c
// before b read a's file take a's state at c, not b's fresh one.
func (r *rebalance) movedOnBeforeBRead(t *testing.T) {
	const series = rebalanceSeries
	observe := r.feed.Observe
	dir := t.TempDir()
	a, b, step := r.warm(t, dir)
	a.keepCalibration()
	observe(step-1, 0, series, true, b)
	for range 2 {
		observe(step, 0, series, false, a, b)
		step++
	}
	b.keepCalibration() // stopped before reading a's file
	c := r.learner(t, dir, "c")
	w := observe(step-1, 0, series, true, a, c)
	med, top := r.compare(t, w[1], w[0], c, a, step-1)
	t.Logf("c's bands differ from a's by a median %.2g, at most %.2g", med, top)
	if med > 0.1 || top > 0.5 {
		t.Errorf("c's bands for the series moved twice differ from a's by a median %.3g, at most %.3g, want under 0.1 and 0.5: b's fresh states won", med, top)
	}
}

// TestSharedReplicaNameSaid: two replicas writing one calibration file (the
// same online.replica, or host name) overwrite each other's series; the
// one that finds its file written by another says so, once.
func TestSharedReplicaNameSaid(t *testing.T) {
	m := keepModel(t)
	dir := t.TempDir()
	var logs strings.Builder
	learner := func() *Learner {
		cfg := DefaultConfig()
		cfg.Intervals, cfg.CheckpointDir, cfg.Replica = []float64{0.8, 0.95}, dir, "same"
		l, err := New(cfg, m)
		if err != nil {
			t.Fatal(err)
		}
		l.log = slog.New(slog.NewTextHandler(&logs, nil))
		return l
	}
	a, b := learner(), learner()
	a.keepCalibration()
	time.Sleep(20 * time.Millisecond)
	a.keepCalibration() // its own write: nothing to say
	if strings.Contains(logs.String(), "another replica") {
		t.Fatalf("a replica's own writes were taken for another's: %s", logs.String())
	}
	time.Sleep(20 * time.Millisecond)
	b.keepCalibration()
	time.Sleep(20 * time.Millisecond)
	a.keepCalibration()
	a.keepCalibration()
	if n := strings.Count(logs.String(), "another replica writes"); n != 1 {
		t.Errorf("the shared file was said %d times, want once: %s", n, logs.String())
	}
}

// sharedUnit is what learner l's shared shapes of the error (along the
// horizon and over the day) make of the last step of a forecast of feed
// issued at step: the factor of every series' band there that the series'
// own state does not set.
func sharedUnit(l *Learner, feed *CalibrationFeed, step int) float64 {
	iv := l.tr.iv
	at := feed.t0.Add(time.Duration(step)*time.Hour).UnixNano() / int64(time.Hour)
	if !iv.shape() {
		return math.NaN()
	}
	iv.dayShape(at)
	return iv.m[(iv.H-1)*iv.C] * iv.day[(iv.H-1)*iv.C]
}
