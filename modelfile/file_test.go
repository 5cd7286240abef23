package modelfile

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/internal/modeltest"
	"github.com/freqlens/freqlens/model"
)

// configs are small shapes covering both modes and normalisations, with
// rhythms (and a clock) where a model file has the most to hold.
var configs = []struct {
	cfg            model.Config
	rhythms, clock bool
}{
	{model.Config{Lookback: 12, Horizon: 5, Channels: 2, Hidden: 4, Frequencies: 9, TopK: 6, ScorerHidden: 3, HeadHidden: 4, ResidualHidden: 5}, true, true},
	{model.Config{Lookback: 10, Horizon: 3, Channels: 3, Hidden: 5, Frequencies: 8, TopK: 5, ScorerHidden: 2, HeadHidden: 3, ResidualHidden: 4, Norm: model.NormNone}, true, false},
	{model.Config{Lookback: 16, Horizon: 7, Channels: 1, Hidden: 3, Frequencies: 10, TopK: 7, ScorerHidden: 4, HeadHidden: 5, ResidualHidden: 3, Mode: model.Independent}, true, true},
	{model.Config{Lookback: 12, Horizon: 5, Channels: 3, Hidden: 4, Frequencies: 9, TopK: 6, ScorerHidden: 3, HeadHidden: 4, ResidualHidden: 5, ChannelMix: true}, true, true},
}

// testModel returns a model of configs[i] whose every parameter is drawn
// at a scale where all of it matters, with two rhythms over its first
// frequencies (one longer than the window, with a phase anchor) and, when
// the config says so, a cadence so that it reads the time.
func testModel(t testing.TB, i int, seed uint64) *model.Model {
	t.Helper()
	c := configs[i]
	m := modeltest.RandomModel(t, c.cfg, seed)
	if c.rhythms {
		modeltest.WithRhythms(m, c.clock)
	}
	return m
}

// windows returns n random windows for m and, when m reads the time, the
// times of their newest steps.
func windows(m *model.Model, n int, seed uint64) (x []float64, ends []int64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	x = make([]float64, n*m.Lookback()*m.Channels())
	for i := range x {
		x[i] = 2 + rng.NormFloat64()
	}
	if m.ReadsTime() {
		start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		ends = make([]int64, n)
		for i := range ends {
			ends[i] = start + int64(rng.IntN(5000))*int64(time.Hour) + int64(rng.IntN(60))*int64(time.Minute)
		}
	}
	return x, ends
}

func encoded(t testing.TB, m *model.Model) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// seed42Settings is what package training records of a model it trained
// with defaults and seed 42 (training.Config{Seed: 42}.Settings()).
var seed42Settings = map[string]float64{
	"epochs": 50, "batch_size": 32, "learning_rate": 1e-3, "freq_rate_scale": 5, "min_learning_rate": 1e-6,
	"clip_norm": 1, "tau_start": 1, "tau_end": 0.1, "patience": 10, "seed": 42,
	"lambda_div": 0.01, "lambda_recon": 0.1, "lambda_sparse": 0.01, "lambda_var": 0.1,
	"dropout": 0.1, "weight_decay": 0, "input_noise": 0, "channel_shuffle": 1, "ema": 0,
	"residual_warmup": 5, "fill_harmonics": 0,
}

func TestSaveLoadRoundTrip(t *testing.T) {
	m := testModel(t, 0, 9)
	m.Meta = model.Meta{
		Rhythms:       m.Meta.Rhythms,
		ChannelNames:  []string{"HUFL", "OT"},
		Cadence:       time.Hour,
		StepAlign:     model.StepAlignNearest,
		Mean:          []float64{1.5, -2},
		Std:           []float64{0.5, 3},
		DataSHA256:    "abc123",
		DataName:      "ETTh1.csv",
		Metrics:       map[string]float64{"test_mse": 0.39, "test_mae": 0.41},
		Training:      seed42Settings,
		Input:         map[string]string{"input.series_field": "sensor", "input.value_fields": "flow,speed"},
		Selected:      []int{1, 2, 3, 4, 5, 6, 7, 8, 9},
		Seed:          42,
		Peaks:         []model.PlacedPeak{{ID: 4, PeriodSteps: 23.985, VarianceShare: 0.25, Prominence: 806}},
		Shares:        []float64{0, 0.1, 0.2, 0, 0.386, 0.05, 0, 0, 0},
		ResidualShare: 0.264,
		ErrorQuantiles: &model.ErrorQuantiles{Probs: []float64{0.1, 0.5, 0.9}, Horizon: 5, Channels: 2, Windows: 40,
			Values: []float64{-1.5, -1, -1.25, -0.75, -2, -1, -2.5, -1.5, -3, -2, 0.01, 0, -0.1, 0.2, 0, 0, 0.1, -0.2, 0.3, 0.05,
				1.5, 1, 1.25, 0.75, 2, 1, 2.5, 1.5, 3, 2}},
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Save(m, path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.ShapeKey() != m.ShapeKey() {
		t.Errorf("shapes = %s, want %s", got.ShapeKey(), m.ShapeKey())
	}
	for i, v := range m.Params().Data {
		if math.Float64bits(got.Params().Data[i]) != math.Float64bits(v) {
			t.Fatalf("param %d = %v, want %v", i, got.Params().Data[i], v)
		}
	}
	gj, _ := json.Marshal(got.Meta)
	wj, _ := json.Marshal(m.Meta)
	if !bytes.Equal(gj, wj) {
		t.Errorf("meta = %s, want %s", gj, wj)
	}
	// The loaded model forecasts bit for bit like the saved one, reading
	// the time as it did.
	if !got.ReadsTime() || len(got.Meta.Rhythms) != 2 {
		t.Fatalf("the loaded model has rhythms %+v and reads the time: %v; want both as saved", got.Meta.Rhythms, got.ReadsTime())
	}
	x, ends := windows(m, 3, 1)
	a := m.Forward(m.NewWorkspace(3), nil, x, ends)
	b := got.Forward(got.NewWorkspace(3), nil, x, ends)
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("forecast %d = %v after loading, %v before", i, b[i], a[i])
		}
	}
}

// TestFileIsPlainSafetensors reads the header the way any safetensors
// reader does.
func TestFileIsPlainSafetensors(t *testing.T) {
	m := testModel(t, 2, 3)
	b := encoded(t, m)
	n := binary.LittleEndian.Uint64(b[:8])
	if (8+n)%8 != 0 {
		t.Errorf("tensor data starts at %d, not 8-byte aligned", 8+n)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var md map[string]string
	if err := json.Unmarshal(hdr["__metadata__"], &md); err != nil {
		t.Fatalf("metadata is not a map of strings: %v", err)
	}
	for _, k := range []string{"format_version", "lookback", "horizon", "channels", "hidden", "frequencies", "top_k", "mode", "channel_names", "mean", "std", "data_sha256"} {
		if _, ok := md[k]; !ok {
			t.Errorf("metadata lacks %q", k)
		}
	}
	var th tensorHeader
	if err := json.Unmarshal(hdr["heads.w2"], &th); err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	if want := []int{c.Frequencies, c.HeadHidden, c.Horizon * c.Channels}; !slices.Equal(th.Shape, want) || th.DType != "F64" {
		t.Errorf("heads.w2 = %s %v, want F64 %v", th.DType, th.Shape, want)
	}
	if got := uint64(len(b)) - 8 - n; got != uint64(8*len(m.Params().Data)) {
		t.Errorf("data section is %d bytes, want %d", got, 8*len(m.Params().Data))
	}
}

func TestDecodeRejectsBadFiles(t *testing.T) {
	m := testModel(t, 0, 5)
	good := encoded(t, m)
	hlen := int(binary.LittleEndian.Uint64(good[:8]))

	rewrite := func(edit func(md map[string]string, hdr map[string]json.RawMessage)) []byte {
		return rewriteHeader(t, good, edit)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}

	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "truncated file"},
		{"only the length", good[:8], "truncated file"},
		{"cut inside the header", good[:8+hlen/2], "truncated file"},
		{"cut inside the tensors", good[:len(good)-100], "truncated file"},
		{"trailing bytes", append(bytes.Clone(good), 1, 2, 3), "corrupted file"},
		{"huge header length", append(binary.LittleEndian.AppendUint64(nil, 1<<40), good[8:]...), "implausible"},
		{"garbage header", append(binary.LittleEndian.AppendUint64(nil, 4), '{', 'x', 'y', 'z'), "corrupted header"},
		{"flipped weight byte", flip(len(good) - 3), "checksum"},
		{"newer format", rewrite(func(md map[string]string, _ map[string]json.RawMessage) { md["format_version"] = "99" }), "upgrade freqlens"},
		{"other safetensors", rewrite(func(md map[string]string, _ map[string]json.RawMessage) { delete(md, "format") }), "not a FreqLens model"},
		{"horizon disagrees with tensors", rewrite(func(md map[string]string, _ map[string]json.RawMessage) { md["horizon"] = "6" }), "shape"},
		{"missing tensor", rewrite(func(_ map[string]string, h map[string]json.RawMessage) { delete(h, "fusion.w") }), "tensors"},
		{"top_k above frequencies", rewrite(func(md map[string]string, _ map[string]json.RawMessage) { md["top_k"] = "60" }), "top_k"},
		{"unknown mode", rewrite(func(md map[string]string, _ map[string]json.RawMessage) { md["mode"] = "sideways" }), "mode"},
		{"bad cadence", rewrite(func(md map[string]string, _ map[string]json.RawMessage) { md["cadence"] = "often" }), "cadence"},
		{"unknown step alignment", rewrite(func(md map[string]string, _ map[string]json.RawMessage) { md["step_align"] = "sideways" }), "step_align"},
		{"error quantiles of another horizon", rewrite(func(md map[string]string, _ map[string]json.RawMessage) {
			md["error_quantiles"] = `{"probs":[0.5],"horizon":4,"channels":2,"windows":1,"values":[0,0,0,0,0,0,0,0]}`
		}), "error quantiles of horizon 4"},
		{"error quantiles not increasing", rewrite(func(md map[string]string, _ map[string]json.RawMessage) {
			md["error_quantiles"] = `{"probs":[0.5,0.5],"horizon":5,"channels":2,"windows":1,"values":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}`
		}), "not increasing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.in)
			if err == nil {
				t.Fatal("Decode succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestDecodeEveryTruncation(t *testing.T) {
	good := encoded(t, testModel(t, 1, 2))
	for n := 0; n < len(good); n += 1 + n/16 {
		if _, err := Decode(good[:n]); err == nil {
			t.Fatalf("Decode of the first %d of %d bytes succeeded", n, len(good))
		}
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts encodes back to
// a file it accepts again with the same parameters.
func FuzzDecode(f *testing.F) {
	good := encoded(f, testModel(f, 1, 2))
	f.Add([]byte{})
	f.Add(good[:len(good)/2])
	f.Add(good)
	f.Add(append(bytes.Clone(good), "garbage"...))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(encoded(t, m))
		if err != nil {
			t.Fatalf("re-decoding an accepted model failed: %v", err)
		}
		for i, v := range m.Params().Data {
			if math.Float64bits(v) != math.Float64bits(again.Params().Data[i]) {
				t.Fatalf("param %d changed in a round trip", i)
			}
		}
	})
}

// TestOlderFormatsAreRefused: a file of format version 1 to 6 holds a model
// that computes differently from this build's; it is refused with one line
// that names the command retraining it from the file's own metadata.
func TestOlderFormatsAreRefused(t *testing.T) {
	m := testModel(t, 0, 31)
	m.Meta.DataName = "traffic.csv"
	for ver := 1; ver < oldestFormat; ver++ {
		t.Run(fmt.Sprintf("version %d", ver), func(t *testing.T) {
			file := rewriteHeader(t, encoded(t, m), func(md map[string]string, _ map[string]json.RawMessage) {
				md["format_version"] = strconv.Itoa(ver)
			})
			_, err := Decode(file)
			if err == nil {
				t.Fatalf("a version %d file loaded", ver)
			}
			msg := err.Error()
			want := fmt.Sprintf("freqlens train --data traffic.csv --horizon %d --lookback %d --mode mixed --out MODEL", m.Horizon(), m.Lookback())
			if !strings.Contains(msg, fmt.Sprintf("format version %d", ver)) || !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming version %d and %q", msg, ver, want)
			}
		})
	}
}

// rewriteHeader returns the model file good with its header's metadata
// and tensor entries changed by edit.
func rewriteHeader(t *testing.T, good []byte, edit func(md map[string]string, hdr map[string]json.RawMessage)) []byte {
	t.Helper()
	hlen := int(binary.LittleEndian.Uint64(good[:8]))
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(good[8:8+hlen], &hdr); err != nil {
		t.Fatal(err)
	}
	var md map[string]string
	if err := json.Unmarshal(hdr["__metadata__"], &md); err != nil {
		t.Fatal(err)
	}
	edit(md, hdr)
	mj, _ := json.Marshal(md)
	hdr["__metadata__"] = mj
	hj, _ := json.Marshal(hdr)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hj)))
	out = append(out, hj...)
	return append(out, good[8+hlen:]...)
}

// TestSaveRefusesNonFiniteMetadata: metadata JSON cannot hold (an
// infinite statistic of the training data) stops Save with an error
// instead of writing a file that does not load.
func TestSaveRefusesNonFiniteMetadata(t *testing.T) {
	m, err := model.New(model.Config{Lookback: 16, Horizon: 4, Channels: 2, Hidden: 8, Frequencies: 6, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Mean, m.Meta.Std = []float64{0, 1}, []float64{1, math.Inf(1)}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Save(m, path); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Fatalf("Save with an infinite std: err %v, want a refusal", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Save left a file: %v", err)
	}
}

// TestTimeZoneSurvivesTheFile: a model on a zone's wall clock loads on the
// same clock and forecasts the same, bit for bit, on a summer day.
func TestTimeZoneSurvivesTheFile(t *testing.T) {
	m := testModel(t, 0, 4)
	if err := m.SetTimeZone("Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Save(m, path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Meta.TimeZone != "Europe/Berlin" {
		t.Fatalf("the loaded model's zone is %q, want Europe/Berlin", back.Meta.TimeZone)
	}
	x, _ := windows(m, 1, 5)
	summer := []int64{time.Date(2026, 7, 1, 8, 0, 0, 0, time.UTC).UnixNano()}
	a := m.Forward(m.NewWorkspace(1), nil, x, summer)
	b := back.Forward(back.NewWorkspace(1), nil, x, summer)
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("forecast %d = %v after loading, %v before", i, b[i], a[i])
		}
	}
}

// TestChannelMixFormat: a model without the channel mix is written as
// version 7, which builds without the mix read; one with it as version 8,
// which round-trips its mix; a version 7 file that claims the mix, or a
// mix flag other than "true", is refused.
func TestChannelMixFormat(t *testing.T) {
	version := func(file []byte) string {
		var got string
		rewriteHeader(t, file, func(md map[string]string, _ map[string]json.RawMessage) { got = md["format_version"] })
		return got
	}
	plain, mixed := testModel(t, 0, 8), testModel(t, 3, 8)
	if v := version(encoded(t, plain)); v != "7" {
		t.Errorf("a model without the mix is written as version %s, want 7", v)
	}
	file := encoded(t, mixed)
	if v := version(file); v != "8" {
		t.Errorf("a model with the mix is written as version %s, want 8", v)
	}
	back, err := Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Config().ChannelMix || !slices.Equal(back.Params().MixW, mixed.Params().MixW) {
		t.Fatal("the channel mix did not survive the file")
	}
	for name, edit := range map[string]func(md map[string]string){
		"version 7 with the mix": func(md map[string]string) { md["format_version"] = "7" },
		"a mix flag of false":    func(md map[string]string) { md["channel_mix"] = "false" },
	} {
		bad := rewriteHeader(t, file, func(md map[string]string, _ map[string]json.RawMessage) { edit(md) })
		if _, err := Decode(bad); err == nil || !strings.Contains(err.Error(), "channel_mix") {
			t.Errorf("%s: err = %v, want a corrupted header naming channel_mix", name, err)
		}
	}
}
