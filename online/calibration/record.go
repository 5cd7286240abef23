package calibration

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"time"
)

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
func encodeSeries(h seriesHeader, s Series) ([]byte, uint64) {
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
func decodeSeries(b []byte) (h seriesHeader, s Series, sum uint64, err error) {
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
		return seriesHeader{}, Series{}, 0, r.err
	}
	f := fnv.New64a()
	f.Write(b[start:])
	return h, s, f.Sum64(), nil
}

// encodePool returns the pooled record of replica: sc without its series,
// written at written.
func encodePool(replica string, sc *Snapshot, written time.Time) []byte {
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
func decodePool(b []byte) (replica string, sc Snapshot, written time.Time, err error) {
	r := stateReader{b: b}
	kind := r.head(&sc.Model, &replica, &sc.Levels, &sc.H, &sc.C)
	if r.err == nil && kind != kindPool {
		r.fail("not a pooled record (kind %d)", kind)
	}
	sc.Version = Version
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
		return "", Snapshot{}, time.Time{}, r.err
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

// DecodeSeriesRecord reads a series' record of the state topic: the
// replica that wrote it and the state. It never panics on bad bytes.
func DecodeSeriesRecord(b []byte) (replica string, s Series, err error) {
	h, s, _, err := decodeSeries(b)
	return h.replica, s, err
}
