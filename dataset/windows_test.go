package dataset

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// indexData returns rows×chans values where row r, channel c holds 100r+c.
func indexData(rows, chans int) []float64 {
	d := make([]float64, rows*chans)
	for r := range rows {
		for c := range chans {
			d[r*chans+c] = float64(100*r + c)
		}
	}
	return d
}

func TestWindowsViews(t *testing.T) {
	for _, tc := range []struct {
		name              string
		rows, chans       int
		lookback, horizon int
		r                 Range
		wantLen           int
	}{
		{name: "whole buffer, one channel", rows: 10, chans: 1, lookback: 3, horizon: 2, r: Range{0, 10}, wantLen: 6},
		{name: "middle range, three channels", rows: 50, chans: 3, lookback: 4, horizon: 5, r: Range{7, 30}, wantLen: 15},
		{name: "exactly one window", rows: 20, chans: 2, lookback: 6, horizon: 4, r: Range{10, 20}, wantLen: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := indexData(tc.rows, tc.chans)
			w, err := NewWindows(data, tc.chans, tc.lookback, tc.horizon, tc.r)
			if err != nil {
				t.Fatalf("NewWindows: %v", err)
			}
			if w.Len() != tc.wantLen {
				t.Fatalf("Len() = %d, want %d", w.Len(), tc.wantLen)
			}
			if w.Channels() != tc.chans || w.Lookback() != tc.lookback || w.Horizon() != tc.horizon || w.Range() != tc.r {
				t.Errorf("accessors = %d, %d, %d, %v; want %d, %d, %d, %v",
					w.Channels(), w.Lookback(), w.Horizon(), w.Range(), tc.chans, tc.lookback, tc.horizon, tc.r)
			}
			for i := range w.Len() {
				in, tg := w.Input(i), w.Target(i)
				if len(in) != tc.lookback*tc.chans || cap(in) != len(in) {
					t.Fatalf("window %d: Input len %d cap %d, want both %d", i, len(in), cap(in), tc.lookback*tc.chans)
				}
				if len(tg) != tc.horizon*tc.chans || cap(tg) != len(tg) {
					t.Fatalf("window %d: Target len %d cap %d, want both %d", i, len(tg), cap(tg), tc.horizon*tc.chans)
				}
				first := tc.r.Start + i
				if got, want := in[0], data[first*tc.chans]; got != want {
					t.Errorf("window %d: Input[0] = %v, want row %d = %v", i, got, first, want)
				}
				if got, want := in[len(in)-1], float64(100*(first+tc.lookback-1)+tc.chans-1); got != want {
					t.Errorf("window %d: last Input value = %v, want %v", i, got, want)
				}
				if got, want := tg[0], float64(100*(first+tc.lookback)); got != want {
					t.Errorf("window %d: Target[0] = %v, want the row after the input, %v", i, got, want)
				}
				if got, want := tg[len(tg)-1], float64(100*(first+tc.lookback+tc.horizon-1)+tc.chans-1); got != want {
					t.Errorf("window %d: last Target value = %v, want %v", i, got, want)
				}
				if got, want := w.EndRow(i), first+tc.lookback-1; got != want {
					t.Errorf("EndRow(%d) = %d, want %d", i, got, want)
				}
				if &in[0] != &data[first*tc.chans] {
					t.Errorf("window %d: Input is a copy, want a view into the data", i)
				}
			}
			if last := w.Target(w.Len() - 1); last[len(last)-1] != data[tc.r.End*tc.chans-1] {
				t.Errorf("last target ends at %v, want the last value of the range %v", last[len(last)-1], data[tc.r.End*tc.chans-1])
			}
		})
	}
}

func TestWindowsIndexPanics(t *testing.T) {
	w, err := NewWindows(indexData(10, 1), 1, 3, 2, Range{0, 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func()
	}{
		{name: "Input(-1)", call: func() { w.Input(-1) }},
		{name: "Input(Len())", call: func() { w.Input(w.Len()) }},
		{name: "Target(Len())", call: func() { w.Target(w.Len()) }},
		{name: "EndRow(Len())", call: func() { w.EndRow(w.Len()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", tc.name)
				}
			}()
			tc.call()
		})
	}
}

func TestNewWindowsErrors(t *testing.T) {
	data := indexData(100, 2)
	for _, tc := range []struct {
		name              string
		data              []float64
		chans             int
		lookback, horizon int
		r                 Range
		want              string
	}{
		{name: "range shorter than a window", data: data, chans: 2, lookback: 96, horizon: 96, r: Range{0, 100},
			want: "windows: range [0, 100) holds 100 rows, but one window needs lookback 96 + horizon 96 = 192 rows; " +
				"use a --horizon of at most 4, or a shorter --lookback"},
		{name: "range shorter than the lookback", data: data, chans: 2, lookback: 96, horizon: 1, r: Range{50, 100},
			want: "windows: range [50, 100) holds 50 rows, but one window needs lookback 96 + horizon 1 = 97 rows; " +
				"use a shorter --horizon or --lookback"},
		{name: "range past the data", data: data, chans: 2, lookback: 2, horizon: 2, r: Range{90, 101},
			want: "windows: range [90, 101) is not within the 100 rows of the data"},
		{name: "zero horizon", data: data, chans: 2, lookback: 2, horizon: 0, r: Range{0, 100},
			want: "windows: horizon = 0; use a --horizon of at least 1"},
		{name: "zero lookback", data: data, chans: 2, lookback: 0, horizon: 2, r: Range{0, 100},
			want: "windows: lookback = 0; use a --lookback of at least 1"},
		{name: "ragged data", data: data[:199], chans: 2, lookback: 2, horizon: 2, r: Range{0, 10},
			want: "windows: data has 199 values, not a multiple of 2 channels; pass the row-major rows×channels buffer"},
		{name: "no channels", data: data, chans: 0, lookback: 2, horizon: 2, r: Range{0, 10},
			want: "windows: channels = 0; need at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWindows(tc.data, tc.chans, tc.lookback, tc.horizon, tc.r)
			if err == nil {
				t.Fatalf("NewWindows = %d windows, want an error", w.Len())
			}
			if err.Error() != tc.want {
				t.Errorf("error = %q\nwant    %q", err, tc.want)
			}
		})
	}
}

func TestStandardBenchmarkFiles(t *testing.T) {
	for _, tc := range []struct {
		file                  string
		lookback, horizon     int
		protocol              Protocol
		train, val, test      int
		trainRange, testRange Range
	}{
		{"ETTh1.csv", 96, 96, ProtocolETTHour, 8449, 2785, 2785, Range{0, 8640}, Range{11424, 14400}},
		{"ETTh2.csv", 96, 720, ProtocolETTHour, 7825, 2161, 2161, Range{0, 8640}, Range{11424, 14400}},
		{"ETTm1.csv", 96, 96, ProtocolETTMinute, 34369, 11425, 11425, Range{0, 34560}, Range{45984, 57600}},
		{"ETTm2.csv", 336, 96, ProtocolETTMinute, 34129, 11425, 11425, Range{0, 34560}, Range{45744, 57600}},
		{"weather.csv", 96, 96, ProtocolRatio, 36696, 5175, 10444, Range{0, 36887}, Range{42061, 52696}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f := loadData(t, tc.file)
			b, err := Standard(f, tc.lookback, tc.horizon)
			if err != nil {
				t.Fatalf("Standard: %v", err)
			}
			if b.Protocol != tc.protocol {
				t.Errorf("Protocol = %q, want %q", b.Protocol, tc.protocol)
			}
			if b.Train.Len() != tc.train || b.Val.Len() != tc.val || b.Test.Len() != tc.test {
				t.Errorf("windows train/val/test = %d/%d/%d, want %d/%d/%d",
					b.Train.Len(), b.Val.Len(), b.Test.Len(), tc.train, tc.val, tc.test)
			}
			if b.Split.Train != tc.trainRange || b.Split.Test != tc.testRange {
				t.Errorf("Split train %v test %v, want %v and %v", b.Split.Train, b.Split.Test, tc.trainRange, tc.testRange)
			}
			// The first test window predicts the first row after the validation border.
			if got, want := b.Test.EndRow(0)+1, tc.testRange.Start+tc.lookback; got != want {
				t.Errorf("first test target row = %d, want %d", got, want)
			}
			checkStandardized(t, b)
		})
	}
}

// checkStandardized checks that the training rows of Normalised have mean 0
// and std 1 per channel, that Normalised is the scaled frame, and that the
// windows point into it.
func checkStandardized(t *testing.T, b *Benchmark) {
	t.Helper()
	chans := b.Frame.Channels()
	s := FitScaler(&Frame{Columns: b.Frame.Columns, Times: b.Frame.Times, Values: b.Normalised}, b.Split.Train)
	for c := range chans {
		if math.Abs(s.Mean[c]) > 1e-9 || (math.Abs(s.Std[c]-1) > 1e-9 && b.Scaler.Std[c] != 1) {
			t.Errorf("column %q: training mean %g std %g after Standard, want 0 and 1", b.Frame.Columns[c], s.Mean[c], s.Std[c])
		}
	}
	for _, i := range []int{0, b.Test.Len() / 2, b.Test.Len() - 1} {
		row := b.Split.Test.Start + i
		in := b.Test.Input(i)
		for c := range chans {
			want := (b.Frame.Values[row*chans+c] - b.Scaler.Mean[c]) / b.Scaler.Std[c]
			if in[c] != want {
				t.Errorf("test window %d channel %d: Input = %v, want the z-score of row %d, %v", i, c, in[c], row, want)
			}
		}
		if &in[0] != &b.Normalised[row*chans] {
			t.Errorf("test window %d is not a view into Normalised", i)
		}
	}
}

func TestStandardSynthetic(t *testing.T) {
	f := mustSynthetic(t, SyntheticConfig{Series: 3, Steps: 1000, Level: 10, Cycles: []Cycle{{PeriodSteps: 24, Amplitude: 2}}, NoiseStd: 0.5, Seed: 1})
	b, err := Standard(f, 48, 24)
	if err != nil {
		t.Fatal(err)
	}
	// Ratio protocol on 1000 rows: train [0,700), val [652,800), test [752,1000).
	for _, tc := range []struct {
		name string
		w    *Windows
		want int
	}{
		{name: "train", w: b.Train, want: 700 - 48 - 24 + 1},
		{name: "val", w: b.Val, want: 148 - 48 - 24 + 1},
		{name: "test", w: b.Test, want: 248 - 48 - 24 + 1},
	} {
		if got := tc.w.Len(); got != tc.want {
			t.Errorf("%s windows = %d, want %d", tc.name, got, tc.want)
		}
	}
	checkStandardized(t, b)
	before := f.Values[0]
	if b.Normalised[0] == before {
		t.Errorf("Normalised[0] = %v equals the raw value; want a z-score", b.Normalised[0])
	}
	if f.Values[0] != before {
		t.Errorf("Standard modified the frame")
	}
}

func TestStandardErrors(t *testing.T) {
	short := mustSynthetic(t, SyntheticConfig{Steps: 1000, Seed: 1})
	ettShort := mustSynthetic(t, SyntheticConfig{Steps: 1000, Seed: 1})
	ettShort.Name = "ETTh1.csv"
	missing := mustSynthetic(t, SyntheticConfig{Series: 2, Steps: 1000, MissingRate: 0.1, Seed: 1})
	for _, tc := range []struct {
		name              string
		f                 *Frame
		lookback, horizon int
		want              []string // substrings of the message
	}{
		{name: "val split too short for the horizon", f: short, lookback: 96, horizon: 120,
			want: []string{"synthetic: its 1000 rows split into 700 for training, 100 for validation and 200 for testing (ratio protocol); " +
				"training needs lookback 96 + horizon 120 = 216 rows, validation and testing a horizon each; use a --horizon of at most 100 or a longer file"}},
		{name: "a horizon the training split fits but not validation", f: short, lookback: 96, horizon: 500,
			want: []string{"use a --horizon of at most 100 or a longer file"}},
		{name: "a horizon too long for validation, a lookback too long for that horizon", f: short, lookback: 650, horizon: 120,
			want: []string{"use a --horizon of at most 100 (then a --lookback of at most 600) or a longer file"}},
		{name: "a lookback that leaves training no window", f: short, lookback: 700, horizon: 1,
			want: []string{"use a --lookback of at most 699 for this horizon, or a longer file"}},
		{name: "a lookback and a horizon that fit alone but not together", f: short, lookback: 650, horizon: 60,
			want: []string{"use a --lookback of at most 640 for this horizon, a --horizon of at most 50 for this lookback, or a longer file"}},
		{name: "ETT name on a short frame", f: ettShort, lookback: 96, horizon: 96,
			want: []string{"ETTh1.csv: ", "needs at least 14400"}},
		{name: "missing readings", f: missing, lookback: 24, horizon: 24,
			want: []string{"synthetic: row ", "is NaN; call FillMissing first"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Standard(tc.f, tc.lookback, tc.horizon)
			if err == nil {
				t.Fatal("Standard succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestStandardAdviceWorks: on random file lengths, lookbacks and horizons,
// whatever --lookback and --horizon a refusal advises, Standard accepts.
func TestStandardAdviceWorks(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261127, 5))
	num := regexp.MustCompile(`--(lookback|horizon) of at most (\d+)`)
	for range 300 {
		rows := 20 + rng.IntN(400)
		f := mustSynthetic(t, SyntheticConfig{Steps: rows, Seed: 1})
		L, H := 1+rng.IntN(rows), 1+rng.IntN(rows/2)
		_, err := Standard(f, L, H)
		if err == nil {
			continue
		}
		msg := err.Error()
		advice := num.FindAllStringSubmatch(msg, -1)
		if len(advice) == 0 {
			if !strings.Contains(msg, "use a longer file") {
				t.Errorf("rows %d, lookback %d, horizon %d: no advice in %q", rows, L, H, msg)
			}
			continue
		}
		try := func(l, h int) {
			if _, err := Standard(f, l, h); err != nil {
				t.Errorf("rows %d, lookback %d, horizon %d: %q; following it (lookback %d, horizon %d): %v", rows, L, H, msg, l, h, err)
			}
		}
		switch {
		case strings.Contains(msg, "(then a --lookback"):
			h, _ := strconv.Atoi(advice[0][2])
			l, _ := strconv.Atoi(advice[1][2])
			try(min(L, l), h)
		default:
			for _, a := range advice {
				v, _ := strconv.Atoi(a[2])
				if a[1] == "lookback" {
					try(v, H)
				} else {
					try(L, v)
				}
			}
		}
	}
}
