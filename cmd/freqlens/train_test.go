package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history/historytest"
)

// tensorBytes returns the tensor data of a safetensors model file: what
// follows the header, whose metadata names the source file.
func tensorBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b[:8])
	return b[8+n:]
}

// TestTrainFromEveryFormat: the same readings as a wide CSV, as long CSV,
// as an Arrow IPC file and as Parquet train the same model, bit for bit,
// with the same seed, in both modes: long-format history of one series
// covering every step is the wide file's standard split.
func TestTrainFromEveryFormat(t *testing.T) {
	dir := t.TempDir()
	wide := writeSynthetic(t, dir, "sensors.csv", 2, 700)
	frame, err := dataset.LoadCSV(wide)
	if err != nil {
		t.Fatal(err)
	}
	layout := historytest.Layout{Series: "plant", Time: "at", Values: frame.Columns}
	rows := make([]historytest.Row, frame.Rows())
	for r := range rows {
		rows[r] = historytest.Row{Series: "north", Ms: frame.Times[r].UnixMilli(), Values: frame.Row(r)}
	}
	config := filepath.Join(dir, "serve.yaml")
	yaml := "input: {series_field: plant, time_field: at, value_fields: [" + strings.Join(frame.Columns, ", ") + "]}\n"
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"wide CSV": wide}
	for name, write := range map[string]func(testing.TB, string, historytest.Layout, []historytest.Row){
		"long.csv": historytest.WriteCSV, "long.arrow": historytest.WriteArrowFile, "long.parquet": historytest.WriteParquet,
	} {
		files[name] = filepath.Join(dir, name)
		write(t, files[name], layout, rows)
	}
	for _, mode := range []string{"mixed", "independent"} {
		var want []byte
		for _, name := range []string{"wide CSV", "long.csv", "long.arrow", "long.parquet"} {
			out := filepath.Join(dir, mode+"-"+name+".safetensors")
			code, stdout, stderr := runCLI("train", "--data", files[name], "--config", config, "--mode", mode,
				"--lookback", "48", "--horizon", "24", "--epochs", "2", "--seed", "3", "--out", out, "--json")
			if code != 0 {
				t.Fatalf("%s, %s: exit %d\n%s\n%s", mode, name, code, stdout, stderr)
			}
			got := tensorBytes(t, out)
			if want == nil {
				want = got
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: the model trained on %s differs from the one trained on the wide CSV", mode, name)
			}
		}
	}
}
