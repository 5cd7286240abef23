package dataset

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadCSVIrregularSteps: on seeded random files, a wide CSV whose
// irregular steps exceed 1% of its rows has its missing steps filled (each
// original row where it was, every filled one on the line between its
// neighbours, the dates one cadence apart), a repeated date refused at its
// line and rows out of order refused; at most 1% are read as they are.
func TestReadCSVIrregularSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261127, 3))
	for trial := range 40 {
		rows := 300 + rng.IntN(700)
		cadence := []time.Duration{10 * time.Second, 15 * time.Minute, time.Hour, 24 * time.Hour}[rng.IntN(4)]
		start := time.Date(2024, 3, 1+rng.IntN(20), rng.IntN(24), 0, 0, 0, time.UTC)
		chans := 1 + rng.IntN(3)
		value := func(r, c int) float64 {
			return 10*float64(c) + math.Sin(2*math.Pi*float64(r)/24+float64(c)) + 0.1*float64(r%7)
		}
		// Drop some runs of rows; a few trials stay under 1%.
		keep := make([]bool, rows)
		for r := range keep {
			keep[r] = true
		}
		missing := 0
		small := trial%4 == 0
		for range 1 + rng.IntN(4) {
			n := 1 + rng.IntN(rows/20)
			if small {
				n = 1
			}
			at := 1 + rng.IntN(rows-n-2)
			for r := at; r < at+n; r++ {
				if keep[r] {
					keep[r] = false
					missing++
				}
			}
		}
		var b strings.Builder
		b.WriteString("date")
		for c := range chans {
			fmt.Fprintf(&b, ",c%d", c)
		}
		b.WriteString("\n")
		for r := range rows {
			if !keep[r] {
				continue
			}
			b.WriteString(start.Add(time.Duration(r) * cadence).Format(time.RFC3339))
			for c := range chans {
				fmt.Fprintf(&b, ",%v", value(r, c))
			}
			b.WriteString("\n")
		}
		f, err := ReadCSV(strings.NewReader(b.String()), "gaps.csv")
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		read := rows - missing
		// Beyond 10% the gaps are lost readings when the data spans two
		// weeks or more (a few random runs follow no week) at a cadence
		// of a day at most, none lasts more than a day, and they are no
		// more than the rows.
		longest := 0
		for r := 0; r < rows; {
			n := 0
			for ; r < rows && !keep[r]; r++ {
				n++
			}
			longest = max(longest, n)
			r++
		}
		outages := time.Duration(rows-1)*cadence >= 14*24*time.Hour && cadence <= 24*time.Hour && missing <= read &&
			time.Duration(longest)*cadence <= 24*time.Hour
		if float64(missing) <= 0.01*float64(read) || float64(missing) > 0.10*float64(read) && !outages {
			// Few, or so many that they are the data's own spacing.
			if f.Rows() != read || f.Irregular.Filled || len(f.Irregular.Gaps) == 0 || !strings.Contains(f.GapNote(), "read as one step") {
				t.Errorf("trial %d: %d of %d steps missing: %d rows, filled %v, note %q; want the rows as they are, noted",
					trial, missing, rows, f.Rows(), f.Irregular.Filled, f.GapNote())
			}
			continue
		}
		if f.Rows() != rows || !f.Irregular.Filled || !strings.Contains(f.GapNote(), count(missing, "missing step")) {
			t.Fatalf("trial %d: %d of %d steps missing: %d rows, note %q; want every step, filled", trial, missing, rows, f.Rows(), f.GapNote())
		}
		for r := range rows {
			if want := start.Add(time.Duration(r) * cadence); !f.Times[r].Equal(want) {
				t.Fatalf("trial %d: row %d dated %v, want %v", trial, r, f.Times[r], want)
			}
			for c := range chans {
				got := f.Values[r*chans+c]
				if keep[r] {
					if got != value(r, c) {
						t.Fatalf("trial %d: kept row %d channel %d = %v, want %v", trial, r, c, got, value(r, c))
					}
					continue
				}
				lo, hi := r, r
				for !keep[lo] {
					lo--
				}
				for !keep[hi] {
					hi++
				}
				w := float64(r-lo) / float64(hi-lo)
				if want := value(lo, c)*(1-w) + value(hi, c)*w; math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
					t.Fatalf("trial %d: filled row %d channel %d = %v, want %v on the line from row %d to %d", trial, r, c, got, want, lo, hi)
				}
			}
		}
	}
}

func TestReadCSVIrregularStepsRefused(t *testing.T) {
	hourly := func(n int, edit func(r int) string) string {
		var b strings.Builder
		b.WriteString("date,a\n")
		for r := range n {
			d := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r) * time.Hour).Format("2006-01-02 15:04:05")
			if edit != nil {
				if e := edit(r); e != "" {
					d = e
				}
			}
			fmt.Fprintf(&b, "%s,%d\n", d, r)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, in, want string
		line           int
	}{
		{"out of order", hourly(50, func(r int) string {
			if r == 20 {
				return "2023-12-31 00:00:00"
			}
			return ""
		}), "is before the date of the row before (1 row, more than 1% of the rows): sort the rows by time", 22},
		{"repeated dates beyond 1%", hourly(200, func(r int) string {
			if r >= 100 && r%2 == 1 {
				return time.Date(2024, 1, 1, r-1, 0, 0, 0, time.UTC).Format("2006-01-02 15:04:05")
			}
			return ""
		}), "repeats the date of the row before (50 rows, more than 1% of the rows)", 103},
	} {
		_, err := ReadCSV(strings.NewReader(tc.in), "bad.csv")
		var ce *CSVError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || ce.Line != tc.line {
			t.Errorf("%s: err %v; want a CSVError at line %d saying %q", tc.name, err, tc.line, tc.want)
		}
	}
	// Under 1%: one repeated date in 200 rows is read as it is.
	f, err := ReadCSV(strings.NewReader(hourly(200, func(r int) string {
		if r == 150 {
			return time.Date(2024, 1, 1, 149, 0, 0, 0, time.UTC).Format("2006-01-02 15:04:05")
		}
		return ""
	})), "dup.csv")
	if err != nil || f.Rows() != 200 || f.Irregular.Repeated != 1 || !strings.Contains(f.GapNote(), "1 row on the step of the row before,") {
		t.Errorf("one repeated date in 200 rows: err %v, note %q", err, f.GapNote())
	}
	// A reading sent twice, stamped seconds apart, on a schedule of late
	// stamps: the second row is on the step of the first, and is said.
	f, err = ReadCSV(strings.NewReader(hourly(200, func(r int) string {
		at := time.Date(2024, 1, 1, r, 0, 2+r%7, 0, time.UTC)
		if r == 120 {
			at = time.Date(2024, 1, 1, 119, 0, 2+119%7+3, 0, time.UTC)
		}
		return at.Format("2006-01-02 15:04:05")
	})), "resent.csv")
	if err != nil || f.Irregular.Repeated != 1 || !strings.Contains(f.GapNote(), "1 row on the step of the row before") {
		t.Errorf("a row resent 3 s after the row before: err %v, %d repeated, note %q", err, f.Irregular.Repeated, f.GapNote())
	}
	// Business days, and a mistyped year: the data's own spacing, read as
	// it is; a local clock falling back once among gaps leaves them unfilled.
	for _, tc := range []struct {
		name, in, want string
		rows           int
	}{
		{"business days", func() string {
			var b strings.Builder
			b.WriteString("date,a\n")
			for d := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() == 2024; d = d.AddDate(0, 0, 1) {
				if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday {
					fmt.Fprintf(&b, "%s,1\n", d.Format("2006-01-02"))
				}
			}
			return b.String()
		}(), "the spacing is taken as the data's own", 262},
		{"business hours", func() string {
			var b strings.Builder
			b.WriteString("date,a\n")
			for d := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC); d.Month() == time.January; d = d.Add(time.Hour) {
				if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday && d.Hour() >= 8 && d.Hour() < 18 {
					fmt.Fprintf(&b, "%s,1\n", d.Format(time.RFC3339))
				}
			}
			return b.String()
		}(), "the spacing is taken as the data's own", 230},
		{"a mistyped year", hourly(100, func(r int) string {
			if r == 99 {
				return "2320-01-05 03:00:00"
			}
			return ""
		}), "the spacing is taken as the data's own", 100},
		{"a clock falling back among gaps", func() string {
			var b strings.Builder
			b.WriteString("date,a\n")
			for r := range 300 {
				at := time.Date(2024, 1, 1, r, 0, 0, 0, time.UTC)
				switch {
				case r >= 200 && r < 220:
					continue // 20 missing steps: 7%, filled were it not for the clock
				case r == 100:
					at = at.Add(-90 * time.Minute) // before row 99
				}
				fmt.Fprintf(&b, "%s,%d\n", at.Format("2006-01-02 15:04:05"), r)
			}
			return b.String()
		}(), "the gaps are not filled because dates go back", 280},
	} {
		f, err := ReadCSV(strings.NewReader(tc.in), "x.csv")
		switch {
		case err != nil || f.Rows() != tc.rows || f.Irregular.Filled || !strings.Contains(f.GapNote(), tc.want):
			t.Errorf("%s: err %v, %d rows (want %d), note %q", tc.name, err, f.Rows(), tc.rows, f.GapNote())
		}
	}
}

// TestLoadCSVRowsAsWritten: LoadCSVRows keeps a file's rows as it writes
// them, where LoadCSV fills its missing steps.
func TestLoadCSVRowsAsWritten(t *testing.T) {
	var b strings.Builder
	b.WriteString("date,a\n")
	for r := range 100 {
		if r < 40 || r >= 45 {
			fmt.Fprintf(&b, "%s,%d\n", time.Date(2024, 1, 1, r, 0, 0, 0, time.UTC).Format("2006-01-02 15:04:05"), r)
		}
	}
	path := filepath.Join(t.TempDir(), "gap.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	filled, err := LoadCSV(path)
	if err != nil || filled.Rows() != 100 {
		t.Fatalf("LoadCSV: %v, %d rows; want the 5 missing steps filled", err, filled.Rows())
	}
	rows, err := LoadCSVRows(path)
	if err != nil || rows.Rows() != 95 || rows.GapNote() != "" {
		t.Fatalf("LoadCSVRows: %v, %d rows, note %q; want the 95 rows as written", err, rows.Rows(), rows.GapNote())
	}
}

// TestFrameRowCountsTheFilesRows: FrameRow maps every data row of a file
// to the frame row holding it, past any number of filled gaps.
func TestFrameRowCountsTheFilesRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		var b strings.Builder
		b.WriteString("date,a\n")
		var kept []int // the steps the file holds
		for r := range 400 {
			if r > 0 && r < 399 && rng.IntN(40) == 0 {
				continue
			}
			kept = append(kept, r)
			fmt.Fprintf(&b, "%s,%d\n", time.Date(2024, 1, 1, r, 0, 0, 0, time.UTC).Format(time.DateTime), r)
		}
		f, err := ReadCSV(strings.NewReader(b.String()), "f.csv")
		if err != nil {
			t.Fatal(err)
		}
		if f.FileRows() != len(kept) {
			t.Fatalf("trial %d: FileRows %d, want %d", trial, f.FileRows(), len(kept))
		}
		for i, step := range kept {
			if got := f.Values[f.FrameRow(i)]; got != float64(step) {
				t.Fatalf("trial %d (filled %v): file row %d holds step %d, but frame row %d holds %v", trial, f.Irregular.Filled, i, step, f.FrameRow(i), got)
			}
		}
	}
}

// TestReadCSVJitteredStamps: on seeded random files, readings due on a
// schedule but stamped up to 40% of a cadence early or late (by a clock that
// may also run up to 0.05% fast or slow) read as one row a step at the
// schedule's round cadence, their missing steps found and filled exactly;
// readings that each wait about a cadence (±30%) after the one before, so
// that their stamps wander off any grid, read the same way, interval by
// interval, a gap of n steps being n+1 cadences ±30%.
func TestReadCSVJitteredStamps(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261127, 25))
	round := []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour}
	for trial := range 60 {
		rows := 400 + rng.IntN(1600)
		cadence := round[rng.IntN(len(round))]
		scheduled := trial%3 != 2
		if !scheduled && trial%2 == 0 {
			cadence = time.Duration(float64(cadence) * (1.05 + 0.4*rng.Float64())) // not a round one
		}
		keep := make([]bool, rows)
		for r := range keep {
			keep[r] = true
		}
		missing := 0
		if trial%4 != 0 {
			for missing < rows/50 {
				at, n := 2+rng.IntN(rows-8), 1+rng.IntN(4)
				for r := at; r < min(at+n, rows-2); r++ {
					if keep[r] {
						keep[r] = false
						missing++
					}
				}
			}
		}
		start := time.Date(2025, time.Month(1+rng.IntN(12)), 1+rng.IntN(28), 0, 0, 0, 0, time.UTC)
		jitter, drift := 0.15+0.25*rng.Float64(), 5e-4*(2*rng.Float64()-1)
		var b strings.Builder
		b.WriteString("date,v\n")
		stamp, wait := start, 0
		for r := range rows {
			wait++
			if !keep[r] {
				continue
			}
			if scheduled {
				off := float64(r)*(1+drift) + jitter*(2*rng.Float64()-1)
				stamp = start.Add(time.Duration(off * float64(cadence)))
			} else if r > 0 {
				stamp = stamp.Add(time.Duration((float64(wait) - 0.3 + 0.6*rng.Float64()) * float64(cadence)))
			}
			wait = 0
			layout := "2006-01-02 15:04:05.000"
			if cadence >= time.Hour && trial%5 == 0 {
				layout = "2006-01-02 15:04" // to the minute: the median interval is then often exactly the cadence
			}
			fmt.Fprintf(&b, "%s,%d\n", stamp.Format(layout), r)
		}
		f, err := ReadCSV(strings.NewReader(b.String()), "jitter.csv")
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		what := fmt.Sprintf("trial %d (scheduled %v, cadence %v, jitter ±%.0f%%, drift %.2f‰, %d of %d rows missing)",
			trial, scheduled, cadence, 100*jitter, 1000*drift, missing, rows)
		if scheduled && f.Cadence != cadence || !SameCadence(f.Cadence, cadence) {
			t.Errorf("%s: cadence %v", what, f.Cadence)
		}
		// A schedule on the step times, stamped early or late, is served
		// on the nearest step (while its clock stays within 5% of a step).
		if scheduled && math.Abs(drift)*float64(rows) < 0.05 && f.Align != AlignNearest {
			t.Errorf("%s: align %q, want %q", what, f.Align, AlignNearest)
		}
		// Then the rows are the step times themselves (a clock that drifts
		// off them keeps its own dates).
		if f.Align == AlignNearest && math.Abs(drift)*float64(rows) < 0.05 {
			for r, at := range f.Times {
				if at.UnixMilli()%f.Cadence.Milliseconds() != 0 || r > 0 && at.Sub(f.Times[r-1]) != f.Cadence && f.Irregular.Filled {
					t.Errorf("%s: row %d is dated %v, not the step time after the row before's (%v)", what, r, at, f.Times[max(r-1, 0)])
					break
				}
			}
		}
		if f.Irregular.Missing != missing || f.Irregular.Repeated+f.Irregular.Backward != 0 {
			t.Errorf("%s: found %d missing, %d repeated, %d backward (%s)", what, f.Irregular.Missing, f.Irregular.Repeated, f.Irregular.Backward, f.GapNote())
			continue
		}
		if f.Rows() != rows && f.Irregular.Filled {
			t.Errorf("%s: %d rows after filling, want %d", what, f.Rows(), rows)
			continue
		}
		// Every kept row is where its step is: its value is its step.
		for r, v := range f.Values {
			if f.Irregular.Filled && math.Abs(v-float64(r)) > 1e-9 {
				t.Errorf("%s: row %d holds step %v's reading", what, r, v)
				break
			}
		}
	}
}

// TestReadCSVRegularCadenceKept: a file whose rows are exactly one cadence
// apart keeps that cadence and its rows, with or without gaps, even when
// it lies within 1% of a round one (a steady 59m40s is not a jittered
// hour).
func TestReadCSVRegularCadenceKept(t *testing.T) {
	for _, cadence := range []time.Duration{59*time.Minute + 40*time.Second, 14*time.Minute + 55*time.Second,
		23*time.Hour + 56*time.Minute + 4*time.Second, 1005 * time.Millisecond, 7 * time.Minute} {
		for _, gaps := range []bool{false, true} {
			var b strings.Builder
			b.WriteString("date,v\n")
			start, rows, kept := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), 500, 0
			for r := range rows {
				if gaps && r%40 == 7 {
					continue
				}
				kept++
				fmt.Fprintf(&b, "%s,%d\n", start.Add(time.Duration(r)*cadence).Format("2006-01-02 15:04:05.000"), r)
			}
			f, err := ReadCSV(strings.NewReader(b.String()), "regular.csv")
			if err != nil {
				t.Fatal(err)
			}
			if f.Cadence != cadence {
				t.Errorf("cadence %v (gaps %v): read as %v", cadence, gaps, f.Cadence)
			}
			if want := kept; gaps {
				want = rows
				if f.Rows() != want || f.Irregular.Missing != rows-kept {
					t.Errorf("cadence %v with gaps: %d rows, %d missing; want %d rows, %d missing", cadence, f.Rows(), f.Irregular.Missing, want, rows-kept)
				}
			} else if f.Rows() != want || f.GapNote() != "" {
				t.Errorf("cadence %v: %d rows, note %q; want %d rows and no note", cadence, f.Rows(), f.GapNote(), want)
			}
		}
	}
}

// TestReadCSVMinuteStampsKeepTheHour: on 150 seeded files, hourly
// readings stamped to the minute up to ±24 minutes off, with 3% of the
// hours missing, read at exactly 1h with every gap found: the median
// interval is then often exactly the hour, and the dates filled evenly
// across a gap would pull it below (59m) if it were taken again after
// filling.
func TestReadCSVMinuteStampsKeepTheHour(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261128, 1))
	for trial := range 150 {
		var b strings.Builder
		b.WriteString("date,v\n")
		start, rows, missing := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), 400+rng.IntN(400), 0
		jitter := 16 + rng.IntN(9)
		for r := range rows {
			if r > 0 && r < rows-1 && rng.Float64() < 0.03 {
				missing++
				continue
			}
			off := time.Duration(rng.IntN(2*jitter+1)-jitter) * time.Minute
			fmt.Fprintf(&b, "%s,%d\n", start.Add(time.Duration(r)*time.Hour+off).Format("2006-01-02 15:04"), r)
		}
		f, err := ReadCSV(strings.NewReader(b.String()), "minutes.csv")
		if err != nil {
			t.Fatal(err)
		}
		if f.Cadence != time.Hour || f.Irregular.Missing != missing {
			t.Errorf("trial %d (±%d min, %d of %d missing): read at %v with %d missing (%s)", trial, jitter, missing, rows, f.Cadence, f.Irregular.Missing, f.GapNote())
		}
	}
}

// TestReadCSVLostReadingsFilled: on seeded random files spanning two weeks
// or more, readings lost at random (11–45% of the steps, single rows or
// runs of up to 6) are filled, however many, with a note that says why;
// the data's own spacing is read as it is, with readings lost besides or
// not: business days or hours with up to 15% lost, readings every day but
// at night, a rotation of days on and off that follows no week (5 on, 3
// off; 2-2-3 shifts), and an outage of three weeks.
func TestReadCSVLostReadingsFilled(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261128, 5))
	for trial := range 48 {
		cadence := []time.Duration{10 * time.Minute, 30 * time.Minute, time.Hour}[rng.IntN(3)]
		days := 15 + rng.IntN(50)
		steps := int((time.Duration(days) * 24 * time.Hour) / cadence)
		start := time.Date(2024, 2, 1+rng.IntN(20), rng.IntN(24), 0, 0, 0, time.UTC)
		kind := []string{"lost", "lost", "week", "rotation", "outage", "nights"}[trial%6]
		lose := 0.11 + 0.34*rng.Float64()
		if kind != "lost" {
			lose = 0.15 * rng.Float64()
		}
		run := 1 + rng.IntN(6)
		on, rest := 2+rng.IntN(4), 2+rng.IntN(2) // days of a rotation
		outageFrom := steps / 3
		idle := func(at time.Time, s int) bool {
			d := int(at.Sub(start) / (24 * time.Hour))
			switch kind {
			case "week":
				return at.Weekday() == time.Saturday || at.Weekday() == time.Sunday || trial%2 == 0 && (at.Hour() < 7 || at.Hour() >= 19)
			case "rotation":
				return d%(on+rest) >= on
			case "nights": // every night, no gap longer than a day
				return at.Hour() < 6
			case "outage":
				return s >= outageFrom && at.Sub(start.Add(time.Duration(outageFrom)*cadence)) < 21*24*time.Hour
			}
			return false
		}
		var b strings.Builder
		b.WriteString("date,v\n")
		rows, missing := 0, 0
		for s := 0; s < steps; s++ {
			at := start.Add(time.Duration(s) * cadence)
			if s > 0 && s < steps-run && (idle(at, s) || rng.Float64() < lose/float64(run)) {
				n := run
				if idle(at, s) {
					n = 1
				}
				s += n - 1
				missing += n
				continue
			}
			fmt.Fprintf(&b, "%s,%d\n", at.Format(time.RFC3339), s)
			rows++
		}
		f, err := ReadCSV(strings.NewReader(b.String()), "lost.csv")
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		switch {
		case kind != "lost" && (f.Irregular.Filled || f.Rows() != rows || !strings.Contains(f.GapNote(), "the data's own")):
			t.Errorf("trial %d (%s, %.0f%% lost besides, cadence %v): %d rows of %d, filled %v, note %q; want the rows as they are",
				trial, kind, 100*lose, cadence, f.Rows(), rows, f.Irregular.Filled, f.GapNote())
		case kind == "lost" && float64(missing) > 0.1*float64(rows) && (!f.Irregular.Filled || !strings.Contains(f.GapNote(), "lost readings")):
			t.Errorf("trial %d (%d of %d steps lost in runs of %d, cadence %v): %d rows, filled %v, note %q; want them filled as lost readings",
				trial, missing, steps, run, cadence, f.Rows(), f.Irregular.Filled, f.GapNote())
		}
	}
}
