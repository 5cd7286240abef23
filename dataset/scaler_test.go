package dataset

import (
	"math"
	"slices"
	"testing"
)

func TestFitScaler(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name     string
		cols     int
		values   []float64
		r        Range
		wantMean []float64
		wantStd  []float64
	}{
		{name: "population std, ddof 0", cols: 1, values: []float64{1, 2, 3, 4}, r: Range{0, 4},
			wantMean: []float64{2.5}, wantStd: []float64{math.Sqrt(1.25)}},
		{name: "two channels", cols: 2, values: []float64{2, -1, 4, -1, 4, 5, 4, 5, 5, 5, 5, 5, 7, 5, 9, 5}, r: Range{0, 8},
			// Channel 0 is the textbook 2,4,4,4,5,5,7,9: mean 5, std 2.
			wantMean: []float64{5, 3.5}, wantStd: []float64{2, math.Sqrt(6.75)}},
		{name: "only the rows of the range count", cols: 1, values: []float64{1e9, 1, 3, -1e9}, r: Range{1, 3},
			wantMean: []float64{2}, wantStd: []float64{1}},
		{name: "constant channel gets std 1", cols: 2, values: []float64{0.1, 1, 0.1, 2, 0.1, 3}, r: Range{0, 3},
			wantMean: []float64{0.1, 2}, wantStd: []float64{1, math.Sqrt(2.0 / 3)}},
		{name: "NaN readings are skipped", cols: 1, values: []float64{1, nan, 3}, r: Range{0, 3},
			wantMean: []float64{2}, wantStd: []float64{1}},
		{name: "channel without readings gets mean 0 and std 1", cols: 1, values: []float64{nan, nan}, r: Range{0, 2},
			wantMean: []float64{0}, wantStd: []float64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := FitScaler(frameOf(tc.cols, tc.values), tc.r)
			if !closeAll(s.Mean, tc.wantMean, 1e-12) {
				t.Errorf("Mean = %v, want %v", s.Mean, tc.wantMean)
			}
			if !closeAll(s.Std, tc.wantStd, 1e-12) {
				t.Errorf("Std = %v, want %v", s.Std, tc.wantStd)
			}
		})
	}
}

func TestFitScalerPanicsOnBadRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Range
	}{
		{name: "empty", r: Range{2, 2}},
		{name: "past the end", r: Range{0, 5}},
		{name: "negative start", r: Range{-1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("FitScaler(%v) did not panic", tc.r)
				}
			}()
			FitScaler(frameOf(1, []float64{1, 2, 3, 4}), tc.r)
		})
	}
}

func TestScalerTransformInverse(t *testing.T) {
	s := Scaler{Mean: []float64{1, -2}, Std: []float64{2, 0.5}}
	src := []float64{1, -2, 3, -1, -1, -3, math.NaN(), 0}
	want := []float64{0, 0, 1, 2, -1, -2, math.NaN(), 4}
	for _, tc := range []struct {
		name string
		dst  func() []float64
	}{
		{name: "nil dst allocates", dst: func() []float64 { return nil }},
		{name: "short dst allocates", dst: func() []float64 { return make([]float64, 3) }},
		{name: "roomy dst is reused", dst: func() []float64 { return make([]float64, 0, 20) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(src)
			got := s.Transform(tc.dst(), in)
			if !bitsEqual(got, want) {
				t.Errorf("Transform = %v, want %v", got, want)
			}
			if !bitsEqual(in, src) {
				t.Errorf("Transform modified src: %v, want %v", in, src)
			}
			back := s.Inverse(tc.dst(), got)
			if !bitsEqual(back, src) {
				t.Errorf("Inverse(Transform(x)) = %v, want %v", back, src)
			}
		})
	}
	t.Run("in place", func(t *testing.T) {
		buf := slices.Clone(src)
		got := s.Transform(buf, buf)
		if &got[0] != &buf[0] || !bitsEqual(buf, want) {
			t.Errorf("Transform(buf, buf) = %v in a new buffer %v; want %v in place", got, &got[0] != &buf[0], want)
		}
		s.Inverse(buf, buf)
		if !bitsEqual(buf, src) {
			t.Errorf("Inverse(buf, buf) = %v, want %v", buf, src)
		}
	})
	t.Run("ragged src panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("Transform of 3 values with 2 channels did not panic")
			}
		}()
		s.Transform(nil, []float64{1, 2, 3})
	})
}

func TestScalerOnETTh1Training(t *testing.T) {
	f := loadData(t, "ETTh1.csv")
	s := FitScaler(f, Range{0, 8640})
	z := s.Transform(nil, f.Values[:8640*f.Channels()])
	// The training rows must come out with mean 0 and std 1 in every channel.
	zf := &Frame{Columns: f.Columns, Times: f.Times[:8640], Values: z}
	back := FitScaler(zf, Range{0, 8640})
	for c := range f.Channels() {
		if math.Abs(back.Mean[c]) > 1e-12 || math.Abs(back.Std[c]-1) > 1e-12 {
			t.Errorf("column %q after Transform: mean %g, std %g; want 0 and 1", f.Columns[c], back.Mean[c], back.Std[c])
		}
	}
	// OT is the last column; its training mean is well above 0 (oil temperature in °C).
	if m := s.Mean[6]; m < 5 || m > 30 {
		t.Errorf("OT training mean = %g, want a plausible oil temperature between 5 and 30", m)
	}
}

func closeAll(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
			return false
		}
	}
	return true
}

// TestFitScalerAtTheFloat64Limits: readings near the float64 limits, whose
// sums overflow or whose squares underflow, get the statistics of the same
// readings at an ordinary scale, scaled: finite, and Transform of them is
// the same z-scores to rounding.
func TestFitScalerAtTheFloat64Limits(t *testing.T) {
	base := []float64{3, -1, 4, 1, -5, 9, 2, 6}
	want := fitScaler(base, 1, Range{Start: 0, End: len(base)})
	zWant := want.Transform(nil, base)
	for _, scale := range []float64{1e300, 1e160, 1e-160, 1e-200, 1e-300} {
		v := make([]float64, len(base))
		for i, x := range base {
			v[i] = x * scale
		}
		s := fitScaler(v, 1, Range{Start: 0, End: len(v)})
		if math.IsInf(s.Mean[0], 0) || math.IsNaN(s.Mean[0]) || !(s.Std[0] > 0) || math.IsInf(s.Std[0], 0) {
			t.Fatalf("scale %g: mean %v, std %v; want finite and std > 0", scale, s.Mean[0], s.Std[0])
		}
		for i, z := range s.Transform(nil, v) {
			if math.Abs(z-zWant[i]) > 1e-12 {
				t.Errorf("scale %g: z[%d] = %v, want %v", scale, i, z, zWant[i])
			}
		}
	}
	// Subnormal readings, whose squares are all 0: a positive spread still.
	sub := []float64{5e-324, 1e-323, 5e-324, 1e-323}
	s := fitScaler(sub, 1, Range{Start: 0, End: len(sub)})
	for i, z := range s.Transform(nil, sub) {
		if math.IsNaN(z) || math.IsInf(z, 0) {
			t.Errorf("subnormal readings: z[%d] = %v (std %v), want finite", i, z, s.Std[0])
		}
	}
}
