package model

import (
	"math"
	"sort"
	"time"
)

// The wall clock: how a model with a time zone (Meta.TimeZone) sees a window
// whose steps straddle a change of the zone's offset from UTC (daylight
// saving).
//
// Readings arrive on steps of real time. A rhythm kept by people (traffic,
// buildings) keeps the local hour, so after the change from winter to
// summer time the morning peak comes one real hour earlier. A window that
// straddles the change holds the rhythm shifted by an hour before the change
// against after it: its projections smear, and the clock's profile over the
// window (which the residual MLP's input is cleared of) is an hour off for
// the steps before the change. For the L steps of every such window, until
// it lies wholly after the change, forecasts read on the real steps
// measure two to three times worse than the same readings' with local
// times.
//
// So the model reads such a window on its wall-clock steps: step s of the
// window is the reading at the local time s steps before the window's end,
// taken from the real steps by linear interpolation (the local hour that
// spring skips is the line between its neighbours; of the hour autumn
// repeats, the later reading counts), as a file of local times reads. The
// model forecasts on wall-clock steps too, and every part of the forecast
// (each frequency's contribution, the residual, the level) is put back on
// the real steps by the same interpolation, whose weights sum to one: the
// parts still add up to the forecast exactly and each is still exactly what
// removing its frequency changes. Training fits the targets on wall-clock
// steps likewise. A window that the offset does not change in costs one
// lookup of the zone's bounds.

// crosses reports whether the zone's offset from UTC changes within the
// L+H steps of the window whose newest step is at end (Unix nanoseconds):
// its L steps and its horizon's H. It is false without a time zone.
func (ck *clock) crosses(end int64, L, H int) bool {
	if ck.zone == nil || ck.cadence <= 0 {
		return false
	}
	from, to := time.Unix(0, end).In(ck.zone).ZoneBounds()
	first, last := end-int64(L-1)*ck.cadence, end+int64(H)*ck.cadence
	return !from.IsZero() && first < from.UnixNano() || !to.IsZero() && last >= to.UnixNano()
}

// wallShift fills shift (L+H rows: the window's L steps, oldest first, then
// the horizon's H) with how many steps each row's wall clock is ahead of
// its distance from the window's end at end: (offset at the row − offset at
// the end) / cadence. It reports whether any is not zero (a zone's period
// can end without its offset changing).
func (ck *clock) wallShift(end int64, L, H int, shift []float64) bool {
	_, off0 := time.Unix(0, end).In(ck.zone).Zone()
	moved := false
	for r := range L + H {
		_, off := time.Unix(0, end+int64(r-(L-1))*ck.cadence).In(ck.zone).Zone()
		shift[r] = float64(int64(off-off0)*int64(time.Second)) / float64(ck.cadence)
		moved = moved || shift[r] != 0
	}
	return moved
}

// wallScratch is the scratch of the wall-clock remaps: positions and
// values of one column.
type wallScratch struct {
	pos, at, val []float64 // L+H+1 each
}

func newWallScratch(L, H int) *wallScratch {
	n := L + H + 1
	return &wallScratch{pos: make([]float64, n), at: make([]float64, n), val: make([]float64, n)}
}

// windowToWall puts channel c of window x (L×C, row-major) on wall-clock
// steps in place: its row s becomes the reading at wall-clock position s,
// row r of real time being at r + shift[r].
func (sc *wallScratch) windowToWall(x []float64, L, C, c int, shift []float64) {
	pos, at, val := sc.pos[:L], sc.at[:L], sc.val[:L]
	for r := range L {
		pos[r], at[r], val[r] = float64(r)+shift[r], float64(r), x[r*C+c]
	}
	resample(x[c:], C, at, val, pos)
}

// targetToWall puts channel c of target y (H×C) of a window ending in the
// reading last on wall-clock steps in place: its row h−1 becomes the value
// at wall-clock position h after the end, the real step h being at
// h + shift[L−1+h]. A wall-clock step before the first real one lies on the
// line from the window's last reading.
func (sc *wallScratch) targetToWall(y []float64, last float64, L, H, C, c int, shift []float64) {
	pos, at, val := sc.pos[:H+1], sc.at[:H], sc.val[:H+1]
	pos[0], val[0] = 0, last
	for h := 1; h <= H; h++ {
		pos[h], val[h] = float64(h)+shift[L-1+h], y[(h-1)*C+c]
		at[h-1] = float64(h)
	}
	resample(y[c:], C, at, val, pos)
}

// fromWall puts channel c of a forecast (or one of its parts) v (H×C) made
// on wall-clock steps back on the real steps in place: real step h is at
// wall-clock position h + shift[L−1+h], beyond the horizon's ends the
// nearest step's value.
func (sc *wallScratch) fromWall(v []float64, L, H, C, c int, shift []float64) {
	pos, at, val := sc.pos[:H], sc.at[:H], sc.val[:H]
	for h := 1; h <= H; h++ {
		pos[h-1], val[h-1] = float64(h), v[(h-1)*C+c]
		at[h-1] = float64(h) + shift[L-1+h]
	}
	resample(v[c:], C, at, val, pos)
}

// resample writes, at dst[i·stride] for every i of at, the piecewise-linear
// curve through the points (pos[k], val[k]) at position at[i]. A point at
// or after a later point's position gives way to it (autumn repeats an
// hour: the later reading counts, and with steps shorter than the hour the
// earlier ones lie past the later ones); outside the points the curve holds
// the nearest one's value. Its weights sum to one, so resampling parts and
// summing them equals resampling their sum. It overwrites pos and val.
func resample(dst []float64, stride int, at, val, pos []float64) {
	// Keep the points whose position is below every later one's, in place
	// at the end of the slices (w ≥ k: nothing unread is overwritten).
	w, lo := len(pos), math.Inf(1)
	for k := len(pos) - 1; k >= 0; k-- {
		if pos[k] < lo {
			w--
			pos[w], val[w], lo = pos[k], val[k], pos[k]
		}
	}
	pos, val = pos[w:], val[w:]
	n := len(pos)
	for i, a := range at {
		k := sort.SearchFloat64s(pos, a) // the first point at or after a
		var v float64
		switch {
		case k == n:
			v = val[n-1]
		case pos[k] == a || k == 0:
			v = val[k]
		default:
			w := (a - pos[k-1]) / (pos[k] - pos[k-1])
			v = val[k-1] + w*(val[k]-val[k-1])
		}
		dst[i*stride] = v
	}
}

// windowsToWall reads the n windows x (L×C each), whose newest steps are at
// ends, on wall-clock steps: it returns x itself when the offset changes in
// none of them (nor in their horizons), else a copy in ws with those that
// it changes in put on wall-clock steps, noted in ws.wallOn for
// forecastsFromWall.
func (m *Model) windowsToWall(ws *Workspace, x []float64, ends []int64, n int) []float64 {
	ck := m.clock
	L, H, C := m.cfg.Lookback, m.cfg.Horizon, m.cfg.Channels
	moved := false
	if ws.wallOn != nil {
		ws.wallBuffers(n)
		clear(ws.wallOn[:n])
	}
	for b := range n {
		if !ck.crosses(ends[b], L, H) {
			continue
		}
		ws.wallBuffers(n)
		if ck.wallShift(ends[b], L, H, ws.wallShift[b*(L+H):(b+1)*(L+H)]) {
			ws.wallOn[b], moved = true, true
		}
	}
	if !moved {
		return x
	}
	xw := ws.wallX[:n*L*C]
	copy(xw, x[:n*L*C])
	for b := range n {
		if ws.wallOn[b] {
			for c := range C {
				ws.wallTmp.windowToWall(xw[b*L*C:(b+1)*L*C], L, C, c, ws.wallShift[b*(L+H):(b+1)*(L+H)])
			}
		}
	}
	return xw
}

// forecastsFromWall puts the forecasts dst (n × H×C) of the windows that
// windowsToWall put on wall-clock steps back on real steps, and marks the
// pass so that Attribution does the same to each part.
func (m *Model) forecastsFromWall(ws *Workspace, dst []float64, n int) {
	if ws.wallOn == nil {
		return
	}
	L, H, C := m.cfg.Lookback, m.cfg.Horizon, m.cfg.Channels
	for b := range n {
		if !ws.wallOn[b] {
			continue
		}
		ws.walled = true
		for c := range C {
			ws.wallTmp.fromWall(dst[b*H*C:(b+1)*H*C], L, H, C, c, ws.wallShift[b*(L+H):(b+1)*(L+H)])
		}
	}
}

// partsFromWall puts the parts of attribution a of window i back on real
// steps when its pass read it on wall-clock steps, and reports whether it
// did: the forecast, the residual and every contribution, by the same
// weights.
func (ws *Workspace) partsFromWall(i int, a *Attribution) bool {
	if !ws.walled || !ws.wallOn[i] {
		return false
	}
	cfg := ws.m.cfg
	L, H, C := cfg.Lookback, cfg.Horizon, cfg.Channels
	shift := ws.wallShift[i*(L+H) : (i+1)*(L+H)]
	put := func(v []float64) {
		for c := range C {
			ws.wallTmp.fromWall(v, L, H, C, c, shift)
		}
	}
	put(a.Forecast)
	put(a.Residual)
	for k := range a.Contributions {
		put(a.Contributions[k].Values)
	}
	return true
}
