package online

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"time"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online/calibration"
)

// The learner's side of keeping the intervals' calibration (package
// calibration holds the layout, the stores and the rules that merge what
// replicas kept): snapshot turns the tracker's calibration into a
// calibration.Snapshot, restoreCalibration gives a starting tracker what
// the store holds, and adoptCalibrations, while it runs, the states of
// series a rebalance moves here (handedOver).

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
func (t *tracker) snapshot(fingerprint uint64) *calibration.Snapshot {
	t.mu.Lock()
	sc := calibration.Snapshot{
		Version: calibration.Version, Levels: t.iv.levels, H: t.H, C: t.C, Newest: t.newest, Model: fingerprint,
		AbsErr: slices.Clone(t.iv.absErr), Weight: slices.Clone(t.iv.weight),
		ProfSum: slices.Clone(t.iv.profSum), ProfW: slices.Clone(t.iv.profW), ProfAt: slices.Clone(t.iv.profAt),
		Fresh: t.iv.fresh, Steer: slices.Clone(t.iv.steer),
		Series: make(map[string]calibration.Series, len(t.series)+len(t.restored)),
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
		sc.Series[k] = calibration.Series{Lo: slices.Clone(v.lo), Hi: slices.Clone(v.hi), Completed: v.completed,
			Expert: slices.Clone(v.expert), Loss: slices.Clone(v.loss),
			Level: slices.Clone(v.level), LevelW: slices.Clone(v.levelW), Fast: slices.Clone(v.fast), Long: slices.Clone(v.long), LongW: slices.Clone(v.longW),
			MaxAbs: slices.Clone(v.maxAbs), Away: slices.Clone(v.away),
			Seen: slices.Clone(v.seen), Calibrated: v.calibrated, Scale: scale, Last: s.last,
			Fresh: s.fresh && v.completed < warmScores}
	}
	t.mu.Unlock()
	return &sc
}

// shape is what a kept calibration must match for t (serving the model
// of fingerprint) to use it.
func (t *tracker) shape(fingerprint uint64) calibration.Shape {
	return calibration.Shape{Levels: t.iv.levels, H: t.H, C: t.C, ProfileBins: len(t.iv.profSum), Experts: experts, LossStride: lossStride,
		Span: int64(t.L + t.H), Cadence: t.cadence, Model: fingerprint}
}

// restoreCalibration reads every replica's file in dir, keeping per series
// the newest state (by the step it was last seen at), and returns how many
// series it holds. A file of other levels or shapes, or of another
// model.path, is skipped and said in skipped. The pooled coverage
// correction, learnt from a replica's own series, comes from this replica's
// file (own) when it has one, else from the newest file that holds it.
func (t *tracker) restoreCalibration(store calibration.Store, fingerprint uint64, skipped func(where string, err error)) (int, error) {
	sh := t.shape(fingerprint)
	files, err := store.Read(sh, false, skipped)
	if err != nil || len(files) == 0 {
		return 0, err
	}
	for _, gone := range calibration.Gone(files, sh, time.Now()) {
		if err := store.Drop(gone); err != nil {
			skipped(gone.Where, fmt.Errorf("its replica is gone, but it stays until a later start: %w", err))
		}
		files = slices.DeleteFunc(files, func(k calibration.Kept) bool { return k.Where == gone.Where })
	}
	newest := calibration.Newest(files)
	restored := calibration.Merge(files, sh, newest.Newest)
	t.mu.Lock()
	defer t.mu.Unlock()
	copy(t.iv.absErr, newest.AbsErr)
	copy(t.iv.weight, newest.Weight)
	copy(t.iv.profSum, newest.ProfSum)
	copy(t.iv.profW, newest.ProfW)
	copy(t.iv.profAt, newest.ProfAt)
	t.iv.setSteer(calibration.PoolSource(files, store.Own(), len(t.iv.steer)).Steer)
	t.iv.shapeOK, t.iv.profDirty = false, true
	if len(newest.Shape) == len(t.iv.m) {
		copy(t.iv.m, newest.Shape)
		t.iv.shapeOK, t.iv.fresh = true, newest.Fresh
	}
	t.restored, t.restoredFrom = restored, newest.Newest
	t.restoredUntil = newest.Newest.Add(time.Duration(t.L+t.H) * t.cadence)
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
func (t *tracker) adoptCalibrations(store calibration.Store, fingerprint uint64) (int, error) {
	sh := t.shape(fingerprint)
	files, err := store.Read(sh, true, func(string, error) {})
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
	newest := calibration.Newest(files).Newest
	t.mu.Lock()
	if t.newest.After(newest) {
		newest = t.newest
	}
	t.mu.Unlock()
	others := calibration.Merge(files, sh, newest)
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
func (t *tracker) handedOver(s *seriesState, saved calibration.Series) bool {
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
func (t *tracker) adopt(s *seriesState, saved calibration.Series) {
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
	fs, file := l.store.(calibration.FileStore)
	// A file written since this learner's last write is another replica's
	// of the same name: the two overwrite each other's series.
	if file {
		if info, err := os.Stat(fs.Own()); err == nil && !l.keptAt.IsZero() && !info.ModTime().Equal(l.keptAt) && !l.shared {
			l.shared = true
			l.log.Warn("another replica writes this replica's interval calibration file, and each overwrites the other's series: give every replica sharing online.checkpoint_dir its own online.replica",
				"path", fs.Own())
		}
	}
	if err := l.store.Save(l.tr.snapshot(l.fingerprint)); err != nil {
		l.log.Warn("the interval calibration could not be kept; a restart starts it from the model's quantiles", "store", l.store.String(), "err", err)
		return
	}
	if info, err := os.Stat(fs.Own()); file && err == nil {
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
