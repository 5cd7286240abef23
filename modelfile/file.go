package modelfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/freqlens/freqlens/model"
)

// FormatVersion is the newest model file version this build writes and
// reads. A version 7 file holds the tensors of model.Tensors (clock.weight
// and band.weight included) and the rhythms in its metadata; version 8 adds
// the channel mix of the residual's input (model.Config.ChannelMix: the
// metadata's channel_mix and the residual.mix tensor). A model without the
// mix is written as version 7, which builds that know no mix read as they
// always did; a version 7 file reads as a model without it. Files of
// versions 1 to 6, written by earlier builds, hold models that compute
// differently (the frequencies outside the rhythms read the whole window,
// the rhythms compete for the selection, there are no band heads or no
// clock, ...): none converts exactly, so Decode refuses them with the
// command that retrains the model. docs/model.md lists the versions.
const FormatVersion = 8

// oldestFormat is the oldest version Decode reads: version 7 is version 8
// without the channel mix.
const oldestFormat = 7

const (
	formatName     = "freqlens"
	maxHeaderBytes = 16 << 20
)

type tensorHeader struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// Save writes m to path as a safetensors file. It writes a temporary file
// beside path and renames it, so a reader never sees half a model.
func Save(m *model.Model, path string) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := Write(tmp, m); err != nil {
		tmp.Close()
		return fmt.Errorf("save model %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save model %s: %w", path, err)
	}
	// Readable by all, as a file written with os.Create would be: a model
	// is mounted into containers that run as another user.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("save model %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	return nil
}

// Write writes m to w in the safetensors format and returns the bytes
// written.
func Write(w io.Writer, m *model.Model) (int64, error) {
	params := m.Params().Data
	data := make([]byte, 8*len(params))
	for i, v := range params {
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(v))
	}
	sum := sha256.Sum256(data)

	md, err := metadata(m, hex.EncodeToString(sum[:]))
	if err != nil {
		return 0, err
	}
	header := map[string]any{"__metadata__": md}
	var off int64
	for _, t := range model.Tensors(m.Config()) {
		n := int64(8 * t.Size())
		header[t.Name] = tensorHeader{DType: "F64", Shape: t.Shape, Offsets: [2]int64{off, off + n}}
		off += n
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return 0, err
	}
	// Pad the header with spaces so the tensors start 8-byte aligned.
	for (8+len(hj))%8 != 0 {
		hj = append(hj, ' ')
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hj)))
	var total int64
	for _, b := range [][]byte{lenBuf[:], hj, data} {
		k, err := w.Write(b)
		total += int64(k)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// metadata returns the "__metadata__" map: every value is a string, as the
// safetensors format requires. It fails on a value JSON cannot hold (NaN or
// ±Inf), which would otherwise make a file that does not load.
func metadata(m *model.Model, weightsSHA string) (map[string]string, error) {
	c := m.Config()
	var jsErr error
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil && jsErr == nil {
			jsErr = fmt.Errorf("model: the metadata cannot be written (%v); a statistic of the training data is not finite: rescale data whose values are near the float64 limits", err)
		}
		return string(b)
	}
	md := map[string]string{
		"format":          formatName,
		"format_version":  strconv.Itoa(formatOf(c)),
		"lookback":        strconv.Itoa(c.Lookback),
		"horizon":         strconv.Itoa(c.Horizon),
		"channels":        strconv.Itoa(c.Channels),
		"hidden":          strconv.Itoa(c.Hidden),
		"frequencies":     strconv.Itoa(c.Frequencies),
		"top_k":           strconv.Itoa(c.TopK),
		"scorer_hidden":   strconv.Itoa(c.ScorerHidden),
		"head_hidden":     strconv.Itoa(c.HeadHidden),
		"residual_hidden": strconv.Itoa(c.ResidualHidden),
		"mode":            string(c.Mode),
		"norm":            string(c.Norm),
		"channel_names":   js(nonNil(m.Meta.ChannelNames)),
		"mean":            js(nonNilF(m.Meta.Mean)),
		"std":             js(nonNilF(m.Meta.Std)),
		"data_sha256":     m.Meta.DataSHA256,
		"data_name":       m.Meta.DataName,
		"seed":            strconv.FormatUint(m.Meta.Seed, 10),
		"weights_sha256":  weightsSHA,
	}
	if c.ChannelMix {
		md["channel_mix"] = "true"
	}
	if m.Meta.Cadence > 0 {
		md["cadence"] = m.Meta.Cadence.String()
	}
	if m.Meta.StepAlign != "" {
		md["step_align"] = m.Meta.StepAlign
	}
	if m.Meta.TimeZone != "" {
		md["time_zone"] = m.Meta.TimeZone
	}
	if m.Meta.Metrics != nil {
		md["metrics"] = js(m.Meta.Metrics)
	}
	if m.Meta.ErrorQuantiles != nil {
		md["error_quantiles"] = js(m.Meta.ErrorQuantiles)
	}
	if m.Meta.Selected != nil {
		md["selected"] = js(m.Meta.Selected)
	}
	if m.Meta.Training != nil {
		md["training"] = js(m.Meta.Training)
	}
	if len(m.Meta.Input) > 0 {
		md["input"] = js(m.Meta.Input)
	}
	if m.Meta.Version > 0 {
		md["version"] = strconv.FormatInt(m.Meta.Version, 10)
	}
	if len(m.Meta.Peaks) > 0 {
		md["peaks"] = js(m.Meta.Peaks)
	}
	if len(m.Meta.Rhythms) > 0 {
		md["rhythms"] = js(m.Meta.Rhythms)
	}
	if m.Meta.Shares != nil {
		md["shares"] = js(m.Meta.Shares)
		md["residual_share"] = strconv.FormatFloat(m.Meta.ResidualShare, 'g', -1, 64)
	}
	if m.Meta.RhythmShares != nil {
		md["rhythm_shares"] = js(m.Meta.RhythmShares)
	}
	return md, jsErr
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilF(s []float64) []float64 {
	if s == nil {
		return []float64{}
	}
	return s
}

// Load reads a model file written by Save. A truncated, corrupted or
// incompatible file gives an error that says what is wrong.
func Load(path string) (*model.Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	m, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	return m, nil
}

// Decode parses a model file held in memory. It never panics on bad bytes.
func Decode(b []byte) (*model.Model, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("truncated file: %d bytes, shorter than the 8-byte safetensors header length", len(b))
	}
	hlen := binary.LittleEndian.Uint64(b[:8])
	if hlen > maxHeaderBytes {
		return nil, fmt.Errorf("not a safetensors model: header length %d is implausible (is this a model file?)", hlen)
	}
	if uint64(len(b)-8) < hlen {
		return nil, fmt.Errorf("truncated file: the header needs %d bytes but only %d follow", hlen, len(b)-8)
	}
	hdr := bytes.TrimRight(b[8:8+hlen], " ")
	data := b[8+hlen:]

	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("corrupted header: %v", err)
	}
	var md map[string]string
	if r, ok := raw["__metadata__"]; !ok {
		return nil, fmt.Errorf("not a FreqLens model: the safetensors header has no __metadata__")
	} else if err := json.Unmarshal(r, &md); err != nil {
		return nil, fmt.Errorf("corrupted header: __metadata__: %v", err)
	}
	delete(raw, "__metadata__")
	if md["format"] != formatName {
		return nil, fmt.Errorf("not a FreqLens model: metadata format is %q, want %q", md["format"], formatName)
	}
	ver, err := strconv.Atoi(md["format_version"])
	if err != nil {
		return nil, fmt.Errorf("corrupted header: format_version %q is not a number", md["format_version"])
	}
	if ver > FormatVersion {
		return nil, fmt.Errorf("model file format version %d is newer than this build reads (%d); upgrade freqlens", ver, FormatVersion)
	}
	if ver < 1 {
		return nil, fmt.Errorf("corrupted header: format_version %d", ver)
	}

	if ver < oldestFormat {
		return nil, olderFormat(ver, md)
	}
	cfg, meta, err := parseMetadata(md)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("incompatible model: %w", err)
	}
	if err := meta.Check(cfg); err != nil {
		return nil, fmt.Errorf("corrupted header: %w", err)
	}

	// Every expected tensor, exactly once, with its shape; nothing else.
	want := model.Tensors(cfg)
	if len(raw) != len(want) {
		names := make([]string, 0, len(raw))
		for k := range raw {
			names = append(names, k)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("incompatible model: the file holds %d tensors %v, a model of these shapes has %d", len(raw), names, len(want))
	}
	total := 0
	for _, t := range want {
		total += t.Size()
	}
	params := make([]float64, total)
	var covered int64
	at := 0 // where t starts in params
	for _, t := range want {
		r, ok := raw[t.Name]
		if !ok {
			return nil, fmt.Errorf("incompatible model: tensor %q is missing", t.Name)
		}
		var th tensorHeader
		if err := json.Unmarshal(r, &th); err != nil {
			return nil, fmt.Errorf("corrupted header: tensor %q: %v", t.Name, err)
		}
		if th.DType != "F64" {
			return nil, fmt.Errorf("incompatible model: tensor %q has dtype %s; FreqLens stores F64", t.Name, th.DType)
		}
		if !slices.Equal(th.Shape, t.Shape) {
			return nil, fmt.Errorf("incompatible model: tensor %q has shape %v, the metadata implies %v", t.Name, th.Shape, t.Shape)
		}
		n := int64(8 * t.Size())
		lo, hi := th.Offsets[0], th.Offsets[1]
		if lo < 0 || hi-lo != n || hi > int64(len(data)) {
			if hi > int64(len(data)) && lo >= 0 && hi-lo == n {
				return nil, fmt.Errorf("truncated file: tensor %q ends at byte %d of the data, which holds %d", t.Name, hi, len(data))
			}
			return nil, fmt.Errorf("corrupted header: tensor %q has byte range [%d, %d), want %d bytes", t.Name, lo, hi, n)
		}
		vals := params[at : at+t.Size()]
		for i := range vals {
			vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[lo+int64(8*i):]))
		}
		at += t.Size()
		covered += n
	}
	if covered != int64(len(data)) {
		return nil, fmt.Errorf("corrupted file: %d bytes of tensor data, the header describes %d", len(data), covered)
	}
	if want := md["weights_sha256"]; want != "" {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			return nil, fmt.Errorf("corrupted file: the tensor bytes do not match their checksum (sha256 %s…, recorded %s…)", got[:12], want[:min(12, len(want))])
		}
	}
	at = 0
	for _, t := range want {
		for i, v := range params[at : at+t.Size()] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("corrupted model: %s[%d] is %v", t.Name, i, v)
			}
		}
		at += t.Size()
	}
	return model.Assemble(cfg, meta, params)
}

// formatOf is the version a model of cfg is written as: 7 without the
// channel mix, so that builds that know no mix still read it, 8 with it.
func formatOf(cfg model.Config) int {
	if cfg.ChannelMix {
		return FormatVersion
	}
	return oldestFormat
}

// olderFormat is the error for a model file of format version ver, older
// than this build's: one line that names the command retraining the model
// from its metadata md (its data, or the input topic, and its horizon,
// lookback and mode).
func olderFormat(ver int, md map[string]string) error {
	cmd := "freqlens train --data " + md["data_name"]
	switch data := md["data_name"]; {
	case data == "":
		cmd = "freqlens train --data DATA"
	case strings.HasPrefix(data, "topic "):
		cmd = "freqlens train --from-topic --config CONFIG" // trained on the input topic's history
	}
	for _, f := range []struct{ flag, key string }{{"horizon", "horizon"}, {"lookback", "lookback"}, {"mode", "mode"}} {
		if v := md[f.key]; v != "" {
			cmd += " --" + f.flag + " " + v
		}
	}
	return fmt.Errorf("model file format version %d was written by an older freqlens whose model computes differently; this build serves formats %d and %d only: retrain the model with %s --out MODEL", ver, oldestFormat, FormatVersion, cmd)
}

// parseMetadata rebuilds the Config and Meta recorded by metadata.
func parseMetadata(md map[string]string) (model.Config, model.Meta, error) {
	var cfg model.Config
	ints := []struct {
		key string
		dst *int
	}{
		{"lookback", &cfg.Lookback}, {"horizon", &cfg.Horizon}, {"channels", &cfg.Channels},
		{"hidden", &cfg.Hidden}, {"frequencies", &cfg.Frequencies}, {"top_k", &cfg.TopK},
		{"scorer_hidden", &cfg.ScorerHidden}, {"head_hidden", &cfg.HeadHidden}, {"residual_hidden", &cfg.ResidualHidden},
	}
	for _, f := range ints {
		s, ok := md[f.key]
		if !ok {
			return cfg, model.Meta{}, fmt.Errorf("incompatible model: metadata %q is missing", f.key)
		}
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 || v > 1<<24 {
			return cfg, model.Meta{}, fmt.Errorf("corrupted header: metadata %s = %q is not a valid size", f.key, s)
		}
		*f.dst = v
	}
	cfg.Mode, cfg.Norm = model.Mode(md["mode"]), model.Norm(md["norm"])
	switch s := md["channel_mix"]; s {
	case "":
	case "true":
		if md["format_version"] != strconv.Itoa(FormatVersion) {
			return cfg, model.Meta{}, fmt.Errorf("corrupted header: metadata channel_mix in a version %s file; the mix came with version %d", md["format_version"], FormatVersion)
		}
		cfg.ChannelMix = true
	default:
		return cfg, model.Meta{}, fmt.Errorf("corrupted header: metadata channel_mix %q; a model with the mix records \"true\"", s)
	}

	var meta model.Meta
	for _, f := range []struct {
		key string
		dst any
	}{{"channel_names", &meta.ChannelNames}, {"mean", &meta.Mean}, {"std", &meta.Std}} {
		if s := md[f.key]; s != "" {
			if err := json.Unmarshal([]byte(s), f.dst); err != nil {
				return cfg, meta, fmt.Errorf("corrupted header: metadata %s: %v", f.key, err)
			}
		}
	}
	for _, f := range []struct {
		key string
		dst any
	}{{"selected", &meta.Selected}, {"peaks", &meta.Peaks}, {"shares", &meta.Shares}, {"rhythms", &meta.Rhythms}, {"rhythm_shares", &meta.RhythmShares}} {
		if s := md[f.key]; s != "" {
			if err := json.Unmarshal([]byte(s), f.dst); err != nil {
				return cfg, meta, fmt.Errorf("corrupted header: metadata %s: %v", f.key, err)
			}
		}
	}
	if s := md["residual_share"]; s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return cfg, meta, fmt.Errorf("corrupted header: metadata residual_share %q is not a share", s)
		}
		meta.ResidualShare = v
	}
	if s := md["training"]; s != "" {
		if err := json.Unmarshal([]byte(s), &meta.Training); err != nil {
			return cfg, meta, fmt.Errorf("corrupted header: metadata training: %v", err)
		}
	}
	if s := md["input"]; s != "" {
		if err := json.Unmarshal([]byte(s), &meta.Input); err != nil {
			return cfg, meta, fmt.Errorf("corrupted header: metadata input: %v", err)
		}
	}
	if s := md["metrics"]; s != "" {
		if err := json.Unmarshal([]byte(s), &meta.Metrics); err != nil {
			return cfg, meta, fmt.Errorf("corrupted header: metadata metrics: %v", err)
		}
	}
	if s := md["error_quantiles"]; s != "" {
		if err := json.Unmarshal([]byte(s), &meta.ErrorQuantiles); err != nil {
			return cfg, meta, fmt.Errorf("corrupted header: metadata error_quantiles: %v", err)
		}
	}
	if s := md["cadence"]; s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return cfg, meta, fmt.Errorf("corrupted header: metadata cadence %q is not a duration", s)
		}
		meta.Cadence = d
	}
	switch s := md["step_align"]; s {
	case "", model.StepAlignNearest:
		meta.StepAlign = s
	default:
		return cfg, meta, fmt.Errorf("corrupted header: metadata step_align %q; the only alignment a model records is %q", s, model.StepAlignNearest)
	}
	if s := md["time_zone"]; s != "" {
		if _, err := time.LoadLocation(s); err != nil {
			return cfg, meta, fmt.Errorf("corrupted header: metadata time_zone %q is no time zone: %w", s, err)
		}
		meta.TimeZone = s
	}
	if s := md["seed"]; s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cfg, meta, fmt.Errorf("corrupted header: metadata seed %q", s)
		}
		meta.Seed = v
	}
	if s := md["version"]; s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 1 {
			return cfg, meta, fmt.Errorf("corrupted header: metadata version %q is not a positive integer", s)
		}
		meta.Version = v
	}
	meta.DataSHA256, meta.DataName = md["data_sha256"], md["data_name"]
	return cfg, meta, nil
}
