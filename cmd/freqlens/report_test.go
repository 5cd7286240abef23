package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReport runs `freqlens report` on a freshly trained model, with and
// without data, and checks it writes what it lists. The figures' content
// is tested in package report.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir, "sensors.csv", 2, 700)
	modelPath := filepath.Join(dir, "m.safetensors")
	if code, _, e := runCLI("train", "--data", data, "--horizon", "6", "--lookback", "24", "--epochs", "1", "--out", modelPath); code != 0 {
		t.Fatalf("train exited %d: %s", code, e)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		files []string
	}{
		{"model alone", nil, []string{"spectrum.png", "spectrum.svg", "index.html"}},
		{"with data", []string{"--data", data, "--at", "600", "--channel", "s-0"},
			[]string{"spectrum.png", "spectrum.svg", "forecast.png", "forecast.svg", "horizon.png", "horizon.svg", "index.html"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "report")
			code, stdout, errOut := runCLI(append([]string{"report", "--model", modelPath, "--out", out}, tc.args...)...)
			if code != 0 {
				t.Fatalf("report exited %d: %s", code, errOut)
			}
			var listed []string
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
				if strings.HasPrefix(line, out) {
					listed = append(listed, filepath.Base(line))
				}
			}
			if !slices.Equal(listed, tc.files) {
				t.Errorf("report listed %v, want %v", listed, tc.files)
			}
			for _, f := range tc.files {
				st, err := os.Stat(filepath.Join(out, f))
				if err != nil {
					t.Fatal(err)
				}
				if st.Size() < 1000 {
					t.Errorf("%s holds %d bytes, want a figure or a page", f, st.Size())
				}
			}
			if !strings.Contains(stdout, "open "+filepath.Join(out, "index.html")) {
				t.Errorf("report does not say which page to open:\n%s", stdout)
			}
		})
	}
}
