package model

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// localFeed is hourly readings of C channels at real (UTC) hours around a
// change of Berlin's offset, and the same readings as a file of local
// times reads them: keyed by the local time written as if it were UTC, the
// hour spring skips the mean of its neighbours, of the hour autumn repeats
// the later reading.
type localFeed struct {
	C            int
	real, local  map[int64][]float64 // Unix seconds → the C values
	zone         *time.Location
	from, to     time.Time
	seed         uint64
	skip, repeat int
}

func newLocalFeed(t *testing.T, change time.Time, C int, seed uint64) *localFeed {
	t.Helper()
	zone, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	f := &localFeed{C: C, real: map[int64][]float64{}, local: map[int64][]float64{}, zone: zone,
		from: change.Add(-800 * time.Hour), to: change.Add(800 * time.Hour), seed: seed}
	for at := f.from; at.Before(f.to); at = at.Add(time.Hour) {
		lt := at.In(zone)
		rng := rand.New(rand.NewPCG(uint64(at.Unix()), seed))
		v := make([]float64, C)
		for c := range v {
			// A rhythm on the local hour, and noise.
			v[c] = float64(c) + math.Sin(2*math.Pi*float64(lt.Hour())/24+float64(c)) + 0.3*rng.NormFloat64()
		}
		f.real[at.Unix()] = v
		key := naive(lt).Unix()
		if _, ok := f.local[key]; ok {
			f.repeat++
		}
		f.local[key] = v // the later reading of a repeated hour
	}
	for key := naive(f.from.In(zone)).Unix(); key < naive(f.to.In(zone)).Unix(); key += 3600 {
		prev, next := f.local[key-3600], f.local[key+3600]
		if _, ok := f.local[key]; !ok && prev != nil && next != nil {
			f.skip++
			v := make([]float64, C)
			for c := range v {
				v[c] = (prev[c] + next[c]) / 2
			}
			f.local[key] = v
		}
	}
	return f
}

// naive is the wall-clock time of t written as if it were UTC.
func naive(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// window returns the L rows (C values each) of readings ending at end
// (Unix seconds), and the H after it, from rows.
func window(t *testing.T, rows map[int64][]float64, end int64, L, H, C int) (x, y []float64) {
	t.Helper()
	for r := -(L - 1); r <= H; r++ {
		v, ok := rows[end+int64(r)*3600]
		if !ok {
			t.Fatalf("no reading %d hours from %v", r, time.Unix(end, 0).UTC())
		}
		if r <= 0 {
			x = append(x, v...)
		} else {
			y = append(y, v...)
		}
	}
	return x, y
}

// localView returns the window of L rows ending at the real time end and
// its H targets as the local file gives them at end's wall-clock time, up
// to the ends of the real readings: a wall-clock step before the oldest
// real reading's (autumn's repeated hour pushes the window one step further
// back than its readings reach) holds that reading, and one after the
// horizon's newest holds that one, as the model reads them; and the
// window's newest step is the reading at end, where autumn's file keeps a
// later one of the same local hour.
func (f *localFeed) localView(t *testing.T, end time.Time, L, H int) (xl, yl []float64) {
	t.Helper()
	localEnd := naive(end.In(f.zone))
	hours := func(d time.Duration) int { return int(d / time.Hour) }
	first := L - 1 - hours(localEnd.Sub(naive(end.Add(-time.Duration(L-1)*time.Hour).In(f.zone))))
	last := hours(naive(end.Add(time.Duration(H) * time.Hour).In(f.zone)).Sub(localEnd))
	xl, yl = window(t, f.local, localEnd.Unix(), L, H, f.C)
	// The window ends in end's reading, also where autumn repeats its hour
	// and the file keeps the later, future one.
	copy(xl[(L-1)*f.C:], f.real[end.Unix()])
	for q := range first {
		copy(xl[q*f.C:(q+1)*f.C], f.real[end.Add(-time.Duration(L-1)*time.Hour).Unix()])
	}
	for q := last + 1; q <= H; q++ {
		copy(yl[(q-1)*f.C:q*f.C], f.real[end.Add(time.Duration(H)*time.Hour).Unix()])
	}
	return xl, yl
}

// TestWallClockReadsLikeLocalTimes: a model with a time zone reads a
// window that straddles a change of the zone's offset as a file of the same
// readings at their local times reads it, so it forecasts what the same
// model without a zone forecasts from that file; where the change falls in
// the horizon, its forecast at each real step is the local forecast at that
// step's wall-clock time. Training fits the same windows and targets as the
// local file gives. In spring and in autumn, windows ending at random hours
// around the change, mixed and independent models.
func TestWallClockReadsLikeLocalTimes(t *testing.T) {
	changes := map[string]time.Time{
		"spring": time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC),
		"autumn": time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC),
	}
	for name, change := range changes {
		for _, tc := range []int{0, 2} { // mixed C=7 and independent, both with rhythms and a clock
			for seed := range uint64(2) {
				m := caseModel(t, fullConfigs[tc].cfg, true, true, seed)
				if err := m.SetTimeZone("Europe/Berlin"); err != nil {
					t.Fatal(err)
				}
				utc := m.Clone()
				if err := utc.SetTimeZone(""); err != nil {
					t.Fatal(err)
				}
				L, H, C := m.cfg.Lookback, m.cfg.Horizon, m.cfg.Channels
				feed := newLocalFeed(t, change, C, seed)
				if feed.skip+feed.repeat != 1 {
					t.Fatalf("%s: the local file skips %d and repeats %d hours, want one of them", name, feed.skip, feed.repeat)
				}
				rng := rand.New(rand.NewPCG(seed, 17))
				wsz, wsu := m.NewWorkspace(1), utc.NewWorkspace(1)
				straddled := 0
				for range 12 {
					end := change.Add(time.Duration(rng.IntN(L+H+20)-H-10) * time.Hour)
					x, _ := window(t, feed.real, end.Unix(), L, H, C)
					localEnd := naive(end.In(feed.zone))
					xl, _ := feed.localView(t, end, L, H)
					got := m.Forward(wsz, nil, x, []int64{end.UnixNano()})
					local := utc.Forward(wsu, nil, xl, []int64{localEnd.UnixNano()})
					if m.clock.crosses(end.UnixNano(), L, H) {
						straddled++
					}
					scale := maxAbs(local)
					for h := 1; h <= H; h++ {
						// The real step h is at wall-clock step p of the local file.
						p := int(naive(end.Add(time.Duration(h)*time.Hour).In(feed.zone)).Sub(localEnd) / time.Hour)
						p = min(max(p, 1), H)
						for c := range C {
							if d := math.Abs(got[(h-1)*C+c] - local[(p-1)*C+c]); d > 1e-9*scale {
								t.Fatalf("%s, %s, seed %d, window ending %v: step %d channel %d forecast %.12g, the local file's step %d %.12g",
									name, fullConfigs[tc].name, seed, end, h, c, got[(h-1)*C+c], p, local[(p-1)*C+c])
							}
						}
					}
				}
				if straddled < 6 {
					t.Fatalf("%s: only %d of 12 windows straddle the change; the test would not tell", name, straddled)
				}
				checkTrainingWindowsAreLocal(t, m, feed, change)
			}
		}
	}
}

// timedRows is a TimedSource of the windows of hourly rows ending at ends.
type timedRows struct {
	rows    map[int64][]float64
	ends    []int64 // Unix seconds
	L, H, C int
	t       *testing.T
}

func (s *timedRows) Len() int      { return len(s.ends) }
func (s *timedRows) Channels() int { return s.C }
func (s *timedRows) Input(i int) []float64 {
	x, _ := window(s.t, s.rows, s.ends[i], s.L, s.H, s.C)
	return x
}
func (s *timedRows) Target(i int) []float64 {
	_, y := window(s.t, s.rows, s.ends[i], s.L, s.H, s.C)
	return y
}
func (s *timedRows) EndTime(i int) (int64, bool) { return s.ends[i] * int64(time.Second), true }

// checkTrainingWindowsAreLocal: the windows and targets training fits are
// the local file's, up to the interpolation's rounding.
func checkTrainingWindowsAreLocal(t *testing.T, m *Model, feed *localFeed, change time.Time) {
	t.Helper()
	L, H, C := m.cfg.Lookback, m.cfg.Horizon, m.cfg.Channels
	src := &timedRows{rows: feed.real, L: L, H: H, C: C, t: t}
	for k := -H - 3; k < L+3; k += 7 {
		src.ends = append(src.ends, change.Add(time.Duration(k)*time.Hour).Unix())
	}
	b, err := m.NewBatcher(src)
	if err != nil {
		t.Fatal(err)
	}
	b.localTargets = true
	n := b.Samples()
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	x, y, tau := make([]float64, n*L*C), make([]float64, n*H*C), make([]float64, n*C)
	b.Fill(x, y, tau, idx)
	for j := range n {
		w, c0, cs := j, 0, C
		if b.independent {
			w, c0, cs = j/src.C, j%src.C, 1
		}
		xl, yl := feed.localView(t, time.Unix(src.ends[w], 0), L, H)
		for r := range L {
			for c := range cs {
				if d := math.Abs(x[(j*L+r)*cs+c] - xl[r*src.C+c0+c]); d > 1e-12 {
					t.Fatalf("sample %d (window ending %v) row %d: %v, the local file's %v", j, time.Unix(src.ends[w], 0).UTC(), r, x[(j*L+r)*cs+c], xl[r*src.C+c0+c])
				}
			}
		}
		for h := range H {
			for c := range cs {
				if d := math.Abs(y[(j*H+h)*cs+c] - yl[h*src.C+c0+c]); d > 1e-12 {
					t.Fatalf("sample %d (window ending %v) target step %d: %v, the local file's %v", j, time.Unix(src.ends[w], 0).UTC(), h+1, y[(j*H+h)*cs+c], yl[h*src.C+c0+c])
				}
			}
		}
	}
}

// TestWallClockAllocatesNothing: once warm, Forward allocates nothing for a
// model with a time zone, for windows that straddle a change of offset and
// for those that do not.
func TestWallClockAllocatesNothing(t *testing.T) {
	m := caseModel(t, fullConfigs[0].cfg, true, true, 1)
	if err := m.SetTimeZone("Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	x, _ := randomBatch(m.cfg, 2, 5)
	change := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	ends := []int64{change.Add(10 * time.Hour).UnixNano(), change.Add(-2000 * time.Hour).UnixNano()}
	if !m.clock.crosses(ends[0], m.cfg.Lookback, m.cfg.Horizon) || m.clock.crosses(ends[1], m.cfg.Lookback, m.cfg.Horizon) {
		t.Fatal("the windows do not straddle the change as the test needs")
	}
	ws := m.NewWorkspace(2)
	dst := m.Forward(ws, nil, x, ends)
	var a *Attribution
	a = ws.Attribution(0, a)
	if n := testing.AllocsPerRun(20, func() {
		m.Forward(ws, dst, x, ends)
		a = ws.Attribution(0, a)
	}); n != 0 {
		t.Errorf("Forward and Attribution allocate %v times a call", n)
	}
}

// TestWallClockRemapsAnyCadence: for steps of any length, also ones that do
// not divide the hour the offset moves by (45 minutes) or that it is
// shorter than (15 minutes: autumn puts four steps' readings behind the
// later ones of the same local times), a window, a target and a forecast
// are remapped between real and wall-clock steps as a reading that is a
// linear function of the local time says: linear interpolation keeps it
// exact. Windows and horizons straddling spring's and autumn's change at
// seeded random ends.
func TestWallClockRemapsAnyCadence(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// f is the reading at local (wall-clock) time lt, in minutes.
	f := func(lt time.Time) float64 { return 3 + 0.25*float64(naive(lt).Unix())/60 }
	// g is the reading at real time t: f of its local time, and 1000 more
	// in the hour before autumn's change, whose local times the hour after
	// repeats, so that which of the two readings counts shows.
	autumn := time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)
	g := func(t time.Time) float64 {
		if !t.Before(autumn.Add(-time.Hour)) && t.Before(autumn) {
			return f(t.In(berlin)) + 1000
		}
		return f(t.In(berlin))
	}
	changes := []time.Time{time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)}
	const L, H = 48, 24
	rng := rand.New(rand.NewPCG(8, 1))
	for _, cadence := range []time.Duration{15 * time.Minute, 30 * time.Minute, 45 * time.Minute, time.Hour, 90 * time.Minute, 2 * time.Hour} {
		ck := &clock{zone: berlin, cadence: int64(cadence)}
		sc, shift := newWallScratch(L, H), make([]float64, L+H)
		for _, change := range changes {
			straddled := 0
			for range 40 {
				// An end on the step grid, from a horizon before the
				// change to a window after it.
				k := rng.IntN(L+H) - H
				end := change.Truncate(cadence).Add(time.Duration(k) * cadence)
				if !ck.crosses(end.UnixNano(), L, H) || !ck.wallShift(end.UnixNano(), L, H, shift) {
					continue
				}
				straddled++
				wallEnd := end.In(berlin)
				real := func(r int) time.Time { return end.Add(time.Duration(r-(L-1)) * cadence).In(berlin) } // row r of real time
				wallAt := func(q int) time.Time {                                                             // wall-clock position q, as a local time
					return time.Date(wallEnd.Year(), wallEnd.Month(), wallEnd.Day(), wallEnd.Hour(), wallEnd.Minute(), 0, 0, time.UTC).Add(time.Duration(q-(L-1)) * cadence)
				}
				near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
				// want is what wall-clock time w reads from the rows up to
				// row last: the latest reading at that local time, or, when
				// none is, the line between its neighbours (f, which is
				// linear; steps that do not divide the hour interpolate
				// between readings of other local times, where f holds only
				// away from the repeated hour).
				want := func(w time.Time, last int) (float64, bool) {
					if time.Hour%cadence != 0 && autumnHour(w) {
						return 0, false
					}
					for r := last; r >= 0; r-- {
						if naive(real(r)).Equal(w) {
							return g(real(r)), true
						}
					}
					return f(w), true
				}
				// The window: wall-clock positions from the oldest reading's on.
				x := make([]float64, L)
				for r := range x {
					x[r] = g(real(r))
				}
				sc.windowToWall(x, L, 1, 0, shift)
				for q := range L {
					w := wallAt(q)
					if v, ok := want(w, L-1); ok && !w.Before(naive(real(0))) && !near(x[q], v) {
						t.Fatalf("cadence %v, end %v: wall-clock step %d (%v) of the window reads %v, want %v", cadence, end.UTC(), q, w, x[q], v)
					}
				}
				// The target: up to the newest reading's wall-clock position.
				y := make([]float64, H)
				for h := 1; h <= H; h++ {
					y[h-1] = g(real(L - 1 + h))
				}
				sc.targetToWall(y, x[L-1], L, H, 1, 0, shift)
				for q := 1; q <= H; q++ {
					w := wallAt(L - 1 + q)
					if v, ok := want(w, L-1+H); ok && !w.After(naive(real(L-1+H))) && !near(y[q-1], v) {
						t.Fatalf("cadence %v, end %v: wall-clock step %d ahead (%v) of the target reads %v, want %v", cadence, end.UTC(), q, w, y[q-1], v)
					}
				}
				// A forecast made on wall-clock steps, back on real ones.
				v := make([]float64, H)
				for q := 1; q <= H; q++ {
					v[q-1] = f(wallAt(L - 1 + q))
				}
				sc.fromWall(v, L, H, 1, 0, shift)
				for h := 1; h <= H; h++ {
					w := naive(real(L - 1 + h))
					if !w.Before(wallAt(L)) && !w.After(wallAt(L-1+H)) && !near(v[h-1], f(w)) {
						t.Fatalf("cadence %v, end %v: real step %d ahead (wall clock %v) gets %v, want %v", cadence, end.UTC(), h, w, v[h-1], f(w))
					}
				}
			}
			if straddled < 10 {
				t.Fatalf("cadence %v: only %d windows straddle the change at %v", cadence, straddled, change)
			}
		}
	}
}

// autumnHour reports whether wall-clock time w (written as UTC) is near
// the hour Berlin's autumn change of 2026 repeats, 02:00 to 03:00 on
// 25 October, where a step that does not divide the hour interpolates
// between the two passes' readings.
func autumnHour(w time.Time) bool {
	from := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)
	return !w.Before(from) && w.Before(from.Add(3*time.Hour))
}
