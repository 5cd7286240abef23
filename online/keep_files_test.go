package online

import (
	"encoding/gob"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online/calibration"
)

// keepModel is the small independent model (L = 24, H = 6, hourly) the
// calibration files of these tests are for.
func keepModel(t *testing.T) *model.Model {
	t.Helper()
	m, err := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	return m
}

// writeCalibration writes a replica's calibration file name into dir, of
// two levels for a horizon of 6 and one channel, and returns its path.
func writeCalibration(t *testing.T, dir, name string, newest time.Time, fingerprint uint64, series map[string]calibration.Series) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := calibration.Snapshot{Version: calibration.Version, Levels: []float64{0.8, 0.95}, H: 6, C: 1, Newest: newest, Model: fingerprint,
		AbsErr: make([]float64, 6), Weight: make([]float64, 6),
		ProfSum: make([]float64, 24), ProfW: make([]float64, 24), ProfAt: make([]int64, 24), Series: series}
	if err := gob.NewEncoder(f).Encode(&sc); err != nil {
		t.Fatal(err)
	}
	return path
}

// stepOf is the hourly step of t, as a series' Last counts it.
func stepOf(t time.Time) int64 { return t.UnixNano() / int64(time.Hour) }

// savedState is a series' saved state with thresholds lo, last seen at
// step last.
func savedState(lo float64, last int64) calibration.Series {
	return calibration.Series{Lo: []float64{lo, lo}, Hi: []float64{lo, lo}, Expert: make([]float64, 4*experts), Loss: make([]float64, 4*lossStride), Level: []float64{1}, LevelW: []float64{1}, Fast: []float64{1}, Long: []float64{1}, LongW: []float64{1}, Away: []int16{0},
		MaxAbs: []float64{1}, Seen: []uint32{1}, Scale: []float64{0, 0, 0}, Last: last}
}

// TestStaleCalibrationFilesAreRemoved: of the replicas' calibration files,
// one whose newest step lies more than a lookback and horizon behind the
// newest file's (a replica gone with an old deploy) is removed when read;
// a recent one stays, and its series are restored.
func TestStaleCalibrationFilesAreRemoved(t *testing.T) {
	const L, H = 24, 6
	m := keepModel(t)
	dir := t.TempDir()
	levels := []float64{0.8, 0.95}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	write := func(name string, newest time.Time, series string) string {
		return writeCalibration(t, dir, name, newest, modelFingerprint(m), map[string]calibration.Series{series: savedState(1, stepOf(newest))})
	}
	recent := write("intervals-a.gob", now, "north")
	alsoRecent := write("intervals-b.gob", now.Add(-time.Duration(L+H-1)*time.Hour), "south")
	stale := write("intervals-c.gob", now.Add(-time.Duration(L+H+1)*time.Hour), "west")
	// A replica whose data lags as much, but which wrote its file a moment
	// ago, is alive: its file stays.
	lagging := write("intervals-d.gob", now.Add(-time.Duration(L+H+1)*time.Hour), "east")
	old := time.Now().Add(-time.Hour)
	for _, path := range []string{recent, alsoRecent, stale} {
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.Intervals, cfg.CheckpointDir = levels, dir
	l, err := New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{recent, alsoRecent, lagging} {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("a recent replica's file %s was removed: %v", filepath.Base(path), err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale file is still there (%v)", err)
	}
	// east, last seen more than L+H steps before the newest step, counts as
	// idle, as the tracker's expiry has it.
	if _, ok := l.tr.restored["north"]; !ok || len(l.tr.restored) != 2 {
		t.Errorf("restored %v, want north and south", l.tr.restored)
	}
}

// TestCalibrationMergesByNewestState: of two replicas' files holding the
// same series (it moved in a rebalance), the state seen last wins,
// whichever file is newer overall; a series idle longer than a lookback
// and horizon is not carried on (else every restart would carry it on,
// and a file would keep every series it ever saw); a
// file of another model is skipped; and a learner that restarts before its
// series come back keeps their saved states in its own file.
func TestCalibrationMergesByNewestState(t *testing.T) {
	m := keepModel(t)
	dir := t.TempDir()
	levels := []float64{0.8, 0.95}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	write := func(name string, newest time.Time, fingerprint uint64, series map[string]calibration.Series) {
		writeCalibration(t, dir, name, newest, fingerprint, series)
	}
	state := savedState
	// Replica a had the series until 20 steps ago and saw other data
	// later; replica b has had it since. Replica a also kept a series last
	// seen 31 steps ago, more than L+H = 30: idle, not carried on.
	at := stepOf(now)
	write("intervals-a.gob", now, modelFingerprint(m), map[string]calibration.Series{"north": state(111, at-20), "idle": state(444, at-31)})
	write("intervals-b.gob", now.Add(-time.Hour), modelFingerprint(m), map[string]calibration.Series{"north": state(222, at-5)})
	write("intervals-c.gob", now, modelFingerprint(m)+1, map[string]calibration.Series{"south": state(333, at)})
	cfg := DefaultConfig()
	cfg.Intervals, cfg.CheckpointDir = levels, dir
	l, err := New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.tr.restored["north"].Lo[0]; got != 222 || len(l.tr.restored) != 1 {
		t.Errorf("restored north with threshold %v (%d series: %v), want replica b's 222 alone", got, len(l.tr.restored), l.tr.restored)
	}
	// A write cut short an hour ago left its temporary file; the next
	// write removes it, and leaves a fresh one (another replica's write in
	// progress) alone.
	leftover, inProgress := filepath.Join(dir, ".intervals-123"), filepath.Join(dir, ".intervals-456")
	for _, p := range []string{leftover, inProgress} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(leftover, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Restarting before north comes back: its state is written again.
	if err := calibration.NewFileStore(dir, "").Save(l.tr.snapshot(l.fingerprint)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the leftover temporary file is still there (%v)", err)
	}
	if _, err := os.Stat(inProgress); err != nil {
		t.Errorf("a fresh temporary file was removed: %v", err)
	}
	for _, name := range []string{"intervals-a.gob", "intervals-b.gob", "intervals-c.gob"} {
		os.Remove(filepath.Join(dir, name))
	}
	again, err := New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := again.tr.restored["north"]; !ok || got.Lo[0] != 222 {
		t.Errorf("after a second restart north is restored as %+v (%v), want the saved 222", got, ok)
	}
}
