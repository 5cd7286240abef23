package dataset

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// panelOf adds every row of f as readings of one series with the frame's
// columns as value fields, in a seeded random order.
func panelOf(t *testing.T, f *Frame, seed uint64) *PanelBuilder {
	t.Helper()
	b, err := NewPanelBuilder(PanelConfig{Name: f.Name, Fields: f.Columns})
	if err != nil {
		t.Fatal(err)
	}
	order := rand.New(rand.NewPCG(seed, 1)).Perm(f.Rows())
	for _, r := range order {
		b.Add("only", f.Times[r].UnixMilli(), f.Row(r))
	}
	return b
}

// TestOneSeriesIsTheRatioProtocol: a panel of one series that covers every
// step, its readings added in a random order, splits into exactly the
// windows, scaler and spectrum rows that Standard gives the same data as a
// benchmark file under ProtocolRatio.
func TestOneSeriesIsTheRatioProtocol(t *testing.T) {
	for seed := range uint64(3) {
		f, err := Synthetic(SyntheticConfig{Series: 3, Steps: 700 + int(seed)*37, Cycles: []Cycle{{Period: 24 * time.Hour, Amplitude: 5}}, NoiseStd: 1, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		f.Name = "sensors.csv"
		const L, H = 48, 24
		want, err := Standard(f, L, H)
		if err != nil {
			t.Fatal(err)
		}
		p, err := panelOf(t, f, seed).Build(L + H)
		if err != nil {
			t.Fatal(err)
		}
		if p.Cadence != time.Hour || len(p.Segments) != 1 {
			t.Fatalf("seed %d: cadence %v, %d segments; want 1h and one", seed, p.Cadence, len(p.Segments))
		}
		for _, perSeries := range []bool{false, true} {
			got, err := p.Split(L, H, perSeries)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Scaler.Mean, want.Scaler.Mean) || !slices.Equal(got.Scaler.Std, want.Scaler.Std) {
				t.Fatalf("seed %d: scaler %v/%v, want %v/%v", seed, got.Scaler.Mean, got.Scaler.Std, want.Scaler.Mean, want.Scaler.Std)
			}
			if rows, ch := got.Train.SpectrumRows(); ch != 3 || !slices.Equal(rows, want.Train.Rows()) {
				t.Fatalf("seed %d: the spectrum's rows differ from Standard's training rows", seed)
			}
			for _, part := range []struct {
				name string
				got  *Collection
				want *Windows
			}{{"train", got.Train, want.Train}, {"val", got.Val, want.Val}, {"test", got.Test, want.Test}} {
				if part.got.Len() != part.want.Len() {
					t.Fatalf("seed %d %s: %d windows, want %d", seed, part.name, part.got.Len(), part.want.Len())
				}
				for i := range part.want.Len() {
					gt, _ := part.got.EndTime(i)
					wt, _ := part.want.EndTime(i)
					if !slices.Equal(part.got.Input(i), part.want.Input(i)) || !slices.Equal(part.got.Target(i), part.want.Target(i)) || gt != wt {
						t.Fatalf("seed %d %s: window %d differs from Standard's", seed, part.name, i)
					}
				}
			}
		}
	}
}

// TestPanelSteps: readings of seeded random series, with gaps, duplicates
// and times inside a step, land on the steps the service would put them
// on: short gaps filled on the line (or held), long gaps start a new
// segment, the last reading of a step wins, and the counts say so.
func TestPanelSteps(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 2))
		maxGap := rng.IntN(4)
		hold := rng.IntN(2) == 0
		b, err := NewPanelBuilder(PanelConfig{Name: "t", Fields: []string{"a", "b"}, Cadence: time.Hour, MaxGap: maxGap, Hold: hold})
		if err != nil {
			t.Fatal(err)
		}
		// The expected segments, step by step: value per step of each field.
		type step struct {
			k    int64
			a, b float64
		}
		var want [][]step
		var readings []struct {
			ms   int64
			a, b float64
		}
		k := int64(490_000 + rng.IntN(1000))
		var seg []step
		wantFilled, wantRestarts, wantDup := 0, 0, 0
		for range 200 {
			gap := 0
			if rng.Float64() < 0.15 {
				gap = 1 + rng.IntN(6)
			}
			a, bv := rng.NormFloat64(), rng.NormFloat64()
			if len(seg) > 0 && gap > 0 {
				if gap > maxGap {
					want = append(want, seg)
					seg = nil
					wantRestarts++
				} else {
					prev := seg[len(seg)-1]
					for g := 1; g <= gap; g++ {
						x, y := prev.a, prev.b
						if !hold {
							x = prev.a + (a-prev.a)*float64(g)/float64(gap+1)
							y = prev.b + (bv-prev.b)*float64(g)/float64(gap+1)
						}
						seg = append(seg, step{k + int64(g-1), x, y})
					}
					wantFilled += gap
				}
			}
			k += int64(gap)
			if rng.Float64() < 0.1 { // an earlier reading of the same step, replaced
				readings = append(readings, struct {
					ms   int64
					a, b float64
				}{k*3_600_000 + int64(rng.IntN(1000)), 99, 99})
				wantDup++
			}
			readings = append(readings, struct {
				ms   int64
				a, b float64
			}{k*3_600_000 + 1000 + int64(rng.IntN(3_500_000)), a, bv})
			seg = append(seg, step{k, a, bv})
			k++
		}
		want = append(want, seg)
		for _, r := range readings {
			b.Add("s", r.ms, []float64{r.a, r.b})
		}
		p, err := b.Build(1)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Segments) != len(want) {
			t.Fatalf("seed %d: %d segments, want %d", seed, len(p.Segments), len(want))
		}
		for i, w := range want {
			s := p.Segments[i]
			if s.Start != w[0].k || s.Rows(2) != len(w) {
				t.Fatalf("seed %d segment %d: start %d, %d rows; want %d, %d", seed, i, s.Start, s.Rows(2), w[0].k, len(w))
			}
			for j, st := range w {
				if math.Abs(s.Values[2*j]-st.a) > 1e-12 || math.Abs(s.Values[2*j+1]-st.b) > 1e-12 {
					t.Fatalf("seed %d segment %d step %d: %v, want %v %v", seed, i, j, s.Values[2*j:2*j+2], st.a, st.b)
				}
			}
		}
		r := p.Report
		if r.Filled != wantFilled || r.Restarts != wantRestarts || r.Duplicates != wantDup || r.Readings != len(readings) {
			t.Fatalf("seed %d: report %+v; want filled %d, restarts %d, duplicates %d, readings %d", seed, r, wantFilled, wantRestarts, wantDup, len(readings))
		}
		if wantSeries := map[bool][]string{false: nil, true: {"s"}}[wantRestarts > 0]; !slices.Equal(r.RestartSeries, wantSeries) || r.RestartSeriesN != len(wantSeries) {
			t.Fatalf("seed %d: restarts named in %q (%d series), want %q", seed, r.RestartSeries, r.RestartSeriesN, wantSeries)
		}
	}
}

// TestPanelSplitByTime: series that start and end at different times split
// at the same time borders; no window crosses a segment or a border, and a
// series too short for a window is left out and counted.
func TestPanelSplitByTime(t *testing.T) {
	b, err := NewPanelBuilder(PanelConfig{Name: "t", Fields: []string{"v"}, Cadence: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	spans := map[string][2]int64{"early": {0, 600}, "late": {300, 1000}, "all": {0, 1000}, "short": {500, 520}}
	for name, sp := range spans {
		for k := sp[0]; k < sp[1]; k++ {
			b.Add(name, k*3_600_000, []float64{math.Sin(float64(k)) + float64(len(name))})
		}
	}
	const L, H = 24, 12
	p, err := b.Build(L + H)
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Report; r.ShortSeries != 1 || r.ShortRows != 20 || len(p.Segments) != 3 {
		t.Fatalf("report %+v, %d segments; want the short series left out", r, len(p.Segments))
	}
	bm, err := p.Split(L, H, true)
	if err != nil {
		t.Fatal(err)
	}
	if bm.TrainEnd != 700 || bm.TestStart != 800 {
		t.Fatalf("borders %d, %d; want 700, 800", bm.TrainEnd, bm.TestStart)
	}
	hour := time.Hour.Nanoseconds()
	for _, part := range []struct {
		c        *Collection
		from, to int64 // steps the targets must lie in
		n        int
	}{
		{bm.Train, 0, 700, (600 - L - H + 1) + (700 - 300 - L - H + 1) + (700 - L - H + 1)},
		{bm.Val, 700, 800, 2 * (100 - H + 1)},
		{bm.Test, 800, 1000, 2 * (200 - H + 1)},
	} {
		if part.c.Len() != part.n {
			t.Errorf("%d windows, want %d", part.c.Len(), part.n)
		}
		for i := range part.c.Len() {
			end, _ := part.c.EndTime(i)
			first, last := end/hour+1, end/hour+H
			if first < part.from || last >= part.to {
				t.Fatalf("window %d predicts steps %d…%d, outside [%d, %d)", i, first, last, part.from, part.to)
			}
		}
	}
}

// TestPanelSplitOfShortHistory: history too short for 10% and 20% to hold
// a horizon each is split into a horizon each to validate and to test on
// and the rest to train, said so, down to lookback + 3 × horizon steps;
// below that it is refused with the steps it needs.
func TestPanelSplitOfShortHistory(t *testing.T) {
	for _, tc := range []struct {
		name             string
		steps, L, H      int
		adapted          bool
		train, val, test int64 // steps of each part
		refused          string
	}{
		{name: "a month of hourly readings, a 4-day horizon", steps: 720, L: 96, H: 96, adapted: true, train: 480, val: 96, test: 144},
		{name: "just enough", steps: 96 + 3*24, L: 96, H: 24, adapted: true, train: 120, val: 24, test: 24},
		{name: "long enough for 70/10/20", steps: 2000, L: 96, H: 96, train: 1400, val: 200, test: 400},
		{name: "a step too short", steps: 96 + 3*24 - 1, L: 96, H: 24, refused: "needs lookback + 3 × horizon = 168 steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewPanelBuilder(PanelConfig{Name: "short", Fields: []string{"v"}, Cadence: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			for k := range tc.steps {
				b.Add("s", int64(k)*3_600_000, []float64{math.Sin(float64(k) / 3)})
			}
			p, err := b.Build(tc.L + tc.H)
			if err != nil {
				t.Fatal(err)
			}
			bm, err := p.Split(tc.L, tc.H, true)
			if tc.refused != "" {
				var short *ShortHistoryError
				if !errors.As(err, &short) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("Split = %v; want a ShortHistoryError saying %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if bm.Adapted != tc.adapted || bm.Parts != [3]int64{tc.train, tc.val, tc.test} {
				t.Errorf("adapted %v, parts %v; want %v, [%d %d %d]", bm.Adapted, bm.Parts, tc.adapted, tc.train, tc.val, tc.test)
			}
			// Each part holds the windows whose targets lie in it.
			for _, part := range []struct {
				c    *Collection
				want int64
			}{{bm.Train, tc.train - int64(tc.L+tc.H) + 1}, {bm.Val, tc.val - int64(tc.H) + 1}, {bm.Test, tc.test - int64(tc.H) + 1}} {
				if int64(part.c.Len()) != part.want {
					t.Errorf("a part holds %d windows, want %d", part.c.Len(), part.want)
				}
			}
		})
	}
}

// TestPanelCadenceErrors: readings denser or sparser than the cadence, and
// a panel with nothing long enough, are refused with what to change.
func TestPanelCadenceErrors(t *testing.T) {
	cases := []struct {
		name    string
		cadence time.Duration
		every   time.Duration
		n       int
		want    string
	}{
		{"denser", time.Hour, 5 * time.Minute, 500, "denser than the cadence"},
		{"sparser", 5 * time.Minute, time.Hour, 500, "another cadence"},
		{"too short", time.Hour, time.Hour, 30, "consecutive steps"},
	}
	for _, tc := range cases {
		b, err := NewPanelBuilder(PanelConfig{Name: "t", Fields: []string{"v"}, Cadence: tc.cadence})
		if err != nil {
			t.Fatal(err)
		}
		for i := range tc.n {
			b.Add("s", int64(i)*tc.every.Milliseconds(), []float64{float64(i)})
		}
		if _, err := b.Build(48); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestSample: a sample holds n distinct windows of the collection, in its
// order, the same for the same seed; a collection no larger than n is its
// own sample.
func TestSample(t *testing.T) {
	b, err := NewPanelBuilder(PanelConfig{Name: "t", Fields: []string{"v"}, Cadence: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for s := range 5 {
		for k := range int64(200) {
			b.Add(string(rune('a'+s)), k*3_600_000, []float64{float64(s*1000) + float64(k)})
		}
	}
	p, err := b.Build(12)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := p.Split(8, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	all := bm.Train
	if all.Sample(all.Len(), 1) != all {
		t.Error("a sample of every window is not the collection itself")
	}
	for seed := range uint64(5) {
		n := 1 + int(seed)*97%all.Len()
		s := all.Sample(n, seed)
		if s.Len() != n {
			t.Fatalf("sample of %d holds %d", n, s.Len())
		}
		again := all.Sample(n, seed)
		prev := -1
		for i := range n {
			// Find the window in the collection: inputs are distinct.
			j := -1
			for k := range all.Len() {
				if slices.Equal(all.Input(k), s.Input(i)) {
					j = k
					break
				}
			}
			if j < 0 || j <= prev || !slices.Equal(all.Target(j), s.Target(i)) {
				t.Fatalf("seed %d: sampled window %d is not a later window of the collection (found at %d after %d)", seed, i, j, prev)
			}
			prev = j
			if !slices.Equal(again.Input(i), s.Input(i)) {
				t.Fatalf("seed %d: two samples with the same seed differ", seed)
			}
		}
	}
}

// TestCollectionSeries: Series names the series of every window (each
// series' values are offset by its name's length here, so a window's mean
// tells its series), in a collection and in a sample of it.
func TestCollectionSeries(t *testing.T) {
	b, err := NewPanelBuilder(PanelConfig{Name: "t", Fields: []string{"v"}, Cadence: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ab", "abcd", "abcdef"} {
		for k := int64(0); k < 400; k++ {
			if name == "abcd" && k == 200 {
				continue // two segments of one series
			}
			b.Add(name, k*3_600_000, []float64{0.2*math.Sin(float64(k)) + float64(len(name))})
		}
	}
	const L, H = 24, 12
	p, err := b.Build(L + H)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := p.Split(L, H, false) // pooled statistics: the offsets stay apart
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Collection{bm.Train, bm.Test, bm.Train.Sample(100, 3)} {
		names, groups := c.Series()
		if len(groups) != c.Len() {
			t.Fatalf("%d groups for %d windows", len(groups), c.Len())
		}
		seen := map[string]bool{}
		for i, g := range groups {
			name := names[g]
			seen[name] = true
			mean := 0.0
			for _, v := range c.Input(i) {
				mean += v
			}
			mean = mean/float64(L)*bm.Scaler.Std[0] + bm.Scaler.Mean[0]
			if math.Abs(mean-float64(len(name))) > 0.5 {
				t.Fatalf("window %d is said to be of %q but its mean is %.2f", i, name, mean)
			}
		}
		if len(seen) != 3 || len(names) != 3 {
			t.Errorf("series %v, want the three", names)
		}
	}
}

// TestPanelNamesRestartedSeries: the report counts the series with a gap
// longer than MaxGap once each, however many gaps they have, and names the
// first few.
func TestPanelNamesRestartedSeries(t *testing.T) {
	b, err := NewPanelBuilder(PanelConfig{Name: "t", Fields: []string{"v"}, Cadence: time.Hour, MaxGap: 2})
	if err != nil {
		t.Fatal(err)
	}
	gapped := map[string]bool{"a": true, "b": true, "c": true, "d": true}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		for k := int64(0); k < 300; k++ {
			if gapped[name] && (k%100 >= 50 && k%100 < 60) && k < 200 {
				continue // two gaps of 10 steps
			}
			b.Add(name, k*3_600_000, []float64{float64(k % 24)})
		}
	}
	p, err := b.Build(10)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Report
	if r.Restarts != 8 || r.RestartSeriesN != 4 || len(r.RestartSeries) != restartNames {
		t.Fatalf("%d restarts in %d series, named %q; want 8 in 4, %d named", r.Restarts, r.RestartSeriesN, r.RestartSeries, restartNames)
	}
	for _, name := range r.RestartSeries {
		if !gapped[name] {
			t.Errorf("series %q is named for a restart it does not have", name)
		}
	}
}
