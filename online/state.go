package online

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// Keeping the intervals' calibration on a state topic.
//
// On Kubernetes the replicas share no disk, so a learner given a
// StateStore (WithStateStore: topics.state, a compacted Kafka topic) keeps
// there what it would keep in its file under CheckpointDir: one record per
// series, keyed by the series, written at every save whose state changed,
// and one pooled record per replica (the shapes of the error along the
// horizon and over the day, and the coverage correction), keyed
// "\x00pool\x00<replica>". A learner reads the whole topic when it starts
// (StateStore.Sync) and the records written since before every save, and
// groups them by the replica that wrote them: each group is what that
// replica's file would be, and the restore, the hand-over after a
// rebalance and the removal of a gone replica's pooled record follow the
// same rules as the files' (keep.go). What compaction would lose, the
// writer guards: a state is written only when it is newer than the
// topic's (newerState), so a replica that still holds a series a
// rebalance moved away, or one that starts it afresh, does not overwrite
// the state the series goes on from. A series idle for a lookback and a
// horizon is deleted by a tombstone.
//
// Every record starts with its layout version; a record this build cannot
// read is skipped, counted (freqlens_online_state_records_skipped_total)
// and said in one WARN per read, never a crash.

// StateStore is a compacted topic of per-series state that every replica
// reads and writes: the latest value of each key, as Kafka keeps it.
// broadcast.States implements it on topics.state.
type StateStore interface {
	// Sync reads what was written since the last call (everything, the
	// first time) up to the store's end as of the call, and returns the
	// latest value of every key. The map stays the store's: it is read,
	// not changed, and only until the next call.
	Sync(ctx context.Context) (map[string][]byte, error)
	// Put writes values[i] under keys[i], a nil value being a tombstone
	// that deletes the key, and returns once the store holds them all.
	Put(ctx context.Context, keys []string, values [][]byte) error
	// Name says where the store is, for the log.
	Name() string
}

// stateVersion is the layout of the state topic's records (stateMagic and
// this byte start each one). A record of another layout is skipped.
const stateVersion = 1

const (
	stateMagic  = "FLS"
	kindSeries  = 1
	kindPool    = 2
	poolKeyHead = "\x00pool\x00"
)

// Bounds of one state read and one save: a restore reads the whole topic.
const (
	stateRestoreTimeout = 2 * time.Minute
	stateSyncTimeout    = 30 * time.Second
)

// topicStore keeps the calibrations on a StateStore (see above).
type topicStore struct {
	states  StateStore
	replica string
	span    int64 // a lookback and a horizon, in steps
	cadence time.Duration
	// known is the latest state of each series key on the topic, as this
	// replica last read or wrote it: what a save compares with.
	known map[string]knownState
	// timeout bounds the next read (the first reads the whole topic).
	timeout time.Duration
	// malformed is told how many records a read skipped; written counts
	// the bytes of each save; shared is called when a read finds this
	// replica's pooled record written by another replica of its name.
	malformed func(n int, first error)
	written   func(records, bytes int)
	shared    func()
	// wroteAt is when this replica last wrote its pooled record.
	wroteAt time.Time
}

// knownState is what a save needs of a series' record on the topic: the
// step it was last seen at, whether it is fresh, and a hash of its state.
type knownState struct {
	last  int64
	fresh bool
	sum   uint64
}

func newTopicStore(states StateStore, replica string, span int64, cadence time.Duration) *topicStore {
	return &topicStore{states: states, replica: replica, span: span, cadence: cadence, known: map[string]knownState{},
		timeout: stateRestoreTimeout, malformed: func(int, error) {}, written: func(int, int) {}, shared: func() {}}
}

func poolKey(replica string) string { return poolKeyHead + replica }

func (ts *topicStore) ownPath() string { return "replica " + ts.replica }
func (ts *topicStore) String() string  { return ts.states.Name() }

// read returns one calibrationFile per replica with a pooled record on the
// topic, holding the series whose latest record that replica wrote.
// Series of a replica without one (removed as gone) are idle, and left out.
func (ts *topicStore) read(t *tracker, fingerprint uint64, others bool, skipped func(where string, err error)) ([]calibrationFile, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ts.timeout)
	defer cancel()
	vals, err := ts.states.Sync(ctx)
	if err != nil {
		return nil, err
	}
	ts.timeout = stateSyncTimeout
	groups := map[string]*calibrationFile{}
	unusable := map[string]bool{}
	var bad int
	var firstErr error
	fail := func(err error) {
		if bad++; firstErr == nil {
			firstErr = err
		}
	}
	for key, v := range vals {
		if !strings.HasPrefix(key, poolKeyHead) {
			continue
		}
		replica, sc, written, err := decodePool(v)
		if err != nil {
			fail(fmt.Errorf("record %q: %w", key, err))
			continue
		}
		if replica != strings.TrimPrefix(key, poolKeyHead) {
			fail(fmt.Errorf("record %q names replica %q", key, replica))
			continue
		}
		if replica == ts.replica && !ts.wroteAt.IsZero() && !written.Equal(ts.wroteAt) {
			ts.shared()
		}
		where := ts.states.Name() + " " + "replica " + replica
		if err := t.usable(&sc, fingerprint); err != nil {
			unusable[replica] = true
			skipped(where, err)
			continue
		}
		sc.Series = map[string]savedSeries{}
		groups[replica] = &calibrationFile{savedCalibration: sc, path: "replica " + replica, modified: written}
	}
	clear(ts.known)
	for key, v := range vals {
		if strings.HasPrefix(key, poolKeyHead) {
			continue
		}
		h, s, sum, err := decodeSeries(v)
		if err != nil {
			fail(fmt.Errorf("record of series %q: %w", key, err))
			continue
		}
		if h.fingerprint != fingerprint || h.H != t.H || h.C != t.C || !slices.Equal(h.levels, t.iv.levels) {
			continue // another model's or shape's: as its replica's pooled record says
		}
		ts.known[key] = knownState{last: s.Last, fresh: s.Fresh, sum: sum}
		if g := groups[h.replica]; g != nil {
			g.Series[key] = s
		}
	}
	if bad > 0 {
		ts.malformed(bad, firstErr)
	}
	files := make([]calibrationFile, 0, len(groups))
	for replica, g := range groups {
		if others && replica == ts.replica {
			continue
		}
		files = append(files, *g)
	}
	// In a fixed order, as a directory lists its files: the merge's ties
	// are then broken the same way on every replica.
	slices.SortFunc(files, func(a, b calibrationFile) int { return strings.Compare(a.path, b.path) })
	return files, nil
}

// save writes the series of sc whose state is newer than the topic's, a
// tombstone for every series idle at sc.Newest, and this replica's pooled
// record.
func (ts *topicStore) save(sc *savedCalibration) error {
	idle := sc.Newest.UnixNano()/int64(ts.cadence) - ts.span
	var keys []string
	var vals [][]byte
	bytes := 0
	put := func(key string, v []byte) {
		keys, vals = append(keys, key), append(vals, v)
		bytes += len(key) + len(v)
	}
	hd := seriesHeader{fingerprint: sc.Model, replica: ts.replica, levels: sc.Levels, H: sc.H, C: sc.C}
	names := make([]string, 0, len(sc.Series))
	for key := range sc.Series {
		names = append(names, key)
	}
	slices.Sort(names)
	for _, key := range names {
		s := sc.Series[key]
		if s.Last < idle {
			continue
		}
		v, sum := encodeSeries(hd, s)
		if k, ok := ts.known[key]; ok && (k.sum == sum || !newerState(s, savedSeries{Last: k.last, Fresh: k.fresh}, ts.span)) {
			continue // the topic holds this state, or one that wins over it
		}
		put(key, v)
		ts.known[key] = knownState{last: s.Last, fresh: s.Fresh, sum: sum}
	}
	var gone []string
	for key, k := range ts.known {
		if k.last < idle {
			gone = append(gone, key)
		}
	}
	slices.Sort(gone)
	for _, key := range gone {
		put(key, nil)
		delete(ts.known, key)
	}
	now := time.Now()
	put(poolKey(ts.replica), encodePool(ts.replica, sc, now))
	ctx, cancel := context.WithTimeout(context.Background(), stateSyncTimeout)
	defer cancel()
	if err := ts.states.Put(ctx, keys, vals); err != nil {
		return fmt.Errorf("online: writing the interval calibration to %s: %w", ts.states.Name(), err)
	}
	ts.wroteAt = time.Unix(0, now.UnixNano())
	ts.written(len(keys), bytes)
	return nil
}

// drop deletes the pooled record of f's replica, which is gone; its series
// are idle and go at the next save's tombstones.
func (ts *topicStore) drop(f calibrationFile) {
	ctx, cancel := context.WithTimeout(context.Background(), stateSyncTimeout)
	defer cancel()
	ts.states.Put(ctx, []string{poolKey(strings.TrimPrefix(f.path, "replica "))}, [][]byte{nil})
}

// seriesHeader is what a series record says besides the state: the model
// (modelFingerprint), the replica that wrote it, the levels and shapes.
type seriesHeader struct {
	fingerprint uint64
	replica     string
	levels      []float64
	H, C        int
}

// encodeSeries returns the record of series state s, and a hash of the
// state alone (not the header), which says whether it changed.
func encodeSeries(h seriesHeader, s savedSeries) ([]byte, uint64) {
	var w stateWriter
	w.head(kindSeries, h.fingerprint, h.replica, h.levels, h.H, h.C)
	start := len(w.b)
	w.varint(s.Last)
	w.uvarint(uint64(s.Completed))
	w.flags(s.Calibrated, s.Fresh)
	for _, v := range [][]float64{s.Lo, s.Hi, s.Expert, s.Loss, s.Level, s.LevelW, s.Fast, s.Long, s.LongW, s.MaxAbs, s.Scale} {
		w.floats(v)
	}
	w.uvarint(uint64(len(s.Away)))
	for _, a := range s.Away {
		w.varint(int64(a))
	}
	w.uvarint(uint64(len(s.Seen)))
	for _, n := range s.Seen {
		w.uvarint(uint64(n))
	}
	f := fnv.New64a()
	f.Write(w.b[start:])
	return w.b, f.Sum64()
}

// decodeSeries reads a series record; it never panics on bad bytes.
func decodeSeries(b []byte) (h seriesHeader, s savedSeries, sum uint64, err error) {
	r := stateReader{b: b}
	kind := r.head(&h.fingerprint, &h.replica, &h.levels, &h.H, &h.C)
	if r.err == nil && kind != kindSeries {
		r.fail("not a series record (kind %d)", kind)
	}
	start := r.off
	s.Last = r.varint()
	s.Completed = r.int()
	s.Calibrated, s.Fresh = r.flags()
	for _, v := range []*[]float64{&s.Lo, &s.Hi, &s.Expert, &s.Loss, &s.Level, &s.LevelW, &s.Fast, &s.Long, &s.LongW, &s.MaxAbs, &s.Scale} {
		*v = r.floats()
	}
	if n := r.count(1); r.err == nil {
		s.Away = make([]int16, n)
		for i := range s.Away {
			a := r.varint()
			if a < math.MinInt16 || a > math.MaxInt16 {
				r.fail("away count %d out of range", a)
			}
			s.Away[i] = int16(a)
		}
	}
	if n := r.count(1); r.err == nil {
		s.Seen = make([]uint32, n)
		for i := range s.Seen {
			v := r.uvarint()
			if v > math.MaxUint32 {
				r.fail("seen count %d out of range", v)
			}
			s.Seen[i] = uint32(v)
		}
	}
	r.end()
	if r.err != nil {
		return seriesHeader{}, savedSeries{}, 0, r.err
	}
	f := fnv.New64a()
	f.Write(b[start:])
	return h, s, f.Sum64(), nil
}

// encodePool returns the pooled record of replica: sc without its series,
// written at written.
func encodePool(replica string, sc *savedCalibration, written time.Time) []byte {
	var w stateWriter
	w.head(kindPool, sc.Model, replica, sc.Levels, sc.H, sc.C)
	w.varint(sc.Newest.UnixNano())
	w.varint(written.UnixNano())
	w.uvarint(uint64(sc.Fresh))
	for _, v := range [][]float64{sc.AbsErr, sc.Weight, sc.ProfSum, sc.ProfW, sc.Shape, sc.Steer} {
		w.floats(v)
	}
	w.uvarint(uint64(len(sc.ProfAt)))
	for _, v := range sc.ProfAt {
		w.varint(v)
	}
	return w.b
}

// decodePool reads a pooled record; it never panics on bad bytes.
func decodePool(b []byte) (replica string, sc savedCalibration, written time.Time, err error) {
	r := stateReader{b: b}
	kind := r.head(&sc.Model, &replica, &sc.Levels, &sc.H, &sc.C)
	if r.err == nil && kind != kindPool {
		r.fail("not a pooled record (kind %d)", kind)
	}
	sc.Version = calibrationVersion
	sc.Newest = time.Unix(0, r.varint()).UTC()
	written = time.Unix(0, r.varint())
	sc.Fresh = r.int()
	for _, v := range []*[]float64{&sc.AbsErr, &sc.Weight, &sc.ProfSum, &sc.ProfW, &sc.Shape, &sc.Steer} {
		*v = r.floats()
	}
	if n := r.count(1); r.err == nil {
		sc.ProfAt = make([]int64, n)
		for i := range sc.ProfAt {
			sc.ProfAt[i] = r.varint()
		}
	}
	r.end()
	if r.err != nil {
		return "", savedCalibration{}, time.Time{}, r.err
	}
	return replica, sc, written, nil
}

// stateWriter appends a record's fields: varints, and float64s as 8 bytes
// little endian (bit for bit, so a restored band is the saved one).
type stateWriter struct{ b []byte }

func (w *stateWriter) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *stateWriter) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }

func (w *stateWriter) flags(a, b bool) {
	var f byte
	if a {
		f |= 1
	}
	if b {
		f |= 2
	}
	w.b = append(w.b, f)
}

func (w *stateWriter) floats(v []float64) {
	w.uvarint(uint64(len(v)))
	for _, x := range v {
		w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(x))
	}
}

// head writes what starts every record: the layout, the kind, the model,
// the replica, the levels and the shapes.
func (w *stateWriter) head(kind byte, fingerprint uint64, replica string, levels []float64, H, C int) {
	w.b = append(w.b, stateMagic...)
	w.b = append(w.b, stateVersion, kind)
	w.b = binary.LittleEndian.AppendUint64(w.b, fingerprint)
	w.uvarint(uint64(len(replica)))
	w.b = append(w.b, replica...)
	w.floats(levels)
	w.uvarint(uint64(H))
	w.uvarint(uint64(C))
}

// stateReader reads what stateWriter wrote. The first error sticks: later
// reads return zeros, and err says what was wrong.
type stateReader struct {
	b   []byte
	off int
	err error
}

func (r *stateReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *stateReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("truncated at byte %d", r.off)
		return 0
	}
	r.off += n
	return v
}

func (r *stateReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail("truncated at byte %d", r.off)
		return 0
	}
	r.off += n
	return v
}

// int reads a count that must fit an int32.
func (r *stateReader) int() int {
	v := r.uvarint()
	if v > math.MaxInt32 {
		r.fail("count %d out of range", v)
		return 0
	}
	return int(v)
}

// count reads a length of elements of at least size bytes each, which
// must fit in what is left.
func (r *stateReader) count(size int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)-r.off)/uint64(size) {
		r.fail("a length of %d at byte %d runs past the record's end", n, r.off)
		return 0
	}
	return int(n)
}

func (r *stateReader) flags() (a, b bool) {
	if r.err != nil {
		return false, false
	}
	if r.off >= len(r.b) {
		r.fail("truncated at byte %d", r.off)
		return false, false
	}
	f := r.b[r.off]
	r.off++
	if f&^3 != 0 {
		r.fail("unknown flags %#x", f)
	}
	return f&1 != 0, f&2 != 0
}

func (r *stateReader) floats() []float64 {
	n := r.count(8)
	if r.err != nil {
		return nil
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.off:]))
		r.off += 8
	}
	return v
}

// head reads what starts every record and returns its kind.
func (r *stateReader) head(fingerprint *uint64, replica *string, levels *[]float64, H, C *int) byte {
	if len(r.b) < len(stateMagic)+2+8 || string(r.b[:len(stateMagic)]) != stateMagic {
		r.fail("not a FreqLens state record")
		return 0
	}
	if v := r.b[len(stateMagic)]; v != stateVersion {
		r.fail("layout version %d, this build reads %d", v, stateVersion)
		return 0
	}
	kind := r.b[len(stateMagic)+1]
	r.off = len(stateMagic) + 2
	*fingerprint = binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	if n := r.count(1); r.err == nil {
		*replica = string(r.b[r.off : r.off+n])
		r.off += n
	}
	*levels = r.floats()
	*H, *C = r.int(), r.int()
	return kind
}

// end fails unless the whole record was read.
func (r *stateReader) end() {
	if r.err == nil && r.off != len(r.b) {
		r.fail("%d bytes after the record's end", len(r.b)-r.off)
	}
}

// replicaName is the name of this replica: online.replica, else the host
// name (a pod's name on Kubernetes).
func replicaName(replica string) string {
	if replica != "" {
		return replica
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "replica"
	}
	return host
}

// restoreCalibration picks the store of the interval calibration (the
// state topic, else CheckpointDir, else none) and restores from it the
// series seen before this start.
func (l *Learner) restoreCalibration(intervals bool) error {
	if !intervals {
		return nil
	}
	mc := l.ref.Config()
	switch {
	case l.states != nil:
		ts := newTopicStore(l.states, replicaName(l.cfg.Replica), int64(mc.Lookback+mc.Horizon), l.ref.Meta.Cadence)
		ts.malformed = func(n int, first error) {
			l.met.stateSkipped.Add(float64(n))
			l.log.Warn("skipping state records this build cannot read; their series start from the model's quantiles",
				"topic", l.states.Name(), "records", n, "first", first)
		}
		ts.written = func(records, bytes int) {
			l.met.stateRecords.Add(float64(records))
			l.met.stateBytes.Add(float64(bytes))
		}
		ts.shared = func() {
			if !l.shared {
				l.shared = true
				l.log.Warn("another replica writes this replica's records on the state topic, and each takes the other's series for its own: give every replica its own online.replica (the pod name by default)",
					"topic", l.states.Name(), "replica", ts.replica)
			}
		}
		l.store = ts
	case l.cfg.CheckpointDir != "":
		l.store = fileStore{dir: l.cfg.CheckpointDir, own: calibrationPath(l.cfg.CheckpointDir, l.cfg.Replica)}
	default:
		return nil
	}
	l.fingerprint = modelFingerprint(l.ref)
	start := time.Now()
	n, err := l.tr.restoreCalibration(l.store, l.fingerprint, func(where string, err error) {
		l.log.Warn("skipping a saved interval calibration", "where", where, "err", err)
	})
	if err != nil {
		return fmt.Errorf("online: reading the saved interval calibration in %s: %w (check that it is reachable, or leave it unset to start every series from the model's quantiles)", l.store, err)
	}
	if n > 0 {
		l.log.Info("the interval calibration of the series seen before the restart is restored when they are seen again",
			"series", n, "store", l.store.String(), "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}
