package training

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/freqlens/freqlens/internal/gemm"
	"github.com/freqlens/freqlens/model"
)

// A training checkpoint is the whole state of a run between two epochs:
// the parameters, the best epoch's parameters, Adam's moments, the moving
// average, the random generator, the shuffled order of the windows and the
// epochs so far. A run resumed from one goes on exactly as if it had not
// stopped: the same seed gives the same model bit for bit
// (TestTrainResumesFromCheckpoint).
//
// The file is
//
//	magic "FRQLCKPT" | version uint32 | header length uint32 | header (gob) |
//	CRC-32C of the header | float64 arrays (little endian) |
//	window order (uint32 each) | CRC-32C of all before
//
// and is replaced atomically (a temporary file, synced, renamed), so a run
// killed while writing one leaves the previous checkpoint intact.

const (
	checkpointMagic   = "FRQLCKPT"
	checkpointVersion = 2 // 2: the fingerprint covers every window
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxHeader bounds a checkpoint's header: its epochs' statistics take
// about 200 bytes each.
const maxHeader = 16 << 20

// checkpointHeader is the gob-encoded part of a checkpoint (gob keeps
// every float, infinities included).
type checkpointHeader struct {
	// Fingerprint identifies the run: the model's shape and starting
	// parameters (after placement), the settings and the data.
	Fingerprint string
	// NextEpoch is the 0-based epoch the run goes on with.
	NextEpoch  int
	Bad        int // epochs since the best
	BestEpoch  int
	BestValMSE float64
	Epochs     []EpochStats
	// Stopped is set when the run had ended ("early_stopping" or
	// "epochs") but its model may not have been written.
	Stopped   string
	RNG       []byte
	AdamSteps int
	Params    int
	EMA       bool
	Samples   int
	// Kernels is the arithmetic that wrote it (gemm.Kernels): a run
	// resumed on other kernels goes on, but not bit for bit.
	Kernels string
}

// runState is the part of a run that a checkpoint saves besides the
// Stepper's state and the random generator's.
type runState struct {
	res       *Result
	best      []float64 // the best epoch's parameters
	perm      []int
	nextEpoch int
	bad       int
	stopped   string
}

// ErrCheckpointMismatch is returned when a checkpoint belongs to another
// run: other data, settings, seed or model shape.
var ErrCheckpointMismatch = errors.New("the checkpoint was written by a different training run (other data, settings, seed or model shape)")

// fingerprint identifies a run so that a checkpoint is only resumed by the
// run that wrote it: the model's shape, metadata and starting parameters
// (after placement), the settings, and every training and validation
// window (a CRC-32C of their values and end times: a second for Weather's
// 36,000 windows of 816 steps × 21 channels, against minutes an epoch). It
// is taken after the frequencies are placed and before the first step.
func (r *run) fingerprint(train, val model.Source) string {
	h := sha256.New()
	cfg := r.cfg
	cfg.Workers, cfg.Checkpoint = 0, "" // results do not depend on them
	meta, err := json.Marshal(struct {
		Cadence time.Duration
		Rhythms any
		Data    string
		Zone    string `json:",omitempty"` // omitted in UTC, so a UTC run matches a checkpoint whose fingerprint has no zone
	}{r.m.Meta.Cadence, r.m.Meta.Rhythms, r.m.Meta.DataSHA256, r.m.Meta.TimeZone})
	if err != nil {
		meta = fmt.Appendf(nil, "%v", err)
	}
	fmt.Fprintf(h, "v%d\n%s\n%+v\n%s\n", checkpointVersion, r.m.ShapeKey(), cfg, meta)
	var buf []byte
	writeFloats := func(w io.Writer, v []float64) {
		buf = buf[:0]
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(x))
		}
		w.Write(buf)
	}
	writeFloats(h, r.m.Params().Data)
	for _, src := range []model.Source{train, val} {
		crc := crc32.New(castagnoli)
		timed, _ := src.(model.TimedSource)
		for i := range src.Len() {
			writeFloats(crc, src.Input(i))
			writeFloats(crc, src.Target(i))
			if timed != nil {
				if e, ok := timed.EndTime(i); ok {
					crc.Write(binary.LittleEndian.AppendUint64(buf[:0], uint64(e)))
				}
			}
		}
		fmt.Fprintf(h, "%d %d %08x\n", src.Len(), src.Channels(), crc.Sum32())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// saveCheckpoint writes the run's state to path, atomically.
func (r *run) saveCheckpoint(path string) error {
	st := r.state
	rng, err := r.pcg.MarshalBinary()
	if err != nil {
		return err
	}
	hd := checkpointHeader{
		Fingerprint: r.fp, NextEpoch: st.nextEpoch, Bad: st.bad,
		BestEpoch: st.res.BestEpoch, BestValMSE: st.res.BestValMSE, Epochs: st.res.Epochs, Stopped: st.stopped,
		RNG: rng, AdamSteps: r.st.AdamSteps(), Params: len(r.m.Params().Data), EMA: r.cfg.EMA > 0, Samples: len(st.perm),
		Kernels: gemm.Kernels(),
	}
	var hb bytes.Buffer
	if err := gob.NewEncoder(&hb).Encode(hd); err != nil {
		return err
	}
	header := hb.Bytes()
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("the checkpoint %s could not be written: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename this finds nothing
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(tmp, crc), 1<<20)
	var word [8]byte
	bw.WriteString(checkpointMagic)
	binary.LittleEndian.PutUint32(word[:4], checkpointVersion)
	bw.Write(word[:4])
	binary.LittleEndian.PutUint32(word[:4], uint32(len(header)))
	bw.Write(word[:4])
	bw.Write(header)
	binary.LittleEndian.PutUint32(word[:4], crc32.Checksum(header, castagnoli))
	bw.Write(word[:4])
	for _, a := range r.checkpointArrays() {
		for _, x := range a {
			binary.LittleEndian.PutUint64(word[:], math.Float64bits(x))
			bw.Write(word[:])
		}
	}
	for _, p := range st.perm {
		binary.LittleEndian.PutUint32(word[:4], uint32(p))
		bw.Write(word[:4])
	}
	err = bw.Flush()
	if err == nil {
		binary.LittleEndian.PutUint32(word[:4], crc.Sum32())
		_, err = tmp.Write(word[:4])
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("the checkpoint %s could not be written: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() // make the rename durable; not every file system supports it
		d.Close()
	}
	return nil
}

// checkpointArrays are the float64 arrays a checkpoint holds, in order:
// the parameters, the best epoch's, Adam's moments and the moving average.
func (r *run) checkpointArrays() [][]float64 {
	return append([][]float64{r.m.Params().Data, r.state.best}, r.st.StateArrays()...)
}

// loadCheckpoint restores the run's state from path. It returns false,
// nil when there is no checkpoint at path.
func (r *run) loadCheckpoint(path string) (bool, error) {
	st := &r.state
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("train: reading the checkpoint: %w", err)
	}
	defer f.Close()
	bad := func(why string) error {
		return fmt.Errorf("train: the checkpoint %s is damaged (%s); delete it to train from the start", path, why)
	}
	crc := crc32.New(castagnoli)
	br := bufio.NewReaderSize(f, 1<<20)
	in := io.TeeReader(br, crc)
	var word [8]byte
	var fixed [len(checkpointMagic) + 8]byte
	if _, err := io.ReadFull(in, fixed[:]); err != nil {
		return false, bad("too short")
	}
	if string(fixed[:len(checkpointMagic)]) != checkpointMagic {
		return false, fmt.Errorf("train: %s is not a FreqLens training checkpoint; move it away or choose another checkpoint path", path)
	}
	if v := binary.LittleEndian.Uint32(fixed[len(checkpointMagic):]); v != checkpointVersion {
		return false, fmt.Errorf("train: the checkpoint %s says format version %d, this build reads %d (another build's, or the file is damaged); delete it to train from the start", path, v, checkpointVersion)
	}
	n := binary.LittleEndian.Uint32(fixed[len(checkpointMagic)+4:])
	if n > maxHeader {
		return false, bad("header length")
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(in, header); err != nil {
		return false, bad("truncated header")
	}
	if _, err := io.ReadFull(in, word[:4]); err != nil || binary.LittleEndian.Uint32(word[:4]) != crc32.Checksum(header, castagnoli) {
		return false, bad("header checksum")
	}
	var hd checkpointHeader
	if err := gob.NewDecoder(bytes.NewReader(header)).Decode(&hd); err != nil {
		return false, bad("header: " + err.Error())
	}
	if hd.Fingerprint != r.fp {
		return false, fmt.Errorf("train: %s: %w; delete it, or give this run another checkpoint path", path, ErrCheckpointMismatch)
	}
	if hd.Params != len(r.m.Params().Data) || hd.EMA != (r.cfg.EMA > 0) || hd.Samples != len(st.perm) ||
		hd.NextEpoch < 0 || hd.NextEpoch > r.cfg.Epochs || len(hd.Epochs) != hd.NextEpoch {
		return false, bad("shapes do not match its run")
	}
	// Read into fresh storage first: a damaged file must leave the run as it was.
	arrays := r.checkpointArrays()
	loaded := make([][]float64, len(arrays))
	for i, a := range arrays {
		v := make([]float64, len(a))
		for j := range v {
			if _, err := io.ReadFull(in, word[:]); err != nil {
				return false, bad("truncated")
			}
			v[j] = math.Float64frombits(binary.LittleEndian.Uint64(word[:]))
		}
		loaded[i] = v
	}
	perm := make([]int, len(st.perm))
	seen := make([]bool, len(perm))
	for j := range perm {
		if _, err := io.ReadFull(in, word[:4]); err != nil {
			return false, bad("truncated")
		}
		p := int(binary.LittleEndian.Uint32(word[:4]))
		if p >= len(perm) || seen[p] {
			return false, bad("window order")
		}
		perm[j], seen[p] = p, true
	}
	sum := crc.Sum32()
	if _, err := io.ReadFull(br, word[:4]); err != nil {
		return false, bad("truncated")
	}
	if binary.LittleEndian.Uint32(word[:4]) != sum {
		return false, bad("checksum")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return false, bad("trailing bytes")
	}
	if err := r.pcg.UnmarshalBinary(hd.RNG); err != nil {
		return false, bad("random state")
	}
	for i, a := range arrays {
		copy(a, loaded[i])
	}
	copy(st.perm, perm)
	r.st.SetAdamSteps(hd.AdamSteps)
	r.m.Refresh()
	st.res.BestEpoch, st.res.BestValMSE, st.res.Epochs = hd.BestEpoch, hd.BestValMSE, hd.Epochs
	st.res.EpochsRun, st.res.ResumedFrom = hd.NextEpoch, hd.NextEpoch
	st.nextEpoch, st.bad, st.stopped = hd.NextEpoch, hd.Bad, hd.Stopped
	if hd.Kernels != gemm.Kernels() {
		st.res.ResumedOn = fmt.Sprintf("the checkpoint was written with the %s kernels and the run goes on with the %s ones: "+
			"it continues the same training, but not bit for bit", hd.Kernels, gemm.Kernels())
	}
	return true, nil
}

// removeStaleTemps deletes the temporary files of checkpoints at path that
// a killed run left half written (each as large as a checkpoint).
func removeStaleTemps(path string) {
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(filepath.Base(path))+".*.tmp"))
	for _, m := range matches {
		os.Remove(m)
	}
}

// globEscape quotes the characters filepath.Match treats specially.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`).Replace(s)
}

// formatBytes writes n bytes for a person: "1.0 GB", "12 MB".
func formatBytes(n int) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0f kB", float64(n)/1e3)
}

// keepCheckpoint writes the run's state after an epoch to the checkpoint
// file and sets *kept to the epoch it holds. A checkpoint that cannot be
// written (a full disk) costs the ability to resume, not the run: it
// returns what to tell the user, "" on success.
func (r *run) keepCheckpoint(kept *int) string {
	err := r.saveCheckpoint(r.cfg.Checkpoint)
	if err == nil {
		*kept = r.state.nextEpoch
		return ""
	}
	before := "no checkpoint is kept"
	if *kept > 0 {
		before = fmt.Sprintf("the one of epoch %d is kept", *kept)
	}
	return fmt.Sprintf("%v; it needs about %s, and as much again while it replaces the last; %s, and training goes on",
		err, formatBytes(8*len(r.checkpointArrays())*len(r.m.Params().Data)), before)
}
