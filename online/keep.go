package online

import (
	"encoding/gob"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Keeping the intervals' calibration across a restart.
//
// What the online step learned of each series' intervals (its thresholds,
// how far its warm-up got) would otherwise start again from the serving
// version's quantiles after every deploy, restart or rebalance, and a
// series whose errors differ from the others' would publish bands of the
// wrong width for its first few dozen forecasts. So a learner with a
// CheckpointDir writes it there every calibrationEvery and when Run ends,
// one file per replica (intervals-<host>.gob, replaced atomically), and a
// new learner reads every such file of the directory: a series that moved
// here in a rebalance finds its state too when the replicas share the
// directory. A series takes its saved state when it is first seen, within
// L+H steps of data time of the newest saved one; after that the saved
// states are dropped, as an idle series is. A file whose newest step lies
// further back than that behind the newest file's (a replica that is gone)
// is removed when read.

// calibrationEvery is how often Run writes the calibration: what a kill -9
// can lose.
const calibrationEvery = time.Minute

// calibrationVersion is the layout of the saved files.
const calibrationVersion = 1

// savedCalibration is one replica's file.
type savedCalibration struct {
	Version        int
	Levels         []float64
	H, C           int
	Newest         time.Time // data time of the newest step seen
	AbsErr, Weight []float64 // the shape of the error along the horizon
	Series         map[string]savedSeries
}

// savedSeries is one series' calibration: its thresholds, its warm-up,
// and the running scale its errors are normalised by (count, mean and sum
// of squares per channel), which the thresholds are in units of.
type savedSeries struct {
	Lo, Hi     []float64
	Completed  int
	Own        []float64
	Owned      int
	Calibrated bool
	Scale      []float64
	Last       int64 // the newest step the scale holds
}

// calibrationPath is this replica's file in dir.
func calibrationPath(dir string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "replica"
	}
	return filepath.Join(dir, "intervals-"+strings.ReplaceAll(host, string(filepath.Separator), "_")+".gob")
}

// saveCalibration writes the tracker's interval calibration to path,
// atomically (a temporary file renamed over it).
func (t *tracker) saveCalibration(path string) error {
	t.mu.Lock()
	sc := savedCalibration{
		Version: calibrationVersion, Levels: t.iv.levels, H: t.H, C: t.C, Newest: t.newest,
		AbsErr: slices.Clone(t.iv.absErr), Weight: slices.Clone(t.iv.weight),
		Series: make(map[string]savedSeries, len(t.series)),
	}
	for k, s := range t.series {
		v := s.iv
		scale := make([]float64, 0, 3*t.C)
		for _, w := range s.welford {
			scale = append(scale, w.n, w.mean, w.m2)
		}
		sc.Series[k] = savedSeries{Lo: slices.Clone(v.lo), Hi: slices.Clone(v.hi), Completed: v.completed,
			Own: slices.Clone(v.own), Owned: v.owned, Calibrated: v.calibrated, Scale: scale, Last: s.last}
	}
	t.mu.Unlock()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".intervals-*")
	if err != nil {
		return fmt.Errorf("online: writing the interval calibration: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is none
	if err := gob.NewEncoder(tmp).Encode(&sc); err != nil {
		tmp.Close()
		return fmt.Errorf("online: writing the interval calibration to %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("online: writing the interval calibration to %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("online: writing the interval calibration to %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("online: writing the interval calibration: %w", err)
	}
	return nil
}

// restoreCalibration reads every replica's file in dir, keeping per series
// the state of the file with the newest data, and returns how many series
// it holds. A file of other levels or shapes (another model or
// configuration) is skipped, and said in skipped.
func (t *tracker) restoreCalibration(dir string, skipped func(path string, err error)) (int, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "intervals-*.gob"))
	if err != nil {
		return 0, err
	}
	var files []savedCalibration
	var names []string // the files' paths, in the order of files
	for _, path := range paths {
		var sc savedCalibration
		f, err := os.Open(path)
		if err != nil {
			skipped(path, err)
			continue
		}
		err = gob.NewDecoder(f).Decode(&sc)
		f.Close()
		switch {
		case err != nil:
			skipped(path, err)
		case sc.Version != calibrationVersion:
			skipped(path, fmt.Errorf("layout version %d, this build reads %d", sc.Version, calibrationVersion))
		case !slices.Equal(sc.Levels, t.iv.levels) || sc.H != t.H || sc.C != t.C || len(sc.AbsErr) != t.H*t.C || len(sc.Weight) != t.H*t.C:
			skipped(path, fmt.Errorf("levels %v, horizon %d, %d channels: not those served now (%v, %d, %d)", sc.Levels, sc.H, sc.C, t.iv.levels, t.H, t.C))
		default:
			files, names = append(files, sc), append(names, path)
		}
	}
	if len(files) == 0 {
		return 0, nil
	}
	// A file whose newest step lies more than a lookback and horizon
	// before the newest file's holds only idle series: a replica that is
	// gone (a pod's name changes with every deploy). It is removed, so
	// that the directory does not fill with them.
	span := time.Duration(t.L+t.H) * t.cadence
	latest := slices.MaxFunc(files, func(a, b savedCalibration) int { return a.Newest.Compare(b.Newest) }).Newest
	for i := 0; i < len(files); {
		if files[i].Newest.Add(span).Before(latest) {
			os.Remove(names[i])
			files, names = slices.Delete(files, i, i+1), slices.Delete(names, i, i+1)
			continue
		}
		i++
	}
	slices.SortFunc(files, func(a, b savedCalibration) int { return a.Newest.Compare(b.Newest) })
	k, C := len(t.iv.levels), t.C
	restored := map[string]savedSeries{}
	for _, sc := range files { // the newest last, so its states win
		for key, s := range sc.Series {
			if len(s.Lo) == k*C && len(s.Hi) == k*C && len(s.Own) == C && len(s.Scale) == 3*C {
				restored[key] = s
			}
		}
	}
	newest := files[len(files)-1]
	t.mu.Lock()
	defer t.mu.Unlock()
	copy(t.iv.absErr, newest.AbsErr)
	copy(t.iv.weight, newest.Weight)
	t.restored, t.restoredUntil = restored, newest.Newest.Add(time.Duration(t.L+t.H)*t.cadence)
	return len(restored), nil
}

// takeRestored gives series s the saved calibration of series key, if
// any. t.mu is held.
func (t *tracker) takeRestored(key []byte, s *seriesState) {
	saved, ok := t.restored[string(key)]
	if !ok {
		return
	}
	delete(t.restored, string(key))
	v := s.iv
	t.iv.leave(v)
	copy(v.lo, saved.Lo)
	copy(v.hi, saved.Hi)
	copy(v.own, saved.Own)
	v.completed, v.owned = saved.Completed, saved.Owned
	if saved.Calibrated {
		t.iv.join(v)
	}
	for c := range s.welford {
		s.welford[c] = welford{n: saved.Scale[3*c], mean: saved.Scale[3*c+1], m2: saved.Scale[3*c+2]}
	}
	s.scaledTo = saved.Last
}

// keepCalibration writes the calibration to this replica's file in
// CheckpointDir, logging a failure: the next write tries again.
func (l *Learner) keepCalibration() {
	if l.cfg.CheckpointDir == "" || l.tr.iv == nil {
		return
	}
	if err := l.tr.saveCalibration(calibrationPath(l.cfg.CheckpointDir)); err != nil {
		l.log.Warn("the interval calibration could not be kept; a restart starts it from the model's quantiles", "err", err)
	}
}
