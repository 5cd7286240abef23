package window

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// ErrSchema is wrapped by the errors Append returns when a record's schema
// does not fit the Shape: a missing column, a wrong type or nulls. It is a
// programmer or configuration error upstream, not bad data.
var ErrSchema = errors.New("record does not match the window config")

// Stats are the counters of a Set since New. Counts of readings and steps
// only grow; Active is the number of live series.
type Stats struct {
	// Active is the number of live series.
	Active int
	// Created counts series created; Expired those evicted by Expire;
	// Rejected counts readings of new series dropped because Active was
	// MaxSeries; Restarts counts windows emptied by a gap longer than
	// MaxGap.
	Created, Expired, Rejected, Restarts uint64
	// GapFilled counts filled steps; LateUpdated late readings that updated
	// their step; LateDropped late readings dropped; Duplicates readings for
	// the series' newest step (last write wins); Ready windows emitted;
	// OutOfRange readings refused by the MaxJump check.
	GapFilled, LateUpdated, LateDropped, Duplicates, Ready, OutOfRange uint64
}

// Add adds t's counts to s, Active included: the totals of several Sets.
func (s *Stats) Add(t Stats) {
	s.Active += t.Active
	s.Created += t.Created
	s.Expired += t.Expired
	s.Rejected += t.Rejected
	s.Restarts += t.Restarts
	s.GapFilled += t.GapFilled
	s.LateUpdated += t.LateUpdated
	s.LateDropped += t.LateDropped
	s.Duplicates += t.Duplicates
	s.Ready += t.Ready
	s.OutOfRange += t.OutOfRange
}

// Option configures a Set's collaborators.
type Option func(*Set)

// WithLogger sets the logger of the rejected-series line (at most one line
// per second). Default: slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(s *Set) {
		if l != nil {
			s.log = l
		}
	}
}

// WithClock sets the wall clock used to stamp each series' last reading
// (for Expire) and to rate-limit the rejection log. Default: time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *Set) {
		if now != nil {
			s.now = now
		}
	}
}

// series is the window state of one series: a ring of L rows of C values.
type series struct {
	key      string    // the map key, shared with Batch.Series
	ring     []float64 // L·C; row r is ring[r·C : (r+1)·C]; its capacity holds the bounds (see bounds)
	newest   int64     // step index of the newest step
	lastSeen int64     // wall clock (Unix ns) of the last reading
	head     int32     // row of the newest step
	n        int32     // steps held since the last restart, ≤ L
}

// Set owns the windows of the series routed to it. It is not safe for
// concurrent use: one pipeline worker owns it.
type Set struct {
	shape     Shape // Fields is the Set's own copy
	cfg       Config
	l, c      int   // L and C
	cadMs     int64 // cadence in ms
	alignMs   int64 // added to a time before it is floored to its step: 0, or cadMs/2 for AlignNearest
	stride    int64
	maxGap    uint64
	lateSteps int64 // AllowedLateness / Cadence
	deadLate  bool  // Late is LateDeadLetter
	ttl       int64 // ns
	hold      bool
	maxJump   float64
	budget    *Budget // the cap on live series; shared with other Sets by WithBudget

	series map[string]*series
	peak   int // len(series) high-water mark since the map was last rebuilt
	stats  Stats

	log  *slog.Logger
	now  func() time.Time
	prev []float64 // C values, scratch for gap filling

	schema *arrow.Schema // the last schema resolve accepted
	cols   columns       // its columns

	// The record's buffers, bound during Append only.
	recKeys    []byte  // series ids, concatenated
	recOffsets []int32 // rows+1 offsets into recKeys, plus recKeyBase
	recKeyBase int32
	recTS      []arrow.Timestamp
	recIngest  []arrow.Timestamp
	recValues  [][]float64 // C columns
	recRows    int
}

// New validates shape and cfg and returns an empty Set. cfg is taken as
// given (start from DefaultConfig); shape.Fields is copied.
func New(shape Shape, cfg Config, opts ...Option) (*Set, error) {
	if err := shape.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	shape.Fields = slices.Clone(shape.Fields)
	c := len(shape.Fields)
	s := &Set{
		shape:     shape,
		cfg:       cfg,
		l:         shape.Lookback,
		c:         c,
		cadMs:     shape.Cadence.Milliseconds(),
		alignMs:   AlignOffset(shape.Align, shape.Cadence).Milliseconds(),
		stride:    int64(cfg.Stride),
		maxGap:    uint64(cfg.MaxGap),
		lateSteps: int64(cfg.AllowedLateness / shape.Cadence),
		ttl:       int64(cfg.SeriesTTL),
		hold:      cfg.Fill == FillHold,
		deadLate:  cfg.Late == LateDeadLetter,
		maxJump:   cfg.MaxJump,
		series:    make(map[string]*series),
		log:       slog.Default(),
		now:       time.Now,
		prev:      make([]float64, c),
		recValues: make([][]float64, c),
	}
	for _, o := range opts {
		o(s)
	}
	if s.budget == nil {
		s.budget = NewBudget(cfg.MaxSeries)
	}
	return s, nil
}

// Config returns the Set's settings, as New was given them.
func (s *Set) Config() Config { return s.cfg }

// Stats returns the Set's counters.
func (s *Set) Stats() Stats {
	st := s.stats
	st.Active = len(s.series)
	return st
}

// Append feeds the rows of rec listed in rows, in that order (nil rows means
// every row, in record order), and appends every window that became ready to
// out, the rows it refused as out of range (see Config.MaxJump) to
// out.OutOfRange, and those too late (see Config.Late) to out.TooLate. With a nil out the windows change as they would, but
// nothing is emitted or reported: that rebuilds the state from readings
// whose windows were forecast before (after a restart or when a partition
// moves here). rec must have the columns of a readings record (series, ts,
// ingest_ts and the Shape's Fields); their types are checked once per
// schema, and an error wrapping ErrSchema is returned before any row is
// read when they do not fit. An index in rows outside the record is an
// error too. Append keeps no reference to rec. On existing series it
// allocates nothing once out has grown.
func (s *Set) Append(rec arrow.Record, rows []int, out *Batch) error {
	defer s.unbind()
	if err := s.bind(rec); err != nil {
		return err
	}
	n := s.recRows
	for j, r := range rows {
		if r < 0 || r >= n {
			return fmt.Errorf("window: rows[%d] = %d is outside the record's %d rows", j, r, n)
		}
	}
	now := s.now().UnixNano()
	if rows == nil {
		for i := 0; i < n; i++ {
			s.reading(i, now, out)
		}
		return nil
	}
	for _, i := range rows {
		s.reading(i, now, out)
	}
	return nil
}

// bind checks rec's schema (once per *arrow.Schema) and points the rec*
// fields at its columns.
func (s *Set) bind(rec arrow.Record) error {
	if rec == nil {
		return errors.New("window: Append got a nil record")
	}
	if sc := rec.Schema(); sc != s.schema {
		cols, err := s.resolve(sc)
		if err != nil {
			return err
		}
		s.schema, s.cols = sc, cols
	}
	// resolve checked the types, so these assertions hold for any record
	// built by the array package; check anyway rather than panic.
	keys, ok := rec.Column(s.cols.series).(*array.String)
	if !ok {
		return s.arrayErr(colSeries, rec.Column(s.cols.series))
	}
	ts, ok := rec.Column(s.cols.ts).(*array.Timestamp)
	if !ok {
		return s.arrayErr(colTS, rec.Column(s.cols.ts))
	}
	ing, ok := rec.Column(s.cols.ingest).(*array.Timestamp)
	if !ok {
		return s.arrayErr(colIngest, rec.Column(s.cols.ingest))
	}
	if err := noNulls(colSeries, keys); err != nil {
		return err
	}
	if err := noNulls(colTS, ts); err != nil {
		return err
	}
	if err := noNulls(colIngest, ing); err != nil {
		return err
	}
	for c, idx := range s.cols.values {
		v, ok := rec.Column(idx).(*array.Float64)
		if !ok {
			return s.arrayErr(s.shape.Fields[c], rec.Column(idx))
		}
		if err := noNulls(s.shape.Fields[c], v); err != nil {
			return err
		}
		s.recValues[c] = v.Float64Values()
	}
	s.recRows = int(rec.NumRows())
	s.recKeys = keys.ValueBytes()
	s.recOffsets = keys.ValueOffsets()
	// ValueBytes starts at the first value's offset: offsets are relative to it.
	s.recKeyBase = 0
	if len(s.recOffsets) > 0 {
		s.recKeyBase = s.recOffsets[0]
	}
	s.recTS = ts.TimestampValues()
	s.recIngest = ing.TimestampValues()
	return nil
}

func noNulls(col string, a arrow.Array) error {
	if n := a.NullN(); n > 0 {
		return fmt.Errorf("window: %w: column %q has %d nulls; the decoder must dead-letter readings with missing values", ErrSchema, col, n)
	}
	return nil
}

func (s *Set) arrayErr(col string, a arrow.Array) error {
	s.schema = nil
	return fmt.Errorf("window: %w: column %q holds a %T of type %v", ErrSchema, col, a, a.DataType())
}

// unbind drops the references to the record's buffers.
func (s *Set) unbind() {
	s.recKeys, s.recOffsets, s.recTS, s.recIngest = nil, nil, nil, nil
	clear(s.recValues)
	s.recRows = 0
}

// columns are the indexes of a schema's columns.
type columns struct {
	series, ts, ingest int
	values             []int // in Shape.Fields order
}

// resolve finds the columns of sc and checks their types.
func (s *Set) resolve(sc *arrow.Schema) (columns, error) {
	var cols columns
	find := func(name string) (int, error) {
		idx := sc.FieldIndices(name)
		switch len(idx) {
		case 0:
			return 0, fmt.Errorf("window: %w: the record has no column %q (columns: %s); do the decoder's value fields match window Fields %q?",
				ErrSchema, name, columnNames(sc), s.shape.Fields)
		case 1:
			return idx[0], nil
		default:
			return 0, fmt.Errorf("window: %w: column %q appears %d times in the record; name each column once", ErrSchema, name, len(idx))
		}
	}
	var err error
	if cols.series, err = find(colSeries); err != nil {
		return cols, err
	}
	if dt := sc.Field(cols.series).Type; dt.ID() != arrow.STRING {
		return cols, fmt.Errorf("window: %w: column %q is %v, want utf8", ErrSchema, colSeries, dt)
	}
	for _, tc := range []struct {
		name string
		dst  *int
	}{{colTS, &cols.ts}, {colIngest, &cols.ingest}} {
		if *tc.dst, err = find(tc.name); err != nil {
			return cols, err
		}
		dt := sc.Field(*tc.dst).Type
		if t, ok := dt.(*arrow.TimestampType); !ok || t.Unit != arrow.Millisecond {
			return cols, fmt.Errorf("window: %w: column %q is %v, want timestamp[ms]", ErrSchema, tc.name, dt)
		}
	}
	cols.values = make([]int, len(s.shape.Fields))
	for c, f := range s.shape.Fields {
		if cols.values[c], err = find(f); err != nil {
			return cols, err
		}
		if dt := sc.Field(cols.values[c]).Type; dt.ID() != arrow.FLOAT64 {
			return cols, fmt.Errorf("window: %w: value column %q is %v, want float64", ErrSchema, f, dt)
		}
	}
	return cols, nil
}

func columnNames(sc *arrow.Schema) string {
	b := []byte{}
	for i, f := range sc.Fields() {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, f.Name...)
	}
	return string(b)
}

// step returns floor((ms + alignMs) / cadMs).
func (s *Set) step(ms int64) int64 {
	ms += s.alignMs
	k := ms / s.cadMs
	if ms%s.cadMs < 0 {
		k--
	}
	return k
}

// reading applies row i of the bound record.
func (s *Set) reading(i int, now int64, out *Batch) {
	key := s.recKeys[s.recOffsets[i]-s.recKeyBase : s.recOffsets[i+1]-s.recKeyBase]
	k := s.step(int64(s.recTS[i]))
	sr := s.series[string(key)]
	if sr == nil {
		if !s.budget.take() {
			s.reject(key, now)
			return
		}
		sr = s.create(string(key))
		sr.lastSeen = now
		s.push(sr, k-1, k, i, out)
		return
	}
	sr.lastSeen = now
	if s.outOfRange(sr, i) {
		s.stats.OutOfRange++
		if out != nil {
			out.OutOfRange = append(out.OutOfRange, i)
		}
		return
	}
	switch {
	case k > sr.newest:
		prev := sr.newest
		if g := uint64(k - sr.newest - 1); g > s.maxGap {
			sr.n = 0
			s.stats.Restarts++
		} else if g > 0 {
			s.fill(sr, int64(g), i)
		}
		s.push(sr, prev, k, i, out)
	case k == sr.newest:
		s.write(sr, int(sr.head), i)
		s.stats.Duplicates++
	default:
		d := sr.newest - k
		if d > s.lateSteps || d >= int64(sr.n) {
			s.stats.LateDropped++
			if out != nil && s.deadLate {
				out.TooLate, out.TooLateBy = append(out.TooLate, i), append(out.TooLateBy, d)
			}
			return
		}
		r := int(sr.head) - int(d)
		if r < 0 {
			r += s.l
		}
		s.write(sr, r, i)
		s.stats.LateUpdated++
	}
}

// outOfRange reports whether a value of row i lies further outside its
// channel's bounds [lo, hi] than MaxJump times the channel's scale
// max(hi − lo, |lo|, |hi|). A channel whose bounds are both zero has no
// scale and accepts any value. The bounds hold the held values at the last
// step that was a multiple of L and every value written since (see write
// and tighten): a superset of the window's values that costs O(C) per
// reading, so the check may accept a little more than the window's own
// range would, never less.
func (s *Set) outOfRange(sr *series, i int) bool {
	b := sr.bounds()
	for c, col := range s.recValues {
		v, lo, hi := col[i], b[2*c], b[2*c+1]
		if v >= lo && v <= hi {
			continue
		}
		scale := max(hi-lo, math.Abs(lo), math.Abs(hi))
		if scale > 0 && (v > hi+s.maxJump*scale || v < lo-s.maxJump*scale) {
			return true
		}
	}
	return false
}

// create adds an empty series under a copy of key.
func (s *Set) create(key string) *series {
	buf := make([]float64, s.l*s.c+2*s.c)
	sr := &series{key: key, ring: buf[:s.l*s.c], head: int32(s.l - 1)}
	b := sr.bounds()
	for c := range s.c {
		b[2*c], b[2*c+1] = math.Inf(1), math.Inf(-1) // empty: the first write sets them
	}
	s.series[sr.key] = sr
	s.peak = max(s.peak, len(s.series))
	s.stats.Created++
	return sr
}

// write copies row i's values into ring row r and widens the bounds to
// them.
func (s *Set) write(sr *series, r, i int) {
	row := sr.ring[r*s.c : r*s.c+s.c]
	b := sr.bounds()
	for c, v := range s.recValues {
		x := v[i]
		row[c] = x
		b[2*c], b[2*c+1] = min(b[2*c], x), max(b[2*c+1], x)
	}
}

// tighten sets the bounds to the range of the held values; push calls it
// at every L-th step, so values that left the window stop counting.
func (s *Set) tighten(sr *series) {
	b := sr.bounds()
	for c := range s.c {
		lo, hi := math.Inf(1), math.Inf(-1)
		for r, j := int(sr.head), int32(0); j < sr.n; j++ {
			x := sr.ring[r*s.c+c]
			lo, hi = min(lo, x), max(hi, x)
			if r--; r < 0 {
				r = s.l - 1
			}
		}
		b[2*c], b[2*c+1] = lo, hi
	}
}

// bounds returns the series' 2·C bounds, lo and hi per channel, stored in
// the ring's capacity after its L·C values (one allocation per series).
func (sr *series) bounds() []float64 {
	n := len(sr.ring)
	return sr.ring[n:cap(sr.ring)]
}

// advance moves the series' head to a new step and counts it.
func (s *Set) advance(sr *series, k int64) {
	sr.head++
	if int(sr.head) == s.l {
		sr.head = 0
	}
	if int(sr.n) < s.l {
		sr.n++
	}
	sr.newest = k
}

// fill pushes the g missing steps between the series' newest step and row
// i's step, interpolated or held.
func (s *Set) fill(sr *series, g int64, i int) {
	h := int(sr.head) * s.c
	copy(s.prev, sr.ring[h:h+s.c])
	first := sr.newest
	// Only the last L−1 filled steps stay in the ring once the new step is
	// pushed; skip the others.
	j0 := int64(1)
	if skip := g - int64(s.l-1); skip > 0 {
		l := int64(s.l)
		sr.head = int32((int64(sr.head) + skip) % l)
		sr.n = int32(min(int64(sr.n)+skip, l))
		j0 = skip + 1
	}
	for j := j0; j <= g; j++ {
		s.advance(sr, first+j)
		row := sr.ring[int(sr.head)*s.c : int(sr.head)*s.c+s.c]
		if s.hold {
			copy(row, s.prev)
			continue
		}
		t := float64(j) / float64(g+1)
		for c, v0 := range s.prev {
			row[c] = v0 + (s.recValues[c][i]-v0)*t
		}
	}
	s.stats.GapFilled += uint64(g)
}

// push appends row i as the new step k and emits a window when the ring is
// full and a due step, a multiple of Stride, lies in (prev, k], prev being
// the newest step before the reading (and before any filled steps). The
// phase is absolute, so a window is due at the same steps whatever history
// the Set has seen: a Set rebuilt from part of a series' history emits what
// the original would have.
func (s *Set) push(sr *series, prev, k int64, i int, out *Batch) {
	s.advance(sr, k)
	s.write(sr, int(sr.head), i)
	if k%int64(s.l) == 0 {
		s.tighten(sr) // at steps fixed in time, so a rebuilt Set tightens where the original did
	}
	if int(sr.n) < s.l || out == nil {
		return
	}
	if s.stride > 1 && floorDiv(k, s.stride) == floorDiv(prev, s.stride) {
		return
	}
	s.emit(sr, k, i, out)
}

// floorDiv returns ⌊a / b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// emit appends the series' window, which ends at step k, to out.
func (s *Set) emit(sr *series, k int64, i int, out *Batch) {
	out.Series = append(out.Series, sr.key)
	out.End = append(out.End, time.UnixMilli(k*s.cadMs).UTC())
	out.Ingest = append(out.Ingest, time.UnixMilli(int64(s.recIngest[i])).UTC())
	out.Rows = append(out.Rows, i)
	oldest := (int(sr.head) + 1) % s.l * s.c
	out.Values = append(out.Values, sr.ring[oldest:]...)
	out.Values = append(out.Values, sr.ring[:oldest]...)
	s.stats.Ready++
}

// reject counts a reading of a new series beyond MaxSeries and logs it at
// most once per second (per Budget).
func (s *Set) reject(key []byte, now int64) {
	s.stats.Rejected++
	if !s.budget.logDue(now) {
		return
	}
	s.log.Warn("window: series rejected: the max_series cap is reached; raise window.max_series or lower window.series_ttl",
		"series", string(key), "max_series", s.budget.Max(), "rejected_total", s.stats.Rejected)
}

// Expire evicts the series whose last reading arrived (by the Set's wall
// clock, when Append ran) more than SeriesTTL before now, and returns how
// many it evicted. It walks every series, so call it periodically (e.g.
// every minute), not per record.
func (s *Set) Expire(now time.Time) int {
	cutoff := now.UnixNano() - s.ttl
	n := 0
	for k, sr := range s.series {
		if sr.lastSeen < cutoff {
			delete(s.series, k)
			n++
		}
	}
	s.budget.release(n)
	s.stats.Expired += uint64(n)
	// A Go map never shrinks: rebuild it once it holds under a quarter of
	// its peak, so that a burst of series does not pin memory for ever.
	if s.peak >= 1024 && len(s.series) < s.peak/4 {
		m := make(map[string]*series, len(s.series))
		for k, sr := range s.series {
			m[k] = sr
		}
		s.series, s.peak = m, len(m)
	}
	return n
}

// Reset forgets every series and returns them to the budget; the counters
// stay. The pipeline calls it when the partition whose series the Set holds
// moves to another consumer.
func (s *Set) Reset() {
	s.budget.release(len(s.series))
	s.series, s.peak = make(map[string]*series), 0
}

// Budget caps the live series of the Sets that share it: window.max_series
// counts every series of the process, however many Sets hold them. It is
// safe for concurrent use.
type Budget struct {
	max     int64
	used    atomic.Int64
	lastLog atomic.Int64 // wall clock (Unix ns) of the last rejection line, 0 before the first
}

// NewBudget returns a cap of max live series.
func NewBudget(max int) *Budget { return &Budget{max: int64(max)} }

// Max returns the cap.
func (b *Budget) Max() int { return int(b.max) }

// Used returns the live series counted against the cap.
func (b *Budget) Used() int { return int(b.used.Load()) }

// take counts one more series, or reports false at the cap.
func (b *Budget) take() bool {
	for {
		u := b.used.Load()
		if u >= b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+1) {
			return true
		}
	}
}

func (b *Budget) release(n int) { b.used.Add(-int64(n)) }

// logDue reports whether a rejection line may be logged at now: at most
// one per second over every Set that shares the Budget.
func (b *Budget) logDue(now int64) bool {
	last := b.lastLog.Load()
	if last != 0 && now-last < int64(time.Second) {
		return false
	}
	return b.lastLog.CompareAndSwap(last, now)
}

// WithBudget counts the Set's series against b instead of a cap of its own
// (Config.MaxSeries is then b's business): several Sets share one cap.
func WithBudget(b *Budget) Option {
	return func(s *Set) {
		if b != nil {
			s.budget = b
		}
	}
}
