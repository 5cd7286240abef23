package dataset

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Panel is the history of many series that share their value fields, in
// the long format a sensor pipeline keeps (one reading per series, time
// and values), put on a grid of steps as the streaming service puts them:
// a reading at time t belongs to step ⌊t / Cadence⌋ (AlignFloor) or to the
// step whose time is nearest (AlignNearest), the last reading of a step
// wins, gaps of up to MaxGap steps are filled and a longer gap starts a
// new segment. Each segment is a run of consecutive steps of one series.
type Panel struct {
	// Name is the source, such as "traffic.parquet" or "topic readings".
	Name string
	// Fields names the value fields, in channel order.
	Fields []string
	// Cadence is the length of a step.
	Cadence time.Duration
	// Align is which step a reading's time belongs to: AlignFloor or
	// AlignNearest, as given or as found (PanelConfig.Align).
	Align string
	// Segments holds the runs of consecutive steps, by series name, then
	// by time.
	Segments []Segment
	// Report counts what became of the readings.
	Report PanelReport
}

// Segment is a run of consecutive steps of one series.
type Segment struct {
	// Series is the series id.
	Series string
	// Start is the step index of the first row: its time is Start × Cadence
	// after the Unix epoch.
	Start int64
	// Values holds rows × len(Fields) readings, row-major.
	Values []float64
}

// restartNames bounds PanelReport.RestartSeries.
const restartNames = 3

// ShortHistoryError is Build's error when no series has a run of steps as
// long as asked; callers add what that length is for.
type ShortHistoryError struct{ msg string }

func (e *ShortHistoryError) Error() string { return e.msg }

// Step returns the step a reading at t belongs to (see Align).
func (p *Panel) Step(t time.Time) int64 {
	step := p.Cadence.Milliseconds()
	return floorDiv(t.UnixMilli()+alignOffset(p.Align, step), step)
}

// Rows returns the number of steps of the segment for c channels.
func (s Segment) Rows(c int) int { return len(s.Values) / c }

// PanelReport counts what a PanelBuilder did with the readings it was given.
type PanelReport struct {
	Readings   int // readings added
	Series     int // distinct series among them
	NonFinite  int // readings with a NaN or ±Inf value, left out
	Duplicates int // readings replaced by a later one of the same step
	// FloorDuplicates is how many readings AlignFloor would have put on a
	// step that already had one, when AlignNearest was found to put fewer
	// there (PanelConfig.Align empty); 0 otherwise.
	FloorDuplicates int
	// Collisions counts the readings on a step that a reading of their
	// series at another time already took, under the alignment used: a
	// few are a sensor's extra readings, many say that some series follow
	// another schedule or cadence than the others.
	Collisions int
	// LateInStep counts the readings stamped in the last 2% of the step
	// they were put on, when AlignFloor was found (not given) and more than
	// half of them are: a clock a moment early for the next step (13:29:58
	// for 13:30) looks the same as readings stamped at the end of their own
	// step, and only the user can say which (input.align: nearest).
	LateInStep int
	Filled     int // steps filled in gaps of at most MaxGap steps
	Restarts   int // gaps longer than MaxGap, where a new segment starts
	// RestartSeriesN counts the series with such a gap and RestartSeries
	// names the first few (at most restartNames), so a summary can say
	// which.
	RestartSeriesN int
	RestartSeries  []string
	// ShortSegments and ShortRows count the segments too short for one
	// window (and their steps), left out; ShortSeries the series left
	// without any segment.
	ShortSegments, ShortRows, ShortSeries int
}

// PanelConfig says how a PanelBuilder puts readings on steps. The fields
// mirror the service's input and window settings, so that a model trains
// on the steps it will serve.
type PanelConfig struct {
	// Name names the source in errors and in the Panel.
	Name string
	// Fields names the value fields (input.value_fields); each reading
	// carries one value per field. Required.
	Fields []string
	// Cadence is the step length (input.cadence); 0 infers it from the
	// readings: the lower median of the positive time differences between
	// consecutive readings of a series when most of them are exactly that,
	// else (stamps that jitter) the mean time a step those differences
	// cover, written as the round cadence within 0.1% of it, if any.
	Cadence time.Duration
	// Align is which step a reading's time belongs to (input.align):
	// AlignFloor, AlignNearest, or empty to find it from the readings:
	// AlignNearest when it puts clearly fewer readings on a step that
	// already has one (a schedule whose stamps jitter around the step
	// times, some a moment early), else AlignFloor.
	Align string
	// MaxGap is how many missing steps are filled (window.max_gap); a
	// longer gap starts a new segment. 0 fills none.
	MaxGap int
	// Hold fills missing steps with the value before the gap
	// (window.fill: hold) instead of the straight line to the value after.
	Hold bool
}

// PanelBuilder gathers long-format readings, in any order, into a Panel.
// It is not safe for concurrent use.
type PanelBuilder struct {
	cfg    PanelConfig
	index  map[string]int
	series []pendingSeries
	report PanelReport
}

// pendingSeries holds one series' readings as they were added.
type pendingSeries struct {
	name   string
	ms     []int64   // times, epoch milliseconds
	values []float64 // len(ms) × C
}

// NewPanelBuilder returns a builder for cfg.
func NewPanelBuilder(cfg PanelConfig) (*PanelBuilder, error) {
	switch {
	case len(cfg.Fields) == 0:
		return nil, fmt.Errorf("%s: no value fields; name them (input.value_fields)", cfg.Name)
	case cfg.Cadence < 0 || cfg.Cadence%time.Millisecond != 0:
		return nil, fmt.Errorf("%s: cadence %v is not a positive whole number of milliseconds; use e.g. 1h or 5m", cfg.Name, cfg.Cadence)
	case cfg.Align != "" && cfg.Align != AlignFloor && cfg.Align != AlignNearest:
		return nil, fmt.Errorf("%s: align %q; use %s or %s", cfg.Name, cfg.Align, AlignFloor, AlignNearest)
	case cfg.MaxGap < 0:
		return nil, fmt.Errorf("%s: max gap %d is negative; use 0 to fill no missing step, or a number of steps", cfg.Name, cfg.MaxGap)
	}
	return &PanelBuilder{cfg: cfg, index: make(map[string]int)}, nil
}

// Add adds one reading of series at ms (epoch milliseconds) with one value
// per field. A reading with a non-finite value is counted and left out.
// Add panics if values does not hold one value per field.
func (b *PanelBuilder) Add(series string, ms int64, values []float64) {
	if len(values) != len(b.cfg.Fields) {
		panic(fmt.Sprintf("dataset: a reading with %d values for %d fields", len(values), len(b.cfg.Fields)))
	}
	b.report.Readings++
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b.report.NonFinite++
			return
		}
	}
	i, ok := b.index[series]
	if !ok {
		i = len(b.series)
		b.index[series] = i
		b.series = append(b.series, pendingSeries{name: series})
	}
	s := &b.series[i]
	s.ms = append(s.ms, ms)
	s.values = append(s.values, values...)
}

// Build puts the readings on steps and returns the Panel of the segments
// of at least minRows steps (lookback + horizon: one window). It returns
// an error when no segment is long enough, or when the readings do not
// follow the cadence: a series whose readings are mostly more than one
// step apart, or mostly on the same step, was sent at another cadence.
func (b *PanelBuilder) Build(minRows int) (*Panel, error) {
	cfg := b.cfg
	C := len(cfg.Fields)
	for i := range b.series {
		b.series[i].sort(C)
	}
	slices.SortFunc(b.series, func(x, y pendingSeries) int { return cmp.Compare(x.name, y.name) })
	if cfg.Cadence == 0 {
		cfg.Cadence = b.inferCadence()
		if cfg.Cadence == 0 {
			return nil, fmt.Errorf("%s: no series has two readings at different times, so the cadence is unknown; "+
				"give more history or set input.cadence", cfg.Name)
		}
	}
	step := cfg.Cadence.Milliseconds()
	rep := b.report
	if cfg.Align == "" {
		cfg.Align, rep.FloorDuplicates = findAlign(b.times(), step)
		if cfg.Align == AlignFloor {
			late := 0
			for _, s := range b.series {
				for _, ms := range s.ms {
					if ms-floorDiv(ms, step)*step >= step-step/50 {
						late++
					}
				}
			}
			if 2*late > rep.Readings-rep.NonFinite {
				rep.LateInStep = late
			}
		}
	}
	off := alignOffset(cfg.Align, step)
	if err := b.checkCadence(cfg.Cadence, off); err != nil {
		return nil, err
	}
	rep.Collisions = duplicates(b.times(), step, off)
	p := &Panel{Name: cfg.Name, Fields: slices.Clone(cfg.Fields), Cadence: cfg.Cadence, Align: cfg.Align}
	rep.Series = len(b.series)
	var ks []int64
	var vals []float64
	for _, s := range b.series {
		// One value per step first, the last reading of the step, so that
		// a gap is filled towards the value its step keeps.
		ks, vals = ks[:0], vals[:0]
		for j, ms := range s.ms {
			k := floorDiv(ms+off, step)
			v := s.values[j*C : (j+1)*C]
			if n := len(ks); n > 0 && ks[n-1] == k {
				copy(vals[(n-1)*C:], v)
				rep.Duplicates++
				continue
			}
			ks = append(ks, k)
			vals = append(vals, v...)
		}
		kept := len(p.Segments)
		restarted := false
		seg := Segment{Series: s.name}
		flush := func() {
			if rows := seg.Rows(C); rows >= minRows {
				p.Segments = append(p.Segments, seg)
			} else if rows > 0 {
				rep.ShortSegments++
				rep.ShortRows += rows
			}
			seg = Segment{Series: s.name}
		}
		for j, k := range ks {
			v := vals[j*C : (j+1)*C]
			if j == 0 {
				seg.Start = k
			} else if gap := k - ks[j-1] - 1; gap > int64(cfg.MaxGap) {
				rep.Restarts++
				if !restarted {
					restarted = true
					rep.RestartSeriesN++
					if len(rep.RestartSeries) < restartNames {
						rep.RestartSeries = append(rep.RestartSeries, s.name)
					}
				}
				flush()
				seg.Start = k
			} else if gap > 0 {
				prev := vals[(j-1)*C : j*C]
				for g := int64(1); g <= gap; g++ {
					for c := range C {
						x := prev[c]
						if !cfg.Hold {
							x += (v[c] - prev[c]) * float64(g) / float64(gap+1)
						}
						seg.Values = append(seg.Values, x)
					}
				}
				rep.Filled += int(gap)
			}
			seg.Values = append(seg.Values, v...)
		}
		flush()
		if len(p.Segments) == kept {
			rep.ShortSeries++
		}
	}
	p.Report = rep
	if len(p.Segments) == 0 {
		return nil, &ShortHistoryError{fmt.Sprintf("%s: no series has %d consecutive steps of %v among %d readings of %d series; "+
			"give more history, or a larger window.max_gap (%d steps are filled now)",
			cfg.Name, minRows, cfg.Cadence, rep.Readings, rep.Series, cfg.MaxGap)}
	}
	return p, nil
}

// times returns every series' reading times, in ms.
func (b *PanelBuilder) times() [][]int64 {
	ms := make([][]int64, len(b.series))
	for i, s := range b.series {
		ms[i] = s.ms
	}
	return ms
}

// sort orders the series' readings by time, keeping the order in which
// they were added among readings of the same time.
func (s *pendingSeries) sort(C int) {
	if slices.IsSorted(s.ms) {
		return
	}
	order := make([]int, len(s.ms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s.ms[a], s.ms[b]) })
	ms := make([]int64, len(s.ms))
	values := make([]float64, len(s.values))
	for i, o := range order {
		ms[i] = s.ms[o]
		copy(values[i*C:(i+1)*C], s.values[o*C:(o+1)*C])
	}
	s.ms, s.values = ms, values
}

// inferCadence returns the lower median m of the positive differences
// between consecutive readings of each series, pooled, or 0 when there is
// none. When fewer than half of the differences are exactly m, the stamps
// may jitter around a schedule, whose cadence m misses by a few percent:
// then the longest series is read as a wide file's dates are (stepCounts),
// and the cadence of the schedule it finds, if it finds one, is returned
// to the millisecond.
func (b *PanelBuilder) inferCadence() time.Duration {
	var diffs []int64
	longest := -1
	for i, s := range b.series {
		for j := 1; j < len(s.ms); j++ {
			if d := s.ms[j] - s.ms[j-1]; d > 0 {
				diffs = append(diffs, d)
			}
		}
		if longest < 0 || len(s.ms) > len(b.series[longest].ms) {
			longest = i
		}
	}
	if len(diffs) == 0 {
		return 0
	}
	slices.Sort(diffs)
	m := diffs[(len(diffs)-1)/2]
	lo, _ := slices.BinarySearch(diffs, m)
	hi, _ := slices.BinarySearch(diffs, m+1)
	if 2*(hi-lo) >= len(diffs) {
		return time.Duration(m) * time.Millisecond
	}
	var times []time.Time
	for j, ms := range b.series[longest].ms {
		if j == 0 || ms != b.series[longest].ms[j-1] {
			times = append(times, time.UnixMilli(ms))
		}
	}
	if _, c, onGrid := stepCounts(times, time.Duration(m)*time.Millisecond); onGrid && c >= time.Millisecond {
		return c.Round(time.Millisecond)
	}
	return time.Duration(m) * time.Millisecond
}

// findAlign returns the alignment that puts the readings of the series
// (each in time order, at ms since the epoch) on steps of step ms:
// AlignNearest when it leaves clearly fewer readings on a step their series
// already has (at most a quarter as many, and at least 3 fewer) than
// AlignFloor, and how many AlignFloor would have; else AlignFloor and 0.
// Floor and nearest put a reading anywhere inside a step equally often on a
// taken step, and a reading at a fixed offset into the step on its own
// step; only stamps that straddle a step's time, some a moment early, tell
// them apart.
func findAlign(series [][]int64, step int64) (string, int) {
	floor, nearest := duplicates(series, step, 0), duplicates(series, step, alignOffset(AlignNearest, step))
	if nearest*4 <= floor && floor-nearest >= 3 {
		return AlignNearest, floor
	}
	return AlignFloor, 0
}

// duplicates counts the readings that land on the step of the reading
// before them in their series at another time, when a reading at ms
// belongs to step ⌊(ms + off) / step⌋: a reading sent again at the same
// time shares its step under any alignment and tells them nothing.
func duplicates(series [][]int64, step, off int64) int {
	n := 0
	for _, ms := range series {
		for j := 1; j < len(ms); j++ {
			if ms[j] != ms[j-1] && floorDiv(ms[j]+off, step) == floorDiv(ms[j-1]+off, step) {
				n++
			}
		}
	}
	return n
}

// checkCadence reports a series whose readings do not follow the cadence:
// the median step difference between its consecutive readings is not 1
// (a reading at ms belonging to step ⌊(ms + off) / step⌋).
func (b *PanelBuilder) checkCadence(cadence time.Duration, off int64) error {
	step := cadence.Milliseconds()
	var diffs []int64
	for _, s := range b.series {
		if len(s.ms) < 3 {
			continue
		}
		diffs = diffs[:0]
		for j := 1; j < len(s.ms); j++ {
			diffs = append(diffs, floorDiv(s.ms[j]+off, step)-floorDiv(s.ms[j-1]+off, step))
		}
		slices.Sort(diffs)
		if med := diffs[(len(diffs)-1)/2]; med != 1 {
			return &CadenceError{Name: b.cfg.Name, Series: s.name, Cadence: cadence, Every: med, Spacing: typicalSpacing(s.ms)}
		}
	}
	return nil
}

// CadenceError says that a series' readings are not one a step: denser
// (Every 0: several in most steps) or sparser (a reading every Every steps)
// than the cadence, about Spacing apart.
type CadenceError struct {
	Name, Series     string
	Cadence, Spacing time.Duration
	Every            int64
}

func (e *CadenceError) Error() string {
	if e.Every == 0 {
		return fmt.Sprintf("%s: series %q has several readings in most steps of %v: its readings are denser than the cadence; "+
			"set input.cadence to their spacing (about %v), or resample the data", e.Name, e.Series, e.Cadence, e.Spacing)
	}
	return fmt.Sprintf("%s: series %q has a reading every %d steps of %v: it was sent at another cadence; "+
		"set input.cadence to its spacing (about %v) if every series shares it, or resample the data", e.Name, e.Series, e.Every, e.Cadence, e.Spacing)
}

// typicalSpacing is the median positive difference between consecutive
// times of ms, for error messages.
func typicalSpacing(ms []int64) time.Duration {
	var d []int64
	for j := 1; j < len(ms); j++ {
		if x := ms[j] - ms[j-1]; x > 0 {
			d = append(d, x)
		}
	}
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return time.Duration(d[(len(d)-1)/2]) * time.Millisecond
}

// The alignments of PanelConfig.Align, spelled as input.align and
// window.Align spell them.
const (
	// AlignFloor puts a reading into the step it falls in.
	AlignFloor = "floor"
	// AlignNearest puts a reading into the step whose time is nearest.
	AlignNearest = "nearest"
)

// alignOffset is what align adds to a time in ms before it is floored to
// its step of step ms: half a step (to the ms below) for AlignNearest, as
// window.AlignOffset.
func alignOffset(align string, step int64) int64 {
	if align == AlignNearest {
		return step / 2
	}
	return 0
}

// floorDiv is ⌊a / b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
