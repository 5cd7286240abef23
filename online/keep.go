package online

import (
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/fnv"
	iofs "io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/freqlens/freqlens/model"
)

// Keeping the intervals' calibration across a restart or a rebalance.
//
// What the online step learned of each series' intervals (its thresholds,
// how far its warm-up got) would otherwise start again from the serving
// version's quantiles after every deploy, restart or rebalance, and a
// series whose errors differ from the others' would publish bands of the
// wrong width for its first few dozen forecasts. So a learner with a
// CheckpointDir writes it there every CalibrationEvery and when Run ends,
// one file per replica (intervals-<host>.gob, replaced atomically), and a
// new learner reads every such file of the directory: a series that moved
// here while this replica was down finds its state too when the replicas
// share the directory. A series last seen within L+H steps of the newest
// saved step takes its saved state when it is first seen again, within
// L+H steps of data time; the states not taken by then are dropped, as an
// idle series is, and until then they are written on into this replica's
// file, so that a second restart loses nothing. A file whose newest step
// lies more than L+H steps behind the newest file's, and which nobody has
// written for five minutes (a replica that is gone), is removed when a
// learner starts and reads it. A running learner reads the other replicas'
// files too, before each write and once more as it stops
// (adoptCalibrations), so that a series a rebalance moves to it, or back
// to it, goes on from the state of the replica it came from (handedOver).

// goneAfter is how long a replica's calibration must have gone unwritten,
// besides holding only idle series, before a starting replica removes it:
// five of the default saves.
const goneAfter = 5 * time.Minute

// calibrationVersion is the layout of the saved files. Layout 2 keeps the
// thresholds in units of each series' error level; a file of another layout
// is skipped, and its series start from the model's quantiles once.
const calibrationVersion = 2

// savedCalibration is one replica's file.
type savedCalibration struct {
	Version        int
	Levels         []float64
	H, C           int
	Newest         time.Time // data time of the newest step seen
	Model          uint64    // the served model.path's fingerprint (modelFingerprint)
	AbsErr, Weight []float64 // the shape of the error along the horizon
	// ProfSum, ProfW and ProfAt are the shape over the day (intervals'
	// profSum, profW and profAt).
	ProfSum, ProfW []float64
	ProfAt         []int64
	// Shape is the horizon shape in use (intervals.m), Fresh the errors
	// noted since it was computed, so that a restart goes on with it.
	Shape []float64
	Fresh int
	// Steer is the pooled coverage correction (intervals.steer); a file
	// without it starts the correction at 1.
	Steer  []float64
	Series map[string]savedSeries
}

// savedSeries is one series' calibration: its thresholds, its error level
// (with its weight, slow level, largest recent error and the errors it
// rests on, per channel), its warm-up, and the running scale its errors
// are normalised by (count, mean and sum of squares per channel).
type savedSeries struct {
	Lo, Hi                                   []float64
	Expert, Loss                             []float64
	Level, LevelW, Fast, Long, LongW, MaxAbs []float64
	Away                                     []int16
	Seen                                     []uint32
	Completed                                int
	Calibrated                               bool
	Scale                                    []float64
	Last                                     int64 // the newest step the scale holds
	// Fresh marks a state that started on this replica from none and is
	// still warming up: a series a rebalance moved here that has not yet
	// taken the state of the replica that had it.
	Fresh bool
}

// calibrationPath is the file in dir of the replica named replica (the
// host name when empty).
func calibrationPath(dir, replica string) string {
	return filepath.Join(dir, calibrationPrefix+strings.ReplaceAll(replicaName(replica), string(filepath.Separator), "_")+calibrationSuffix)
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

// snapshot returns the tracker's interval calibration, as a store keeps it.
func (t *tracker) snapshot(fingerprint uint64) *savedCalibration {
	t.mu.Lock()
	sc := savedCalibration{
		Version: calibrationVersion, Levels: t.iv.levels, H: t.H, C: t.C, Newest: t.newest, Model: fingerprint,
		AbsErr: slices.Clone(t.iv.absErr), Weight: slices.Clone(t.iv.weight),
		ProfSum: slices.Clone(t.iv.profSum), ProfW: slices.Clone(t.iv.profW), ProfAt: slices.Clone(t.iv.profAt),
		Fresh: t.iv.fresh, Steer: slices.Clone(t.iv.steer),
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
	if t.iv.shapeOK {
		sc.Shape = slices.Clone(t.iv.m)
	}
	for k, s := range t.series {
		v := s.iv
		scale := make([]float64, 0, 3*t.C)
		for _, w := range s.welford {
			scale = append(scale, w.n, w.mean, w.m2)
		}
		sc.Series[k] = savedSeries{Lo: slices.Clone(v.lo), Hi: slices.Clone(v.hi), Completed: v.completed,
			Expert: slices.Clone(v.expert), Loss: slices.Clone(v.loss),
			Level: slices.Clone(v.level), LevelW: slices.Clone(v.levelW), Fast: slices.Clone(v.fast), Long: slices.Clone(v.long), LongW: slices.Clone(v.longW),
			MaxAbs: slices.Clone(v.maxAbs), Away: slices.Clone(v.away),
			Seen: slices.Clone(v.seen), Calibrated: v.calibrated, Scale: scale, Last: s.last,
			Fresh: s.fresh && v.completed < warmScores}
	}
	t.mu.Unlock()
	return &sc
}

// save writes sc to this replica's file, atomically (a temporary file
// renamed over it).
func (fs fileStore) save(sc *savedCalibration) error {
	path := fs.own
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
	if err := gob.NewEncoder(tmp).Encode(sc); err != nil {
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

// calibrationFile is one replica's calibration as a store holds it, with
// where it lies (a file's path, or the replica's name on a topic) and when
// it was last written.
type calibrationFile struct {
	savedCalibration
	path     string
	modified time.Time
}

// calibrationStore is where the replicas keep their interval calibrations
// for each other: a directory with one file per replica (fileStore,
// online.checkpoint_dir) or a compacted topic keyed by series (topicStore,
// topics.state).
type calibrationStore interface {
	// save writes this replica's calibration.
	save(sc *savedCalibration) error
	// read returns the calibrations the store holds, this replica's own
	// too unless others, each as one calibrationFile. Those t cannot use
	// (unreadable, another layout, other levels or shapes, another
	// model.path) are said to skipped.
	read(t *tracker, fingerprint uint64, others bool, skipped func(where string, err error)) ([]calibrationFile, error)
	// drop forgets the calibration f of a replica that is gone.
	drop(f calibrationFile)
	// ownPath is where read puts this replica's calibration (its path).
	ownPath() string
	// String says where the store is, for the log.
	String() string
}

// fileStore keeps the calibrations as files in dir, this replica's at own.
type fileStore struct{ dir, own string }

func (fs fileStore) ownPath() string { return fs.own }
func (fs fileStore) String() string  { return fs.dir }

// read decodes the calibration files in dir (but this replica's with others).
func (fs fileStore) read(t *tracker, fingerprint uint64, others bool, skipped func(path string, err error)) ([]calibrationFile, error) {
	ents, err := os.ReadDir(fs.dir)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []calibrationFile
	for _, e := range ents {
		if e.IsDir() || !strings.HasPrefix(e.Name(), calibrationPrefix) || !strings.HasSuffix(e.Name(), calibrationSuffix) {
			continue
		}
		path := filepath.Join(fs.dir, e.Name())
		if others && path == fs.own {
			continue
		}
		f := calibrationFile{path: path}
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
		if err == nil {
			err = t.usable(&f.savedCalibration, fingerprint)
		}
		if err != nil {
			skipped(path, err)
			continue
		}
		files = append(files, f)
	}
	return files, nil
}

// drop removes the file of f unless it was written since it was read.
func (fs fileStore) drop(f calibrationFile) {
	if info, err := os.Stat(f.path); err == nil && info.ModTime().Equal(f.modified) {
		os.Remove(f.path)
	}
}

// usable says why t cannot use the saved calibration sc, or nil when it can.
func (t *tracker) usable(sc *savedCalibration, fingerprint uint64) error {
	switch {
	case sc.Version != calibrationVersion:
		return fmt.Errorf("layout version %d, this build reads %d", sc.Version, calibrationVersion)
	case !slices.Equal(sc.Levels, t.iv.levels) || sc.H != t.H || sc.C != t.C || len(sc.AbsErr) != t.H*t.C || len(sc.Weight) != t.H*t.C ||
		len(sc.ProfSum) != len(t.iv.profSum) || len(sc.ProfW) != len(t.iv.profW) || len(sc.ProfAt) != len(t.iv.profAt):
		return fmt.Errorf("levels %v, horizon %d, %d channels: not those served now (%v, %d, %d)", sc.Levels, sc.H, sc.C, t.iv.levels, t.H, t.C)
	case sc.Model != fingerprint:
		return errors.New("written for another model.path; its series start from this model's quantiles")
	}
	return nil
}

// newestFile is the file of files whose newest step is the latest.
// poolSource is the file whose pooled correction (of n values) a restart
// takes: the replica's own (at path own), else the newest that has one.
func poolSource(files []calibrationFile, own string, n int) calibrationFile {
	var best calibrationFile
	for _, f := range files {
		if len(f.Steer) != n {
			continue
		}
		if f.path == own {
			return f
		}
		if best.Steer == nil || f.Newest.After(best.Newest) {
			best = f
		}
	}
	return best
}

func newestFile(files []calibrationFile) calibrationFile {
	return slices.MaxFunc(files, func(a, b calibrationFile) int { return a.Newest.Compare(b.Newest) })
}

// mergeCalibrations returns, per series, the state of files last seen
// latest (after a rebalance, the replica's that had the series last),
// leaving out the series idle at newest: last seen more than L+H steps
// before it, as expire has it, so that no restart carries them over again.
// A state's thresholds are in units of its own error level, and its level
// in units of its scale, so a state means the same to every replica.
func (t *tracker) mergeCalibrations(files []calibrationFile, newest time.Time) map[string]savedSeries {
	k, C := len(t.iv.levels), t.C
	idle := newest.UnixNano()/int64(t.cadence) - int64(t.L+t.H)
	merged := map[string]savedSeries{}
	for _, f := range files {
		for key, s := range f.Series {
			if len(s.Lo) != k*C || len(s.Hi) != k*C || len(s.Expert) != 2*k*C*experts || len(s.Loss) != 2*k*C*lossStride || len(s.Level) != C || len(s.LevelW) != C || len(s.Fast) != C || len(s.Long) != C || len(s.LongW) != C || len(s.Away) != C ||
				len(s.MaxAbs) != C || len(s.Seen) != C || len(s.Scale) != 3*C || s.Last < idle {
				continue
			}
			if old, ok := merged[key]; ok && !newerState(s, old, int64(t.L+t.H)) {
				continue
			}
			merged[key] = s
		}
	}
	return merged
}

// newerState reports whether state s of a series replaces state old of it
// in another file: the one seen last wins (after a rebalance, the replica
// that had the series last), except that a fresh state (a replica the
// series reached that had not yet taken its calibration) loses to one that
// is not and was seen within span steps of it.
func newerState(s, old savedSeries, span int64) bool {
	if s.Fresh != old.Fresh && max(s.Last-old.Last, old.Last-s.Last) <= span {
		return !s.Fresh
	}
	return s.Last > old.Last
}

// restoreCalibration reads every replica's file in dir, keeping per series
// the newest state (by the step it was last seen at), and returns how many
// series it holds. A file of other levels or shapes, or of another
// model.path, is skipped and said in skipped. The pooled coverage
// correction, learnt from a replica's own series, comes from this replica's
// file (own) when it has one, else from the newest file that holds it.
func (t *tracker) restoreCalibration(store calibrationStore, fingerprint uint64, skipped func(where string, err error)) (int, error) {
	files, err := store.read(t, fingerprint, false, skipped)
	if err != nil || len(files) == 0 {
		return 0, err
	}
	// A file whose newest step lies more than a lookback and horizon
	// before the newest file's, and which nobody has written for a while,
	// holds only idle series: a replica that is gone (a pod's name changes
	// with every deploy). It is removed, so that the directory does not
	// fill with them; a live replica whose data lags rewrites its file
	// every CalibrationEvery, and a file written since is kept.
	span := time.Duration(t.L+t.H) * t.cadence
	latest := newestFile(files).Newest
	files = slices.DeleteFunc(files, func(f calibrationFile) bool {
		if !f.Newest.Add(span).Before(latest) || time.Since(f.modified) < goneAfter {
			return false
		}
		store.drop(f)
		return true
	})
	newest := newestFile(files)
	restored := t.mergeCalibrations(files, newest.Newest)
	t.mu.Lock()
	defer t.mu.Unlock()
	copy(t.iv.absErr, newest.AbsErr)
	copy(t.iv.weight, newest.Weight)
	copy(t.iv.profSum, newest.ProfSum)
	copy(t.iv.profW, newest.ProfW)
	copy(t.iv.profAt, newest.ProfAt)
	t.iv.setSteer(poolSource(files, store.ownPath(), len(t.iv.steer)).Steer)
	t.iv.shapeOK, t.iv.profDirty = false, true
	if len(newest.Shape) == len(t.iv.m) {
		copy(t.iv.m, newest.Shape)
		t.iv.shapeOK, t.iv.fresh = true, newest.Fresh
	}
	t.restored, t.restoredFrom = restored, newest.Newest
	t.restoredUntil = newest.Newest.Add(span)
	return len(restored), nil
}

// adoptCalibrations reads the other replicas' files in dir (all but own)
// while this replica runs, so that a series a rebalance moves here from a
// running or stopping replica keeps what that replica learned of it: a
// tracked series takes another replica's state that handedOver says it
// should go on from (adopt), and one not seen here yet takes it when it
// is (newState). Files this replica cannot use are passed over in silence:
// they were said at start. It returns how many series took another
// replica's state since the last read, on arrival or now.
func (t *tracker) adoptCalibrations(store calibrationStore, fingerprint uint64) (int, error) {
	files, err := store.read(t, fingerprint, true, func(string, error) {})
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		t.mu.Lock()
		t.others = nil
		t.mu.Unlock()
		return 0, nil
	}
	// Merged outside the lock, which forecasts wait for: the files can
	// hold every series of the fleet.
	newest := newestFile(files).Newest
	t.mu.Lock()
	if t.newest.After(newest) {
		newest = t.newest
	}
	t.mu.Unlock()
	others := t.mergeCalibrations(files, newest)
	t.mu.Lock()
	defer t.mu.Unlock()
	adopted := t.tookOnArrival
	t.tookOnArrival = 0
	for key, saved := range others {
		if s, ok := t.series[key]; ok {
			if t.handedOver(s, saved) {
				t.adopt(s, saved)
				adopted++
			}
			delete(others, key)
		} else if r, ok := t.restored[key]; ok && r.Last >= saved.Last {
			delete(others, key) // this replica's own saved state is as new
		}
	}
	t.others = others
	return adopted, nil
}

// handedOver reports whether another replica's state saved of series s
// is the one s should go on from: that replica had the series after this
// one last saw it before its current run (a rebalance moved it here, or
// back here), saw it no later than a lookback and horizon into that run
// (the steps a replica taking over reads again), and it is newer than the
// state s already took. Another replica's later write of a series that
// moved here (its write as it stopped, after the copy s took on arrival)
// so replaces that copy, while a replica that serves the series beside
// this one does not hand its state back and forth. t.mu is held.
func (t *tracker) handedOver(s *seriesState, saved savedSeries) bool {
	return !saved.Fresh && saved.Last > s.before && saved.Last > s.taken && saved.Last <= s.arrived+int64(t.L+t.H)
}

// takeRestored gives the new series s the saved calibration of series key,
// if any: this replica's or another's read at start (restored), or another
// replica's read since (others). t.mu is held.
func (t *tracker) takeRestored(key []byte, s *seriesState) {
	saved, ok := t.restored[string(key)]
	if other, ook := t.others[string(key)]; ook && (!ok || other.Last > saved.Last) {
		saved, ok = other, true
	}
	if !ok {
		return
	}
	delete(t.restored, string(key))
	if _, other := t.others[string(key)]; other {
		delete(t.others, string(key))
		t.tookOnArrival++
	}
	t.adopt(s, saved)
}

// adopt gives series s the saved calibration saved: its thresholds, its
// warm-up and its running scale, to which the values s has seen since the
// saved state's last step are added. t.mu is held.
func (t *tracker) adopt(s *seriesState, saved savedSeries) {
	s.fresh, s.taken = false, saved.Last
	v := s.iv
	t.iv.leave(v)
	copy(v.lo, saved.Lo)
	copy(v.hi, saved.Hi)
	copy(v.expert, saved.Expert)
	copy(v.loss, saved.Loss)
	for i := range v.snapAt {
		// The copies of the experts this replica took judge forecasts it
		// issued from another state: the experts learn again from the
		// forecasts issued from now on.
		v.snapAt[i] = none
	}
	copy(v.level, saved.Level)
	copy(v.levelW, saved.LevelW)
	copy(v.fast, saved.Fast)
	copy(v.long, saved.Long)
	copy(v.longW, saved.LongW)
	copy(v.away, saved.Away)
	copy(v.maxAbs, saved.MaxAbs)
	copy(v.seen, saved.Seen)
	v.completed = saved.Completed
	if saved.Calibrated {
		t.iv.join(v)
	}
	for c := range s.welford {
		s.welford[c] = welford{n: saved.Scale[3*c], mean: saved.Scale[3*c+1], m2: saved.Scale[3*c+2]}
	}
	if s.last != none {
		C := t.C
		ring := s.ring(C)
		for st := max(saved.Last+1, s.first, s.last-int64(ring)+1); st <= s.last; st++ {
			v := s.values[mod(st, ring)*C:][:C]
			for c := range C {
				s.welford[c].add(float64(v[c]))
			}
		}
	}
	s.scaledTo = max(s.scaledTo, saved.Last)
}

// keepCalibration writes the calibration to the store, logging a
// failure: the next write tries again.
func (l *Learner) keepCalibration() {
	if l.store == nil || l.tr.iv == nil {
		return
	}
	fs, file := l.store.(fileStore)
	// A file written since this learner's last write is another replica's
	// of the same name: the two overwrite each other's series.
	if file {
		if info, err := os.Stat(fs.own); err == nil && !l.keptAt.IsZero() && !info.ModTime().Equal(l.keptAt) && !l.shared {
			l.shared = true
			l.log.Warn("another replica writes this replica's interval calibration file, and each overwrites the other's series: give every replica sharing online.checkpoint_dir its own online.replica",
				"path", fs.own)
		}
	}
	if err := l.store.save(l.tr.snapshot(l.fingerprint)); err != nil {
		l.log.Warn("the interval calibration could not be kept; a restart starts it from the model's quantiles", "store", l.store.String(), "err", err)
		return
	}
	if info, err := os.Stat(fs.own); file && err == nil {
		l.keptAt = info.ModTime()
	}
}

// adoptCalibrations reads the other replicas' calibrations in the store,
// for the series a rebalance moved here, logging a failure: the next read
// tries again.
func (l *Learner) adoptCalibrations() {
	if l.store == nil || l.tr.iv == nil {
		return
	}
	n, err := l.tr.adoptCalibrations(l.store, l.fingerprint)
	if err != nil {
		l.log.Warn("the other replicas' interval calibration could not be read; series moved here keep starting from the model's quantiles", "store", l.store.String(), "err", err)
	}
	if n > 0 {
		l.log.Info("series moved here by a rebalance took the interval calibration of the replica that had them", "series", n)
	}
}
