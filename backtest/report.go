package backtest

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/freqlens/freqlens/online"
	"github.com/freqlens/freqlens/service"
)

// Report is what a backtest measured. Errors, widths and interval scores
// are in units of each series' scale: a mixed model's training standard
// deviation per channel, else each series' channel's standard deviation
// over the history, so that series of any size count alike.
type Report struct {
	Data     string `json:"data"`
	Series   int    `json:"series"`
	Readings int    `json:"readings"`
	// Refused counts the readings refused, by reason: by the decoders as
	// the history was read, and by the windows and the pipeline as serve
	// refuses them (dead letters).
	Refused map[string]int `json:"refused,omitempty"`
	// From and To are the times of the first and the last forecast scored.
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Cadence  string    `json:"cadence"`
	Lookback int       `json:"lookback"`
	Horizon  int       `json:"horizon"`
	// FineTuning says online.enabled was on: the served model is then
	// fine-tuned and the frozen one is the model given.
	FineTuning bool `json:"fine_tuning"`
	// Forecasts is how many forecasts the pipeline issued; Points how many
	// (forecast, step, channel) values were scored, the same ones for
	// every method: those realised whose seasonal naive forecasts exist.
	Forecasts int64 `json:"forecasts"`
	Points    int64 `json:"points"`
	// Point is the point forecasts' error: served, frozen, seasonal naive
	// of the day and of the week (those the cadence has).
	Point []MethodScore `json:"point"`
	// Intervals scores the bands at each level.
	Intervals []LevelScore `json:"intervals,omitempty"`
	Bands     BandChecks   `json:"bands"`
	// Every is the length of a timeline stretch; Timeline what the
	// forecasts issued in each did.
	Every    string              `json:"every"`
	Timeline []Stretch           `json:"timeline"`
	Rounds   Rounds              `json:"rounds"`
	Drift    []online.DriftEvent `json:"drift_events"`
	Seconds  float64             `json:"seconds"`
	// ReadingsPerSecond is the replay's speed.
	ReadingsPerSecond float64 `json:"readings_per_second"`
}

// MethodScore is one way of forecasting's error.
type MethodScore struct {
	Method string  `json:"method"`
	MSE    float64 `json:"mse"`
	MAE    float64 `json:"mae"`
	// ByStep is the error at each horizon step, from step 1.
	ByStep []StepScore `json:"by_step"`
}

// StepScore is the error at one horizon step.
type StepScore struct {
	MSE    float64 `json:"mse"`
	MAE    float64 `json:"mae"`
	Points int64   `json:"points"`
}

// LevelScore is every band's score at one level.
type LevelScore struct {
	Level float64 `json:"level"`
	// Online is the bands the service published.
	Online BandScore `json:"online"`
	// Static is the split-conformal band: the served forecast ± the
	// quantiles of the model's errors on its held-out windows (recorded at
	// training), fixed; nil when the model records none.
	Static *BandScore `json:"static_split_conformal,omitempty"`
	// HindsightModel is the served forecast ± fixed quantiles of its own
	// errors over the whole backtest per step, and HindsightNaive the
	// same for the seasonal naive forecast of the day: bands that know
	// every error in advance, which no service can.
	HindsightModel BandScore  `json:"hindsight_model"`
	HindsightNaive *BandScore `json:"hindsight_naive_day,omitempty"`
}

// BandScore is a band's coverage, mean width and mean interval (Winkler)
// score, the width plus 2/α times how far the realised value lies outside:
// lower is better, and a band too wide pays for its width as one too
// narrow pays for its misses.
type BandScore struct {
	Coverage float64 `json:"coverage"`
	Width    float64 `json:"width"`
	Score    float64 `json:"score"`
	Points   int64   `json:"points"`
}

// BandChecks count the forecasts whose bands break nesting.
type BandChecks struct {
	// Published and Unpublished count the scored forecasts with and
	// without intervals.
	Published   int64 `json:"published"`
	Unpublished int64 `json:"unpublished"`
	// Identical counts forecasts with two levels' bands equal number for
	// number, Crossing those where a higher level's bound lies inside a
	// lower level's band, Touching those where two levels share a bound.
	Identical int64 `json:"identical"`
	Crossing  int64 `json:"crossing"`
	Touching  int64 `json:"touching"`
	// WiderThanMoved is per level the share of scored points whose band
	// was wider than the series had moved (its largest minus its smallest
	// value) up to the forecast, and WidestOverMoved the largest such
	// ratio.
	WiderThanMoved  []float64 `json:"wider_than_moved"`
	WidestOverMoved []float64 `json:"widest_over_moved"`
}

// Stretch is one stretch of the timeline: the forecasts issued in it.
type Stretch struct {
	Start     time.Time `json:"start"`
	Forecasts int64     `json:"forecasts"`
	// MAE is the served forecasts' mean absolute error.
	MAE float64 `json:"mae"`
	// Width, Coverage and Score are per level, of the published bands;
	// StaticWidth and StaticScore of the static split-conformal band.
	Width       []float64 `json:"width"`
	Coverage    []float64 `json:"coverage"`
	Score       []float64 `json:"score"`
	StaticWidth []float64 `json:"static_width,omitempty"`
	StaticScore []float64 `json:"static_score,omitempty"`
}

// Rounds are the fine-tuning rounds the learner ran.
type Rounds struct {
	ByOutcome map[string]int `json:"by_outcome"`
	List      []Round        `json:"list"`
}

// Round is one fine-tuning round, at the data time it ran.
type Round struct {
	At           time.Time `json:"at"`
	Outcome      string    `json:"outcome"`
	Version      int64     `json:"version"`
	NewVersion   int64     `json:"new_version,omitempty"`
	HoldoutPairs int       `json:"holdout_pairs,omitempty"`
	ServingMSE   float64   `json:"serving_mse,omitempty"`
	CandidateMSE float64   `json:"candidate_mse,omitempty"`
	Err          string    `json:"err,omitempty"`
}

func roundOf(at time.Time, r online.RoundResult) Round {
	rd := Round{At: at, Outcome: string(r.Outcome), Version: r.Version, NewVersion: r.NewVersion,
		HoldoutPairs: r.HoldoutPairs, ServingMSE: r.ServingMSE, CandidateMSE: r.CandidateMSE}
	if r.Err != nil {
		rd.Err = r.Err.Error()
	}
	return rd
}

// report assembles the Report.
func (r *run) report(h *History, cfg service.Config, src *source, events []online.DriftEvent, took time.Duration) *Report {
	sc := r.sc
	rep := &Report{
		Data: h.Name, Series: len(h.Series), Readings: h.Len(), From: sc.firstScored, To: sc.lastScored,
		Cadence: cfg.Cadence.String(), Lookback: sc.L, Horizon: sc.H, FineTuning: cfg.Online.Enabled,
		Forecasts: sc.forecasts, Every: (time.Duration(sc.bucketMs) * time.Millisecond).String(),
		Drift: events, Seconds: took.Seconds(), Rounds: Rounds{ByOutcome: map[string]int{}, List: r.rounds},
	}
	if rep.Drift == nil {
		rep.Drift = []online.DriftEvent{}
	}
	if rep.Rounds.List == nil {
		rep.Rounds.List = []Round{}
	}
	for _, rd := range r.rounds {
		rep.Rounds.ByOutcome[rd.Outcome]++
	}
	if took > 0 {
		rep.ReadingsPerSecond = float64(h.Len()) / took.Seconds()
	}
	refused := map[string]int{}
	maps.Copy(refused, h.Stats.Refused)
	for k, v := range src.refused {
		refused[k] += v
	}
	if len(refused) > 0 {
		rep.Refused = refused
	}
	for _, n := range sc.served.n {
		rep.Points += n
	}
	rep.Point = append(rep.Point, methodScore("served", sc.served))
	if cfg.Online.Enabled {
		rep.Point = append(rep.Point, methodScore("frozen", sc.frozen))
	}
	if sc.day > 0 {
		rep.Point = append(rep.Point, methodScore("seasonal naive, day", sc.naiveDay))
	}
	if sc.week > 0 {
		rep.Point = append(rep.Point, methodScore("seasonal naive, week", sc.naiveWeek))
	}
	for l, level := range sc.levels {
		ls := LevelScore{Level: level, Online: bandScore(sc.bands[l])}
		if sc.quantiles != nil {
			s := bandScore(sc.static[l])
			ls.Static = &s
		}
		lo, hi := sc.servedHist.hindsight(level)
		cov, w, s := sc.servedHist.band(lo, hi, 1-level)
		ls.HindsightModel = BandScore{Coverage: cov, Width: w, Score: s, Points: rep.Points}
		if sc.day > 0 {
			lo, hi := sc.naiveHist.hindsight(level)
			cov, w, s := sc.naiveHist.band(lo, hi, 1-level)
			ls.HindsightNaive = &BandScore{Coverage: cov, Width: w, Score: s, Points: rep.Points}
		}
		rep.Intervals = append(rep.Intervals, ls)
	}
	rep.Bands = BandChecks{Published: sc.withBands, Unpublished: sc.without, Identical: sc.identical, Crossing: sc.crossing,
		Touching: sc.touching, WidestOverMoved: slices.Clone(sc.widest), WiderThanMoved: make([]float64, len(sc.levels))}
	for l := range sc.levels {
		if n := sc.bands[l].n; n > 0 {
			rep.Bands.WiderThanMoved[l] = float64(sc.wider[l]) / float64(n)
		}
	}
	for _, k := range sc.timelineKeys() {
		b := sc.timeline[k]
		st := Stretch{Start: time.UnixMilli(k * sc.bucketMs).UTC(), Forecasts: b.forecasts, MAE: ratio(b.absErr, b.points)}
		for l := range sc.levels {
			bs := b.bands[l]
			st.Width = append(st.Width, ratio(bs.width, bs.n))
			st.Coverage = append(st.Coverage, ratio(float64(bs.covered), bs.n))
			st.Score = append(st.Score, ratio(bs.wink, bs.n))
			if sc.quantiles != nil {
				ss := b.static[l]
				st.StaticWidth = append(st.StaticWidth, ratio(ss.width, ss.n))
				st.StaticScore = append(st.StaticScore, ratio(ss.wink, ss.n))
			}
		}
		rep.Timeline = append(rep.Timeline, st)
	}
	return rep
}

// ratio is a/n, 0 when n is 0 (nothing scored: the counts say so).
func ratio(a float64, n int64) float64 {
	if n == 0 {
		return 0
	}
	return a / float64(n)
}

func methodScore(name string, p *pointSums) MethodScore {
	ms := MethodScore{Method: name}
	var sq, abs float64
	var n int64
	for h := range p.n {
		sq, abs, n = sq+p.sq[h], abs+p.abs[h], n+p.n[h]
		ms.ByStep = append(ms.ByStep, StepScore{MSE: ratio(p.sq[h], p.n[h]), MAE: ratio(p.abs[h], p.n[h]), Points: p.n[h]})
	}
	ms.MSE, ms.MAE = ratio(sq, n), ratio(abs, n)
	return ms
}

func bandScore(b bandSums) BandScore {
	return BandScore{Coverage: ratio(float64(b.covered), b.n), Width: ratio(b.width, b.n), Score: ratio(b.wink, b.n), Points: b.n}
}

// Method returns the point score of the named method, and false when the
// report has none.
func (r *Report) Method(name string) (MethodScore, bool) {
	for _, m := range r.Point {
		if m.Method == name {
			return m, true
		}
	}
	return MethodScore{}, false
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "backtest of %s: %d series, %d readings, forecasts issued %s to %s (every %s, L=%d, H=%d)\n",
		r.Data, r.Series, r.Readings, r.From.Format("2006-01-02 15:04"), r.To.Format("2006-01-02 15:04"), r.Cadence, r.Lookback, r.Horizon)
	if len(r.Refused) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.Refused)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.Refused[k]))
		}
		fmt.Fprintf(w, "refused readings: %s\n", strings.Join(parts, ", "))
	}
	tuning := "off: the model given served throughout"
	if r.FineTuning {
		tuning = "on: the frozen model is the one given, the served one was fine-tuned"
	}
	fmt.Fprintf(w, "%d forecasts, %d scored values; fine-tuning %s\n\n", r.Forecasts, r.Points, tuning)
	fmt.Fprintf(w, "point forecasts (units of each series' standard deviation):\n")
	fmt.Fprintf(w, "  %-22s %9s %9s", "", "MSE", "MAE")
	buckets := horizonBuckets(r.Horizon)
	for _, b := range buckets {
		fmt.Fprintf(w, " %11s", fmt.Sprintf("MSE %d-%d", b[0]+1, b[1]))
	}
	fmt.Fprintln(w)
	for _, m := range r.Point {
		fmt.Fprintf(w, "  %-22s %9.4f %9.4f", m.Method, m.MSE, m.MAE)
		for _, b := range buckets {
			fmt.Fprintf(w, " %11.4f", stepMean(m.ByStep[b[0]:b[1]]))
		}
		fmt.Fprintln(w)
	}
	if len(r.Intervals) > 0 {
		fmt.Fprintf(w, "\nprediction intervals (coverage, mean width, interval score; lower score is better):\n")
		for _, l := range r.Intervals {
			fmt.Fprintf(w, "  %2.0f%%  %-28s %6.1f%%  width %8.4f  score %8.4f\n", 100*l.Level, "online (published)", 100*l.Online.Coverage, l.Online.Width, l.Online.Score)
			if l.Static != nil {
				fmt.Fprintf(w, "       %-28s %6.1f%%  width %8.4f  score %8.4f\n", "static split conformal", 100*l.Static.Coverage, l.Static.Width, l.Static.Score)
			}
			fmt.Fprintf(w, "       %-28s %6.1f%%  width %8.4f  score %8.4f\n", "hindsight, model", 100*l.HindsightModel.Coverage, l.HindsightModel.Width, l.HindsightModel.Score)
			if l.HindsightNaive != nil {
				fmt.Fprintf(w, "       %-28s %6.1f%%  width %8.4f  score %8.4f\n", "hindsight, naive day", 100*l.HindsightNaive.Coverage, l.HindsightNaive.Width, l.HindsightNaive.Score)
			}
		}
		b := r.Bands
		fmt.Fprintf(w, "  %d forecasts with intervals, %d without; identical bands %d, crossing %d, sharing a bound %d\n",
			b.Published, b.Unpublished, b.Identical, b.Crossing, b.Touching)
	}
	fmt.Fprintf(w, "\nfine-tuning rounds: %d", len(r.Rounds.List))
	for _, k := range slices.Sorted(maps.Keys(r.Rounds.ByOutcome)) {
		fmt.Fprintf(w, ", %s %d", k, r.Rounds.ByOutcome[k])
	}
	fmt.Fprintf(w, "\ndrift events: %d\n", len(r.Drift))
	for _, e := range r.Drift {
		fmt.Fprintf(w, "  %s %s: period %.2f → %.2f steps (%+.1f%%), share %.2f\n", e.TS.Format("2006-01-02 15:04"), e.Kind,
			e.ReferencePeriod, e.Period, 100*e.RelativeChange, e.Share)
	}
	fmt.Fprintf(w, "%.1f s, %.0f readings/s\n", r.Seconds, r.ReadingsPerSecond)
}

// horizonBuckets splits H steps into up to four parts, [from, to).
func horizonBuckets(H int) [][2]int {
	n := min(4, H)
	var out [][2]int
	for i := range n {
		out = append(out, [2]int{i * H / n, (i + 1) * H / n})
	}
	return out
}

func stepMean(s []StepScore) float64 {
	var sum float64
	var n int
	for _, x := range s {
		if x.Points > 0 {
			sum += x.MSE
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
