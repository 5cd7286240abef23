package explain

import (
	"fmt"
	"math"
	"time"

	"github.com/freqlens/freqlens/internal/scratch"
	"github.com/freqlens/freqlens/model"
)

// Explanation is the forecast of one window of C channels with its complete
// attribution, in the window's own units:
//
//	Forecast = Residual + Σ_i Contributions[i].Values   (element by element)
//
// For a model.Independent model each channel is forecast by its own
// single-channel pass; Contributions is then the union of the frequencies
// the channels selected, with zeros where a channel did not select one.
type Explanation struct {
	// Forecast and Residual are Horizon×C, row-major (step, then channel).
	Forecast, Residual []float64
	// Level is the per-channel window mean inside Residual.
	Level []float64
	// Alpha is the model's fusion weight.
	Alpha float64
	// Contributions are ordered by share, largest first.
	Contributions []model.Contribution
	// ResidualShare is the residual's part (level excluded) of the total
	// absolute attribution at the level of cycles (see
	// model.Contribution.Share): it, the rhythms' shares and the shares of
	// the frequencies of no rhythm sum to 1.
	ResidualShare float64
	// Rhythms holds the part of each of the model's rhythms (in the order
	// of the model's Meta.Rhythms): the exact sum of its frequencies'
	// contributions.
	Rhythms []RhythmPart
}

// RhythmPart is one rhythm's part of a forecast: the sum of the
// contributions of its frequencies.
type RhythmPart struct {
	// Index is the rhythm's index in the model's Meta.Rhythms.
	Index int
	// PeriodSteps is its fundamental period in steps, Period in time (0
	// when the cadence is unknown).
	PeriodSteps float64
	Period      time.Duration
	// Frequencies are its frequencies' ids.
	Frequencies []int
	// Values is Σ of its frequencies' contributions, Horizon×Channels, in
	// the forecast's units.
	Values []float64
	// Share is what the rhythm adds up to: Σ|its summed part| over the
	// explanation's total at the level of cycles (see
	// model.Contribution.Share), counted where the attribution is (a mixed
	// model trained on z-scored data counts in its normalised units, each
	// channel alike, not in Values' units). It is less than the sum of its frequencies' shares
	// when its lines partly cancel.
	Share float64
}

// Explainer forecasts batches of C-channel windows given in their own units
// and explains them. It applies the model's training normalisation (for a
// mixed model trained on z-scored data) and undoes it on every output. It
// allocates nothing once it has held a batch of its size.
//
// An Explainer is not safe for concurrent use; make one per goroutine.
type Explainer struct {
	m    *model.Model
	C    int // channels of a window
	ws   *model.Workspace
	x, y []float64
	ends []int64 // the model windows' end times
	n    int
	attr *model.Attribution
	into model.Attribution // oneWindow's: storage no explanation holds, or none
	byID []int             // frequency id → index in the explanation being built, −1 when absent
	mean []float64
	std  []float64
}

// New returns an explainer of m for windows of channels values per step.
// A mixed model needs exactly its own channel count; an independent model
// takes any.
func New(m *model.Model, channels int) (*Explainer, error) {
	if channels < 1 {
		return nil, fmt.Errorf("explain: %d channels; a window needs at least one", channels)
	}
	cfg := m.Config()
	if cfg.Mode == model.Mixed && channels != cfg.Channels {
		return nil, fmt.Errorf("explain: the readings have %d value fields but this mixed model forecasts %d channels (%v); "+
			"configure the same value fields, or serve them with an independent model", channels, cfg.Channels, m.Meta.ChannelNames)
	}
	e := &Explainer{m: m, C: channels, byID: make([]int, cfg.Frequencies)}
	if cfg.Mode == model.Mixed && len(m.Meta.Std) == channels {
		e.mean, e.std = m.Meta.Mean, m.Meta.Std
	}
	return e, nil
}

// Model returns the model the explainer uses.
func (e *Explainer) Model() *model.Model { return e.m }

// modelWindows is how many model windows one C-channel window becomes.
func (e *Explainer) modelWindows() int {
	if e.m.Config().Mode == model.Independent {
		return e.C
	}
	return 1
}

// Forecast runs the model on n windows (x holds n·Lookback·C values,
// window after window, step then channel) and returns the n forecasts
// (n·Horizon·C values), valid until the next call. ends holds the time of
// each window's newest step (Unix nanoseconds); a model that reads the
// time (model.Model.ReadsTime) needs it, others take nil.
func (e *Explainer) Forecast(x []float64, ends []int64) []float64 {
	cfg := e.m.Config()
	L, H, C := cfg.Lookback, cfg.Horizon, e.C
	if len(x)%(L*C) != 0 {
		panic(fmt.Sprintf("explain: Explainer.Forecast got %d values, not a multiple of lookback %d × %d channels", len(x), L, C))
	}
	n := len(x) / (L * C)
	e.n = n
	k := e.modelWindows()
	if e.ws == nil {
		e.ws = e.m.NewWorkspace(n * k)
	}
	e.x = scratch.Resize(e.x, n*L*C)
	if e.std != nil {
		for i := range n * L {
			for c := range C {
				e.x[i*C+c] = (x[i*C+c] - e.mean[c]) / e.std[c]
			}
		}
	} else if cfg.Mode == model.Independent {
		// Channel c of window w becomes model window w·C + c.
		for w := range n {
			for c := range C {
				dst := e.x[(w*C+c)*L : (w*C+c+1)*L]
				for t := range L {
					dst[t] = x[(w*L+t)*C+c]
				}
			}
		}
	} else {
		copy(e.x, x)
	}
	if e.m.ReadsTime() {
		if len(ends) != n {
			panic(fmt.Sprintf("explain: Explainer.Forecast got %d window times for %d windows; this model reads the time of each window", len(ends), n))
		}
		if k == 1 {
			e.ends = append(e.ends[:0], ends...)
		} else {
			e.ends = e.ends[:0]
			for _, t := range ends {
				for range k {
					e.ends = append(e.ends, t)
				}
			}
		}
	}
	out := e.m.Forward(e.ws, e.y, e.x, e.ends)
	e.y = out
	if cfg.Mode == model.Independent {
		// Back to window-major, step, channel: out holds (w·C + c)·H + h.
		e.x = scratch.Resize(e.x, n*H*C) // scratch
		for w := range n {
			for c := range C {
				for h := range H {
					e.x[(w*H+h)*C+c] = out[(w*C+c)*H+h]
				}
			}
		}
		copy(out[:n*H*C], e.x[:n*H*C])
		return out[:n*H*C]
	}
	if e.std != nil {
		for i := range n * H {
			for c := range C {
				out[i*C+c] = out[i*C+c]*e.std[c] + e.mean[c]
			}
		}
	}
	return out[:n*H*C]
}

// Explain writes the explanation of window i of the last Forecast call to
// dst (nil allocates; dst's storage is reused) and returns it.
func (e *Explainer) Explain(i int, dst *Explanation) *Explanation {
	return e.ExplainInto(i, dst, nil)
}

// ExplainInto is Explain with the numbers a caller keeps (the forecast, the
// residual, each frequency's and each rhythm's values, each Horizon×C)
// written into new storage that alloc(n) returns (n numbers, their contents
// any) instead of into dst's: the pipeline gives each forecast its numbers
// in its batch's arena this way, without copying them there. dst's own
// storage still holds the rest. A nil alloc is Explain.
func (e *Explainer) ExplainInto(i int, dst *Explanation, alloc func(n int) []float64) *Explanation {
	if i < 0 || i >= e.n {
		panic(fmt.Sprintf("explain: Explain(%d) outside the last batch of %d windows", i, e.n))
	}
	if dst == nil {
		dst = new(Explanation)
	}
	cfg := e.m.Config()
	H, C := cfg.Horizon, e.C
	HC := H * C
	k := e.modelWindows()
	dst.Level = scratch.Resize(dst.Level, C)
	dst.Contributions = dst.Contributions[:0]
	if k > 1 {
		dst.Forecast = scratch.Storage(alloc, dst.Forecast, HC)
		dst.Residual = scratch.Storage(alloc, dst.Residual, HC)
		e.gatherWindows(i, k, dst, alloc)
		e.rhythmParts(dst, alloc)
		e.setShares(dst)
	} else {
		e.oneWindow(i, dst, alloc)
		e.rhythmParts(dst, alloc)
		// The attribution's shares, counted in the model's units.
		for r := range dst.Rhythms {
			dst.Rhythms[r].Share = e.into.RhythmShares[r]
		}
	}
	// Largest share first (insertion sort: a handful of items, no allocation).
	cs := dst.Contributions
	for a := 1; a < len(cs); a++ {
		for b := a; b > 0 && cs[b].Share > cs[b-1].Share; b-- {
			cs[b], cs[b-1] = cs[b-1], cs[b]
		}
	}
	return dst
}

// oneWindow fills dst from the one model window of C channels that window
// i is (a mixed model, or an independent one of one channel): the
// attribution, its values and shares as they are, is built in storage that
// dst then takes over instead of copying it, and is scaled to the window's
// units. The storage is alloc's when alloc is set, and the explainer keeps
// no reference to it; else it is the explainer's, which takes dst's old
// storage in exchange for the next call, so that none is shared.
func (e *Explainer) oneWindow(i int, dst *Explanation, alloc func(n int) []float64) {
	a := e.ws.AttributionInto(i, &e.into, alloc)
	dst.Alpha, dst.ResidualShare = a.Alpha, a.ResidualShare
	copy(dst.Level, a.Level)
	// giveBack is what the explainer keeps of dst's old storage.
	giveBack := func(old []float64) []float64 {
		if alloc != nil {
			return nil
		}
		return old
	}
	dst.Forecast, a.Forecast = a.Forecast, giveBack(dst.Forecast)
	dst.Residual, a.Residual = a.Residual, giveBack(dst.Residual)
	for k := range a.Contributions {
		ct := &a.Contributions[k]
		dc := scratch.Grow1(&dst.Contributions)
		dc.Frequency, dc.Score, dc.Share = ct.Frequency, ct.Score, ct.Share
		dc.Values, ct.Values = ct.Values, giveBack(dc.Values)
	}
	e.toInputUnits(dst)
}

// toInputUnits takes dst's numbers from the model's normalised units to the
// window's, when the model was trained on z-scored columns.
func (e *Explainer) toInputUnits(dst *Explanation) {
	if e.std == nil {
		return
	}
	C := e.C
	for j := range dst.Forecast {
		c := j % C
		dst.Forecast[j] = dst.Forecast[j]*e.std[c] + e.mean[c]
		dst.Residual[j] = dst.Residual[j]*e.std[c] + e.mean[c]
	}
	for c := range C {
		dst.Level[c] = dst.Level[c]*e.std[c] + e.mean[c]
	}
	for k := range dst.Contributions {
		v := dst.Contributions[k].Values
		for j := range v {
			v[j] *= e.std[j%C]
		}
	}
}

// gatherWindows fills dst from the k single-channel model windows that
// window i is to an independent model: a frequency's values are zero in
// the channels whose window did not select it. setShares then counts the
// shares over every channel.
func (e *Explainer) gatherWindows(i, k int, dst *Explanation, alloc func(n int) []float64) {
	H, C := e.m.Horizon(), e.C
	for j := range e.byID {
		e.byID[j] = -1
	}
	for w := range k {
		e.attr = e.ws.Attribution(i*k+w, e.attr)
		a := e.attr
		dst.Alpha = a.Alpha
		for h := range H {
			dst.Forecast[h*C+w] = a.Forecast[h]
			dst.Residual[h*C+w] = a.Residual[h]
		}
		dst.Level[w] = a.Level[0]
		for _, ct := range a.Contributions {
			idx := e.byID[ct.ID]
			if idx < 0 {
				idx = len(dst.Contributions)
				e.byID[ct.ID] = idx
				clear(e.addContribution(dst, alloc, &ct).Values)
			}
			dc := &dst.Contributions[idx]
			for h := range H {
				dc.Values[h*C+w] = ct.Values[h]
			}
		}
	}
}

// setShares sets the shares of dst, an independent model's explanation
// gathered from its channels' windows, over every channel at the level of
// cycles (see model.Contribution.Share), with dst.Rhythms' values summed. The
// windows are in their channels' units already: there is no scale to undo.
func (e *Explainer) setShares(dst *Explanation) {
	H, C := e.m.Horizon(), e.C
	res := 0.0
	for h := range H {
		for c := range C {
			res += math.Abs(dst.Residual[h*C+c] - dst.Level[c])
		}
	}
	total := res
	for j := range dst.Contributions {
		ct := &dst.Contributions[j]
		ct.Share = scratch.AbsSum(ct.Values)
		if _, ok := e.m.RhythmOf(ct.ID); !ok {
			total += ct.Share
		}
	}
	for r := range dst.Rhythms {
		dst.Rhythms[r].Share = scratch.AbsSum(dst.Rhythms[r].Values)
		total += dst.Rhythms[r].Share
	}
	scale := 0.0
	if total > 0 {
		scale = 1 / total
	}
	for j := range dst.Contributions {
		dst.Contributions[j].Share *= scale
	}
	for r := range dst.Rhythms {
		dst.Rhythms[r].Share *= scale
	}
	dst.ResidualShare = res * scale
}

// addContribution appends to dst's contributions one for ct's frequency,
// its values from scratch.Storage(alloc, …) (their contents any), and returns it.
func (e *Explainer) addContribution(dst *Explanation, alloc func(n int) []float64, ct *model.Contribution) *model.Contribution {
	dc := scratch.Grow1(&dst.Contributions)
	dc.Frequency, dc.Score = ct.Frequency, ct.Score
	dc.Values = scratch.Storage(alloc, dc.Values, len(dst.Forecast))
	return dc
}

// rhythmParts fills dst.Rhythms from its contributions, their values from
// scratch.Storage(alloc, …); it leaves their shares zero.
func (e *Explainer) rhythmParts(dst *Explanation, alloc func(n int) []float64) {
	rs := e.m.Meta.Rhythms
	if cap(dst.Rhythms) < len(rs) {
		dst.Rhythms = make([]RhythmPart, len(rs))
	}
	dst.Rhythms = dst.Rhythms[:len(rs)]
	HC := len(dst.Forecast)
	for r := range rs {
		rp := &dst.Rhythms[r]
		rp.Index, rp.PeriodSteps, rp.Frequencies = r, rs[r].PeriodSteps, rs[r].Frequencies
		rp.Period = 0
		if e.m.Meta.Cadence > 0 {
			rp.Period = time.Duration(math.Round(rs[r].PeriodSteps * float64(e.m.Meta.Cadence)))
		}
		rp.Values = scratch.Storage(alloc, rp.Values, HC)
		clear(rp.Values)
		rp.Share = 0
	}

	for _, c := range dst.Contributions {
		r, _ := e.m.RhythmOf(c.ID)
		if r < 0 || r >= len(dst.Rhythms) {
			continue
		}
		scratch.AddTo(dst.Rhythms[r].Values, c.Values)
	}
}

// Without removes the frequencies ids from the following forecasts (see
// model.Workspace.Without): the forecast without them differs from the full
// one by exactly their contributions. Without() restores the full model.
func (e *Explainer) Without(ids ...int) {
	if e.ws == nil {
		e.ws = e.m.NewWorkspace(1)
	}
	e.ws.Without(ids...)
}
