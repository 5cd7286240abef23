package dataset

import (
	"math/rand/v2"
	"testing"
)

func TestProtocolFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Protocol
	}{
		{name: "ETTh1", in: "ETTh1.csv", want: ProtocolETTHour},
		{name: "ETTh2 in a folder", in: "../shared/data/ETTh2.csv", want: ProtocolETTHour},
		{name: "ETTm1", in: "ETTm1.csv", want: ProtocolETTMinute},
		{name: "ETTm2 in a folder", in: "/data/ETTm2.csv", want: ProtocolETTMinute},
		{name: "weather", in: "weather.csv", want: ProtocolRatio},
		{name: "match is case-sensitive", in: "etth1.csv", want: ProtocolRatio},
		{name: "prefix only in a folder name", in: "ETTh1/traffic.csv", want: ProtocolRatio},
		{name: "synthetic frame", in: "synthetic", want: ProtocolRatio},
		{name: "empty name", in: "", want: ProtocolRatio},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProtocolFor(tc.in); got != tc.want {
				t.Errorf("ProtocolFor(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestProtocolSplit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        Protocol
		rows     int
		lookback int
		want     Split
	}{
		{name: "ETTh1 rows, L=96", p: ProtocolETTHour, rows: 17420, lookback: 96,
			want: Split{Train: Range{0, 8640}, Val: Range{8544, 11520}, Test: Range{11424, 14400}}},
		{name: "ETT hour at exactly 14400 rows, L=336", p: ProtocolETTHour, rows: 14400, lookback: 336,
			want: Split{Train: Range{0, 8640}, Val: Range{8304, 11520}, Test: Range{11184, 14400}}},
		{name: "ETTm1 rows, L=96", p: ProtocolETTMinute, rows: 69680, lookback: 96,
			want: Split{Train: Range{0, 34560}, Val: Range{34464, 46080}, Test: Range{45984, 57600}}},
		{name: "weather rows, L=96", p: ProtocolRatio, rows: 52696, lookback: 96,
			// int(52696*0.7) = 36887, int(52696*0.2) = 10539, val 5270.
			want: Split{Train: Range{0, 36887}, Val: Range{36791, 42157}, Test: Range{42061, 52696}}},
		{name: "ratio truncates n*0.7 in float64 like Python: int(90*0.7) = 62", p: ProtocolRatio, rows: 90, lookback: 10,
			// 90*0.7 = 62.99999999999999; int(90*0.2) = 18; val 10.
			want: Split{Train: Range{0, 62}, Val: Range{52, 72}, Test: Range{62, 90}}},
		{name: "ratio with 7 rows", p: ProtocolRatio, rows: 7, lookback: 0,
			// int(7*0.7) = 4, int(7*0.2) = 1, val 2.
			want: Split{Train: Range{0, 4}, Val: Range{4, 6}, Test: Range{6, 7}}},
		{name: "ratio with 1000 rows, lookback equal to the training rows", p: ProtocolRatio, rows: 1000, lookback: 700,
			want: Split{Train: Range{0, 700}, Val: Range{0, 800}, Test: Range{100, 1000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.p.Split(tc.rows, tc.lookback)
			if err != nil {
				t.Fatalf("Split(%d, %d): %v", tc.rows, tc.lookback, err)
			}
			if got != tc.want {
				t.Errorf("Split(%d, %d) = %+v, want %+v", tc.rows, tc.lookback, got, tc.want)
			}
		})
	}
}

func TestProtocolSplitErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        Protocol
		rows     int
		lookback int
		want     string
	}{
		{name: "ETT hour file too short", p: ProtocolETTHour, rows: 14399, lookback: 96,
			want: "split ett-hour: file has 14399 rows, but the protocol needs at least 14400 (20 months of 30 days of hourly rows); " +
				"use the complete ETT file, or the ratio protocol for other data"},
		{name: "ETT minute file too short", p: ProtocolETTMinute, rows: 17420, lookback: 96,
			want: "split ett-minute: file has 17420 rows, but the protocol needs at least 57600 (20 months of 30 days of 15-minute rows); " +
				"use the complete ETT file, or the ratio protocol for other data"},
		{name: "ETT lookback longer than the training rows", p: ProtocolETTHour, rows: 17420, lookback: 8641,
			want: "split ett-hour: lookback = 8641 exceeds the 8640 training rows; use a --lookback of at most 8640"},
		{name: "ratio lookback longer than the training rows", p: ProtocolRatio, rows: 100, lookback: 71,
			want: "split ratio: lookback = 71 exceeds the 70 training rows (70% of 100); use a --lookback of at most 70 or a longer file"},
		{name: "ratio without rows", p: ProtocolRatio, rows: 0, lookback: 0,
			want: "split ratio: file has 0 rows; need data to split"},
		{name: "negative lookback", p: ProtocolRatio, rows: 100, lookback: -1,
			want: "split ratio: lookback = -1 is negative; use a positive --lookback"},
		{name: "unknown protocol", p: "ETTh", rows: 100, lookback: 1,
			want: `split: unknown protocol "ETTh"; use "ett-hour", "ett-minute" or "ratio"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.p.Split(tc.rows, tc.lookback)
			if err == nil {
				t.Fatalf("Split(%d, %d) = %+v, want an error", tc.rows, tc.lookback, got)
			}
			if err.Error() != tc.want {
				t.Errorf("error = %q\nwant    %q", err, tc.want)
			}
		})
	}
}

func TestRange(t *testing.T) {
	r := Range{8544, 11520}
	if got, want := r.Len(), 2976; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	if got, want := r.String(), "[8544, 11520)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestMinRows: under the ratio protocol Standard cuts every file of
// MinRows rows or more (checked up to 40 rows beyond) and refuses one row
// fewer, and Fits says what Standard does, for random lookbacks, horizons
// and lengths; the ETT protocols need their whole 20 months.
func TestMinRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fits := func(rows, lookback, horizon int) bool {
		values := make([]float64, rows)
		for i := range values {
			values[i] = float64(i % 7)
		}
		_, err := Standard(frameOf(1, values), lookback, horizon)
		return err == nil
	}
	for range 100 {
		lookback, horizon := 1+rng.IntN(200), 1+rng.IntN(150)
		n := ProtocolRatio.MinRows(lookback, horizon)
		if fits(n-1, lookback, horizon) {
			t.Fatalf("lookback %d horizon %d: Standard takes %d rows, one fewer than MinRows", lookback, horizon, n-1)
		}
		for rows := n; rows <= n+40; rows++ {
			if !fits(rows, lookback, horizon) {
				t.Fatalf("lookback %d horizon %d: Standard refuses %d rows, though MinRows is %d", lookback, horizon, rows, n)
			}
		}
		for range 5 {
			rows := 1 + rng.IntN(n+10)
			if got, want := ProtocolRatio.Fits(rows, lookback, horizon), fits(rows, lookback, horizon); got != want {
				t.Fatalf("lookback %d horizon %d rows %d: Fits = %v, Standard %v", lookback, horizon, rows, got, want)
			}
		}
	}
	if got := ProtocolETTHour.MinRows(96, 96); got != 14400 {
		t.Errorf("ETT hourly MinRows = %d, want 14400", got)
	}
	if got := ProtocolETTMinute.MinRows(96, 720); got != 57600 {
		t.Errorf("ETT 15-minute MinRows = %d, want 57600", got)
	}
	if got := ProtocolRatio.MinRows(0, 96); got != 0 {
		t.Errorf("MinRows with no lookback = %d, want 0", got)
	}
}
