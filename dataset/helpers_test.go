package dataset

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dataDir is where the shared benchmark files live, relative to this package.
var dataDir = filepath.Join("..", "..", "shared", "data")

// shippedETTh1 is the repository's copy of ETTh1 (testdata/README.md).
var shippedETTh1 = filepath.Join("..", "testdata", "ETTh1.csv")

// dataPath returns the path of a shared benchmark file, skipping the test
// when the shared data folder is absent (as in a user's clone), or failing
// it when FREQLENS_REQUIRE_DATA is set (as .ci/run does), so that CI cannot
// pass by skipping.
func dataPath(tb testing.TB, name string) string {
	tb.Helper()
	if name == "ETTh1.csv" {
		return shippedETTh1 // in the repository: never skipped
	}
	p := filepath.Join(dataDir, name)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("FREQLENS_REQUIRE_DATA") != "" {
			tb.Fatalf("benchmark file %s not found (%v), and FREQLENS_REQUIRE_DATA is set: put the shared data folder beside the repository (../shared/data)", p, err)
		}
		tb.Skipf("benchmark file %s not found (%v): the shared data folder ../shared/data is absent, "+
			"as in a clone without it; skipping", p, err)
	}
	return p
}

// loadData loads a shared benchmark file, skipping when it is absent.
func loadData(tb testing.TB, name string) *Frame {
	tb.Helper()
	f, err := LoadCSV(dataPath(tb, name))
	if err != nil {
		tb.Fatalf("LoadCSV(%s): %v", name, err)
	}
	return f
}

// sha256Sums reads the SHA256SUMS file of the shared data folder.
func sha256Sums(tb testing.TB) map[string]string {
	tb.Helper()
	file, err := os.Open(dataPath(tb, "SHA256SUMS"))
	if err != nil {
		tb.Fatal(err)
	}
	defer file.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 {
			sums[fields[1]] = fields[0]
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return sums
}

// writeFile writes text to path.
func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// bitsEqual reports whether a and b hold the same float64 bit patterns, so
// that NaN equals NaN and −0 differs from +0.
func bitsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// mustSynthetic generates a synthetic frame or fails the test.
func mustSynthetic(tb testing.TB, cfg SyntheticConfig) *Frame {
	tb.Helper()
	f, err := Synthetic(cfg)
	if err != nil {
		tb.Fatalf("Synthetic: %v", err)
	}
	return f
}
