package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freqlens/freqlens/backtest"
)

// TestBacktestCommand: backtest replays a wide CSV through the serving path
// with the model trained on it and prints its scores, as text and as JSON
// (the same figures), and draws the widths over time; with fine-tuning
// off no frozen model is scored beside the served one. Its errors name
// what to do.
func TestBacktestCommand(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir, "sensors.csv", 3, 900)
	modelPath := filepath.Join(dir, "m.safetensors")
	if code, _, errOut := runCLI("train", "--data", data, "--horizon", "12", "--lookback", "48", "--epochs", "2", "--out", modelPath); code != 0 {
		t.Fatalf("train exited %d: %s", code, errOut)
	}
	figures := filepath.Join(dir, "figures")
	code, out, errOut := runCLI("backtest", "--model", modelPath, "--data", data, "--json", "--report", figures)
	if code != 0 {
		t.Fatalf("backtest exited %d: %s", code, errOut)
	}
	var rep backtest.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("backtest --json: %v\n%s", err, out)
	}
	if rep.Series != 1 || rep.Readings != 900 || rep.Forecasts != 900-48+1 || !rep.FineTuning || rep.Horizon != 12 {
		t.Errorf("report: %d series, %d readings, %d forecasts, fine-tuning %v, H %d; want 1, 900, %d, true, 12",
			rep.Series, rep.Readings, rep.Forecasts, rep.FineTuning, rep.Horizon, 900-48+1)
	}
	for _, name := range []string{"served", "frozen", "seasonal naive, day"} {
		m, ok := rep.Method(name)
		if !ok || !(m.MSE > 0) || len(m.ByStep) != 12 {
			t.Errorf("method %q: %+v, %v; want an MSE and 12 steps", name, m, ok)
		}
	}
	if len(rep.Intervals) != 2 || rep.Intervals[0].Level != 0.8 || rep.Intervals[0].Static == nil || !(rep.Intervals[0].Online.Points > 0) {
		t.Errorf("intervals: %+v; want 0.8 and 0.95 with the static band", rep.Intervals)
	}
	if len(rep.Timeline) < 10 || !strings.Contains(errOut, "backtest: 100% of the history") {
		t.Errorf("%d timeline stretches; progress: %s", len(rep.Timeline), errOut)
	}
	for _, f := range []string{"widths.png", "widths.svg"} {
		if st, err := os.Stat(filepath.Join(figures, f)); err != nil || st.Size() < 1000 {
			t.Errorf("the figure %s: %v", f, err)
		}
	}

	code, text, errOut := runCLI("backtest", "--model", modelPath, "--data", data, "--fine-tune=false")
	if code != 0 {
		t.Fatalf("backtest exited %d: %s", code, errOut)
	}
	for _, want := range []string{"point forecasts", "seasonal naive, day", "static split conformal", "hindsight, naive day", "fine-tuning off", "drift events: "} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "frozen ") {
		t.Errorf("with fine-tuning off the text scores a frozen model beside the served one:\n%s", text)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", filepath.Join(dir, "none.safetensors"), "--data", data}, "train one first"},
		{[]string{"--model", modelPath}, "give --data FILE, or --from-topic"},
		{[]string{"--model", modelPath, "--data", data, "--intervals", "0.8,95"}, "not a level"},
		{[]string{"--model", modelPath, "--data", data, "--from", "yesterday"}, "--from \"yesterday\" is not a time"},
		{[]string{"--model", modelPath, "--data", data, "--focus", "nobody"}, "no series \"nobody\""},
	} {
		code, _, errOut := runCLI(append([]string{"backtest"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("backtest %v exited %d: %s; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
