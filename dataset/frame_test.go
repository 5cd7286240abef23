package dataset

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestInferCadence(t *testing.T) {
	t0 := utc(2020, 1, 1, 0, 0, 0)
	at := func(minutes ...int) []time.Time {
		ts := make([]time.Time, len(minutes))
		for i, m := range minutes {
			ts[i] = t0.Add(time.Duration(m) * time.Minute)
		}
		return ts
	}
	for _, tc := range []struct {
		name  string
		times []time.Time
		want  time.Duration
	}{
		{name: "no rows", times: nil, want: 0},
		{name: "one row", times: at(0), want: 0},
		{name: "regular 10 minutes", times: at(0, 10, 20, 30, 40), want: 10 * time.Minute},
		{name: "a duplicate is ignored", times: at(0, 10, 20, 20, 30, 40), want: 10 * time.Minute},
		{name: "a 100-minute gap is outvoted", times: at(0, 10, 20, 120, 130, 140), want: 10 * time.Minute},
		{name: "every timestamp equal", times: at(5, 5, 5), want: 0},
		{name: "backwards steps are ignored", times: at(0, 15, 30, 10, 25, 40), want: 15 * time.Minute},
		{name: "even count takes the lower median", times: at(0, 10, 30), want: 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inferCadence(tc.times); got != tc.want {
				t.Errorf("inferCadence = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFrameRow(t *testing.T) {
	f := &Frame{Columns: []string{"a", "b", "c"}, Times: make([]time.Time, 3), Values: []float64{0, 1, 2, 10, 11, 12, 20, 21, 22}}
	for _, tc := range []struct {
		name string
		row  int
		want []float64
	}{
		{name: "first row", row: 0, want: []float64{0, 1, 2}},
		{name: "middle row", row: 1, want: []float64{10, 11, 12}},
		{name: "last row", row: 2, want: []float64{20, 21, 22}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.Row(tc.row)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Row(%d) = %v, want %v", tc.row, got, tc.want)
			}
			if cap(got) != len(got) {
				t.Errorf("cap(Row(%d)) = %d, want %d so an append cannot overwrite the next row", tc.row, cap(got), len(got))
			}
		})
	}
	f.Row(1)[2] = 99
	if got := f.Values[5]; got != 99 {
		t.Errorf("after Row(1)[2] = 99, Values[5] = %v, want 99 (Row is a view)", got)
	}
}

func TestFillMissing(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name       string
		cols       int
		in         []float64
		want       []float64
		wantFilled int
	}{
		{name: "nothing missing", cols: 1, in: []float64{1, 2, 3}, want: []float64{1, 2, 3}, wantFilled: 0},
		{name: "interior gap is interpolated", cols: 1, in: []float64{1, nan, nan, 4}, want: []float64{1, 2, 3, 4}, wantFilled: 2},
		{name: "leading and trailing take the nearest", cols: 1, in: []float64{nan, nan, 5, nan, 7, nan}, want: []float64{5, 5, 5, 6, 7, 7}, wantFilled: 4},
		{name: "channels are filled independently", cols: 2,
			in:         []float64{0, nan, nan, 10, 2, nan, nan, 30},
			want:       []float64{0, 10, 1, 10, 2, 20, 2, 30},
			wantFilled: 4},
		{name: "single reading fills its channel", cols: 1, in: []float64{nan, 3, nan}, want: []float64{3, 3, 3}, wantFilled: 2},
		{name: "infinity is a reading and is carried into the gap", cols: 1,
			in:         []float64{1, nan, math.Inf(-1), nan, nan, 2},
			want:       []float64{1, 1, math.Inf(-1), math.Inf(-1), math.Inf(-1), 2},
			wantFilled: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := frameOf(tc.cols, slices.Clone(tc.in))
			filled, err := f.FillMissing()
			if err != nil {
				t.Fatalf("FillMissing: %v", err)
			}
			if filled != tc.wantFilled {
				t.Errorf("filled = %d, want %d", filled, tc.wantFilled)
			}
			if !bitsEqual(f.Values, tc.want) {
				t.Errorf("Values = %v, want %v", f.Values, tc.want)
			}
		})
	}
}

func TestFillMissingEmptyChannel(t *testing.T) {
	nan := math.NaN()
	in := []float64{1, nan, nan, nan, 3, nan}
	f := frameOf(2, slices.Clone(in))
	filled, err := f.FillMissing()
	want := `fill missing in test: column "c1" has no readings (all 3 rows are NaN); drop the column or supply at least one reading`
	if err == nil || err.Error() != want {
		t.Fatalf("FillMissing error = %v, want %q", err, want)
	}
	if filled != 0 || !bitsEqual(f.Values, in) {
		t.Errorf("after the error: filled %d, Values %v; want 0 and the frame unchanged %v", filled, f.Values, in)
	}
}

func TestFillMissingSynthetic(t *testing.T) {
	f := mustSynthetic(t, Traffic(5, 2000, 0, 9))
	var want int
	for _, v := range f.Values {
		if math.IsNaN(v) {
			want++
		}
	}
	if want == 0 {
		t.Fatal("traffic preset produced no missing readings; the test needs some")
	}
	filled, err := f.FillMissing()
	if err != nil {
		t.Fatal(err)
	}
	if filled != want {
		t.Errorf("filled = %d, want the %d NaN readings", filled, want)
	}
	for i, v := range f.Values {
		if math.IsNaN(v) {
			t.Fatalf("Values[%d] is still NaN", i)
		}
	}
}

// frameOf builds a frame named "test" with columns c0, c1, … around values.
func frameOf(cols int, values []float64) *Frame {
	f := &Frame{Name: "test", Values: values, Times: make([]time.Time, len(values)/cols)}
	for c := range cols {
		f.Columns = append(f.Columns, "c"+string(rune('0'+c)))
	}
	return f
}

func TestSameCadence(t *testing.T) {
	for _, tc := range []struct {
		a, b time.Duration
		want bool
	}{
		{time.Hour, time.Hour, true},
		{time.Hour, time.Hour - 2*time.Second, true},
		{31 * 24 * time.Hour, 30 * 24 * time.Hour, true},
		{92 * 24 * time.Hour, 91 * 24 * time.Hour, true},
		{time.Hour, 15 * time.Minute, false},
		{time.Hour, 50 * time.Minute, false},
		{0, 15 * time.Minute, true},
		{time.Hour, 0, true},
	} {
		if got := SameCadence(tc.a, tc.b); got != tc.want {
			t.Errorf("SameCadence(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
