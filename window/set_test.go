package window

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

var one = []string{"value"}

// windowCase is a row of TestWindows: readings fed in batches to a set
// of one field at a cadence of an hour, and the windows and Stats that
// come out.
type windowCase struct {
	name      string
	l         int           // the Lookback; Fields are [value], Cadence 1h
	edit      func(*Config) // of DefaultConfig
	batches   [][]rd
	want      []win
	wantStats Stats
}

func TestWindows(t *testing.T) {
	var cases []windowCase
	for _, group := range [][]windowCase{emitAndGapCases(), lateCases(), strideCases(), alignCases()} {
		cases = append(cases, group...)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, Shape{Lookback: tc.l, Fields: one, Cadence: time.Hour}, configWith(tc.edit))
			got := feed(t, s, one, tc.batches...)
			if !equalWins(got, tc.want) {
				t.Errorf("windows:\n got %v\nwant %v", got, tc.want)
			}
			if st := s.Stats(); st != tc.wantStats {
				t.Errorf("Stats() = %+v\nwant      %+v", st, tc.wantStats)
			}
		})
	}
}

// emitAndGapCases returns the rows of TestWindows on when windows are
// emitted and on gaps: filled linearly or held up to MaxGap, restarting
// the window beyond it.
func emitAndGapCases() []windowCase {
	return []windowCase{
		{
			name:      "no window before L steps",
			l:         3,
			batches:   [][]rd{{at("a", 0, 1), at("a", 1, 2)}},
			wantStats: Stats{Active: 1, Created: 1},
		},
		{
			name:    "a window at every new step once L steps are held",
			l:       3,
			batches: [][]rd{{at("a", 0, 1), at("a", 1, 2), at("a", 2, 3), at("a", 3, 4)}},
			want: []win{
				{"a", 2, []float64{1, 2, 3}, 2*hour + 1000},
				{"a", 3, []float64{2, 3, 4}, 3*hour + 1000},
			},
			wantStats: Stats{Active: 1, Created: 1, Ready: 2},
		},
		{
			name:      "lookback 1: every reading is a window",
			l:         1,
			batches:   [][]rd{{at("a", 5, 7), at("a", 6, 8)}},
			want:      []win{{"a", 5, []float64{7}, 5*hour + 1000}, {"a", 6, []float64{8}, 6*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, Ready: 2},
		},
		{
			name:      "gap of 3 filled linearly",
			l:         5,
			batches:   [][]rd{{at("a", 10, 0)}, {at("a", 14, 8)}},
			want:      []win{{"a", 14, []float64{0, 2, 4, 6, 8}, 14*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 3, Ready: 1},
		},
		{
			name:      "linear fill of a downward gap with fractions",
			l:         3,
			edit:      func(c *Config) { c.MaxGap = 1 },
			batches:   [][]rd{{at("a", 0, 1), at("a", 2, 0.5)}},
			want:      []win{{"a", 2, []float64{1, 0.75, 0.5}, 2*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 1, Ready: 1},
		},
		{
			name:      "gap of 3 held",
			l:         5,
			edit:      func(c *Config) { c.Fill = FillHold },
			batches:   [][]rd{{at("a", 10, 5), at("a", 14, 8)}},
			want:      []win{{"a", 14, []float64{5, 5, 5, 5, 8}, 14*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 3, Ready: 1},
		},
		{
			name:      "gap longer than the window: only the last L-1 filled steps remain",
			l:         3,
			edit:      func(c *Config) { c.MaxGap = 10 },
			batches:   [][]rd{{at("a", 0, 0), at("a", 1, 1), at("a", 2, 2), at("a", 10, 10)}},
			want:      []win{{"a", 2, []float64{0, 1, 2}, 2*hour + 1000}, {"a", 10, []float64{8, 9, 10}, 10*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 7, Ready: 2},
		},
		{
			name: "gap longer than MaxGap restarts the window",
			l:    3,
			batches: [][]rd{
				{at("a", 0, 0), at("a", 1, 1), at("a", 2, 2)},
				{at("a", 7, 7), at("a", 8, 8), at("a", 9, 9)},
			},
			want:      []win{{"a", 2, []float64{0, 1, 2}, 2*hour + 1000}, {"a", 9, []float64{7, 8, 9}, 9*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, Restarts: 1, Ready: 2},
		},
		{
			name:      "MaxGap 0 restarts on a single missing step",
			l:         2,
			edit:      func(c *Config) { c.MaxGap = 0 },
			batches:   [][]rd{{at("a", 0, 0), at("a", 1, 1), at("a", 3, 3), at("a", 4, 4)}},
			want:      []win{{"a", 1, []float64{0, 1}, 1*hour + 1000}, {"a", 4, []float64{3, 4}, 4*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, Restarts: 1, Ready: 2},
		},
		{
			name:    "MaxGap 1 fills that single missing step",
			l:       2,
			edit:    func(c *Config) { c.MaxGap = 1 },
			batches: [][]rd{{at("a", 0, 0), at("a", 1, 1), at("a", 3, 3), at("a", 4, 4)}},
			want: []win{{"a", 1, []float64{0, 1}, 1*hour + 1000}, {"a", 3, []float64{2, 3}, 3*hour + 1000},
				{"a", 4, []float64{3, 4}, 4*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 1, Ready: 3},
		},
	}
}

// lateCases returns the rows of TestWindows on readings that come
// again or late: duplicates, late readings within and beyond the allowed
// lateness, and real readings of filled steps.
func lateCases() []windowCase {
	return []windowCase{
		{
			name: "duplicates: last write wins and emits nothing",
			l:    3,
			batches: [][]rd{
				{at("a", 0, 0), at("a", 1, 1), at("a", 1, 11), at("a", 2, 2)},
				{at("a", 2, 22), at("a", 3, 3)},
			},
			want:      []win{{"a", 2, []float64{0, 11, 2}, 2*hour + 1000}, {"a", 3, []float64{11, 22, 3}, 3*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, Duplicates: 2, Ready: 2},
		},
		{
			name: "late reading within lateness updates its step; the next window sees it",
			l:    3,
			edit: func(c *Config) { c.AllowedLateness = 2 * time.Hour },
			batches: [][]rd{
				{at("a", 0, 0), at("a", 1, 1), at("a", 2, 2), at("a", 3, 3)},
				{at("a", 2, 20)},
				{at("a", 4, 4)},
			},
			want: []win{
				{"a", 2, []float64{0, 1, 2}, 2*hour + 1000},
				{"a", 3, []float64{1, 2, 3}, 3*hour + 1000},
				{"a", 4, []float64{20, 3, 4}, 4*hour + 1000},
			},
			wantStats: Stats{Active: 1, Created: 1, LateUpdated: 1, Ready: 3},
		},
		{
			name: "late reading beyond lateness is dropped",
			l:    3,
			edit: func(c *Config) { c.AllowedLateness = time.Hour },
			batches: [][]rd{
				{at("a", 0, 0), at("a", 1, 1), at("a", 2, 2), at("a", 3, 3)},
				{at("a", 1, 10), at("a", 4, 4)},
			},
			want: []win{
				{"a", 2, []float64{0, 1, 2}, 2*hour + 1000},
				{"a", 3, []float64{1, 2, 3}, 3*hour + 1000},
				{"a", 4, []float64{2, 3, 4}, 4*hour + 1000},
			},
			wantStats: Stats{Active: 1, Created: 1, LateDropped: 1, Ready: 3},
		},
		{
			name:      "late readings are dropped by default",
			l:         2,
			batches:   [][]rd{{at("a", 0, 0), at("a", 1, 1), at("a", 0, 10), at("a", 2, 2)}},
			want:      []win{{"a", 1, []float64{0, 1}, 1*hour + 1000}, {"a", 2, []float64{1, 2}, 2*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, LateDropped: 1, Ready: 2},
		},
		{
			name:      "late reading older than the ring is dropped",
			l:         3,
			edit:      func(c *Config) { c.AllowedLateness = 10 * time.Hour },
			batches:   [][]rd{{at("a", 0, 0), at("a", 1, 1), at("a", 2, 2), at("a", 3, 3), at("a", 0, 10), at("a", 4, 4)}},
			want:      []win{{"a", 2, []float64{0, 1, 2}, 2*hour + 1000}, {"a", 3, []float64{1, 2, 3}, 3*hour + 1000}, {"a", 4, []float64{2, 3, 4}, 4*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, LateDropped: 1, Ready: 3},
		},
		{
			name:      "late reading for a step before a restart is dropped",
			l:         2,
			edit:      func(c *Config) { c.AllowedLateness = 10 * time.Hour },
			batches:   [][]rd{{at("a", 0, 0), at("a", 1, 1), at("a", 9, 9), at("a", 1, 10), at("a", 10, 10)}},
			want:      []win{{"a", 1, []float64{0, 1}, 1*hour + 1000}, {"a", 10, []float64{9, 10}, 10*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, Restarts: 1, LateDropped: 1, Ready: 2},
		},
		{
			name: "a filled step's real reading is a late reading that updates it",
			l:    4,
			edit: func(c *Config) { c.AllowedLateness = 3 * time.Hour },
			batches: [][]rd{
				{at("a", 0, 0), at("a", 3, 6)},
				{at("a", 1, 100), at("a", 4, 4)},
			},
			want:      []win{{"a", 3, []float64{0, 2, 4, 6}, 3*hour + 1000}, {"a", 4, []float64{100, 4, 6, 4}, 4*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 2, LateUpdated: 1, Ready: 2},
		},
		{
			name:      "a filled step's real reading is dropped without lateness",
			l:         4,
			batches:   [][]rd{{at("a", 0, 0), at("a", 3, 6), at("a", 1, 100), at("a", 4, 4)}},
			want:      []win{{"a", 3, []float64{0, 2, 4, 6}, 3*hour + 1000}, {"a", 4, []float64{2, 4, 6, 4}, 4*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 2, LateDropped: 1, Ready: 2},
		},
	}
}

// strideCases returns the rows of TestWindows on Stride: the steps a
// window is emitted at, whatever the series' start or restarts.
func strideCases() []windowCase {
	return []windowCase{
		{
			name:      "stride 2 emits at the steps that are multiples of 2, whenever the window filled",
			l:         2,
			edit:      func(c *Config) { c.Stride = 2 },
			batches:   [][]rd{{at("a", 0, 0), at("a", 1, 1), at("a", 2, 2), at("a", 3, 3), at("a", 4, 4), at("a", 5, 5)}},
			want:      []win{{"a", 2, []float64{1, 2}, 2*hour + 1000}, {"a", 4, []float64{3, 4}, 4*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, Ready: 2},
		},
		{
			name: "stride 3: a due step that was filled moves its window to the next reading",
			l:    2,
			edit: func(c *Config) { c.Stride = 3 },
			// Due at 3 (filled: its window comes with the reading of step 4) and 6.
			batches:   [][]rd{{at("a", 0, 0), at("a", 1, 1), at("a", 2, 2), at("a", 4, 4), at("a", 5, 5), at("a", 6, 6), at("a", 7, 7)}},
			want:      []win{{"a", 4, []float64{3, 4}, 4*hour + 1000}, {"a", 6, []float64{5, 6}, 6*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 1, Ready: 2},
		},
		{
			name: "a series that starts later emits at the same steps: the phase is absolute",
			l:    2,
			edit: func(c *Config) { c.Stride = 3 },
			batches: [][]rd{{at("a", 0, 0), at("a", 1, 1), at("a", 2, 2), at("a", 3, 3), at("a", 4, 4), at("a", 5, 5), at("a", 6, 6),
				at("b", 2, 2), at("b", 3, 3), at("b", 4, 4), at("b", 5, 5), at("b", 6, 6)}},
			want: []win{{"a", 3, []float64{2, 3}, 3*hour + 1000}, {"a", 6, []float64{5, 6}, 6*hour + 1000},
				{"b", 3, []float64{2, 3}, 3*hour + 1000}, {"b", 6, []float64{5, 6}, 6*hour + 1000}},
			wantStats: Stats{Active: 2, Created: 2, Ready: 4},
		},
		{
			name:      "a restart does not shift the stride's phase",
			l:         1,
			edit:      func(c *Config) { c.Stride, c.MaxGap = 2, 0 },
			batches:   [][]rd{{at("a", 0, 0), at("a", 1, 1), at("a", 2, 2), at("a", 4, 4), at("a", 5, 5), at("a", 6, 6)}},
			want:      []win{{"a", 0, []float64{0}, 1000}, {"a", 2, []float64{2}, 2*hour + 1000}, {"a", 4, []float64{4}, 4*hour + 1000}, {"a", 6, []float64{6}, 6*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, Restarts: 1, Ready: 4},
		},
	}
}

// alignCases returns the rows of TestWindows on how readings land on
// steps: between step boundaries, out of order within a record, in
// independent series, and before 1970.
func alignCases() []windowCase {
	return []windowCase{
		{
			name: "readings between step boundaries land on the earlier step",
			l:    2,
			batches: [][]rd{{
				{series: "a", ts: 30 * 60 * 1000, ingest: 5, values: []float64{1}},      // 00:30 → step 0
				{series: "a", ts: 2*hour - 1, ingest: 6, values: []float64{2}},          // 01:59:59.999 → step 1
				{series: "a", ts: hour, ingest: 7, values: []float64{3}},                // 01:00 → step 1 again
				{series: "a", ts: 2*hour + 59*60*1000, ingest: 8, values: []float64{4}}, // 02:59 → step 2
			}},
			want:      []win{{"a", 1, []float64{1, 2}, 6}, {"a", 2, []float64{3, 4}, 8}},
			wantStats: Stats{Active: 1, Created: 1, Duplicates: 1, Ready: 2},
		},
		{
			name:      "out of order within a record, within lateness",
			l:         4,
			edit:      func(c *Config) { c.AllowedLateness = time.Hour },
			batches:   [][]rd{{at("a", 0, 0), at("a", 2, 2), at("a", 1, 7), at("a", 3, 3)}},
			want:      []win{{"a", 3, []float64{0, 7, 2, 3}, 3*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 1, LateUpdated: 1, Ready: 1},
		},
		{
			name:      "out of order within a record, no lateness: the filled value stays",
			l:         4,
			batches:   [][]rd{{at("a", 0, 0), at("a", 2, 2), at("a", 1, 7), at("a", 3, 3)}},
			want:      []win{{"a", 3, []float64{0, 1, 2, 3}, 3*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 1, LateDropped: 1, Ready: 1},
		},
		{
			name: "series are independent",
			l:    2,
			batches: [][]rd{
				{at("a", 0, 1), at("b", 5, 50), at("a", 1, 2), at("b", 6, 60)},
				{at("b", 7, 70), at("c", 0, 0)},
			},
			want: []win{
				{"a", 1, []float64{1, 2}, 1*hour + 1000},
				{"b", 6, []float64{50, 60}, 6*hour + 1000},
				{"b", 7, []float64{60, 70}, 7*hour + 1000},
			},
			wantStats: Stats{Active: 3, Created: 3, Ready: 3},
		},
		{
			name:      "timestamps before 1970 align downwards",
			l:         2,
			batches:   [][]rd{{{series: "a", ts: -hour - 1, ingest: 1, values: []float64{1}}, {series: "a", ts: -1, ingest: 2, values: []float64{2}}}},
			want:      []win{{"a", -1, []float64{1, 2}, 2}},
			wantStats: Stats{Active: 1, Created: 1, Ready: 1},
		},
	}
}

func TestMultichannel(t *testing.T) {
	fields := []string{"temp", "humidity", "wind"}
	for _, tc := range []struct {
		name    string
		l       int           // the Lookback
		edit    func(*Config) // of DefaultConfig
		batches [][]rd
		want    []win
	}{
		{
			name:    "window is row-major: step, then channel",
			l:       2,
			batches: [][]rd{{at("a", 0, 1, 10, 100), at("a", 1, 2, 20, 200), at("a", 2, 3, 30, 300)}},
			want: []win{
				{"a", 1, []float64{1, 10, 100, 2, 20, 200}, 1*hour + 1000},
				{"a", 2, []float64{2, 20, 200, 3, 30, 300}, 2*hour + 1000},
			},
		},
		{
			name:    "linear fill per channel",
			l:       3,
			batches: [][]rd{{at("a", 0, 2, 20, -200), at("a", 2, 4, 40, 400)}},
			want:    []win{{"a", 2, []float64{2, 20, -200, 3, 30, 100, 4, 40, 400}, 2*hour + 1000}},
		},
		{
			name:    "linear fill per channel inside a window",
			l:       3,
			batches: [][]rd{{at("a", 0, 0, 10, -200), at("a", 1, 2, 20, 200), at("a", 3, 4, 40, 400)}},
			want:    []win{{"a", 3, []float64{2, 20, 200, 3, 30, 300, 4, 40, 400}, 3*hour + 1000}},
		},
		{
			name:    "hold per channel",
			l:       3,
			edit:    func(c *Config) { c.Fill = FillHold },
			batches: [][]rd{{at("a", 0, 0, 10, -200), at("a", 1, 2, 20, 200), at("a", 3, 4, 40, 400)}},
			want:    []win{{"a", 3, []float64{2, 20, 200, 2, 20, 200, 4, 40, 400}, 3*hour + 1000}},
		},
		{
			name:    "late update rewrites every channel of its step",
			l:       2,
			edit:    func(c *Config) { c.AllowedLateness = time.Hour },
			batches: [][]rd{{at("a", 0, 0, 0, 0), at("a", 1, 1, 1, 1), at("a", 0, 7, 8, 9), at("a", 2, 2, 2, 2)}},
			want: []win{
				{"a", 1, []float64{0, 0, 0, 1, 1, 1}, 1*hour + 1000},
				{"a", 2, []float64{1, 1, 1, 2, 2, 2}, 2*hour + 1000},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, Shape{Lookback: tc.l, Fields: fields, Cadence: time.Hour}, configWith(tc.edit))
			got := feed(t, s, fields, tc.batches...)
			if !equalWins(got, tc.want) {
				t.Errorf("windows:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestValueColumnsByName(t *testing.T) {
	// The value columns are found by name, whatever their order in the record.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := mustNew(t, Shape{Lookback: 1, Fields: []string{"b", "a"}, Cadence: time.Hour}, DefaultConfig())
	rec := newRecord(t, mem, readingsSchema("a", "b"), []rd{at("x", 0, 1, 2)})
	defer rec.Release()
	var out Batch
	if err := s.Append(rec, nil, &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.Window(0), []float64{2, 1}; !bitsEqual(got, want) {
		t.Errorf("window = %v, want %v (in Fields order)", got, want)
	}
}

func TestRows(t *testing.T) {
	rs := []rd{at("a", 0, 0), at("a", 1, 1), at("b", 0, 5), at("a", 3, 3), at("a", 2, 2)}
	for _, tc := range []struct {
		name      string
		rows      []int
		want      []win
		wantStats Stats
		wantErr   string
	}{
		{
			name:      "nil rows: every row in record order",
			rows:      nil,
			want:      []win{{"a", 1, []float64{0, 1}, 1*hour + 1000}, {"a", 3, []float64{2, 3}, 3*hour + 1000}},
			wantStats: Stats{Active: 2, Created: 2, GapFilled: 1, LateDropped: 1, Ready: 2},
		},
		{
			name:      "a subset in the given order",
			rows:      []int{0, 4, 1, 3},
			want:      []win{{"a", 2, []float64{1, 2}, 2*hour + 1000}, {"a", 3, []float64{2, 3}, 3*hour + 1000}},
			wantStats: Stats{Active: 1, Created: 1, GapFilled: 1, LateDropped: 1, Ready: 2},
		},
		{
			name:      "a subset in reverse order",
			rows:      []int{4, 1, 0},
			wantStats: Stats{Active: 1, Created: 1, LateDropped: 2},
		},
		{
			name:      "an empty subset feeds nothing",
			rows:      []int{},
			wantStats: Stats{},
		},
		{
			name:    "a row outside the record is an error and feeds nothing",
			rows:    []int{0, 5},
			wantErr: "rows[1] = 5 is outside the record's 5 rows",
		},
		{
			name:    "a negative row is an error",
			rows:    []int{-1},
			wantErr: "rows[0] = -1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec := newRecord(t, mem, readingsSchema("value"), rs)
			defer rec.Release()
			s := mustNew(t, Shape{Lookback: 2, Fields: one, Cadence: time.Hour}, DefaultConfig())
			var out Batch
			err := s.Append(rec, tc.rows, &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Append() error = %v, want %q", err, tc.wantErr)
				}
				if st := s.Stats(); st != (Stats{}) {
					t.Errorf("Stats() after the error = %+v, want zero", st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := wins(t, &out); !equalWins(got, tc.want) {
				t.Errorf("windows:\n got %v\nwant %v", got, tc.want)
			}
			if st := s.Stats(); st != tc.wantStats {
				t.Errorf("Stats() = %+v\nwant      %+v", st, tc.wantStats)
			}
		})
	}
}

func TestRecordSlice(t *testing.T) {
	// A sliced record (non-zero array offsets) reads the right rows.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := newRecord(t, mem, readingsSchema("value"), []rd{at("zz", 0, 9), at("a", 0, 0), at("bb", 0, 5), at("a", 1, 1)})
	defer rec.Release()
	sl := rec.NewSlice(1, 4)
	defer sl.Release()
	s := mustNew(t, Shape{Lookback: 2, Fields: one, Cadence: time.Hour}, DefaultConfig())
	var out Batch
	if err := s.Append(sl, nil, &out); err != nil {
		t.Fatal(err)
	}
	want := []win{{"a", 1, []float64{0, 1}, 1*hour + 1000}}
	if got := wins(t, &out); !equalWins(got, want) {
		t.Errorf("windows:\n got %v\nwant %v", got, want)
	}
	if st := s.Stats(); st.Created != 2 {
		t.Errorf("Stats().Created = %d, want 2 (a and bb)", st.Created)
	}
}

func TestSchemaErrors(t *testing.T) {
	str, f64 := arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64
	field := func(name string, dt arrow.DataType) arrow.Field { return arrow.Field{Name: name, Type: dt} }
	for _, tc := range []struct {
		name   string
		fields []arrow.Field
		nulls  bool // append a null value
		want   string
	}{
		{
			name:   "missing value column",
			fields: []arrow.Field{field("series", str), field("ts", tsType), field("ingest_ts", tsType), field("temp", f64)},
			want:   `no column "value" (columns: series, ts, ingest_ts, temp)`,
		},
		{
			name:   "value column of the wrong type",
			fields: []arrow.Field{field("series", str), field("ts", tsType), field("ingest_ts", tsType), field("value", arrow.PrimitiveTypes.Int64)},
			want:   `value column "value" is int64, want float64`,
		},
		{
			name:   "ts in seconds",
			fields: []arrow.Field{field("series", str), field("ts", &arrow.TimestampType{Unit: arrow.Second}), field("ingest_ts", tsType), field("value", f64)},
			want:   `column "ts" is timestamp[s], want timestamp[ms]`,
		},
		{
			name:   "ts as int64",
			fields: []arrow.Field{field("series", str), field("ts", arrow.PrimitiveTypes.Int64), field("ingest_ts", tsType), field("value", f64)},
			want:   `column "ts" is int64, want timestamp[ms]`,
		},
		{
			name:   "missing ingest_ts",
			fields: []arrow.Field{field("series", str), field("ts", tsType), field("value", f64)},
			want:   `no column "ingest_ts"`,
		},
		{
			name:   "series as binary",
			fields: []arrow.Field{field("series", arrow.BinaryTypes.Binary), field("ts", tsType), field("ingest_ts", tsType), field("value", f64)},
			want:   `column "series" is binary, want utf8`,
		},
		{
			name:   "duplicate column",
			fields: []arrow.Field{field("series", str), field("ts", tsType), field("ingest_ts", tsType), field("value", f64), field("value", f64)},
			want:   `column "value" appears 2 times`,
		},
		{
			name:   "nulls in a value column",
			fields: []arrow.Field{field("series", str), field("ts", tsType), field("ingest_ts", tsType), field("value", f64)},
			nulls:  true,
			want:   `column "value" has 1 nulls`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := array.NewRecordBuilder(mem, arrow.NewSchema(tc.fields, nil))
			for i, f := range tc.fields {
				// One row; nulls only where asked for, in the last column.
				switch fb := b.Field(i).(type) {
				case *array.StringBuilder:
					fb.Append("a")
				case *array.BinaryBuilder:
					fb.Append([]byte("a"))
				case *array.TimestampBuilder:
					fb.Append(0)
				case *array.Int64Builder:
					fb.Append(0)
				case *array.Float64Builder:
					if tc.nulls && i == len(tc.fields)-1 {
						fb.AppendNull()
					} else {
						fb.Append(1)
					}
				default:
					t.Fatalf("no builder case for %s", f.Type)
				}
			}
			rec := b.NewRecord()
			b.Release()
			defer rec.Release()

			s := mustNew(t, Shape{Lookback: 1, Fields: one, Cadence: time.Hour}, DefaultConfig())
			var out Batch
			err := s.Append(rec, nil, &out)
			if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Append() error = %v, want ErrSchema with %q", err, tc.want)
			}
			if st := s.Stats(); st != (Stats{}) || out.Len() != 0 {
				t.Errorf("after the error: Stats() = %+v, %d windows; want nothing fed", st, out.Len())
			}
			// A bad record does not spoil the next good one.
			good := newRecord(t, mem, readingsSchema("value"), []rd{at("a", 0, 1)})
			defer good.Release()
			if err := s.Append(good, nil, &out); err != nil || out.Len() != 1 {
				t.Errorf("Append(good record) = %v with %d windows, want nil and 1", err, out.Len())
			}
			// Nor is the error forgotten for the same schema.
			if err := s.Append(rec, nil, &out); !errors.Is(err, ErrSchema) {
				t.Errorf("second Append(bad record) error = %v, want ErrSchema", err)
			}
		})
	}
}

func TestSchemaCache(t *testing.T) {
	// Records with different schema pointers are each resolved: value
	// columns in another order, or an extra column, still read right.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := mustNew(t, Shape{Lookback: 1, Fields: []string{"a", "b"}, Cadence: time.Hour}, DefaultConfig())
	ab := readingsSchema("a", "b")
	var out Batch
	for i, tc := range []struct {
		sc *arrow.Schema
		r  rd
	}{
		{ab, at("x", 0, 1, 2)},
		{readingsSchema("b", "a"), at("x", 1, 2, 1)},
		{readingsSchema("extra", "b", "a"), at("x", 2, 9, 2, 1)},
		{ab, at("x", 3, 1, 2)},
		{readingsSchema("a", "b"), at("x", 4, 1, 2)}, // equal schema, new pointer
	} {
		rec := newRecord(t, mem, tc.sc, []rd{tc.r})
		err := s.Append(rec, nil, &out)
		rec.Release()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got, want := out.Window(i), []float64{1, 2}; !bitsEqual(got, want) {
			t.Errorf("record %d: window = %v, want %v", i, got, want)
		}
	}
}

func TestAppendArguments(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := mustNew(t, Shape{Lookback: 1, Fields: one, Cadence: time.Hour}, DefaultConfig())
	rec := newRecord(t, mem, readingsSchema("value"), []rd{at("a", 0, 1)})
	defer rec.Release()
	for _, tc := range []struct {
		name string
		rec  arrow.Record
		out  *Batch
		want string
	}{
		{name: "nil record", rec: nil, out: &Batch{}, want: "nil record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Append(tc.rec, nil, tc.out); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Append() error = %v, want %q", err, tc.want)
			}
		})
	}
}

func itoa(i int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}

func TestBatch(t *testing.T) {
	s := mustNew(t, Shape{Lookback: 2, Fields: one, Cadence: time.Hour}, DefaultConfig())
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := newRecord(t, mem, readingsSchema("value"), []rd{at("a", 0, 0), at("a", 1, 1), at("b", 0, 5), at("b", 1, 6)})
	defer rec.Release()
	var b Batch
	if err := s.Append(rec, nil, &b); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 2 || !bitsEqual(b.Window(1), []float64{5, 6}) {
		t.Fatalf("Len() = %d, Window(1) = %v; want 2 and [5 6]", b.Len(), b.Window(1))
	}
	vals := &b.Values[0]
	b.Reset()
	if b.Len() != 0 || len(b.Values) != 0 || len(b.End) != 0 || len(b.Ingest) != 0 {
		t.Errorf("after Reset: %d series, %d values, %d ends, %d ingests; want all 0", b.Len(), len(b.Values), len(b.End), len(b.Ingest))
	}
	if cap(b.Values) < 4 || &b.Values[:1][0] != vals {
		t.Errorf("Reset dropped the storage")
	}
	// The series id is the Set's own key: no copy per window.
	var out Batch
	rec2 := newRecord(t, mem, readingsSchema("value"), []rd{at("a", 2, 2)})
	defer rec2.Release()
	if err := s.Append(rec2, nil, &out); err != nil {
		t.Fatal(err)
	}
	if unsafe.StringData(out.Series[0]) != unsafe.StringData(s.series["a"].key) {
		t.Errorf("Batch.Series[0] is a copy of the series key, want the key itself")
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Window(5) on a 1-window batch did not panic")
		}
	}()
	out.Window(5)
}

// TestPropertyLastL feeds random series one reading per step, in records of
// random sizes, and checks that every window is the last L values pushed.
func TestPropertyLastL(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		l := 1 + rng.IntN(20)
		c := 1 + rng.IntN(3)
		fields := []string{"a", "b", "c"}[:c]
		nSeries := 1 + rng.IntN(4)
		steps := l + rng.IntN(60)
		s := mustNew(t, Shape{Lookback: l, Fields: fields, Cadence: 5 * time.Minute}, DefaultConfig())

		hist := map[string][][]float64{} // series → values pushed, step by step
		var pending []rd
		var got []win
		var want []win
		flush := func() {
			got = append(got, feedCadence(t, s, fields, 5*time.Minute, pending)...)
			pending = pending[:0]
		}
		start := rng.Int64N(1e12)
		for k := range steps {
			for si := range nSeries {
				id := "s" + itoa(si)
				vals := make([]float64, c)
				for j := range vals {
					vals[j] = rng.NormFloat64() * 100
				}
				ts := (start+int64(k))*int64(5*time.Minute/time.Millisecond) + rng.Int64N(300_000)
				pending = append(pending, rd{series: id, ts: ts, ingest: ts + 7, values: vals})
				hist[id] = append(hist[id], vals)
				if h := hist[id]; len(h) >= l {
					var flat []float64
					for _, v := range h[len(h)-l:] {
						flat = append(flat, v...)
					}
					want = append(want, win{series: id, end: start + int64(k), values: flat, ingest: ts + 7})
				}
				if rng.IntN(10) == 0 {
					flush()
				}
			}
		}
		flush()
		if !equalWins(got, want) {
			t.Fatalf("seed %d (L=%d C=%d): windows differ:\n got %v\nwant %v", seed, l, c, got, want)
		}
	}
}

// feedCadence is feed for any cadence: End is returned as a step index.
func feedCadence(tb testing.TB, s *Set, fields []string, cadence time.Duration, rs []rd) []win {
	tb.Helper()
	if len(rs) == 0 {
		return nil
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(tb, 0)
	rec := newRecord(tb, mem, readingsSchema(fields...), rs)
	defer rec.Release()
	var out Batch
	if err := s.Append(rec, nil, &out); err != nil {
		tb.Fatal(err)
	}
	cms := cadence.Milliseconds()
	var ws []win
	for i := range out.Len() {
		ms := out.End[i].UnixMilli()
		if ms%cms != 0 {
			tb.Errorf("End %v is not on a %v boundary", out.End[i], cadence)
		}
		ws = append(ws, win{series: out.Series[i], end: ms / cms, values: append([]float64(nil), out.Window(i)...), ingest: out.Ingest[i].UnixMilli()})
	}
	return ws
}
