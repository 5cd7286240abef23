package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/readings"
)

// TestFromWideCSVSaysFilledSteps: a file refused as too short whose missing
// steps were filled says so, since the rows it counts include them.
func TestFromWideCSVSaysFilledSteps(t *testing.T) {
	var b strings.Builder
	b.WriteString("date,a\n")
	for r := range 80 {
		if r < 30 || r >= 35 {
			fmt.Fprintf(&b, "%s,%d\n", time.Date(2024, 1, 1, r, 0, 0, 0, time.UTC).Format(time.DateTime), r%7)
		}
	}
	path := filepath.Join(t.TempDir(), "short.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := FromWideCSV(path, Split{Lookback: 96, Horizon: 24})
	if err == nil || !strings.Contains(err.Error(), "5 missing steps in 1 gap") || !strings.Contains(err.Error(), "--lookback") {
		t.Errorf("err %v; want the too-short advice and the filled steps", err)
	}
}

// TestNoReadingsSaysWhy: a long file none of whose readings is read says
// why; the advice to check the field names comes only when fields were
// missing or of the wrong type, not for a file of epoch seconds.
// TestShortCadenceSaysFills: readings every 10 minutes put on 7-minute
// steps leave about 3 steps in 10 empty, filled between their neighbours;
// the summary asks whether the cadence is shorter than the readings'
// spacing. On their own 10 minutes it says nothing of the kind.
func TestShortCadenceSaysFills(t *testing.T) {
	var b strings.Builder
	b.WriteString("series,ts,value\n")
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for i := range 2000 {
		fmt.Fprintf(&b, "a,%s,%d\n", start.Add(time.Duration(i)*10*time.Minute).Format(time.RFC3339), i%144)
	}
	path := filepath.Join(t.TempDir(), "ten.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cadence time.Duration
		says    bool
	}{{7 * time.Minute, true}, {10 * time.Minute, false}} {
		d, err := FromFile(context.Background(), path, FileCSV, readings.DefaultConfig(),
			dataset.PanelConfig{Fields: []string{"value"}, Cadence: tc.cadence, MaxGap: 4}, Split{Lookback: 24, Horizon: 6})
		if err != nil {
			t.Fatalf("cadence %v: %v", tc.cadence, err)
		}
		if got := strings.Contains(d.Summary, "is the cadence, "+tc.cadence.String()+", shorter than the readings' spacing?"); got != tc.says {
			t.Errorf("cadence %v: the summary asks about the cadence: %v, want %v\n%s", tc.cadence, got, tc.says, d.Summary)
		}
		// It says what time the history covers.
		if tc.cadence == 10*time.Minute && !strings.Contains(d.Summary, "from 2026-03-02 00:00:00 to 2026-03-15 21:10:00 UTC (") {
			t.Errorf("the summary does not say the history's time span:\n%s", d.Summary)
		}
	}
}

func TestNoReadingsSaysWhy(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		want       []string
		not        string
	}{
		{"seconds", "series,ts,value\na,1767600000,1\na,1767603600,2\n", []string{"no readings among 2", "is epoch seconds"}, "check input.series_field"},
		{"a value of the wrong type", "series,ts,value\na,2026-01-05T00:00:00Z,high\n", []string{"wrong_type", "check input.series_field, input.time_field and input.value_fields"}, ""},
		{"no rows", "series,ts,value\n", []string{"holds no readings"}, "check input"},
	} {
		path := filepath.Join(dir, tc.name+".csv")
		if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := FromFile(context.Background(), path, FileCSV, readings.DefaultConfig(), dataset.PanelConfig{Fields: []string{"value"}}, Split{Lookback: 4, Horizon: 2})
		if err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q, want it to contain %q", tc.name, err, w)
			}
		}
		if tc.not != "" && strings.Contains(err.Error(), tc.not) {
			t.Errorf("%s: error %q should not say %q", tc.name, err, tc.not)
		}
	}
}

// TestFlatSeriesAreSaid: a series whose readings never change (a stuck
// sensor) is named in the summary, which says it flatters the test error;
// series that move are not. Unnamed, a stuck sensor heads eval's list as
// the best series.
func TestFlatSeriesAreSaid(t *testing.T) {
	var b strings.Builder
	b.WriteString("series,ts,value\n")
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for i := range 300 {
		at := start.Add(time.Duration(i) * time.Hour).Format(time.RFC3339)
		fmt.Fprintf(&b, "moving,%s,%d\nstuck,%s,42\nalso-moving,%s,%g\n", at, i%24, at, at, 1+0.001*float64(i%3))
	}
	path := filepath.Join(t.TempDir(), "stuck.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := FromFile(context.Background(), path, FileCSV, readings.DefaultConfig(),
		dataset.PanelConfig{Fields: []string{"value"}, Cadence: time.Hour}, Split{Lookback: 24, Horizon: 6})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Summary, `1 series never change in a value field (a stuck sensor or a placeholder?): "stuck";`) {
		t.Errorf("the summary does not name the stuck series alone:\n%s", d.Summary)
	}
}
