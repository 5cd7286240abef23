package model

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
	"strings"
	"testing"
	"time"
)

func encoded(t testing.TB, m *Model) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSaveLoadRoundTrip(t *testing.T) {
	m := smallModel(t, 0, 9)
	m.Meta = Meta{
		Rhythms:       m.Meta.Rhythms,
		ChannelNames:  []string{"HUFL", "OT"},
		Cadence:       time.Hour,
		StepAlign:     StepAlignNearest,
		Mean:          []float64{1.5, -2},
		Std:           []float64{0.5, 3},
		DataSHA256:    "abc123",
		DataName:      "ETTh1.csv",
		Metrics:       map[string]float64{"test_mse": 0.39, "test_mae": 0.41},
		Training:      TrainConfig{Seed: 42}.Settings(),
		Input:         map[string]string{"input.series_field": "sensor", "input.value_fields": "flow,speed"},
		Selected:      []int{1, 2, 3, 4, 5, 6, 7, 8, 9},
		Seed:          42,
		Peaks:         []PlacedPeak{{ID: 4, PeriodSteps: 23.985, VarianceShare: 0.25, Prominence: 806}},
		Shares:        []float64{0, 0.1, 0.2, 0, 0.386, 0.05, 0, 0, 0},
		ResidualShare: 0.264,
		ErrorQuantiles: &ErrorQuantiles{Probs: []float64{0.1, 0.5, 0.9}, Horizon: 5, Channels: 2, Windows: 40,
			Values: []float64{-1.5, -1, -1.25, -0.75, -2, -1, -2.5, -1.5, -3, -2, 0.01, 0, -0.1, 0.2, 0, 0, 0.1, -0.2, 0.3, 0.05,
				1.5, 1, 1.25, 0.75, 2, 1, 2.5, 1.5, 3, 2}},
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.cfg != m.cfg {
		t.Errorf("config = %+v, want %+v", got.cfg, m.cfg)
	}
	for i, v := range m.params.Data {
		if math.Float64bits(got.params.Data[i]) != math.Float64bits(v) {
			t.Fatalf("param %d = %v, want %v", i, got.params.Data[i], v)
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
	x, _ := randomBatch(m.cfg, 3, 1)
	ends := windowEnds(m, 3, 2)
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
	m := randomModel(t, smallConfigs[2].cfg, 3)
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
	c := m.cfg
	if want := []int{c.Frequencies, c.HeadHidden, c.Horizon * c.Channels}; !slices.Equal(th.Shape, want) || th.DType != "F64" {
		t.Errorf("heads.w2 = %s %v, want F64 %v", th.DType, th.Shape, want)
	}
	if got := uint64(len(b)) - 8 - n; got != uint64(8*len(m.params.Data)) {
		t.Errorf("data section is %d bytes, want %d", got, 8*len(m.params.Data))
	}
}

func TestDecodeRejectsBadFiles(t *testing.T) {
	m := randomModel(t, smallConfigs[0].cfg, 5)
	good := encoded(t, m)
	hlen := int(binary.LittleEndian.Uint64(good[:8]))

	rewrite := func(edit func(md map[string]string, hdr map[string]json.RawMessage)) []byte {
		var hdr map[string]json.RawMessage
		if err := json.Unmarshal(good[8:8+hlen], &hdr); err != nil {
			t.Fatal(err)
		}
		var md map[string]string
		json.Unmarshal(hdr["__metadata__"], &md)
		edit(md, hdr)
		mj, _ := json.Marshal(md)
		hdr["__metadata__"] = mj
		hj, _ := json.Marshal(hdr)
		out := binary.LittleEndian.AppendUint64(nil, uint64(len(hj)))
		out = append(out, hj...)
		return append(out, good[8+hlen:]...)
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
	good := encoded(t, randomModel(t, smallConfigs[1].cfg, 2))
	for n := 0; n < len(good); n += 1 + n/16 {
		if _, err := Decode(good[:n]); err == nil {
			t.Fatalf("Decode of the first %d of %d bytes succeeded", n, len(good))
		}
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts encodes back to
// a file it accepts again with the same parameters.
func FuzzDecode(f *testing.F) {
	good := encoded(f, randomModel(f, smallConfigs[1].cfg, 2))
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
		for i, v := range m.params.Data {
			if math.Float64bits(v) != math.Float64bits(again.params.Data[i]) {
				t.Fatalf("param %d changed in a round trip", i)
			}
		}
	})
}

// TestDecodeUpgradesVersion1: a version 1 file (one cosine atom per
// frequency, phase anchored at the window's first step) loads as a model
// whose cosine atoms are the old atoms and whose sine weights are zero, so
// it forecasts exactly as it did.
func TestDecodeUpgradesVersion1(t *testing.T) {
	cfg := smallConfigs[len(smallConfigs)-1].cfg // the version 2 maths, which version 1 loads as
	m := randomModel(t, cfg, 21)
	c := m.cfg
	d, N, S, E, L := c.Hidden, c.Frequencies, c.ScorerHidden, c.HeadHidden, c.Lookback
	rng := rand.New(rand.NewPCG(3, 4))
	v1 := map[string][]float64{}
	var names []string
	shapes := map[string][]int{}
	for _, tn := range tensors(c) {
		vals := slices.Clone(*tn.view(m.params))
		shape := tn.shape
		switch tn.name {
		case "scorer.w1":
			shape = []int{d, S}
		case "heads.w1":
			shape = []int{N, d, E}
		case "freq.phi":
			for i := range vals {
				vals[i] = 6 * rng.Float64()
			}
		}
		if n := numel(shape); n != len(vals) {
			vals = make([]float64, n)
			for i := range vals {
				vals[i] = rng.NormFloat64()
			}
		}
		names = append(names, tn.name)
		v1[tn.name], shapes[tn.name] = vals, shape
	}
	md, err := m.metadata("")
	if err != nil {
		t.Fatal(err)
	}
	md["format_version"] = "1"
	got, err := Decode(safetensorsFile(t, md, names, shapes, v1))
	if err != nil {
		t.Fatal(err)
	}

	fmin, fmax := freqBounds(L)
	for i := range N {
		f := fmin + (fmax-fmin)*sigmoid(v1["freq.theta"][i])
		old := make([]float64, L)
		nrm := 0.0
		for tt := range L {
			old[tt] = math.Cos(2*math.Pi*f*float64(tt) + v1["freq.phi"][i])
			nrm += old[tt] * old[tt]
		}
		for tt := range L {
			want := old[tt] / (math.Sqrt(nrm) + basisEps)
			if g := got.basis.psibar[2*i*L+tt]; math.Abs(g-want) > 1e-9 {
				t.Fatalf("frequency %d step %d: cosine atom %v, the version 1 atom is %v", i, tt, g, want)
			}
		}
	}
	for _, w := range []struct {
		name       string
		got, old   []float64
		block, all int
	}{
		{"scorer.w1", got.params.ScW1, v1["scorer.w1"], d * S, d * S},
		{"heads.w1", got.params.HeadW1, v1["heads.w1"], d * E, N * d * E},
	} {
		for b := 0; b*w.block < w.all; b++ {
			cos, sin := w.got[2*b*w.block:(2*b+1)*w.block], w.got[(2*b+1)*w.block:(2*b+2)*w.block]
			if !slices.Equal(cos, w.old[b*w.block:(b+1)*w.block]) {
				t.Errorf("%s block %d: the cosine rows are not the version 1 weights", w.name, b)
			}
			if slices.ContainsFunc(sin, func(v float64) bool { return v != 0 }) {
				t.Errorf("%s block %d: the sine rows are not zero", w.name, b)
			}
		}
	}
}

// TestOlderFormatsKeepTheirMaths: a version 2 or 3 file loads as a model
// with that version's maths (version 2: no energy term in the selection, a
// residual MLP that reads the whole window; version 3: the residual reads
// what the selected frequencies leave; both without rhythms' clock and with
// one residual MLP over all channels), forecasts exactly as the plain
// reference of that maths does, and is saved in its version again.
func TestOlderFormatsKeepTheirMaths(t *testing.T) {
	for i, sc := range smallConfigs {
		ver := sc.cfg.formatVersion()
		if ver == FormatVersion || ver == 0 {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			m := smallModel(t, i, 31)
			file := encoded(t, m)
			if !bytes.Contains(file, []byte(fmt.Sprintf(`"format_version":"%d"`, ver))) {
				t.Fatalf("a version %d model was not written as version %d", ver, ver)
			}
			old, err := Decode(file)
			if err != nil {
				t.Fatal(err)
			}
			if old.cfg != m.cfg {
				t.Fatalf("a version %d file loaded with config %+v, want %+v", ver, old.cfg, m.cfg)
			}
			const n = 4
			x, y := randomBatch(m.cfg, n, 5)
			ends := windowEnds(old, n, 6)
			got := old.Forward(old.NewWorkspace(n), nil, x, ends)
			// The reference of that maths, with the selection the forecast
			// made (a training pass without noise or dropout selects the
			// same top-K, with gates of exactly 1) at the same times.
			noise := make([]float64, n*old.cfg.Frequencies)
			tr := newGradTrainer(t, old, x, y, noise, n, TrainConfig{Dropout: -1})
			for i, end := range ends {
				for c := range old.cfg.Channels {
					tr.tau[i*old.cfg.Channels+c] = old.clock.steps(end)
				}
			}
			tr.gradient(n, 1)
			fix := selectionOf(tr, n)
			want := refLoss(old.cfg, old.params, clockOf(old, tr.tau), x, y, n, noise, 1, fix, tr.cfg)
			sameSelection(t, fix, want)
			for i := range got {
				if !close(got[i], want.forecast[i], 1e-9) {
					t.Fatalf("forecast %d = %v, the version %d reference gives %v", i, got[i], ver, want.forecast[i])
				}
			}
			if !bytes.Equal(encoded(t, old), file) {
				t.Errorf("a version %d model was not saved as it was read", ver)
			}
		})
	}
}

// safetensorsFile writes tensors (in names order) and metadata md as a
// safetensors file.
func safetensorsFile(t *testing.T, md map[string]string, names []string, shapes map[string][]int, vals map[string][]float64) []byte {
	t.Helper()
	hdr := map[string]any{"__metadata__": md}
	var data []byte
	for _, n := range names {
		lo := len(data)
		for _, v := range vals[n] {
			data = binary.LittleEndian.AppendUint64(data, math.Float64bits(v))
		}
		hdr[n] = tensorHeader{DType: "F64", Shape: shapes[n], Offsets: [2]int64{int64(lo), int64(len(data))}}
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// TestSaveRefusesNonFiniteMetadata: metadata JSON cannot hold (an
// infinite statistic of the training data) stops Save with an error
// instead of writing a file that does not load.
func TestSaveRefusesNonFiniteMetadata(t *testing.T) {
	m, err := New(Config{Lookback: 16, Horizon: 4, Channels: 2, Hidden: 8, Frequencies: 6, TopK: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Mean, m.Meta.Std = []float64{0, 1}, []float64{1, math.Inf(1)}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := m.Save(path); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Fatalf("Save with an infinite std: err %v, want a refusal", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Save left a file: %v", err)
	}
}
