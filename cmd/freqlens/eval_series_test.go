package main

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history/historytest"
)

// TestEvalScoresEachSeries: eval on long-format data scores every series
// on its own, worst first, and the series' scores weighted by their
// windows are the overall score. The series differ only in the noise on
// one synthetic feed, so the noisiest must come first.
func TestEvalScoresEachSeries(t *testing.T) {
	dir := t.TempDir()
	frame, err := dataset.LoadCSV(writeSynthetic(t, dir, "feed.csv", 1, 500))
	if err != nil {
		t.Fatal(err)
	}
	layout := historytest.Layout{Series: "series", Time: "ts", Values: []string{"value"}}
	rng := rand.New(rand.NewPCG(4, 5))
	noise := map[string]float64{"calm": 0, "breezy": 1, "stormy": 3}
	var rows []historytest.Row
	for _, name := range []string{"calm", "breezy", "stormy"} {
		for r := range frame.Rows() {
			v := frame.Row(r)[0] + noise[name]*rng.NormFloat64()
			rows = append(rows, historytest.Row{Series: name, Ms: frame.Times[r].UnixMilli(), Values: []float64{v}})
		}
	}
	data, out := filepath.Join(dir, "long.csv"), filepath.Join(dir, "m.safetensors")
	historytest.WriteCSV(t, data, layout, rows)
	if code, stdout, stderr := runCLI("train", "--data", data, "--lookback", "48", "--horizon", "24", "--epochs", "4", "--seed", "3", "--out", out); code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCLI("eval", "--model", out, "--data", data, "--json")
	if code != 0 {
		t.Fatalf("eval: exit %d\n%s", code, stderr)
	}
	var rep struct {
		MSE       float64 `json:"mse"`
		Windows   int     `json:"windows"`
		PerSeries []struct {
			Series  string  `json:"series"`
			MSE     float64 `json:"mse"`
			MAE     float64 `json:"mae"`
			Windows int     `json:"windows"`
		} `json:"per_series"`
	}
	lastJSON(t, stdout, &rep)
	if len(rep.PerSeries) != 3 {
		t.Fatalf("per_series %+v, want the three series", rep.PerSeries)
	}
	if rep.PerSeries[0].Series != "stormy" || rep.PerSeries[2].Series != "calm" {
		t.Errorf("series by MSE %+v, want stormy first and calm last", rep.PerSeries)
	}
	windows, weighted := 0, 0.0
	for _, s := range rep.PerSeries {
		windows += s.Windows
		weighted += s.MSE * float64(s.Windows)
	}
	if windows != rep.Windows || math.Abs(weighted/float64(windows)-rep.MSE) > 1e-9*rep.MSE {
		t.Errorf("series' windows %d and weighted MSE %v, overall %d and %v", windows, weighted/float64(windows), rep.Windows, rep.MSE)
	}
	code, stdout, stderr = runCLI("eval", "--model", out, "--data", data)
	if code != 0 || !strings.Contains(stdout, "by series, worst test MSE first (3 series; each series z-scored with its own training rows' statistics):\n  stormy") {
		t.Errorf("eval's text does not list the series worst first: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The independent model forecasts any number of columns of a wide
	// file, each on its own, as eval and report run it.
	wide := writeSynthetic(t, dir, "wide.csv", 3, 400)
	if code, stdout, stderr := runCLI("predict", "--model", out, "--data", wide, "--at", "300"); code != 0 || !strings.Contains(stdout, "all 3 channels'") || !strings.Contains(stdout, "\n  channel +1 ") {
		t.Errorf("predict with the independent model on 3 columns: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
