package online

import (
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/freqlens/freqlens/model"
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
// here while this replica was down finds its state too when the replicas
// share the directory. A series last seen within L+H steps of the newest
// saved step takes its saved state when it is first seen again, within
// L+H steps of data time; the states not taken by then are dropped, as an
// idle series is, and until then they are written on into this replica's
// file, so that a second restart loses nothing. A file whose newest step
// lies more than L+H steps behind the newest file's, and which nobody has
// written for five minutes (a replica that is gone), is removed when read.

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
	Model          uint64    // the served model.path's fingerprint (modelFingerprint)
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
	return filepath.Join(dir, calibrationPrefix+strings.ReplaceAll(host, string(filepath.Separator), "_")+calibrationSuffix)
}

// The calibration files' names: intervals-<host>.gob.
const calibrationPrefix, calibrationSuffix = "intervals-", ".gob"

// modelFingerprint identifies the model a calibration was learned for (FNV-1a
// of its shapes, normalisation and parameters), so that a new model.path
// does not inherit another model's bands.
func modelFingerprint(m *model.Model) uint64 {
	h := fnv.New64a()
	var b [8]byte
	put := func(v float64) {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		h.Write(b[:])
	}
	cfg := m.Config()
	for _, v := range []int{cfg.Lookback, cfg.Horizon, cfg.Channels} {
		put(float64(v))
	}
	for _, v := range m.Meta.Mean {
		put(v)
	}
	for _, v := range m.Meta.Std {
		put(v)
	}
	for _, v := range m.Params().Data {
		put(v)
	}
	return h.Sum64()
}

// saveCalibration writes the tracker's interval calibration to path,
// atomically (a temporary file renamed over it).
func (t *tracker) saveCalibration(path string, fingerprint uint64) error {
	t.mu.Lock()
	sc := savedCalibration{
		Version: calibrationVersion, Levels: t.iv.levels, H: t.H, C: t.C, Newest: t.newest, Model: fingerprint,
		AbsErr: slices.Clone(t.iv.absErr), Weight: slices.Clone(t.iv.weight),
		Series: make(map[string]savedSeries, len(t.series)+len(t.restored)),
	}
	// The restored states no series has claimed yet are kept too, so that a
	// second restart before they are seen again loses nothing.
	if !t.newest.After(t.restoredUntil) { // once the data is past it, they are idle
		for k, s := range t.restored {
			sc.Series[k] = s
		}
		if t.restored != nil && t.restoredFrom.After(sc.Newest) {
			sc.Newest = t.restoredFrom
		}
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
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("online: writing the interval calibration: %w", err)
	}
	removeLeftovers(filepath.Dir(path))
	tmp, err := os.CreateTemp(filepath.Dir(path), ".intervals-*")
	if err != nil {
		return fmt.Errorf("online: writing the interval calibration: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil { // readable by replicas running as other users
		tmp.Close()
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

// removeLeftovers removes the temporary files of writes cut short (a
// kill -9 between creating and renaming one) that nobody has touched for an
// hour: no write takes that long.
func removeLeftovers(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".intervals-") {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Hour {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// restoreCalibration reads every replica's file in dir, keeping per series
// the newest state (by the step it was last seen at), and returns how many
// series it holds. A file of other levels or shapes, or of another
// model.path, is skipped and said in skipped.
func (t *tracker) restoreCalibration(dir string, fingerprint uint64, skipped func(path string, err error)) (int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	type file struct {
		savedCalibration
		path     string
		modified time.Time
	}
	var files []file
	for _, e := range ents {
		if e.IsDir() || !strings.HasPrefix(e.Name(), calibrationPrefix) || !strings.HasSuffix(e.Name(), calibrationSuffix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f := file{path: path}
		if info, err := e.Info(); err == nil {
			f.modified = info.ModTime()
		}
		r, err := os.Open(path)
		if err != nil {
			skipped(path, err)
			continue
		}
		err = gob.NewDecoder(r).Decode(&f.savedCalibration)
		r.Close()
		sc := &f.savedCalibration
		switch {
		case err != nil:
			skipped(path, err)
		case sc.Version != calibrationVersion:
			skipped(path, fmt.Errorf("layout version %d, this build reads %d", sc.Version, calibrationVersion))
		case !slices.Equal(sc.Levels, t.iv.levels) || sc.H != t.H || sc.C != t.C || len(sc.AbsErr) != t.H*t.C || len(sc.Weight) != t.H*t.C:
			skipped(path, fmt.Errorf("levels %v, horizon %d, %d channels: not those served now (%v, %d, %d)", sc.Levels, sc.H, sc.C, t.iv.levels, t.H, t.C))
		case sc.Model != fingerprint:
			skipped(path, errors.New("written for another model.path; its series start from this model's quantiles"))
		default:
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return 0, nil
	}
	// A file whose newest step lies more than a lookback and horizon
	// before the newest file's, and which nobody has written for a while,
	// holds only idle series: a replica that is gone (a pod's name changes
	// with every deploy). It is removed, so that the directory does not
	// fill with them; a live replica whose data lags rewrites its file
	// every calibrationEvery, and a file written since is kept.
	span := time.Duration(t.L+t.H) * t.cadence
	latest := slices.MaxFunc(files, func(a, b file) int { return a.Newest.Compare(b.Newest) }).Newest
	files = slices.DeleteFunc(files, func(f file) bool {
		if !f.Newest.Add(span).Before(latest) || time.Since(f.modified) < 5*calibrationEvery {
			return false
		}
		if info, err := os.Stat(f.path); err == nil && info.ModTime().Equal(f.modified) {
			os.Remove(f.path)
		}
		return true
	})
	k, C := len(t.iv.levels), t.C
	restored := map[string]savedSeries{}
	newest := files[0]
	for _, f := range files {
		if f.Newest.After(newest.Newest) {
			newest = f
		}
	}
	// A series last seen more than L+H steps before the newest step is
	// idle, as expire has it: its state is not carried over again, however
	// many restarts have carried it so far.
	idle := newest.Newest.UnixNano()/int64(t.cadence) - int64(t.L+t.H)
	for _, f := range files {
		for key, s := range f.Series {
			if len(s.Lo) != k*C || len(s.Hi) != k*C || len(s.Own) != C || len(s.Scale) != 3*C || s.Last < idle {
				continue
			}
			// The state last seen latest wins: after a rebalance the
			// replica that had the series last.
			if old, ok := restored[key]; !ok || s.Last > old.Last {
				restored[key] = s
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	copy(t.iv.absErr, newest.AbsErr)
	copy(t.iv.weight, newest.Weight)
	t.restored, t.restoredFrom = restored, newest.Newest
	t.restoredUntil = newest.Newest.Add(span)
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
	if err := l.tr.saveCalibration(calibrationPath(l.cfg.CheckpointDir), l.fingerprint); err != nil {
		l.log.Warn("the interval calibration could not be kept; a restart starts it from the model's quantiles", "err", err)
	}
}
