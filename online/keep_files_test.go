package online

import (
	"encoding/gob"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/freqlens/freqlens/model"
)

// TestStaleCalibrationFilesAreRemoved: of the replicas' calibration files,
// one whose newest step lies more than a lookback and horizon behind the
// newest file's (a replica gone with an old deploy) is removed when read;
// a recent one stays, and its series are restored.
func TestStaleCalibrationFilesAreRemoved(t *testing.T) {
	const L, H = 24, 6
	m, err := model.New(model.Config{Lookback: L, Horizon: H, Channels: 1, Mode: model.Independent, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	dir := t.TempDir()
	levels := []float64{0.8, 0.95}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	write := func(name string, newest time.Time, series string) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := savedCalibration{Version: calibrationVersion, Levels: levels, H: H, C: 1, Newest: newest,
			AbsErr: make([]float64, H), Weight: make([]float64, H),
			Series: map[string]savedSeries{series: {Lo: []float64{1, 2}, Hi: []float64{1, 2}, Own: []float64{0}, Scale: []float64{0, 0, 0}}}}
		if err := gob.NewEncoder(f).Encode(&sc); err != nil {
			t.Fatal(err)
		}
		return path
	}
	recent := write("intervals-a.gob", now, "north")
	alsoRecent := write("intervals-b.gob", now.Add(-time.Duration(L+H-1)*time.Hour), "south")
	stale := write("intervals-c.gob", now.Add(-time.Duration(L+H+1)*time.Hour), "west")
	cfg := DefaultConfig()
	cfg.Intervals, cfg.CheckpointDir = levels, dir
	l, err := New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{recent, alsoRecent} {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("a recent replica's file %s was removed: %v", filepath.Base(path), err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale file is still there (%v)", err)
	}
	if _, ok := l.tr.restored["north"]; !ok || len(l.tr.restored) != 2 {
		t.Errorf("restored %v, want north and south", l.tr.restored)
	}
}
