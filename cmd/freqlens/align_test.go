package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history/historytest"
)

// TestTrainOnJitteredStamps: long-format readings of a schedule stamped up
// to 35% of a step early or late (seeded) train the same model, bit for
// bit, as the same readings stamped on time: each goes onto its own step.
// The model records that its readings went to the nearest step, so that
// serve does the same with a live feed of that clock; train says so,
// inspect shows it, and eval on the long file scores the test split train
// scored. The on-time readings keep the step they fall in.
func TestTrainOnJitteredStamps(t *testing.T) {
	dir := t.TempDir()
	frame, err := dataset.LoadCSV(writeSynthetic(t, dir, "sensors.csv", 1, 600))
	if err != nil {
		t.Fatal(err)
	}
	// The field names serve reads by default: no --config needed.
	layout := historytest.Layout{Series: "series", Time: "ts", Values: []string{"value"}}
	rng := rand.New(rand.NewPCG(9, 2))
	onTime, jittered := make([]historytest.Row, frame.Rows()), make([]historytest.Row, frame.Rows())
	for r := range onTime {
		ms := frame.Times[r].UnixMilli()
		onTime[r] = historytest.Row{Series: "north", Ms: ms, Values: frame.Row(r)}
		jittered[r] = onTime[r]
		jittered[r].Ms += int64((0.7*rng.Float64() - 0.35) * float64(time.Hour/time.Millisecond))
	}
	var tensors [][]byte
	for _, tc := range []struct {
		name  string
		rows  []historytest.Row
		align string
	}{{"on time", onTime, ""}, {"jittered", jittered, "nearest"}} {
		tensors = append(tensors, trainOnStamps(t, dir, layout, tc.name, tc.rows, tc.align))
	}
	// The same readings stamped otherwise are another file.
	code, stdout, stderr := runCLI("eval", "--model", filepath.Join(dir, "jittered.safetensors"), "--data", filepath.Join(dir, "on time.csv"), "--json")
	var other struct {
		SameData bool `json:"same_data_as_training"`
	}
	if code != 0 {
		t.Fatalf("eval on another file: exit %d\n%s", code, stderr)
	}
	if lastJSON(t, stdout, &other); other.SameData {
		t.Error("eval of the model trained on jittered.csv says on time.csv is its training data")
	}
	if !bytes.Equal(tensors[0], tensors[1]) {
		t.Error("the model trained on the jittered stamps differs from the one trained on the same readings on time")
	}

	at := frame.Times[400]
	want := predictTheSameWindow(t, dir, at)
	checkPredictAtAnyStampOfAStep(t, dir, at, want)
	checkReportOfALongFile(t, dir, at)
}

// trainOnStamps writes rows as the long file dir/NAME.csv, trains
// dir/NAME.safetensors on it and returns the model's tensors. Train must
// mention the nearest step only when align is "nearest", inspect must show
// the model's steps aligned so at 3600 s, and eval on the long file must
// score the test split train scored, with the same MSE.
func trainOnStamps(t *testing.T, dir string, layout historytest.Layout, name string, rows []historytest.Row, align string) []byte {
	t.Helper()
	data, out := filepath.Join(dir, name+".csv"), filepath.Join(dir, name+".safetensors")
	historytest.WriteCSV(t, data, layout, rows)
	code, stdout, stderr := runCLI("train", "--data", data, "--lookback", "48", "--horizon", "24", "--epochs", "1", "--seed", "3", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s\n%s", name, code, stdout, stderr)
	}
	var trained struct {
		TestMSE float64 `json:"test_mse"`
	}
	lastJSON(t, stdout, &trained)
	said := strings.Contains(stdout+stderr, "nearest step")
	if said != (align == "nearest") {
		t.Errorf("%s: train's output mentions the nearest step: %v, want %v\n%s%s", name, said, align == "nearest", stdout, stderr)
	}
	tensors := tensorBytes(t, out)
	code, stdout, stderr = runCLI("inspect", "--model", out, "--json")
	if code != 0 {
		t.Fatalf("%s: inspect exit %d\n%s", name, code, stderr)
	}
	var rep struct {
		StepAlign      string  `json:"step_align"`
		CadenceSeconds float64 `json:"cadence_seconds"`
	}
	lastJSON(t, stdout, &rep)
	if rep.StepAlign != align || rep.CadenceSeconds != 3600 {
		t.Errorf("%s: the model's steps are %q at %vs, want %q at 3600s", name, rep.StepAlign, rep.CadenceSeconds, align)
	}
	// eval reads the long file onto the model's steps: the test split
	// train scored, the same MSE.
	code, stdout, stderr = runCLI("eval", "--model", out, "--data", data, "--json")
	if code != 0 {
		t.Fatalf("%s: eval exit %d\n%s", name, code, stderr)
	}
	var scored struct {
		MSE      float64 `json:"mse"`
		Protocol string  `json:"protocol"`
		SameData bool    `json:"same_data_as_training"`
	}
	lastJSON(t, stdout, &scored)
	if scored.MSE != trained.TestMSE || scored.Protocol != "time" || !scored.SameData {
		t.Errorf("%s: eval on the long file: MSE %v (%s protocol, training data %v), train's test MSE %v (time, the same file)",
			name, scored.MSE, scored.Protocol, scored.SameData, trained.TestMSE)
	}
	return tensors
}

// predictTheSameWindow checks that predict on either long file in dir
// explains the same window of the series, named by the time at of its
// last step: the same forecast as the wide file's row at that time,
// through the same model. It returns that forecast (the on-time file's).
func predictTheSameWindow(t *testing.T, dir string, at time.Time) [][]float64 {
	t.Helper()
	var forecasts [][][]float64
	for _, name := range []string{"on time.csv", "jittered.csv", "wide"} {
		args := []string{"predict", "--model", filepath.Join(dir, "jittered.safetensors"), "--json"}
		if name == "wide" {
			args = append(args, "--data", filepath.Join(dir, "sensors.csv"), "--at", "400")
		} else {
			args = append(args, "--data", filepath.Join(dir, name), "--series", "north", "--at", at.Format(time.RFC3339))
		}
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Fatalf("predict on %s: exit %d\n%s", name, code, stderr)
		}
		var rep struct {
			Series   string      `json:"series"`
			Time     string      `json:"time"`
			Forecast [][]float64 `json:"forecast"`
		}
		lastJSON(t, stdout, &rep)
		// A wide file's time as the file writes it; long data's, an
		// instant, in RFC 3339 (UTC: the model keeps no time zone).
		wantTime := map[bool]string{true: dateTime(at), false: at.UTC().Format(time.RFC3339)}[name == "wide"]
		if wantSeries := map[bool]string{true: "", false: "north"}[name == "wide"]; rep.Series != wantSeries || rep.Time != wantTime {
			t.Errorf("predict on %s: series %q at %s, want %q at %s", name, rep.Series, rep.Time, wantSeries, wantTime)
		}
		forecasts = append(forecasts, rep.Forecast)
	}
	for i, name := range []string{"jittered.csv", "wide"} {
		if fmt.Sprint(forecasts[i+1]) != fmt.Sprint(forecasts[0]) {
			t.Errorf("predict on %s forecasts %v, on the on-time long file %v", name, forecasts[i+1][:2], forecasts[0][:2])
		}
	}
	return forecasts[0]
}

// checkPredictAtAnyStampOfAStep checks predict on the jittered long file
// in dir at other names of the step at: a time between steps explains the
// window of the step it is on (the nearest here) and says so, the step in
// epoch milliseconds explains it without a note, and a long file without
// --series is an error naming it. want is the step's forecast.
func checkPredictAtAnyStampOfAStep(t *testing.T, dir string, at time.Time, want [][]float64) {
	t.Helper()
	between := at.Add(20 * time.Minute).Format(time.RFC3339)
	code, stdout, stderr := runCLI("predict", "--model", filepath.Join(dir, "jittered.safetensors"), "--json", "--data", filepath.Join(dir, "jittered.csv"), "--series", "north", "--at", between)
	var rep struct {
		Forecast [][]float64 `json:"forecast"`
	}
	if code != 0 {
		t.Fatalf("predict --at %s: exit %d\n%s", between, code, stderr)
	}
	lastJSON(t, stdout, &rep)
	if fmt.Sprint(rep.Forecast) != fmt.Sprint(want) || !strings.Contains(stderr, "--at "+between+" is not a step's time; it is on the step of "+at.UTC().Format(time.RFC3339)) {
		t.Errorf("predict --at %s (between steps): stderr %q; want the window of %s, and a note naming it", between, stderr, at)
	}
	// The same step in epoch milliseconds, as readings may carry it.
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	code, stdout, stderr = runCLI("predict", "--model", filepath.Join(dir, "jittered.safetensors"), "--json", "--data", filepath.Join(dir, "jittered.csv"), "--series", "north", "--at", ms)
	if code != 0 {
		t.Fatalf("predict --at %s: exit %d\n%s", ms, code, stderr)
	}
	if lastJSON(t, stdout, &rep); fmt.Sprint(rep.Forecast) != fmt.Sprint(want) || strings.Contains(stderr, "not a step's time") {
		t.Errorf("predict --at %s (epoch milliseconds of the step): another window, or a note %q", ms, stderr)
	}
	code, _, stderr = runCLI("predict", "--model", filepath.Join(dir, "jittered.safetensors"), "--data", filepath.Join(dir, "jittered.csv"), "--at", "400")
	if code == 0 || !strings.Contains(stderr, "--series") {
		t.Errorf("predict on a long file without --series: exit %d, %q; want an error naming --series", code, stderr)
	}
}

// checkReportOfALongFile checks that report draws the same window, ending
// at at, from the jittered long file in dir as from the wide one, names
// the series and the column, names the window's end as each file can,
// and says a long file's errors are no held-out split; and that an --at
// past the wide file's end names its last row.
func checkReportOfALongFile(t *testing.T, dir string, at time.Time) {
	t.Helper()
	// report draws the same window from the long file as from the wide one.
	var pages []string
	for _, data := range []string{"jittered.csv", "sensors.csv"} {
		out := filepath.Join(dir, "report-"+data)
		args := []string{"report", "--model", filepath.Join(dir, "jittered.safetensors"), "--data", filepath.Join(dir, data), "--out", out}
		if data == "sensors.csv" {
			args = append(args, "--at", "400")
		} else {
			args = append(args, "--series", "north", "--at", at.Format(time.RFC3339))
		}
		if code, stdout, stderr := runCLI(args...); code != 0 {
			t.Fatalf("report on %s: exit %d\n%s%s", data, code, stdout, stderr)
		}
		page, err := os.ReadFile(filepath.Join(out, "forecast.svg"))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, string(page))
	}
	if code, _, stderr := runCLI("report", "--model", filepath.Join(dir, "jittered.safetensors"), "--data", filepath.Join(dir, "sensors.csv"),
		"--at", "600", "--out", filepath.Join(dir, "past")); code == 0 || !strings.Contains(stderr, "--at 600 is past the last data row 599") {
		t.Errorf("report --at past the end: exit %d, %q; want the last data row named", code, stderr)
	}
	// The same drawing; the labels name the series (north) and the column (s-0).
	if svgShapes(pages[0]) != svgShapes(pages[1]) {
		t.Error("report's forecast figure from the long file differs from the wide file's at the same time")
	}
	if !strings.Contains(pages[0], "Forecast of north") || !strings.Contains(pages[1], "Forecast of s-0") {
		t.Error("report's forecast figures do not name the series and the column they show")
	}
	// The window's end is named by its time (a long file's, an instant, in
	// RFC 3339); a wide file's by the row the user gave too. A long file's
	// rows are the series' run, no row of the file, so none is named.
	when := at.UTC().Format(time.DateTime)
	for data, want := range map[string]string{"jittered.csv": "ending at " + at.UTC().Format(time.RFC3339) + ",", "sensors.csv": "ending at row 400 (" + when + "),"} {
		page, err := os.ReadFile(filepath.Join(dir, "report-"+data, "index.html"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(page), want) {
			t.Errorf("report on %s does not say %q", data, want)
		}
		// A long file's series run is no held-out split, and its page says
		// so; a wide file's test split is.
		excerpt := strings.Contains(string(page), "not a held-out test split")
		if excerpt != (data == "jittered.csv") {
			t.Errorf("report on %s: says its errors are no held-out split: %v", data, excerpt)
		}
	}
}

// svgShapes is an SVG without its text elements.
func svgShapes(svg string) string {
	var b strings.Builder
	for {
		i := strings.Index(svg, "<text")
		if i < 0 {
			return b.String() + svg
		}
		b.WriteString(svg[:i])
		j := strings.Index(svg[i:], "</text>")
		if j < 0 {
			return b.String()
		}
		svg = svg[i+j+len("</text>"):]
	}
}

// TestLongTimesCarryTheirZone: long-format readings are instants, so
// predict writes their times in RFC 3339, in the model's time zone when it
// keeps one (a new user in Berlin saw UTC times without a zone, two hours
// off their file's), and an --at without a zone is said to be read as UTC.
func TestLongTimesCarryTheirZone(t *testing.T) {
	dir := t.TempDir()
	frame, err := dataset.LoadCSV(writeSynthetic(t, dir, "sensors.csv", 1, 400))
	if err != nil {
		t.Fatal(err)
	}
	layout := historytest.Layout{Series: "series", Time: "ts", Values: []string{"value"}}
	rows := make([]historytest.Row, frame.Rows())
	for r := range rows {
		rows[r] = historytest.Row{Series: "north", Ms: frame.Times[r].UnixMilli(), Values: frame.Row(r)}
	}
	data, out := filepath.Join(dir, "long.csv"), filepath.Join(dir, "berlin.safetensors")
	historytest.WriteCSV(t, data, layout, rows)
	if code, _, stderr := runCLI("train", "--data", data, "--lookback", "48", "--horizon", "6", "--epochs", "1", "--time-zone", "Europe/Berlin", "--out", out); code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := frame.Times[300].UTC()
	for _, tc := range []struct {
		at   string
		note bool
	}{{at.In(berlin).Format(time.RFC3339), false}, {at.Format(time.DateTime), true}, {strconv.FormatInt(at.UnixMilli(), 10), false}} {
		code, stdout, stderr := runCLI("predict", "--model", out, "--data", data, "--series", "north", "--at", tc.at, "--json")
		var rep struct {
			Time  string   `json:"time"`
			Times []string `json:"times"`
		}
		if code != 0 {
			t.Fatalf("predict --at %s: exit %d\n%s", tc.at, code, stderr)
		}
		lastJSON(t, stdout, &rep)
		if want := at.In(berlin).Format(time.RFC3339); rep.Time != want || len(rep.Times) != 6 || rep.Times[0] != at.Add(time.Hour).In(berlin).Format(time.RFC3339) {
			t.Errorf("predict --at %s: time %q, times %q; want %s and the steps after it on Berlin's clock", tc.at, rep.Time, rep.Times, want)
		}
		if said := strings.Contains(stderr, "has no zone and is read as UTC, "+at.In(berlin).Format(time.RFC3339)); said != tc.note {
			t.Errorf("predict --at %s: note that a zoneless time is read as UTC: %v, want %v\n%s", tc.at, said, tc.note, stderr)
		}
	}

	// Readings two hours apart are data of another cadence: the hourly
	// model sends the user to train one on them, with input.cadence given
	// or not, and not to the other setting: no setting makes an hourly
	// model forecast on two-hour steps.
	sparse := filepath.Join(dir, "sparse.csv")
	var every2 []historytest.Row
	for r := 0; r < len(rows); r += 2 {
		every2 = append(every2, rows[r])
	}
	historytest.WriteCSV(t, sparse, layout, every2)
	twoHours := filepath.Join(dir, "two-hours.yaml")
	if err := os.WriteFile(twoHours, []byte("input: {cadence: 2h}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A model trained with input.cadence given records it, and reads on
	// its own step as one without.
	oneHour, recorded := filepath.Join(dir, "one-hour.yaml"), filepath.Join(dir, "recorded.safetensors")
	if err := os.WriteFile(oneHour, []byte("input: {cadence: 1h}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("train", "--data", data, "--config", oneHour, "--lookback", "48", "--horizon", "6", "--epochs", "1", "--out", recorded); code != 0 {
		t.Fatalf("train --config: exit %d\n%s", code, stderr)
	}
	for _, tc := range []struct {
		model string
		args  []string
	}{{out, nil}, {out, []string{"--config", twoHours}}, {recorded, nil}} {
		code, _, stderr := runCLI(append([]string{"predict", "--model", tc.model, "--data", sparse, "--series", "north", "--at", at.Format(time.RFC3339)}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, "trained on 1h0m0s steps and forecasts at its own step only") || !strings.Contains(stderr, "train a model on this data") {
			t.Errorf("predict %s %v on readings 2 h apart with an hourly model: exit %d, %s; want it to say to train a model on them", filepath.Base(tc.model), tc.args, code, stderr)
		}
	}
}
