package dataset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// PanelBenchmark is a Panel split by time into training, validation and
// test windows, each series z-scored. It is to long-format data what
// Benchmark is to a benchmark file: with one series covering every step it
// is exactly Standard under ProtocolRatio.
type PanelBenchmark struct {
	// Panel is the source, unmodified.
	Panel *Panel
	// TrainEnd is the first step after the training part, TestStart the
	// first step of the test part (steps since the Unix epoch, in
	// Panel.Cadence): 70%, 10% and 20% of the steps from the earliest to
	// the latest reading of any series, or, in history too short for
	// 10% and 20% to hold a horizon of targets each, a horizon each for
	// validation and test and the rest to train (Adapted). Windows of the
	// validation and test parts begin a lookback before their border, as
	// in Standard.
	TrainEnd, TestStart int64
	// Adapted says the parts are not 70/10/20 but as short history needs;
	// Parts says how many steps each holds.
	Adapted bool
	Parts   [3]int64
	// Scaler holds the per-channel statistics of every series' training
	// rows pooled: the normalisation a mixed model serves with.
	Scaler Scaler
	// PerSeries says whether each series was z-scored with its own training
	// rows' statistics (independent models, which normalise every window
	// themselves) rather than with Scaler (mixed models).
	PerSeries bool
	// Train, Val and Test hold every stride-1 window of each part of every
	// segment; no window crosses a segment.
	Train, Val, Test *Collection
}

// Split cuts the panel's segments into training, validation and test
// windows of lookback + horizon steps by time (see PanelBenchmark). With
// perSeries each series is z-scored with the statistics of its own
// training rows (of all its rows when it has none), else every series with
// the pooled statistics. It returns an error when a part holds no window.
func (p *Panel) Split(lookback, horizon int, perSeries bool) (*PanelBenchmark, error) {
	C := len(p.Fields)
	if lookback < 1 || horizon < 1 {
		return nil, fmt.Errorf("%s: lookback %d and horizon %d must be positive", p.Name, lookback, horizon)
	}
	first, last := p.Segments[0].Start, p.Segments[0].Start
	for _, s := range p.Segments {
		first, last = min(first, s.Start), max(last, s.Start+int64(s.Rows(C))-1)
	}
	n := last - first + 1
	L, H := int64(lookback), int64(horizon)
	if n < L+3*H {
		return nil, &ShortHistoryError{msg: fmt.Sprintf("%s: %d steps of %v (%s) are too little history to train a model of lookback %d and horizon %d and score it: "+
			"that needs lookback + 3 × horizon = %d steps (a window to train on, and a horizon of targets each to validate and to test on); "+
			"give more history, or a shorter --horizon or --lookback", p.Name, n, p.Cadence, time.Duration(n)*p.Cadence, lookback, horizon, L+3*H)}
	}
	// 70/10/20 by time, unless a horizon of targets does not fit in 10%
	// or 20%: then a horizon each to validate and to test, the rest (at
	// least a window) to train.
	val, test := int64(float64(n)*0.1), int64(float64(n)*0.2)
	b := &PanelBenchmark{Panel: p, PerSeries: perSeries}
	if val < H || test < H {
		val, test, b.Adapted = max(val, H), max(test, H), true
		if n-val-test < L+H {
			val, test = H, H
		}
	}
	b.TestStart = first + n - test
	b.TrainEnd = b.TestStart - val
	if !b.Adapted {
		b.TrainEnd = first + int64(float64(n)*0.7)
	}
	b.Parts = [3]int64{b.TrainEnd - first, b.TestStart - b.TrainEnd, first + n - b.TestStart}
	// The training rows of each segment, local row ranges.
	trainRows := func(s Segment) Range {
		return Range{0, int(min(max(b.TrainEnd-s.Start, 0), int64(s.Rows(C))))}
	}
	pooled := make([]float64, 0)
	for _, s := range p.Segments {
		r := trainRows(s)
		pooled = append(pooled, s.Values[r.Start*C:r.End*C]...)
	}
	if len(pooled) == 0 {
		return nil, fmt.Errorf("%s: no series has readings in the first 70%% of the time the panel spans; give more history", p.Name)
	}
	b.Scaler = fitScaler(pooled, C, Range{0, len(pooled) / C})

	var scalers map[string]Scaler
	if perSeries {
		scalers = p.seriesScalers(trainRows)
	}
	b.Train, b.Val, b.Test = &Collection{channels: C}, &Collection{channels: C}, &Collection{channels: C}
	step := p.Cadence.Nanoseconds()
	var spec spectrumRuns
	for _, s := range p.Segments {
		sc := b.Scaler
		if perSeries {
			sc = scalers[s.Series]
		}
		rows := s.Rows(C)
		norm := sc.Transform(nil, s.Values)
		if r := trainRows(s); r.Len() > 0 {
			spec.add(s.Series, s.Start, norm[:r.End*C], C)
		}
		times := make([]int64, rows)
		for i := range times {
			times[i] = (s.Start + int64(i)) * step
		}
		end := s.Start + int64(rows)
		local := func(from, to int64) Range {
			from, to = max(from, s.Start), min(to, end)
			if to <= from {
				return Range{}
			}
			return Range{int(from - s.Start), int(to - s.Start)}
		}
		for _, part := range []struct {
			r   Range
			dst *Collection
		}{
			{local(s.Start, b.TrainEnd), b.Train},
			{local(b.TrainEnd-L, b.TestStart), b.Val},
			{local(b.TestStart-L, end), b.Test},
		} {
			if part.r.Len() < lookback+horizon {
				continue
			}
			w, err := NewWindows(norm, C, lookback, horizon, part.r)
			if err == nil {
				w, err = w.WithTimes(times)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: series %q: %w", p.Name, s.Series, err)
			}
			part.dst.add(w, s.Series)
		}
	}
	if spec.stitched {
		b.Train.runs = spec.runs
	}
	for _, part := range []struct {
		name string
		c    *Collection
	}{{"training", b.Train}, {"validation", b.Val}, {"test", b.Test}} {
		if part.c.Len() == 0 {
			return nil, fmt.Errorf("%s: the %s part (by time: %s of %d steps of %v) holds no window of %d steps (no series has readings "+
				"all through it); give more history or use a shorter --lookback or --horizon", p.Name, part.name, b.PartsString(), n, p.Cadence, lookback+horizon)
		}
	}
	return b, nil
}

// seriesScalers fits each series' scaler to its training rows (trainRows
// of each segment), or to all its rows when it has none there.
func (p *Panel) seriesScalers(trainRows func(Segment) Range) map[string]Scaler {
	C := len(p.Fields)
	bySeries := map[string][]float64{}
	all := map[string][]float64{}
	for _, s := range p.Segments {
		r := trainRows(s)
		bySeries[s.Series] = append(bySeries[s.Series], s.Values[r.Start*C:r.End*C]...)
		all[s.Series] = append(all[s.Series], s.Values...)
	}
	scalers := make(map[string]Scaler, len(bySeries))
	for name, rows := range bySeries {
		if len(rows) == 0 {
			rows = all[name]
		}
		scalers[name] = fitScaler(rows, C, Range{0, len(rows) / C})
	}
	return scalers
}

// PartsString says how the steps were split: "70%, 10%, 20%", or the
// steps of each part when the split was adapted to short history.
func (b *PanelBenchmark) PartsString() string {
	if !b.Adapted {
		return "70%, 10%, 20%"
	}
	return fmt.Sprintf("%d, %d and %d steps", b.Parts[0], b.Parts[1], b.Parts[2])
}

// Collection is the windows of several runs of rows (the segments of a
// panel) as one set: window i is window i − offset of the part that holds
// it. It satisfies model.Source, model.TimedSource and
// model.SpectrumSource.
type Collection struct {
	channels int
	parts    []*Windows
	series   []string // series[j] is the series part j belongs to
	offsets  []int    // offsets[j] is the index of part j's first window
	n        int
	pick     []int // a Sample's windows, indices into all the parts' windows; nil for all
	// runs, when set, are the rows SpectrumRows reads instead of the
	// parts': a panel's series with the short gaps between their segments
	// filled (see Panel.Split).
	runs []spectrumRun
}

func (c *Collection) add(w *Windows, series string) {
	c.parts = append(c.parts, w)
	c.series = append(c.series, series)
	c.offsets = append(c.offsets, c.n)
	c.n += w.Len()
}

// Len returns the number of windows.
func (c *Collection) Len() int { return c.n }

// Channels returns the number of channels per row.
func (c *Collection) Channels() int { return c.channels }

// Parts returns the number of runs of rows the windows come from.
func (c *Collection) Parts() int { return len(c.parts) }

func (c *Collection) locate(i int) (*Windows, int) {
	if i < 0 || i >= c.n {
		panic(fmt.Sprintf("dataset: window %d out of range [0, %d)", i, c.n))
	}
	if c.pick != nil {
		i = c.pick[i]
	}
	j := sort.Search(len(c.offsets), func(j int) bool { return c.offsets[j] > i }) - 1
	return c.parts[j], i - c.offsets[j]
}

// Input returns the input of window i as a read-only view.
func (c *Collection) Input(i int) []float64 { w, k := c.locate(i); return w.Input(k) }

// Target returns the target of window i as a read-only view.
func (c *Collection) Target(i int) []float64 { w, k := c.locate(i); return w.Target(k) }

// EndTime returns the time of the newest input row of window i in Unix
// nanoseconds.
func (c *Collection) EndTime(i int) (int64, bool) { w, k := c.locate(i); return w.EndTime(k) }

// spectrumSeries bounds how many runs of rows SpectrumRows puts side by
// side: the spectrum of a few dozen series places the frequencies as well
// as that of thousands, at a fraction of the cost.
const spectrumSeries = 64

// SpectrumRows returns the rows the training spectrum is read from: the
// rows of the only part, or the last n rows of up to spectrumSeries of the
// longest parts side by side (each part's channels in turn), where n is the
// shortest of those that hold at least half as many rows as the longest, so
// that the spectrum has the resolution of one series (a concatenation would
// split a cycle's line at the seams). A panel's training collection reads
// its series instead of its parts, the short gaps between a series'
// segments filled (Panel.Split), so that a cycle several times as long as
// the stretch between two gaps is still resolved.
func (c *Collection) SpectrumRows() ([]float64, int) {
	C := c.channels
	runs := c.runs
	if runs == nil {
		for _, w := range c.parts {
			runs = append(runs, spectrumRun{pieces: [][]float64{w.Rows()}, gaps: []int64{0}, rows: w.Range().Len()})
		}
	}
	if len(runs) == 0 {
		return nil, 0
	}
	if len(runs) == 1 {
		return runs[0].values(C), C
	}
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	rows := func(j int) int { return runs[j].rows }
	sort.SliceStable(order, func(a, b int) bool { return rows(order[a]) > rows(order[b]) })
	longest := rows(order[0])
	n, k := longest, 0
	for _, j := range order {
		if k == spectrumSeries || 2*rows(j) < longest {
			break
		}
		n = min(n, rows(j))
		k++
	}
	out := make([]float64, n*k*C)
	for s, j := range order[:k] {
		r := runs[j].values(C)
		r = r[len(r)-n*C:]
		for t := range n {
			copy(out[(t*k+s)*C:(t*k+s+1)*C], r[t*C:(t+1)*C])
		}
	}
	return out, k * C
}

// spectrumRun is the training rows of one series for the spectrum: its
// segments' rows (views, not copies) and the steps missing before each,
// filled on the line between their ends only when the run is read, so
// that only the runs the spectrum reads cost memory.
type spectrumRun struct {
	pieces [][]float64 // rows × C values each
	gaps   []int64     // gaps[i] steps are missing before pieces[i] (gaps[0] = 0)
	rows   int         // the run's rows, the gaps' included
}

// values returns the run's rows, C values a row, with its gaps filled:
// the one piece itself when there is no gap.
func (r spectrumRun) values(C int) []float64 {
	if len(r.pieces) == 1 {
		return r.pieces[0]
	}
	out := make([]float64, 0, r.rows*C)
	for i, p := range r.pieces {
		if g := r.gaps[i]; g > 0 {
			last, next := out[len(out)-C:], p[:C]
			for j := int64(1); j <= g; j++ {
				w := float64(j) / float64(g+1)
				for c := range C {
					out = append(out, last[c]+(next[c]-last[c])*w)
				}
			}
		}
		out = append(out, p...)
	}
	return out
}

// spectrumRuns gathers the training rows of a panel's segments into runs
// for the spectrum, one a series where the gaps between its segments are
// short enough to fill (spectrumFill).
type spectrumRuns struct {
	runs     []spectrumRun
	series   string // of the last run
	end      int64  // the step after the last run's last row
	stitched bool   // whether a gap is to be filled
}

// add appends the rows of series from step start, C values a row: to the
// series' last run across a short gap, else as a new run. It keeps a view
// of rows, which must not change.
func (sr *spectrumRuns) add(series string, start int64, rows []float64, C int) {
	n, m := len(sr.runs), len(rows)/C
	if n > 0 && series == sr.series && start >= sr.end {
		run := &sr.runs[n-1]
		if gap := start - sr.end; float64(gap) <= spectrumFill*float64(run.rows+m) {
			run.pieces, run.gaps = append(run.pieces, rows), append(run.gaps, gap)
			run.rows += int(gap) + m
			sr.end = start + int64(m)
			sr.stitched = true
			return
		}
	}
	sr.runs = append(sr.runs, spectrumRun{pieces: [][]float64{rows}, gaps: []int64{0}, rows: m})
	sr.series, sr.end = series, start+int64(m)
}

// spectrumFill is the longest gap between two segments of a series, as a
// share of the rows around it, that the spectrum's rows fill (on the line
// between its ends) rather than cut the series at: a few filled steps blur
// the spectrum far less than halving the span its resolution comes from.
const spectrumFill = 0.05

// Sample returns n of c's windows drawn at random without replacement
// (seeded, in their order in c), or c itself when it holds at most n.
// Neighbouring stride-1 windows of a series share all but one row, so a
// sample of a large panel's windows teaches a model about as much as all
// of them, at a fraction of an epoch's time. The spectrum is still read
// from all of c's rows.
func (c *Collection) Sample(n int, seed uint64) *Collection {
	if n <= 0 || c.n <= n {
		return c
	}
	pick := rand.New(rand.NewPCG(seed, 0x5a3b1e)).Perm(c.n)[:n]
	slices.Sort(pick)
	return &Collection{channels: c.channels, parts: c.parts, series: c.series, offsets: c.offsets, n: n, pick: pick, runs: c.runs}
}

// Series returns the series the windows come from, in the order their
// first windows appear, and the index into that list of each window's
// series: the groups measure.Options takes to score each series.
func (c *Collection) Series() (names []string, groups []int) {
	index := map[string]int{}
	groups = make([]int, c.n)
	for i := range c.n {
		k := i
		if c.pick != nil {
			k = c.pick[i]
		}
		j := sort.Search(len(c.offsets), func(j int) bool { return c.offsets[j] > k }) - 1
		g, ok := index[c.series[j]]
		if !ok {
			g = len(names)
			index[c.series[j]] = g
			names = append(names, c.series[j])
		}
		groups[i] = g
	}
	return names, groups
}
