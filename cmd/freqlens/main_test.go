package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
)

// writeSynthetic writes a synthetic hourly CSV with daily and 12-hour cycles.
func writeSynthetic(t *testing.T, dir, name string, series, steps int) string {
	t.Helper()
	return writeSyntheticAt(t, dir, name, series, steps, time.Hour)
}

// writeSyntheticAt is writeSynthetic with steps of cadence.
func writeSyntheticAt(t *testing.T, dir, name string, series, steps int, cadence time.Duration) string {
	t.Helper()
	f, err := dataset.Synthetic(dataset.SyntheticConfig{
		Series: series, Steps: steps, Cadence: cadence, Level: 10,
		Cycles:   []dataset.Cycle{{Period: 24 * time.Hour, Amplitude: 3}, {Period: 12 * time.Hour, Amplitude: 1}},
		NoiseStd: 0.2, SeriesJitter: 0.3, Seed: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := f.WriteCSV(out); err != nil {
		t.Fatal(err)
	}
	return path
}

// runCLI runs one command line and returns its exit status and output.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

// lastJSON decodes the last line of out into v.
func lastJSON(t testing.TB, out string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("last stdout line is not JSON: %v\n%s", err, out)
	}
}

func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir, "sensors.csv", 3, 900)
	modelPath := filepath.Join(dir, "m.safetensors")

	code, out, errOut := runCLI("train", "--data", data, "--horizon", "12", "--lookback", "48", "--epochs", "3", "--out", modelPath, "--json")
	if code != 0 {
		t.Fatalf("train exited %d: %s", code, errOut)
	}
	var tr map[string]any
	lastJSON(t, out, &tr)
	for _, k := range []string{"epochs_run", "epoch_seconds_median", "best_epoch", "val_mse", "test_mse", "test_mae"} {
		if _, ok := tr[k]; !ok {
			t.Errorf("train JSON lacks %q: %v", k, tr)
		}
	}
	if tr["epochs_run"].(float64) < 1 || tr["test_mse"].(float64) <= 0 {
		t.Errorf("train JSON = %v", tr)
	}

	ev := checkEndToEndEval(t, modelPath, data, tr)
	checkColumnsAreTheModels(t, dir, modelPath, data)
	if math.Abs(ev.RMSE-math.Sqrt(ev.MSE)) > 1e-12 {
		t.Errorf("rmse %v is not √mse %v", ev.RMSE, math.Sqrt(ev.MSE))
	}
	checkEndToEndInspect(t, modelPath)
	checkEndToEndPredict(t, modelPath, data)
}

// checkEndToEndEval checks eval of the model at modelPath on data: its
// JSON, whose MSE is the test MSE train reported in tr, and its text,
// which lists the channels worst first. It returns the JSON.
func checkEndToEndEval(t *testing.T, modelPath, data string, tr map[string]any) evalReport {
	t.Helper()
	code, out, errOut := runCLI("eval", "--model", modelPath, "--data", data, "--json")
	if code != 0 {
		t.Fatalf("eval exited %d: %s", code, errOut)
	}
	var ev evalReport
	lastJSON(t, out, &ev)
	if ev.Channels != 3 || ev.Windows == 0 || len(ev.PerChannel) != 3 || ev.WindowsPerSecond <= 0 || !ev.SameData {
		t.Errorf("eval JSON = %+v", ev)
	}
	if math.Abs(ev.MSE-tr["test_mse"].(float64)) > 1e-12 {
		t.Errorf("eval MSE %v differs from the test MSE train reported, %v", ev.MSE, tr["test_mse"])
	}
	// The text lists the channels worst first.
	code, out, errOut = runCLI("eval", "--model", modelPath, "--data", data)
	if code != 0 {
		t.Fatalf("eval exited %d: %s", code, errOut)
	}
	var listed []float64
	for _, line := range strings.Split(out, "\n") {
		var name string
		var mse, mae float64
		if n, _ := fmt.Sscanf(line, "  %s MSE %f  MAE %f", &name, &mse, &mae); n == 3 {
			if want, ok := ev.PerChannel[name]; !ok || math.Abs(want-mse) > 1e-4 {
				t.Errorf("eval lists channel %s with MSE %v; its JSON says %v", name, mse, want)
			}
			listed = append(listed, mse)
		}
	}
	if len(listed) != 3 || !slices.IsSortedFunc(listed, func(a, b float64) int { return cmp.Compare(b, a) }) {
		t.Errorf("eval lists the channels' MSE as %v, want three, worst first:\n%s", listed, out)
	}
	return ev
}

// checkColumnsAreTheModels checks that the mixed model at modelPath reads
// each column as its channel: the same file as data with two columns
// swapped, or one renamed (written to dir), is refused, not forecast.
func checkColumnsAreTheModels(t *testing.T, dir, modelPath, data string) {
	t.Helper()
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	header, rest, _ := strings.Cut(string(raw), "\n")
	cols := strings.Split(header, ",")
	for name, want := range map[string]string{"swapped": "in another order", "renamed": "where the mixed model was trained on"} {
		edited := slices.Clone(cols)
		if name == "swapped" {
			edited[1], edited[2] = edited[2], edited[1]
		} else {
			edited[3] = "humidity"
		}
		path := filepath.Join(dir, name+".csv")
		if err := os.WriteFile(path, []byte(strings.Join(edited, ",")+"\n"+rest), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := runCLI("eval", "--model", modelPath, "--data", path); code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("eval on the %s columns: exit %d, %q; want a refusal saying %q", name, code, errOut, want)
		}
	}
}

// checkEndToEndInspect checks inspect of the model at modelPath: its
// JSON's rhythms (the 24h cycle first), frequencies sorted by period and
// in seconds, selections and known periods, and its text.
func checkEndToEndInspect(t *testing.T, modelPath string) {
	t.Helper()
	code, out, errOut := runCLI("inspect", "--model", modelPath, "--json")
	if code != 0 {
		t.Fatalf("inspect exited %d: %s", code, errOut)
	}
	var in inspectReport
	lastJSON(t, out, &in)
	rhythmLines := 0 // every window selects them all, and K = 8 in all
	for _, r := range in.Rhythms {
		rhythmLines += len(r.Frequencies)
	}
	if len(in.Rhythms) == 0 || in.Rhythms[0].Name != "24.0h cycle" {
		t.Errorf("inspect JSON rhythms = %+v, want the 24.0h cycle named first", in.Rhythms)
	}
	selects := max(8, rhythmLines)
	if len(in.Frequencies) != 32 || len(in.MostSelected) != selects || in.SelectedPerWindow != selects ||
		in.CyclesAlwaysSelected != (rhythmLines > 0) || len(in.KnownPeriods) != 3 || in.Params == 0 {
		t.Fatalf("inspect JSON = %+v", in)
	}
	// The data has a day of 24h and 12h lines and no week: a known period
	// matches only through a line of a cycle found in it.
	for _, k := range in.KnownPeriods {
		if want := k.Known != "7.0d"; k.Match != want || want && k.Cycle != "24.0h cycle" {
			t.Errorf("known period %s: match %v (%q), want %v", k.Known, k.Match, k.Cycle, want)
		}
	}
	for i := 1; i < len(in.Frequencies); i++ {
		if in.Frequencies[i].PeriodSteps < in.Frequencies[i-1].PeriodSteps {
			t.Fatal("inspect frequencies are not sorted by period")
		}
	}
	if f := in.Frequencies[0]; f.PeriodSeconds == nil || math.Abs(*f.PeriodSeconds-3600*f.PeriodSteps) > 1e-6*3600*f.PeriodSteps {
		t.Errorf("period_seconds of an hourly model = %v, want 3600 × %v", f.PeriodSeconds, f.PeriodSteps)
	}
	if code, out, _ := runCLI("inspect", "--model", modelPath); code != 0 || !strings.Contains(out, "24.0h") {
		t.Errorf("inspect text (exit %d) does not name the 24h period:\n%s", code, out)
	}
}

// checkEndToEndPredict checks predict of the model at modelPath on row
// 500 of data: the forecast's shape, the rhythms (the 24h cycle first),
// and that the residual and the contributions sum to the forecast.
func checkEndToEndPredict(t *testing.T, modelPath, data string) {
	t.Helper()
	code, out, errOut := runCLI("predict", "--model", modelPath, "--data", data, "--at", "500", "--json")
	if code != 0 {
		t.Fatalf("predict exited %d: %s", code, errOut)
	}
	var pr predictReport
	lastJSON(t, out, &pr)
	if len(pr.Forecast) != 12 || len(pr.Forecast[0]) != 3 || len(pr.Contributions) < 8 || pr.Actual == nil {
		t.Fatalf("predict JSON has %d×%d forecast, %d contributions (want the 8 selected)",
			len(pr.Forecast), len(pr.Forecast[0]), len(pr.Contributions))
	}
	if len(pr.Rhythms) == 0 || pr.Rhythms[0].Name != "24.0h cycle" {
		t.Errorf("predict JSON rhythms = %+v, want the 24.0h cycle first", pr.Rhythms)
	}
	for h := range pr.Forecast {
		for c := range pr.Forecast[h] {
			sum := pr.Residual[h][c]
			for _, ct := range pr.Contributions {
				sum += ct.Values[h][c]
			}
			if d := math.Abs(sum - pr.Forecast[h][c]); d > 1e-9*math.Max(1, math.Abs(pr.Forecast[h][c])) {
				t.Fatalf("step %d channel %d: residual + contributions = %v, forecast %v", h, c, sum, pr.Forecast[h][c])
			}
		}
	}
}

// TestPredictWithout: removing any frequency, any cycle or several of
// them moves the forecast by exactly their parts (1e-9 of the forecast's
// scale): the attribution is faithful to removal.
func TestPredictWithout(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir, "sensors.csv", 3, 900)
	modelPath := filepath.Join(dir, "m.safetensors")
	if code, _, errOut := runCLI("train", "--data", data, "--horizon", "12", "--lookback", "48", "--epochs", "3", "--out", modelPath); code != 0 {
		t.Fatalf("train exited %d: %s", code, errOut)
	}
	w := &withoutRow{modelPath: modelPath, data: data}
	w.full = w.predict(t)
	// Near the file's end the actuals are the rows it holds after the
	// window: 4 of the 12 steps after row 895 of 900, none after the last.
	if n := len(w.full.Actual); n != 12 {
		t.Errorf("predict --at 600 gave %d actual steps, want 12", n)
	}
	if near := w.predict(t, "--at", "895"); len(near.Actual) != 4 {
		t.Errorf("predict --at 895 of 900 rows gave %d actual steps, want 4", len(near.Actual))
	}
	if last := w.predict(t, "--at", "899"); last.Actual != nil {
		t.Errorf("predict --at the last row gave actuals %v, want none", last.Actual)
	}
	w.removeEveryPart(t)
	w.checkTextNamesTheRemoved(t)

	// The perturbation test over the test split says the same of every window.
	code, out, errOut := runCLI("eval", "--model", modelPath, "--data", data, "--perturbation", "3", "--json")
	if code != 0 {
		t.Fatalf("eval --perturbation exited %d: %s", code, errOut)
	}
	var ev evalReport
	lastJSON(t, out, &ev)
	if ev.Perturbation == nil || len(ev.Perturbation.Steps) != 3 || ev.Perturbation.Windows != ev.Windows {
		t.Fatalf("eval --perturbation 3 JSON = %+v", ev.Perturbation)
	}
	for _, st := range ev.Perturbation.Steps {
		if st.Gap > 1e-9 {
			t.Errorf("k = %d: removing the largest parts moved the forecasts by their sum ± %.3g of their scale", st.K, st.Gap)
		}
	}
	if code, _, errOut := runCLI("predict", "--model", modelPath, "--data", data, "--at", "600", "--without", "13h"); code != 2 || !strings.Contains(errOut, "24.0h") {
		t.Errorf("--without 13h exited %d with %q; want status 2 and the model's cycles named", code, errOut)
	}
	w.removeByPeriodOrID(t)
}

// withoutRow is predict of a model on one row of a file, in full and
// without parts of the forecast: the model and data files and the full
// forecast of row 600.
type withoutRow struct {
	modelPath, data string
	full            predictReport
}

// predict returns predict's JSON report of row 600 with args added.
func (w *withoutRow) predict(t *testing.T, args ...string) predictReport {
	t.Helper()
	code, out, errOut := runCLI(append([]string{"predict", "--model", w.modelPath, "--data", w.data, "--at", "600", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("predict %v exited %d: %s", args, code, errOut)
	}
	var pr predictReport
	lastJSON(t, out, &pr)
	return pr
}

// check fails t unless the forecast without what moved from the full one
// by exactly the sum of parts (1e-9 of the forecast's scale), the report
// holds the full forecast, its forecast is the residual plus the
// contributions not marked removed, and it marks as many removed as it
// names.
func (w *withoutRow) check(t *testing.T, what string, without predictReport, parts ...[][]float64) {
	t.Helper()
	full := w.full
	scale := 0.0
	for _, row := range full.Forecast {
		for _, v := range row {
			scale = max(scale, math.Abs(v))
		}
	}
	for h := range full.Forecast {
		for c := range full.Forecast[h] {
			want := 0.0
			for _, p := range parts {
				want += p[h][c]
			}
			if got := without.Full[h][c] - without.Forecast[h][c]; math.Abs(got-want) > 1e-9*scale {
				t.Fatalf("without %s, step %d channel %d: the forecast moved by %.17g, its parts sum to %.17g", what, h, c, got, want)
			}
			if without.Full[h][c] != full.Forecast[h][c] {
				t.Fatalf("without %s: full_forecast %v differs from the plain forecast %v", what, without.Full[h][c], full.Forecast[h][c])
			}
			// The JSON holds together: forecast is the residual plus
			// the contributions not marked removed.
			kept := without.Residual[h][c]
			for _, ct := range without.Contributions {
				if !ct.Removed {
					kept += ct.Values[h][c]
				}
			}
			if math.Abs(kept-without.Forecast[h][c]) > 1e-9*scale {
				t.Fatalf("without %s, step %d channel %d: residual + the contributions not removed = %.17g, forecast %.17g", what, h, c, kept, without.Forecast[h][c])
			}
		}
	}
	removed := 0
	for _, ct := range without.Contributions {
		if ct.Removed {
			removed++
		}
	}
	if removed != len(without.Without) {
		t.Errorf("without %s: %d contributions marked removed, %d ids removed", what, removed, len(without.Without))
	}
}

// removeEveryPart checks the forecast without each frequency that took
// part (also named by its line's period), without each cycle (by name
// and by period), and without every part at once.
func (w *withoutRow) removeEveryPart(t *testing.T) {
	t.Helper()
	full := w.full
	var all []string
	var allParts [][][]float64
	for _, ct := range full.Contributions {
		id := strconv.Itoa(ct.ID)
		w.check(t, "frequency "+id, w.predict(t, "--without", id), ct.Values)
		all, allParts = append(all, id), append(allParts, ct.Values)
		if ct.Rhythm != nil && ct.Period != "" {
			// A cycle's line by the period predict prints for it ("12.0h"),
			// unless that is also the cycle's own name.
			if r := full.Rhythms[slices.IndexFunc(full.Rhythms, func(r predictRhythm) bool { return r.Index == *ct.Rhythm })]; r.Period != ct.Period {
				w.check(t, "the line "+ct.Period, w.predict(t, "--without", ct.Period), ct.Values)
			}
		}
	}
	if len(full.Rhythms) == 0 {
		t.Fatal("the model has no rhythm to remove")
	}
	for _, r := range full.Rhythms {
		w.check(t, r.Name, w.predict(t, "--without", r.Name), r.Values)
		w.check(t, r.Period, w.predict(t, "--without", r.Period), r.Values)
	}
	w.check(t, "every part", w.predict(t, "--without", strings.Join(all, ",")), allParts...)
}

// checkTextNamesTheRemoved checks that predict's text names a removed
// cycle, and the frequencies outside it by id.
func (w *withoutRow) checkTextNamesTheRemoved(t *testing.T) {
	t.Helper()
	full, modelPath, data := w.full, w.modelPath, w.data
	r := full.Rhythms[0]
	what := []string{r.Name}
	want := "forecast without the " + r.Name + " ("
	if free := slices.IndexFunc(full.Contributions, func(ct predictContribution) bool { return ct.Rhythm == nil }); free >= 0 {
		what = append(what, strconv.Itoa(full.Contributions[free].ID))
		want = fmt.Sprintf("forecast without the %s and frequency %d (", r.Name, full.Contributions[free].ID)
	}
	if code, out, errOut := runCLI("predict", "--model", modelPath, "--data", data, "--at", "600", "--without", strings.Join(what, ",")); code != 0 || !strings.Contains(out, want) {
		t.Errorf("predict --without %s: exit %d, %s\n%s; want %q", strings.Join(what, ","), code, out, errOut, want)
	}
}

// removeByPeriodOrID checks what --without reads: a bare 24 is frequency
// 24, not the 24-step cycle, said in a note with the way to name the
// cycle; "24 steps", 1d and 1/7 of a week remove the cycle; a frequency
// that took no part is noted, since removing it changes nothing.
func (w *withoutRow) removeByPeriodOrID(t *testing.T) {
	t.Helper()
	full, modelPath, data := w.full, w.modelPath, w.data
	code, _, errOut := runCLI("predict", "--model", modelPath, "--data", data, "--at", "600", "--without", "24")
	if code != 0 || !strings.Contains(errOut, `removes frequency 24, not the 24.0h cycle (24 steps); for the cycle write --without "24 steps"`) {
		t.Errorf("--without 24 exited %d with %q; want a note naming frequency 24 and the cycle", code, errOut)
	}
	day := full.Rhythms[slices.IndexFunc(full.Rhythms, func(r predictRhythm) bool { return r.PeriodSteps == 24 })]
	w.check(t, "24 steps", w.predict(t, "--without", "24 steps"), day.Values)
	// Days and weeks, which Go's durations do not write: 1d, and 1/7 of a week.
	w.check(t, "1d", w.predict(t, "--without", "1d"), day.Values)
	w.check(t, "0.142857142857w", w.predict(t, "--without", "0.142857142857w"), day.Values)
	idle := -1
	for id := range 32 {
		if !slices.Contains(day.Frequencies, id) && !slices.ContainsFunc(full.Contributions, func(c predictContribution) bool { return c.ID == id }) {
			idle = id
			break
		}
	}
	if idle < 0 {
		t.Fatal("every frequency took part in the forecast; the test needs one that did not")
	}
	if code, _, errOut := runCLI("predict", "--model", modelPath, "--data", data, "--at", "600", "--without", strconv.Itoa(idle)); code != 0 ||
		!strings.Contains(errOut, fmt.Sprintf("frequency %d was not selected for this window", idle)) {
		t.Errorf("--without %d (not selected) exited %d with %q; want a note that it changes nothing", idle, code, errOut)
	}
}

func TestIndependentModelOnOtherData(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir, "a.csv", 2, 700)
	other := writeSynthetic(t, dir, "b.csv", 4, 700)
	modelPath := filepath.Join(dir, "ind.safetensors")
	if code, _, e := runCLI("train", "--data", data, "--horizon", "6", "--lookback", "24", "--epochs", "1", "--mode", "independent", "--out", modelPath); code != 0 {
		t.Fatalf("train exited %d: %s", code, e)
	}
	code, out, e := runCLI("eval", "--model", modelPath, "--data", other, "--json")
	if code != 0 {
		t.Fatalf("an independent model must score data of any width; eval exited %d: %s", code, e)
	}
	var ev evalReport
	lastJSON(t, out, &ev)
	if ev.Channels != 4 || ev.SameData {
		t.Errorf("eval JSON = %+v", ev)
	}
}

// TestErrorsAreOneLineAndStatus2 covers the errors users hit first.
func TestErrorsAreOneLineAndStatus2(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir, "three.csv", 3, 400)
	narrow := writeSynthetic(t, dir, "two.csv", 2, 400)
	short := writeSynthetic(t, dir, "short.csv", 3, 50)
	quarter := writeSyntheticAt(t, dir, "quarter.csv", 3, 400, 15*time.Minute)
	modelPath := filepath.Join(dir, "m.safetensors")
	if code, _, e := runCLI("train", "--data", data, "--horizon", "6", "--lookback", "24", "--epochs", "1", "--out", modelPath); code != 0 {
		t.Fatalf("train exited %d: %s", code, e)
	}
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("date,a\n2020-01-01 00:00:00,1\n2020-01-01 01:00:00,x\n"), 0o644)
	truncated := filepath.Join(dir, "cut.safetensors")
	full, _ := os.ReadFile(modelPath)
	os.WriteFile(truncated, full[:len(full)/3], 0o644)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing data file", []string{"train", "--data", filepath.Join(dir, "nope.csv"), "--horizon", "4", "--out", modelPath}, "no such file"},
		{"missing model file", []string{"eval", "--model", filepath.Join(dir, "nope.safetensors"), "--data", data}, "no model file"},
		{"wrong column count", []string{"eval", "--model", modelPath, "--data", narrow}, "trained on 3"},
		{"eval on data of another step", []string{"eval", "--model", modelPath, "--data", quarter}, "quarter.csv steps every 15m0s but the model was trained on 1h0m0s steps"},
		{"predict on data of another step", []string{"predict", "--model", modelPath, "--data", quarter, "--at", "100"}, "steps every 15m0s"},
		{"inspect on data of another step", []string{"inspect", "--model", modelPath, "--data", quarter}, "steps every 15m0s"},
		{"report on data of another step", []string{"report", "--model", modelPath, "--data", quarter, "--out", dir}, "steps every 15m0s"},
		{"horizon too long", []string{"train", "--data", data, "--horizon", "5000", "--out", modelPath}, "horizon"},
		{"malformed row", []string{"train", "--data", bad, "--horizon", "4", "--out", modelPath}, "line 3"},
		{"truncated model", []string{"inspect", "--model", truncated}, "truncated"},
		{"missing flag", []string{"train", "--data", data, "--out", modelPath}, "--horizon is required"},
		{"a flag given 0", []string{"train", "--data", data, "--horizon", "0", "--out", modelPath}, `--horizon 0: use a positive number (steps to forecast`},
		{"eval on a file too short to score", []string{"eval", "--model", modelPath, "--data", short}, "short.csv has 50 rows, too few to score this model: its lookback (24) and horizon (6) were fixed when it was trained"},
		{"inspect on a file too short to score", []string{"inspect", "--model", modelPath, "--data", short}, "needs at least 51 rows for them; use a longer file, or 'freqlens predict --model "},
		{"report on a file too short to score", []string{"report", "--model", modelPath, "--data", short, "--out", dir}, "too few to score this model"},
		{"bad mode", []string{"train", "--data", data, "--horizon", "4", "--mode", "both", "--out", modelPath}, "mode"},
		{"bad channel shuffle", []string{"train", "--data", data, "--horizon", "4", "--channel-shuffle", "1.5", "--out", modelPath}, "probability"},
		{"bad frequency init", []string{"train", "--data", data, "--horizon", "4", "--frequency-init", "peaks", "--out", modelPath}, "use spectrum or grid"},
		{"row too early", []string{"predict", "--model", modelPath, "--data", data, "--at", "3"}, "--at 3"},
		{"row past the end", []string{"predict", "--model", modelPath, "--data", data, "--at", "400"}, "past the last"},
		{"negative row", []string{"predict", "--model", modelPath, "--data", data, "--at", "-1"}, "--at -1 is not a row; use a 0-based data row from 23 to 399"},
		{"no row", []string{"predict", "--model", modelPath, "--data", data}, "--at is required"},
		{"report without a model file", []string{"report", "--model", filepath.Join(dir, "nope.safetensors"), "--out", dir}, "no model file"},
		{"report without --out", []string{"report", "--model", modelPath}, "--out is required"},
		{"report on data of another width", []string{"report", "--model", modelPath, "--data", narrow, "--out", dir}, "trained on 3"},
		{"report row past the end", []string{"report", "--model", modelPath, "--data", data, "--at", "400", "--out", dir}, "past the last data row 399"},
		{"report row too early", []string{"report", "--model", modelPath, "--data", data, "--at", "5", "--out", dir}, "use a row from 23 to 399"},
		{"report row 0", []string{"report", "--model", modelPath, "--data", data, "--at", "0", "--out", dir}, "--at 0 cannot end a window"},
		{"report row without data", []string{"report", "--model", modelPath, "--at", "100", "--out", dir}, "--at needs --data"},
		{"report unknown column", []string{"report", "--model", modelPath, "--data", data, "--channel", "OT", "--out", dir}, `no column "OT"`},
		{"unknown command", []string{"serve-all"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(tc.args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2 (stderr %q)", code, errOut)
			}
			if n := strings.Count(strings.TrimRight(errOut, "\n"), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want one: %q", n+1, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q does not mention %q", errOut, tc.want)
			}
		})
	}
}

// TestUsageListsEveryCommand: `freqlens` with no arguments lists every
// command it accepts (serve, replay and demo included) and exits 2.
func TestUsageListsEveryCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, &out, &errOut); code != 2 {
		t.Errorf("freqlens without arguments exited %d, want 2", code)
	}
	for name := range commands {
		if !strings.Contains(errOut.String(), "freqlens "+name+" ") {
			t.Errorf("the usage does not list %q:\n%s", name, errOut.String())
		}
	}
}

// TestRunTogetherStopsAllWhenOneFails: when the demo's simulation fails, the
// service and the summary stop with it (a service left on the parent
// context would keep the demo running silent until Ctrl-C).
func TestRunTogetherStopsAllWhenOneFails(t *testing.T) {
	boom := errors.New("the simulation failed")
	stopped := make(chan struct{}, 2)
	waitForCancel := func(ctx context.Context) error {
		<-ctx.Done()
		stopped <- struct{}{}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		done <- runTogether(context.Background(), waitForCancel,
			func(context.Context) error { return boom }, waitForCancel)
	}()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Errorf("runTogether = %v, want the simulation's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runTogether still runs 10 s after one of its functions failed")
	}
	if len(stopped) != 2 {
		t.Errorf("%d of the 2 other functions stopped", len(stopped))
	}
}
