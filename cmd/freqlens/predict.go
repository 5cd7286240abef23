package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/model"
)

type predictContribution struct {
	ID            int      `json:"id"`
	Frequency     float64  `json:"frequency"`
	PeriodSteps   float64  `json:"period_steps"`
	Period        string   `json:"period,omitempty"`
	PeriodSeconds *float64 `json:"period_seconds,omitempty"`
	Share         float64  `json:"share"`
	// Cycle says the frequency sits on a cycle of the training data (a
	// peak of its spectrum); other frequencies carry what has no cycle.
	Cycle  bool        `json:"cycle"`
	Values [][]float64 `json:"values"`
}

// predictReport is what `predict --json` prints. Values are in the data's
// units; forecast = residual + Σ contributions.values, element by element.
type predictReport struct {
	Model         string                `json:"model"`
	Data          string                `json:"data"`
	At            int                   `json:"at"`
	Time          string                `json:"time"`
	Channels      []string              `json:"channels"`
	Times         []string              `json:"times,omitempty"`
	Alpha         float64               `json:"alpha"`
	Forecast      [][]float64           `json:"forecast"`
	Residual      [][]float64           `json:"residual"`
	ResidualShare float64               `json:"residual_share"`
	Level         []float64             `json:"level"`
	Contributions []predictContribution `json:"contributions"`
	Actual        [][]float64           `json:"actual"`
}

func runPredict(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	modelPath := fs.String("model", "", "model file written by 'freqlens train'")
	data := fs.String("data", "", "CSV holding the window")
	at := fs.Int("at", -1, "0-based data row (header not counted) that ends the input window")
	asJSON := fs.Bool("json", false, "print the forecast and its attribution as one JSON object")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "model", "data"); err != nil {
		return err
	}
	m, err := model.Load(*modelPath)
	if err != nil {
		return err
	}
	frame, err := dataset.LoadCSV(*data)
	if err != nil {
		return err
	}
	if err := checkChannels(m, frame, *data); err != nil {
		return err
	}
	L, H := m.Lookback(), m.Horizon()
	switch {
	case *at < 0:
		return fmt.Errorf("--at is required: the 0-based data row that ends the window (from %d to %d for this file)", L-1, frame.Rows()-1)
	case *at >= frame.Rows():
		return fmt.Errorf("--at %d is past the last data row %d", *at, frame.Rows()-1)
	case *at < L-1:
		return fmt.Errorf("--at %d leaves %d rows for a window of %d; use a row from %d on", *at, *at+1, L, L-1)
	}
	if n := len(m.Meta.Mean); n != 0 && n != frame.Channels() {
		return fmt.Errorf("the model was trained on %d columns and normalises with their statistics, but %s has %d", n, *data, frame.Channels())
	}
	rep, err := predict(m, frame, *at)
	if err != nil {
		return err
	}
	rep.Model, rep.Data = *modelPath, *data
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	printPredict(stdout, rep, H)
	return nil
}

// predict forecasts the window ending at row at and explains it in the
// data's units (the model's Explainer applies and undoes its training
// normalisation; shares are measured on the model's scale).
func predict(m *model.Model, frame *dataset.Frame, at int) (predictReport, error) {
	L, H, C := m.Lookback(), m.Horizon(), frame.Channels()
	e, err := m.NewExplainer(C)
	if err != nil {
		return predictReport{}, err
	}
	x := make([]float64, 0, L*C)
	for t := range L {
		x = append(x, frame.Row(at-L+1+t)...)
	}
	e.Forecast(x)
	ex := e.Explain(0, nil)

	rows := func(v []float64) [][]float64 {
		g := grid(H, C)
		for h := range H {
			copy(g[h], v[h*C:(h+1)*C])
		}
		return g
	}
	rep := predictReport{
		At: at, Channels: frame.Columns, Alpha: ex.Alpha, Level: ex.Level,
		Forecast: rows(ex.Forecast), Residual: rows(ex.Residual), ResidualShare: ex.ResidualShare,
	}
	placed := map[int]bool{}
	for _, pk := range m.Meta.Peaks {
		placed[pk.ID] = true
	}
	for _, ct := range ex.Contributions {
		pc := predictContribution{ID: ct.ID, Frequency: ct.Frequency.Frequency, PeriodSteps: ct.PeriodSteps, Share: ct.Share,
			Cycle: placed[ct.ID], Values: rows(ct.Values)}
		if ct.Period > 0 {
			s := ct.Period.Seconds()
			pc.Period, pc.PeriodSeconds = model.FormatPeriod(ct.Period), &s
		}
		rep.Contributions = append(rep.Contributions, pc)
	}
	if at < len(frame.Times) {
		rep.Time = frame.Times[at].Format(time.DateTime)
		if frame.Cadence > 0 {
			for h := range H {
				rep.Times = append(rep.Times, frame.Times[at].Add(time.Duration(h+1)*frame.Cadence).Format(time.DateTime))
			}
		}
	}
	if at+H < frame.Rows() {
		rep.Actual = grid(H, C)
		for h := range H {
			copy(rep.Actual[h], frame.Row(at+1+h))
		}
	}
	return rep, nil
}

func grid(rows, cols int) [][]float64 {
	g := make([][]float64, rows)
	for i := range g {
		g[i] = make([]float64, cols)
	}
	return g
}

func printPredict(w io.Writer, r predictReport, H int) {
	fmt.Fprintf(w, "forecast of %d steps after row %d", H, r.At)
	if r.Time != "" {
		fmt.Fprintf(w, " (%s)", r.Time)
	}
	fmt.Fprintf(w, ", alpha %.3f\n\nwhat drives it (share of the total absolute attribution):\n", r.Alpha)
	others := false
	for _, c := range r.Contributions {
		label := periodLabel(c.Period, c.PeriodSteps) + " cycle"
		if !c.Cycle {
			label, others = periodLabel(c.Period, c.PeriodSteps)+" frequency*", true
		}
		fmt.Fprintf(w, "  %-22s (id %2d) %5.1f%%\n", label, c.ID, 100*c.Share)
	}
	fmt.Fprintf(w, "  %-22s         %5.1f%%\n", "residual MLP", 100*r.ResidualShare)
	if others {
		fmt.Fprintln(w, "  * not a cycle of the training data: a frequency that carries what has no peak in its spectrum")
	}
	show := min(H, 6)
	fmt.Fprintf(w, "\nfirst %d steps (forecast", show)
	if r.Actual != nil {
		fmt.Fprint(w, " / actual")
	}
	fmt.Fprintln(w, "):")
	for h := range show {
		label := fmt.Sprintf("+%d", h+1)
		if len(r.Times) > h {
			label = r.Times[h]
		}
		fmt.Fprintf(w, "  %-20s", label)
		for c := range r.Channels {
			if r.Actual != nil {
				fmt.Fprintf(w, " %s %.3f/%.3f", r.Channels[c], r.Forecast[h][c], r.Actual[h][c])
			} else {
				fmt.Fprintf(w, " %s %.3f", r.Channels[c], r.Forecast[h][c])
			}
		}
		fmt.Fprintln(w)
	}
}
