package broadcast

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
)

// FuzzAssembleModel: whatever a models topic holds (a manifest and two
// chunks of arbitrary bytes), reading it back returns a model or an error,
// never a panic, and a model only when the chunks match the manifest.
func FuzzAssembleModel(f *testing.F) {
	m, err := model.New(model.Config{Lookback: 8, Horizon: 2, Channels: 1, Mode: model.Independent, Hidden: 4, Frequencies: 2, TopK: 1}, 1)
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := modelfile.Write(&buf, m); err != nil {
		f.Fatal(err)
	}
	file := buf.Bytes()
	half := len(file) / 2
	man, _ := json.Marshal(modelManifest{Version: 3, Chunks: 2, Bytes: len(file), SHA256: sha256Hex(file)})
	f.Add(man, file[:half], file[half:])
	f.Add([]byte(`{"version":3,"chunks":2,"bytes":10,"sha256":"00"}`), []byte("abcde"), []byte("fghij"))
	f.Add([]byte(`{"version":3,"chunks":-1}`), []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, manifest, c0, c1 []byte) {
		var mf modelManifest
		if json.Unmarshal(manifest, &mf) != nil || mf.Chunks > 16 {
			return
		}
		got, err := assemble(mf, map[int][]byte{0: c0, 1: c1})
		if err != nil {
			return
		}
		joined := append(append([]byte(nil), c0...), c1...)
		if mf.Chunks == 2 && sha256Hex(joined) != mf.SHA256 {
			t.Fatalf("assembled a model from chunks that do not match the manifest's checksum")
		}
		if got.Meta.Version != mf.Version {
			t.Fatalf("assembled version %d, manifest says %d", got.Meta.Version, mf.Version)
		}
	})
}
