package model

import (
	"fmt"
	"math/rand/v2"
)

// Source is a set of windows to train on or evaluate: window i has an input
// of Lookback×Channels values and a target of Horizon×Channels values, both
// row-major (step, then channel). The slices are read, never kept or changed.
// dataset.Windows satisfies it.
type Source interface {
	Len() int
	Channels() int
	Input(i int) []float64
	Target(i int) []float64
}

// RowSource is a Source whose windows are the stride-1 windows of one
// stretch of rows in time order. Rows returns those rows, row-major with
// Channels() values per row; training reads their spectrum to place the
// frequencies on the data's cycles (PlaceOnSpectrum). dataset.Windows is
// one.
type RowSource interface {
	Source
	Rows() []float64
}

// SpectrumSource is a Source whose spectrum is read from rows that are not
// its windows' channels: the series of a panel side by side, each a
// channel of the spectrum, so that its resolution is that of one series.
// Training prefers it to RowSource.
type SpectrumSource interface {
	Source
	// SpectrumRows returns row-major rows of the given number of channels.
	SpectrumRows() (rows []float64, channels int)
}

// TimedSource is a Source whose windows know when they end. A model that
// reads the time (Model.ReadsTime) trains and evaluates only on one.
// dataset.Windows of a frame with timestamps is one.
type TimedSource interface {
	Source
	// EndTime returns the time of window i's newest step in Unix
	// nanoseconds; ok is false when the windows have no times.
	EndTime(i int) (t int64, ok bool)
}

// Batcher copies windows of a Source into the contiguous batch layout the
// model reads, for training and for code that forecasts a Source batch by
// batch (package measure). For an Independent model a C-channel source becomes C
// single-channel windows per source window: sample s is channel s%C of
// source window s/C. A Batcher is not safe for concurrent use; ForWorker
// gives each goroutine its own.
type Batcher struct {
	m           *Model
	src         Source
	L, H, C     int // model shapes
	srcC        int // channels of the source
	independent bool
	// timed gives the windows' times when the model reads them (nil
	// otherwise); ck converts them to steps.
	timed TimedSource
	ck    *clock
	// wall puts a window that straddles a change of the time zone's
	// offset on wall-clock steps, as Forward does (see wallclock.go); nil
	// without a time zone. localTargets puts its target there too
	// (training fits the forecasts there); otherwise the targets stay on
	// real steps and forecastsToReal puts the forecasts back. on and
	// shifts note, per sample of the last fill, whether it was moved and
	// its shifts (L+H each).
	wall         *wallScratch
	localTargets bool
	on           []bool
	shifts       []float64
}

// NewBatcher returns a Batcher of src's windows for m, or an error when m
// cannot read them (other channels, lookback or horizon, or no times for a
// model that reads the clock).
func (m *Model) NewBatcher(src Source) (*Batcher, error) {
	cfg := m.cfg
	b := &Batcher{m: m, src: src, L: cfg.Lookback, H: cfg.Horizon, C: cfg.Channels, srcC: src.Channels(), ck: m.clock}
	if m.clock.active {
		ts, ok := src.(TimedSource)
		if ok && src.Len() > 0 {
			_, ok = ts.EndTime(0)
		}
		if !ok {
			return nil, fmt.Errorf("model: this model reads the time of each window (its rhythms are phased by the clock), " +
				"but the windows carry no timestamps; build them from data with a time column")
		}
		b.timed = ts
		if m.clock.zone != nil {
			b.wall = newWallScratch(cfg.Lookback, cfg.Horizon)
		}
	}
	switch {
	case cfg.Mode == Independent:
		b.independent = true
	case b.srcC != cfg.Channels:
		return nil, fmt.Errorf("model: the data has %d channels but this mixed model takes %d; "+
			"train a model on this data, or use an independent model", b.srcC, cfg.Channels)
	}
	if src.Len() > 0 {
		if got, want := len(src.Input(0)), b.L*b.srcC; got != want {
			return nil, fmt.Errorf("model: a window holds %d values, want lookback %d × %d channels; "+
				"build the windows with the model's lookback", got, b.L, b.srcC)
		}
		if got, want := len(src.Target(0)), b.H*b.srcC; got != want {
			return nil, fmt.Errorf("model: a target holds %d values, want horizon %d × %d channels; "+
				"build the windows with the model's horizon", got, b.H, b.srcC)
		}
	}
	return b, nil
}

// Samples returns how many model windows (samples) the source yields.
func (b *Batcher) Samples() int {
	if b.independent {
		return b.src.Len() * b.srcC
	}
	return b.src.Len()
}

// Fill copies the samples idx into x (len(idx)·L·C values, C the model's
// channels) and y (len(idx)·H·C; y may be nil), and their end times into
// tau (len(idx)·C steps since the epoch) when the model reads the time; a
// window that straddles a change of the time zone's offset is put on
// wall-clock steps, as Forward does.
func (b *Batcher) Fill(x, y, tau []float64, idx []int) {
	b.fillShuffled(x, y, tau, idx, 0, nil)
}

// endSteps is the end time of source window w in steps since the epoch.
func (b *Batcher) endSteps(w int) float64 {
	t, _ := b.timed.EndTime(w)
	return b.ck.steps(t)
}

// fillShuffled is fill, except that with probability p a mixed sample takes
// each channel's input and target from its own randomly drawn window: the
// channels keep their identity and their own history→future pairs, but not
// their co-occurrence.
func (b *Batcher) fillShuffled(x, y, tau []float64, idx []int, p float64, rng *rand.Rand) {
	L, H, C := b.L, b.H, b.C
	timed := b.timed != nil && tau != nil
	if b.wall != nil && len(b.on) < len(idx) {
		b.on, b.shifts = make([]bool, len(idx)), make([]float64, len(idx)*(L+H))
	}
	for j, s := range idx {
		if b.wall != nil {
			b.on[j] = false
		}
		if !b.independent && p > 0 && rng.Float64() < p {
			xs, ys := x[j*L*C:(j+1)*L*C], y[j*H*C:(j+1)*H*C]
			for c := range C {
				w := rng.IntN(b.src.Len())
				in, tg := b.src.Input(w), b.src.Target(w)
				for t := range L {
					xs[t*C+c] = in[t*C+c]
				}
				for t := range H {
					ys[t*C+c] = tg[t*C+c]
				}
				if timed {
					tau[j*C+c] = b.endSteps(w)
				}
				if b.wall != nil && b.toWall(j, w) {
					b.sampleToWall(xs, ys, C, c, j)
					b.on[j] = false // its channels are other windows'
				}
			}
			continue
		}
		if !b.independent {
			xs := x[j*L*C : (j+1)*L*C]
			copy(xs, b.src.Input(s))
			var ys []float64
			if y != nil {
				ys = y[j*H*C : (j+1)*H*C]
				copy(ys, b.src.Target(s))
			}
			if timed {
				e := b.endSteps(s)
				for c := range C {
					tau[j*C+c] = e
				}
			}
			if b.wall != nil && b.toWall(j, s) {
				for c := range C {
					b.sampleToWall(xs, ys, C, c, j)
				}
			}
			continue
		}
		w, c, sc := s/b.srcC, s%b.srcC, b.srcC
		if timed {
			tau[j] = b.endSteps(w)
		}
		in := b.src.Input(w)
		xs := x[j*L : (j+1)*L]
		for t := range xs {
			xs[t] = in[t*sc+c]
		}
		var ys []float64
		if y != nil {
			tg := b.src.Target(w)
			ys = y[j*H : (j+1)*H]
			for t := range ys {
				ys[t] = tg[t*sc+c]
			}
		}
		if b.wall != nil && b.toWall(j, w) {
			b.sampleToWall(xs, ys, 1, 0, j)
		}
	}
}

// ForWorker returns a Batcher over the same windows with its own scratch,
// for a goroutine that fills and forecasts beside others.
func (b *Batcher) ForWorker() *Batcher {
	c := *b
	if b.wall != nil {
		c.wall, c.on, c.shifts = newWallScratch(b.L, b.H), nil, nil
	}
	return &c
}

// toWall reports whether source window w, filling sample j, straddles a
// change of the zone's offset, noting its shifts as sample j's.
func (b *Batcher) toWall(j, w int) bool {
	end, _ := b.timed.EndTime(w)
	if !b.ck.crosses(end, b.L, b.H) {
		return false
	}
	b.on[j] = b.ck.wallShift(end, b.L, b.H, b.shifts[j*(b.L+b.H):(j+1)*(b.L+b.H)])
	return b.on[j]
}

// sampleToWall puts channel c of sample j's window xs (L×C) on wall-clock
// steps, and its target ys (H×C; nil for none) too when the Batcher fits
// targets there.
func (b *Batcher) sampleToWall(xs, ys []float64, C, c, j int) {
	shift := b.shifts[j*(b.L+b.H) : (j+1)*(b.L+b.H)]
	b.wall.windowToWall(xs, b.L, C, c, shift)
	if ys != nil && b.localTargets {
		b.wall.targetToWall(ys, xs[(b.L-1)*C+c], b.L, b.H, C, c, shift)
	}
}

// forecastsToReal puts the forecasts out (n samples of H×C) of the last
// fill's samples that it put on wall-clock steps back on real steps, as
// Forward does, and tells ws so that its attributions follow.
func (b *Batcher) forecastsToReal(ws *Workspace, out []float64, n int) {
	if b.wall == nil {
		return
	}
	L, H, C := b.L, b.H, b.C
	for j := range n {
		if !b.on[j] {
			continue
		}
		ws.wallBuffers(n)
		if !ws.walled {
			clear(ws.wallOn[:n])
			ws.walled = true
		}
		ws.wallOn[j] = true
		copy(ws.wallShift[j*(L+H):(j+1)*(L+H)], b.shifts[j*(L+H):(j+1)*(L+H)])
		for c := range C {
			b.wall.fromWall(out[j*H*C:(j+1)*H*C], L, H, C, c, b.shifts[j*(L+H):(j+1)*(L+H)])
		}
	}
}

// Forecast forecasts the first n samples of the last Fill, given x and tau
// as that Fill left them (it also noted which windows it put on wall-clock
// steps, which Forecast reads), into out (n·H·C) in ws, with the deterministic top-K as
// Forward does, and puts back on the real steps the forecasts of the
// windows Fill put on wall-clock steps; ws then holds their selection and
// parts (Workspace.Attribution, AddShares, Selection).
func (b *Batcher) Forecast(ws *Workspace, out, x, tau []float64, n int) {
	b.m.forward(ws, out, x, tau, n, nil)
	b.forecastsToReal(ws, out, n)
}
