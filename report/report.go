package report

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
)

// Options says what a report covers. The zero value reports the model
// alone.
type Options struct {
	// Data is a frame of the model's columns (any columns for an
	// independent model). With it the report recounts the attribution
	// shares on its test split (standard protocol), explains the forecast
	// of one window and scores the test split by horizon step. Nil reports
	// the model alone, with the shares its file recorded at training time.
	Data *dataset.Frame
	// At is the 0-based data row (header not counted) that ends the
	// explained window, from Lookback−1 to the last row; rows past the last
	// minus Horizon have fewer actual values than forecast steps.
	//
	// Default (0, which can never end a window): the row that ends the last
	// test window, so all its actual values are in the data.
	At int
	// AtName is how captions name the window's end, such as "row 12000"
	// for the row of the file a user gave (with gaps filled, the frame's
	// rows are not the file's); its time follows it when the data has
	// times.
	//
	// Default: the time of the window's end, or "row At" when the data
	// has no times
	AtName string
	// Zone, when set, writes the data's times in RFC 3339 in that zone
	// (long-format data, whose times are instants, in the model's time
	// zone or UTC); nil writes them as a wide file's dates, without one.
	Zone *time.Location
	// Channel names the column the forecast figure shows.
	//
	// Default: the last column (the target "OT" of the ETT files)
	Channel string
	// Name names the model in titles, e.g. its file name.
	//
	// Default: the name of the data it was trained on
	Name string
	// Excerpt says Data is part of what the model was trained from, such
	// as one series' run of a long-format file: its "test split" (the last
	// 20% of its rows) is then no held-out data, and the report says so.
	Excerpt bool
}

// Report is what the figures show, computed from a model and, when given,
// data. Build fills it; Write draws it.
type Report struct {
	// Name names the model in titles.
	Name string
	// TrainedOn is the base name of the training file, "" when unknown.
	TrainedOn string
	// Mode, Lookback, Horizon and Channels are the model's shapes.
	Mode                        model.Mode
	Lookback, Horizon, Channels int
	// Cadence is the time between two steps, 0 when unknown (periods are
	// then in steps and there are no reference periods).
	Cadence time.Duration
	// Alpha is the fusion weight of the frequency heads.
	Alpha float64
	// TestMSE is the test MSE the model file records, NaN when it holds none.
	TestMSE float64

	// Frequencies are all learned frequencies, shortest period first.
	Frequencies []Frequency
	// Cycles are the data's cycles, the model's rhythms (a fundamental
	// period with its harmonics) that carry at least explain.MinCycleShare
	// of the attribution, largest share first.
	Cycles []Cycle
	// ResidualShare is the residual MLP's mean share of the attribution,
	// OtherShare the frequencies' of no cycle; with the cycles' (all of
	// them, those below explain.MinCycleShare too) they make 1.
	ResidualShare, OtherShare float64
	// ResidualName names the residual's part: "residual MLP", or
	// "residual (all channels)" for a model whose residual reads every
	// channel's leftover (model.Config.ChannelMix).
	ResidualName string
	// SharesFrom says where the shares were counted; "" when unknown (the
	// model file holds none and no data was given).
	SharesFrom string

	// Forecast is the explained window; nil without data.
	Forecast *Forecast
	// Errors is the test split's error by horizon step; nil without data.
	Errors *HorizonErrors
}

// Frequency is one learned frequency with its part of the forecasts.
type Frequency struct {
	model.Frequency
	// Share is its mean share of the attribution (level excluded).
	Share float64
	// Cycle is the index in Report.Cycles of the cycle (rhythm) it is a
	// harmonic of, −1 when it is none's.
	Cycle int
	// Harmonic is its harmonic number in that cycle (0 for none).
	Harmonic int
	// Placed says training placed it on a peak of the training data's
	// spectrum; a placed frequency below explain.MinCycleShare is a peak the
	// forecasts barely use.
	Placed bool
}

// Cycle is a cycle of the data, one of the model's rhythms, with the name
// the figures give it.
type Cycle struct {
	explain.RhythmShare
	// Name is its period the way people say it ("24.0h"), or in steps when
	// the cadence is unknown; unique within a report.
	Name string
}

// Cancelled says what the cycle's frequencies add up to on their own when
// they partly cancel each other (by half a point or more), else "".
func (c Cycle) Cancelled() string {
	if c.LinesShare-c.Share < 0.005 {
		return ""
	}
	return fmt.Sprintf("its frequencies on their own %.1f%%; they partly cancel", 100*c.LinesShare)
}

// Forecast is one window's forecast of one channel and its exact parts, in
// the data's units:
//
//	Values[h] = Level + Σ_p Parts[p].Values[h]
type Forecast struct {
	// At is the data row that ends the window; Time its timestamp.
	At   int
	Time time.Time
	// When names the window's end for captions (Options.AtName).
	When string
	// Channel is the column shown.
	Channel string
	// History holds the Lookback input values, oldest first.
	History []float64
	// Values holds the Horizon forecast steps.
	Values []float64
	// Actual holds the realised values after At, as many as the data holds
	// (at most Horizon).
	Actual []float64
	// Level is the window's level inside the residual (its mean for a
	// model with instance normalisation).
	Level float64
	// Parts are each cycle (in Report.Cycles order: the sum of its
	// frequencies' contributions), the other frequencies together, and the
	// residual MLP without the level.
	Parts []Part
	// Intervals are the 80% and 95% prediction intervals a served model
	// would start from (the model's test-split error quantiles,
	// model.Meta.ErrorQuantiles, in data units); nil when the model file
	// holds none or no normalisation statistics.
	Intervals []Interval
}

// Interval is a prediction interval of one level around a forecast.
type Interval struct {
	Level        float64
	Lower, Upper []float64 // one value per forecast step
}

// intervalLevels are the levels of the report's prediction intervals.
var intervalLevels = []float64{0.8, 0.95}

// PartKind says what a forecast part is.
type PartKind int

// The kinds of forecast parts.
const (
	PartCycle    PartKind = iota // one cycle of the data (a rhythm with its harmonics)
	PartOther                    // the frequencies that are no cycle's
	PartResidual                 // the residual MLP, level excluded
)

// Part is one additive part of a forecast.
type Part struct {
	Name string
	Kind PartKind
	// Cycle is the index in Report.Cycles of a PartCycle, −1 otherwise.
	Cycle int
	// Values holds one value per forecast step.
	Values []float64
	// Share is the part's share of this channel's forecast, as shares are
	// counted everywhere (model.Contribution.Share): a cycle by Σ|Values|,
	// the other frequencies by each frequency's own Σ|values| (and each
	// cycle too small to show by its summed part), over the sum of them
	// and the residual's; the parts' shares make 1.
	Share float64
}

// HorizonErrors scores every window of a test split step by step, on the
// z-scored scale of the standard protocol (comparable with published
// tables and with the model's test MSE).
type HorizonErrors struct {
	// Data is the frame's name and Protocol its split protocol.
	Data, Protocol string
	// Note warns what the split is not: set for an excerpt
	// (Options.Excerpt), whose rows the model may have trained on.
	Note string
	// Windows and Channels are what each step averages over.
	Windows, Channels int
	// MSE and MAE hold one value per horizon step.
	MSE, MAE []float64
	// PersistenceMSE is the MSE of repeating the window's last value, the
	// baseline any forecaster should beat.
	PersistenceMSE []float64
	// MeanMSE and MeanMAE average over the steps (the test MSE and MAE).
	MeanMSE, MeanMAE float64
}

// Build computes a report of m under opts. It returns an error that says
// what to change when the data does not fit the model or opts.At is not a
// row that can end a window.
func Build(ctx context.Context, m *model.Model, opts Options) (*Report, error) {
	cfg := m.Config()
	r := &Report{
		Name: opts.Name, TrainedOn: m.Meta.DataName, Mode: cfg.Mode,
		Lookback: cfg.Lookback, Horizon: cfg.Horizon, Channels: cfg.Channels,
		Cadence: m.Meta.Cadence, Alpha: m.Alpha(), TestMSE: math.NaN(), ResidualName: explain.ResidualName(cfg.ChannelMix),
	}
	if r.Name == "" {
		r.Name = "model trained on " + cmp.Or(m.Meta.DataName, "unknown data")
	}
	if v, ok := m.Meta.Metrics["test_mse"]; ok {
		r.TestMSE = v
	}

	shares, residual := m.Meta.Shares, m.Meta.ResidualShare
	if shares != nil {
		r.SharesFrom = "the test split at training time"
	}
	f := opts.Data
	if f == nil {
		r.setCycles(m, shares, m.Meta.RhythmShares, residual)
		return r, nil
	}
	ch, at, err := checkData(m, f, opts)
	if err != nil {
		return nil, err
	}
	bm, err := dataset.Standard(f, cfg.Lookback, cfg.Horizon)
	if err != nil {
		return nil, err
	}
	met, err := measure.Evaluate(ctx, m, bm.Test, measure.Options{})
	if err != nil {
		return nil, err
	}
	r.SharesFrom = "the test split of " + f.Name
	if bm.Protocol == dataset.ProtocolRatio {
		r.SharesFrom = "the test split (the last 20% of the rows) of " + f.Name
	}
	r.setCycles(m, met.Shares, met.RhythmShares, met.ResidualShare)
	if r.Errors, err = horizonErrors(ctx, m, bm); err != nil {
		return nil, err
	}
	if opts.Excerpt {
		r.SharesFrom = "the last 20% of the rows of " + f.Name + ", which the model may have trained on"
		r.Errors.Note = "These are the last 20% of one series' run, not a held-out test split: the model may have trained on them, " +
			"so they can look better than its test error ('freqlens eval' scores the test split by time, series by series)."
	}
	if at == 0 {
		at = bm.Test.EndRow(bm.Test.Len() - 1)
	}
	if r.Forecast, err = r.explain(m, f, at, ch, opts); err != nil {
		return nil, err
	}
	r.Forecast.Intervals = intervals(m, r.Forecast.Values, ch, intervalScale(m, bm, ch))
	return r, nil
}

// checkData returns the index of the channel to show and opts.At, or an
// error that says how to fix the data or the options.
func checkData(m *model.Model, f *dataset.Frame, opts Options) (channel, at int, err error) {
	cfg := m.Config()
	L := cfg.Lookback
	if mc := m.Meta.Cadence; !dataset.SameCadence(mc, f.Cadence) {
		return 0, 0, fmt.Errorf("report: %s steps every %s but the model was trained on %s steps; its learned periods would be read in the wrong units; "+
			"use data at the model's step, or train a model on this data", f.Name, f.Cadence, mc)
	}
	if cfg.Mode == model.Mixed && f.Channels() != cfg.Channels {
		return 0, 0, fmt.Errorf("report: %s has %d value columns but the model was trained on %d (%v); "+
			"use data with the same columns, or an independent model", f.Name, f.Channels(), cfg.Channels, m.Meta.ChannelNames)
	}
	channel = f.Channels() - 1
	if opts.Channel != "" {
		if channel = slices.Index(f.Columns, opts.Channel); channel < 0 {
			return 0, 0, fmt.Errorf("report: %s has no column %q; use one of %q", f.Name, opts.Channel, f.Columns)
		}
	}
	switch at = opts.At; {
	case at < 0 || (at > 0 && at < L-1):
		return 0, 0, fmt.Errorf("report: row %d cannot end a window of %d rows; use a row from %d to %d",
			at, L, L-1, f.Rows()-1)
	case at >= f.Rows():
		return 0, 0, fmt.Errorf("report: row %d is past the last data row %d of %s; use a row from %d to %d",
			at, f.Rows()-1, f.Name, L-1, f.Rows()-1)
	}
	return channel, at, nil
}

// setCycles fills Frequencies, Cycles, ResidualShare and OtherShare from
// the shares (per frequency id and per rhythm; nil when unknown).
func (r *Report) setCycles(m *model.Model, shares, rhythmShares []float64, residual float64) {
	r.ResidualShare = residual
	placed := map[int]bool{}
	for _, pk := range m.Meta.Peaks {
		placed[pk.ID] = true
	}
	byID, harmonic := map[int]int{}, map[int]int{}
	if shares != nil {
		seen := map[string]bool{}
		all := explain.RhythmShares(m, shares, rhythmShares)
		r.OtherShare = explain.OtherShare(all, residual)
		for _, rs := range all {
			if rs.Share < explain.MinCycleShare {
				continue
			}
			name := periodName(model.Frequency{PeriodSteps: rs.PeriodSteps, Period: rs.Period})
			if seen[name] {
				name += " #" + strconv.Itoa(rs.Index)
			}
			seen[name] = true
			for j, id := range rs.Frequencies {
				byID[id], harmonic[id] = len(r.Cycles), rs.Harmonics[j]
			}
			r.Cycles = append(r.Cycles, Cycle{RhythmShare: rs, Name: name})
		}
	}
	for _, f := range m.Frequencies() {
		fr := Frequency{Frequency: f, Cycle: -1, Placed: placed[f.ID]}
		if shares != nil {
			fr.Share = shares[f.ID]
		}
		if i, ok := byID[f.ID]; ok {
			fr.Cycle, fr.Harmonic = i, harmonic[f.ID]
		}
		r.Frequencies = append(r.Frequencies, fr)
	}
	slices.SortStableFunc(r.Frequencies, func(a, b Frequency) int { return cmp.Compare(a.PeriodSteps, b.PeriodSteps) })
}

// periodName says a period the way people do, or in steps without a cadence.
func periodName(f model.Frequency) string {
	if f.Period > 0 {
		return cycles.FormatPeriod(f.Period)
	}
	return strconv.FormatFloat(f.PeriodSteps, 'f', 1, 64) + " steps"
}

// explain forecasts the window of f that ends at row at and splits channel
// ch's forecast into the report's parts; opts.AtName and opts.Zone name the
// window's end in captions.
func (r *Report) explain(m *model.Model, f *dataset.Frame, at, ch int, opts Options) (*Forecast, error) {
	L, H, C := r.Lookback, r.Horizon, f.Channels()
	e, err := explain.New(m, C)
	if err != nil {
		return nil, err
	}
	x := make([]float64, 0, L*C)
	for t := at - L + 1; t <= at; t++ {
		x = append(x, f.Row(t)...)
	}
	var ends []int64
	if m.ReadsTime() {
		ends = []int64{f.Times[at].UnixNano()}
	}
	e.Forecast(x, ends)
	ex := e.Explain(0, nil)

	fc := &Forecast{At: at, Channel: f.Columns[ch], Level: ex.Level[ch],
		History: make([]float64, L), Values: make([]float64, H)}
	if at < len(f.Times) {
		fc.Time = f.Times[at]
	}
	stamp := fc.Time.Format(time.DateTime)
	if opts.Zone != nil {
		stamp = fc.Time.In(opts.Zone).Format(time.RFC3339)
	}
	fc.When = opts.AtName
	switch {
	case fc.When == "" && !fc.Time.IsZero():
		fc.When = stamp
	case fc.When == "":
		fc.When = fmt.Sprintf("row %d", at)
	case !fc.Time.IsZero():
		fc.When += " (" + stamp + ")"
	}
	for t := range L {
		fc.History[t] = x[t*C+ch]
	}
	for h := range H {
		fc.Values[h] = ex.Forecast[h*C+ch]
		if at+1+h < f.Rows() {
			fc.Actual = append(fc.Actual, f.Row(at + 1 + h)[ch])
		}
	}
	newPart := func(name string, kind PartKind, cycle int) Part {
		return Part{Name: name, Kind: kind, Cycle: cycle, Values: make([]float64, H)}
	}
	cycleOf := map[int]int{}
	for i, c := range r.Cycles {
		fc.Parts = append(fc.Parts, newPart(c.Name+" cycle", PartCycle, i))
		for _, id := range c.Frequencies {
			cycleOf[id] = i
		}
	}
	other := newPart("other frequencies", PartOther, -1)
	residual := newPart(r.ResidualName, PartResidual, -1)
	// Values: each shown cycle's summed part; everything else of the
	// frequencies, together, in "other frequencies". Shares as everywhere
	// (model.Contribution.Share), over this channel: a cycle, shown or not,
	// counts by its summed part, a frequency of no cycle by its own.
	weak := make([][]float64, len(m.Meta.Rhythms)) // a rhythm below explain.MinCycleShare: its summed part
	for _, ct := range ex.Contributions {
		dst := other.Values
		if i, ok := cycleOf[ct.ID]; ok {
			dst = fc.Parts[i].Values
		} else if rh, ok := m.RhythmOf(ct.ID); ok && rh < len(weak) {
			if weak[rh] == nil {
				weak[rh] = make([]float64, H)
			}
			for h := range H {
				weak[rh][h] += ct.Values[h*C+ch]
			}
		} else {
			for h := range H {
				other.Share += math.Abs(ct.Values[h*C+ch])
			}
		}
		for h := range H {
			dst[h] += ct.Values[h*C+ch]
		}
	}
	for _, v := range weak {
		for _, x := range v {
			other.Share += math.Abs(x)
		}
	}
	for h := range H {
		residual.Values[h] = ex.Residual[h*C+ch] - fc.Level
	}
	fc.Parts = append(fc.Parts, other, residual)
	total := 0.0
	for i := range fc.Parts {
		if fc.Parts[i].Kind != PartOther {
			for _, v := range fc.Parts[i].Values {
				fc.Parts[i].Share += math.Abs(v)
			}
		}
		total += fc.Parts[i].Share
	}
	for i := range fc.Parts {
		if total > 0 {
			fc.Parts[i].Share /= total
		}
	}
	return fc, nil
}

// intervalScale returns the std that turns channel ch's z-scored errors
// into data units, as serve scales them: the model's training std for a
// mixed model; for an independent one, which serves every series on its
// own scale, the std of the reported data's training rows (a long file's
// series, a wide file's column) and not the model's, which pools whatever
// series it was trained on. 0 when there is none.
func intervalScale(m *model.Model, bm *dataset.Benchmark, ch int) float64 {
	if m.Config().Mode == model.Mixed {
		if ch < len(m.Meta.Std) {
			return m.Meta.Std[ch]
		}
		return 0
	}
	if ch < len(bm.Scaler.Std) {
		return bm.Scaler.Std[ch]
	}
	return 0
}

// intervals returns the prediction intervals of channel ch's forecast
// values from the model's error quantiles, scaled from z-scores to data
// units by sd, nested across levels; nil when the model holds no quantiles
// or sd is 0.
func intervals(m *model.Model, values []float64, ch int, sd float64) []Interval {
	q := m.Meta.ErrorQuantiles
	if q == nil || !(sd > 0) || q.Horizon != len(values) {
		return nil
	}
	qc := 0
	if q.Channels > 1 {
		qc = ch
	}
	var out []Interval
	for k, level := range intervalLevels {
		iv := Interval{Level: level, Lower: make([]float64, len(values)), Upper: make([]float64, len(values))}
		for h, v := range values {
			iv.Lower[h] = v + q.Quantile((1-level)/2, h, qc)*sd
			iv.Upper[h] = v + q.Quantile((1+level)/2, h, qc)*sd
			if k > 0 {
				iv.Lower[h] = min(iv.Lower[h], out[k-1].Lower[h])
				iv.Upper[h] = max(iv.Upper[h], out[k-1].Upper[h])
			}
		}
		out = append(out, iv)
	}
	return out
}

// horizonErrors scores every test window of bm step by step, on the
// z-scored scale, the way measure.Evaluate scores them (same windows, same
// inputs), and the persistence baseline on the same windows.
func horizonErrors(ctx context.Context, m *model.Model, bm *dataset.Benchmark) (*HorizonErrors, error) {
	cfg := m.Config()
	L, H, mc := cfg.Lookback, cfg.Horizon, cfg.Channels
	w := bm.Test
	C := w.Channels()
	k := 1 // model windows per source window
	if cfg.Mode == model.Independent {
		k = C
	}
	per := max(1, 256/k) // source windows per batch
	ws := m.NewWorkspace(per * k)
	x := make([]float64, per*k*L*mc)
	var ends []int64
	var out []float64
	he := &HorizonErrors{Data: bm.Frame.Name, Protocol: string(bm.Protocol), Windows: w.Len(), Channels: C,
		MSE: make([]float64, H), MAE: make([]float64, H), PersistenceMSE: make([]float64, H)}
	for lo := 0; lo < w.Len(); lo += per {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(per, w.Len()-lo)
		ends = ends[:0]
		for j := range n {
			if m.ReadsTime() {
				t, ok := w.EndTime(lo + j)
				if !ok {
					return nil, fmt.Errorf("report: the model reads the time of each window, but %s has no timestamps", bm.Frame.Name)
				}
				for range k {
					ends = append(ends, t)
				}
			}
			in := w.Input(lo + j)
			if k == 1 {
				copy(x[j*L*C:(j+1)*L*C], in)
				continue
			}
			for c := range C {
				dst := x[(j*C+c)*L : (j*C+c+1)*L]
				for t := range L {
					dst[t] = in[t*C+c]
				}
			}
		}
		out = m.Forward(ws, out, x[:n*k*L*mc], ends)
		for j := range n {
			in, tg := w.Input(lo+j), w.Target(lo+j)
			for h := range H {
				for c := range C {
					var y float64
					if k == 1 {
						y = out[(j*H+h)*C+c]
					} else {
						y = out[(j*C+c)*H+h]
					}
					e := y - tg[h*C+c]
					he.MSE[h] += e * e
					he.MAE[h] += math.Abs(e)
					p := in[(L-1)*C+c] - tg[h*C+c]
					he.PersistenceMSE[h] += p * p
				}
			}
		}
	}
	norm := float64(w.Len() * C)
	for h := range H {
		he.MSE[h] /= norm
		he.MAE[h] /= norm
		he.PersistenceMSE[h] /= norm
		he.MeanMSE += he.MSE[h] / float64(H)
		he.MeanMAE += he.MAE[h] / float64(H)
	}
	return he, nil
}
