package report_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/measure"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/report"
	"github.com/freqlens/freqlens/training"
)

// fixture is a small model trained on hourly synthetic data with a daily
// and a half-daily cycle, and that data.
type fixture struct {
	m     *model.Model
	frame *dataset.Frame
}

// syntheticFrame is hourly data of the given width with 24h and 12h cycles.
func syntheticFrame(series int) (*dataset.Frame, error) {
	return dataset.Synthetic(dataset.SyntheticConfig{
		Series: series, Steps: 1200, Cadence: time.Hour, Level: 10,
		Cycles:   []dataset.Cycle{{Period: 24 * time.Hour, Amplitude: 3}, {Period: 12 * time.Hour, Amplitude: 1.5}},
		NoiseStd: 0.3, SeriesJitter: 0.3, Seed: 5,
	})
}

// train trains a small model of mode on f the way `freqlens train` does
// (placement on the spectrum, test metrics and shares kept in Meta).
func train(f *dataset.Frame, mode model.Mode) (*model.Model, error) {
	const L, H = 48, 12
	bm, err := dataset.Standard(f, L, H)
	if err != nil {
		return nil, err
	}
	channels := f.Channels()
	if mode == model.Independent {
		channels = 1
	}
	m, err := model.New(model.Config{Lookback: L, Horizon: H, Channels: channels, Mode: mode,
		Hidden: 16, Frequencies: 12, TopK: 4}, 3)
	if err != nil {
		return nil, err
	}
	m.Meta = model.Meta{ChannelNames: f.Columns, Cadence: f.Cadence, Mean: bm.Scaler.Mean, Std: bm.Scaler.Std,
		DataName: "synthetic.csv", Seed: 3}
	ctx := context.Background()
	if _, err := training.Train(ctx, m, bm.Train, bm.Val, training.Config{Epochs: 3, Seed: 3}, nil); err != nil {
		return nil, err
	}
	met, err := measure.Evaluate(ctx, m, bm.Test, measure.Options{})
	if err != nil {
		return nil, err
	}
	m.Meta.Metrics = map[string]float64{"test_mse": met.MSE}
	m.Meta.Shares, m.Meta.ResidualShare, m.Meta.RhythmShares = met.Shares, met.ResidualShare, met.RhythmShares
	if m.Meta.ErrorQuantiles, err = measure.ErrorQuantiles(ctx, m, bm.Test, 4096); err != nil {
		return nil, err
	}
	return m, nil
}

// trained holds one model per mode, trained once for all tests on two
// series of syntheticFrame.
var trained = sync.OnceValues(func() (map[model.Mode]fixture, error) {
	f, err := syntheticFrame(2)
	if err != nil {
		return nil, err
	}
	fx := map[model.Mode]fixture{}
	for _, mode := range []model.Mode{model.Mixed, model.Independent} {
		m, err := train(f, mode)
		if err != nil {
			return nil, fmt.Errorf("train %s: %w", mode, err)
		}
		fx[mode] = fixture{m, f}
	}
	return fx, nil
})

func fixtureOf(t *testing.T, mode model.Mode) fixture {
	t.Helper()
	fx, err := trained()
	if err != nil {
		t.Fatal(err)
	}
	return fx[mode]
}

func build(t *testing.T, mode model.Mode, opts report.Options) *report.Report {
	t.Helper()
	fx := fixtureOf(t, mode)
	if opts.Data == nil {
		opts.Data = fx.frame
	}
	r, err := report.Build(context.Background(), fx.m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestIntervalsOnTheSeriesScale: an independent model serves each series on
// its own scale, so the report's intervals for data fifty times as spread
// (a pressure sensor beside the temperatures the model also learnt from)
// are fifty times as wide: the series' own training std, not the one the
// model file pools over whatever it was trained on.
func TestIntervalsOnTheSeriesScale(t *testing.T) {
	fx := fixtureOf(t, model.Independent)
	base := build(t, model.Independent, report.Options{})
	scaled := *fx.frame
	scaled.Values = make([]float64, len(fx.frame.Values))
	for i, v := range fx.frame.Values {
		scaled.Values[i] = 1000 + 50*v
	}
	r, err := report.Build(context.Background(), fx.m, report.Options{Data: &scaled})
	if err != nil {
		t.Fatal(err)
	}
	for k, iv := range r.Forecast.Intervals {
		b := base.Forecast.Intervals[k]
		for h := range iv.Lower {
			got, want := iv.Upper[h]-iv.Lower[h], 50*(b.Upper[h]-b.Lower[h])
			if math.Abs(got-want) > 1e-6*want {
				t.Fatalf("level %v step %d: the interval is %v wide on data 50 times as spread, want %v", iv.Level, h, got, want)
			}
		}
	}
}

// checkPartShares: the shares of an independent model's one-channel
// forecast are the ones predict and serve give for that channel's window
// alone (the model's own units are the channel's): each shown cycle its
// rhythm's, the residual its, the other frequencies the rest.
func checkPartShares(t *testing.T, m *model.Model, fc *report.Forecast, cycles []report.Cycle) {
	t.Helper()
	e, err := explain.New(m, 1)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	if m.ReadsTime() {
		ends = []int64{fc.Time.UnixNano()}
	}
	e.Forecast(fc.History, ends)
	ex := e.Explain(0, nil)
	for _, p := range fc.Parts {
		var want float64
		switch p.Kind {
		case report.PartCycle:
			want = ex.Rhythms[cycles[p.Cycle].Index].Share
		case report.PartResidual:
			want = ex.ResidualShare
		default:
			want = 1 - ex.ResidualShare
			for _, c := range cycles {
				want -= ex.Rhythms[c.Index].Share
			}
		}
		if math.Abs(p.Share-want) > 1e-9 {
			t.Errorf("part %s: share %v, the explanation of the window alone says %v", p.Name, p.Share, want)
		}
	}
}

func TestNumbersAreTheModels(t *testing.T) {
	for _, mode := range []model.Mode{model.Mixed, model.Independent} {
		t.Run(string(mode), func(t *testing.T) {
			fx := fixtureOf(t, mode)
			r := build(t, mode, report.Options{})

			// The forecast is the level plus its parts, step by step.
			fc := r.Forecast
			if len(fc.Values) != 12 || len(fc.History) != 48 || len(fc.Actual) != 12 {
				t.Fatalf("forecast has %d steps, %d history, %d actual; want 12, 48, 12", len(fc.Values), len(fc.History), len(fc.Actual))
			}
			for h, v := range fc.Values {
				sum := fc.Level
				for _, p := range fc.Parts {
					sum += p.Values[h]
				}
				if math.Abs(sum-v) > 1e-9*math.Max(1, math.Abs(v)) {
					t.Fatalf("step %d: level + parts = %v, forecast %v", h, sum, v)
				}
			}
			shares := 0.0
			for _, p := range fc.Parts {
				shares += p.Share
			}
			if math.Abs(shares-1) > 1e-9 {
				t.Errorf("part shares sum to %v, want 1", shares)
			}
			if mode == model.Independent {
				checkPartShares(t, fx.m, fc, r.Cycles)
			}

			// The intervals are the model's error quantiles around the
			// forecast, in data units, the 95% one around the 80% one.
			ch := slices.Index(fx.frame.Columns, fc.Channel)
			q, qc := fx.m.Meta.ErrorQuantiles, 0
			if q.Channels > 1 {
				qc = ch
			}
			if len(fc.Intervals) != 2 {
				t.Fatalf("%d intervals, want 2", len(fc.Intervals))
			}
			for h, v := range fc.Values {
				i80, i95 := fc.Intervals[0], fc.Intervals[1]
				if want := v + q.Quantile(0.1, h, qc)*fx.m.Meta.Std[ch]; math.Abs(i80.Lower[h]-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("step %d: 80%% lower bound %v, want forecast + the 0.1 error quantile × std = %v", h, i80.Lower[h], want)
				}
				if !(i95.Lower[h] <= i80.Lower[h] && i80.Lower[h] < i80.Upper[h] && i80.Upper[h] <= i95.Upper[h]) {
					t.Fatalf("step %d: 80%% [%v, %v] and 95%% [%v, %v] are not nested intervals", h, i80.Lower[h], i80.Upper[h], i95.Lower[h], i95.Upper[h])
				}
			}

			// The default window is the last test window: its actuals are the data's last rows.
			last := fx.frame.Rows() - 1
			if got := fc.Actual[len(fc.Actual)-1]; got != fx.frame.Row(last)[1] || fc.At != last-12 {
				t.Errorf("default window ends at row %d with last actual %v; want row %d ending the data (%v)", fc.At, got, last-12, fx.frame.Row(last)[1])
			}

			// The error by horizon averages to the protocol's test MSE.
			bm, err := dataset.Standard(fx.frame, 48, 12)
			if err != nil {
				t.Fatal(err)
			}
			met, err := measure.Evaluate(context.Background(), fx.m, bm.Test, measure.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if e := r.Errors; math.Abs(e.MeanMSE-met.MSE) > 1e-9*met.MSE || math.Abs(e.MeanMAE-met.MAE) > 1e-9*met.MAE || e.Windows != met.Windows {
				t.Errorf("by horizon: MSE %v MAE %v over %d windows; Evaluate: %v %v over %d", e.MeanMSE, e.MeanMAE, e.Windows, met.MSE, met.MAE, met.Windows)
			}
			if r.Errors.PersistenceMSE[11] <= r.Errors.MSE[11] {
				t.Errorf("12 steps ahead the model's MSE %v is not below repeating the last value %v", r.Errors.MSE[11], r.Errors.PersistenceMSE[11])
			}

			// The cycles are the model's rhythms, named, with the shares of this data.
			var want []explain.RhythmShare
			for _, rs := range explain.RhythmShares(fx.m, met.Shares, met.RhythmShares) {
				if rs.Share >= explain.MinCycleShare {
					want = append(want, rs)
				}
			}
			if len(r.Cycles) != len(want) || len(want) == 0 {
				t.Fatalf("%d cycles, the model's rhythms with 1%% of the attribution are %d (want at least one)", len(r.Cycles), len(want))
			}
			for i, c := range r.Cycles {
				if c.Index != want[i].Index || math.Abs(c.Share-want[i].Share) > 1e-12 {
					t.Errorf("cycle %d is rhythm %d with share %v, the model's is rhythm %d with %v", i, c.Index, c.Share, want[i].Index, want[i].Share)
				}
			}
			if !slices.ContainsFunc(r.Cycles, func(c report.Cycle) bool { return c.Name == "24.0h" }) {
				t.Errorf("no cycle named 24.0h among %v", r.Cycles)
			}
		})
	}
}

// rgb is a colour without alpha, for counting pixels.
type rgb struct{ r, g, b uint8 }

func rgbOf(c color.Color) rgb {
	r, g, b, _ := c.RGBA()
	return rgb{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

// picture is a decoded PNG.
type picture struct {
	img  image.Image
	w, h int
}

func decode(t *testing.T, path string) picture {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	return picture{img, b.Dx(), b.Dy()}
}

// count counts the pixels of colour c (±4 per channel: anti-aliasing
// leaves the middle of a line and the inside of a filled area exact) in the
// region of fractions [x0, x1) × [y0, y1) of the picture, y from the top.
func (p picture) count(c color.Color, x0, x1, y0, y1 float64) int {
	want := rgbOf(c)
	near := func(a, b uint8) bool { return max(a, b)-min(a, b) <= 4 }
	n := 0
	for y := int(y0 * float64(p.h)); y < int(y1*float64(p.h)); y++ {
		for x := int(x0 * float64(p.w)); x < int(x1*float64(p.w)); x++ {
			got := rgbOf(p.img.At(x, y))
			if near(got.r, want.r) && near(got.g, want.g) && near(got.b, want.b) {
				n++
			}
		}
	}
	return n
}

// columns returns the x of every column holding at least minPix pixels of c.
func (p picture) columns(c color.Color, minPix int) []int {
	var xs []int
	for x := range p.w {
		if p.count(c, float64(x)/float64(p.w), float64(x+1)/float64(p.w), 0, 1) >= minPix {
			xs = append(xs, x)
		}
	}
	return xs
}

// clusters groups sorted xs into runs no more than gap apart and returns
// each run's middle.
func clusters(xs []int, gap int) []float64 {
	var mids []float64
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1]-xs[j] <= gap {
			j++
		}
		mids = append(mids, float64(xs[i]+xs[j])/2)
		i = j + 1
	}
	return mids
}

// partColor is the colour a forecast part should be drawn in: its cycle's,
// or the colour of other frequencies or of the residual.
func partColor(p report.Part) color.Color {
	switch p.Kind {
	case report.PartCycle:
		return report.CycleColors[p.Cycle]
	case report.PartResidual:
		return report.ResidualColor
	}
	return report.OtherColor
}

func TestPageIsSelfContained(t *testing.T) {
	r := build(t, model.Independent, report.Options{Channel: "s-0", At: 700, AtName: "row 700"})
	dir := t.TempDir()
	if _, err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(string(page), -1)
	if len(links) < 6 {
		t.Fatalf("the page links %d files, want the three figures as PNG and SVG", len(links))
	}
	for _, l := range links {
		if strings.Contains(l[1], ":") || strings.HasPrefix(l[1], "/") {
			t.Errorf("link %q is not relative", l[1])
		} else if _, err := os.Stat(filepath.Join(dir, l[1])); err != nil {
			t.Errorf("link %q: %v", l[1], err)
		}
	}
	if strings.Contains(string(page), "http") || strings.Contains(string(page), "<script") {
		t.Error("the page refers to the network or runs a script")
	}
	for _, want := range []string{"ending at row 700 (" + r.Forecast.Time.Format(time.DateTime) + ")", "s-0", "24.0h", "residual MLP"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	if r.Forecast.At != 700 || r.Forecast.Channel != "s-0" {
		t.Errorf("explained row %d channel %s, want row 700 channel s-0", r.Forecast.At, r.Forecast.Channel)
	}
	// Unnamed, the window's end is its time: the frame's rows need not be
	// the file's (filled gaps, a long file's series).
	if r := build(t, model.Independent, report.Options{Channel: "s-0", At: 700}); r.Forecast.Time.IsZero() || r.Forecast.When != r.Forecast.Time.Format(time.DateTime) {
		t.Errorf("the window's end is named %q, want its time %v", r.Forecast.When, r.Forecast.Time)
	}
}

func TestSameInputsSameBytes(t *testing.T) {
	var dirs []string
	for range 2 {
		r := build(t, model.Mixed, report.Options{})
		dir := t.TempDir()
		if _, err := r.Write(dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	entries, err := os.ReadDir(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		a, _ := os.ReadFile(filepath.Join(dirs[0], e.Name()))
		b, err := os.ReadFile(filepath.Join(dirs[1], e.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two reports of the same model and data (%v)", e.Name(), err)
		}
	}
}

func TestModelAlone(t *testing.T) {
	fx := fixtureOf(t, model.Mixed)
	r, err := report.Build(context.Background(), fx.m, report.Options{Name: "m.safetensors"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Forecast != nil || r.Errors != nil || r.SharesFrom != "the test split at training time" || len(r.Cycles) == 0 {
		t.Fatalf("report without data: forecast %v, errors %v, shares from %q, %d cycles", r.Forecast != nil, r.Errors != nil, r.SharesFrom, len(r.Cycles))
	}
	dir := t.TempDir()
	files, err := r.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Errorf("wrote %v, want the spectrum (PNG, SVG) and the page", files)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if !strings.Contains(string(page), "--data") || strings.Contains(string(page), "forecast.png") {
		t.Error("the page of a model alone should point to --data and show no forecast")
	}

	// A model file without shares still draws its spectrum.
	bare := fx.m.Clone()
	bare.Meta.Shares = nil
	if r, err = report.Build(context.Background(), bare, report.Options{}); err != nil {
		t.Fatal(err)
	}
	if r.SharesFrom != "" || len(r.Cycles) != 0 || len(r.Frequencies) != 12 {
		t.Errorf("no shares: from %q, %d cycles, %d frequencies; want unknown, none, 12", r.SharesFrom, len(r.Cycles), len(r.Frequencies))
	}
	if _, err := r.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}

	// A model that does not know its cadence: periods in steps, no
	// reference lines (12h means nothing without a cadence).
	stepsOnly := fx.m.Clone()
	stepsOnly.Meta.Cadence = 0
	if r, err = report.Build(context.Background(), stepsOnly, report.Options{}); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Cycles, func(c report.Cycle) bool { return c.Name == "24.0 steps" }) {
		t.Errorf("without a cadence the cycles are %v, want one named 24.0 steps", r.Cycles)
	}
	dir = t.TempDir()
	if _, err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	p := decode(t, filepath.Join(dir, "spectrum.png"))
	if n := p.count(report.ReferenceColor, 0, 1, 0, 1); n > 0 {
		t.Errorf("%d pixels of reference lines in the spectrum of a model without cadence", n)
	}
	if n := p.count(report.CycleColors[0], 0.08, 0.74, 0.1, 0.92); n < 40 {
		t.Errorf("the largest cycle has %d pixels of its colour, want ≥ 40", n)
	}
}

func TestBadInputIsRefusedWithAFix(t *testing.T) {
	fx := fixtureOf(t, model.Mixed)
	narrow, err := syntheticFrame(3)
	if err != nil {
		t.Fatal(err)
	}
	quarterHourly := *fx.frame
	quarterHourly.Cadence = fx.m.Meta.Cadence / 4
	// A cadence inferred a little off the model's (readings stamped with
	// jitter, months of 30 and 31 days) is the same step.
	jittered := *fx.frame
	jittered.Cadence = fx.m.Meta.Cadence * 102 / 100
	if _, err := report.Build(context.Background(), fx.m, report.Options{Data: &jittered}); err != nil {
		t.Errorf("data stepping 2%% off the model's cadence: %v; want it accepted", err)
	}
	for _, tc := range []struct {
		name string
		data *dataset.Frame
		opts report.Options
		want string
	}{
		{name: "data of another width", data: narrow, want: "has 3 value columns but the model was trained on 2"},
		{name: "data of another step", data: &quarterHourly, want: "steps every 15m0s but the model was trained on 1h0m0s steps"},
		{name: "row before a full window", data: fx.frame, opts: report.Options{At: 10}, want: "use a row from 47 to 1199"},
		{name: "negative row", data: fx.frame, opts: report.Options{At: -1}, want: "use a row from 47 to 1199"},
		{name: "row past the data", data: fx.frame, opts: report.Options{At: 1200}, want: "past the last data row 1199"},
		{name: "unknown channel", data: fx.frame, opts: report.Options{Channel: "OT"}, want: `no column "OT"; use one of ["s-0" "s-1"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Data = tc.data
			_, err := report.Build(context.Background(), fx.m, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestNoIntervalsWithoutErrorQuantiles: a model file from before the error
// quantiles gets a forecast figure without bands.
func TestNoIntervalsWithoutErrorQuantiles(t *testing.T) {
	fx := fixtureOf(t, model.Mixed)
	m := fx.m.Clone()
	m.Meta.ErrorQuantiles = nil
	r, err := report.Build(context.Background(), m, report.Options{Data: fx.frame})
	if err != nil {
		t.Fatal(err)
	}
	if r.Forecast.Intervals != nil {
		t.Errorf("%d intervals from a model without error quantiles, want none", len(r.Forecast.Intervals))
	}
	dir := t.TempDir()
	if _, err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	p := decode(t, filepath.Join(dir, "forecast.png"))
	// The same figure with the bands, to measure what a band covers.
	withBands, err := report.Build(context.Background(), fx.m, report.Options{Data: fx.frame})
	if err != nil {
		t.Fatal(err)
	}
	bandDir := t.TempDir()
	if _, err := withBands.Write(bandDir); err != nil {
		t.Fatal(err)
	}
	pb := decode(t, filepath.Join(bandDir, "forecast.png"))
	for _, c := range report.BandColors {
		// The forecast line's anti-aliased edge blends into a few pixels of
		// these light blues; a band covers many times more.
		n, band := p.count(c, 0, 1, 0, 1), pb.count(c, 0, 1, 0, 1)
		if band < 200 || n > band/10 {
			t.Errorf("%d pixels of a band's colour in a figure without intervals, %d with them: want a band's many times more than a line's edge", n, band)
		}
	}
}

// TestAWeakCycleCountsByItsSummedPart: a rhythm too small to be shown as a
// cycle (below explain.MinCycleShare of the attribution over the data) goes
// into "other frequencies" by its summed part, as the explanation counts
// it, not by its lines each on its own. The fixture's independent model
// gets a second rhythm of two free frequencies (a 40-hour period and its
// second harmonic) whose heads are scaled down until the rhythm is below
// the threshold; its lines still move the forecast.
func TestAWeakCycleCountsByItsSummedPart(t *testing.T) {
	fx := fixtureOf(t, model.Independent)
	m := fx.m.Clone()
	cfg := m.Config()
	var free []int
	for id := range cfg.Frequencies {
		if _, ok := m.RhythmOf(id); !ok {
			free = append(free, id)
		}
	}
	if len(free) < 2 {
		t.Fatalf("the fixture has %d free frequencies, want 2", len(free))
	}
	rs := append(slices.Clone(m.Meta.Rhythms), cycles.Rhythm{PeriodSteps: 40, Frequencies: free[:2], Harmonics: []int{1, 2}})
	m.SetRhythms(rs)
	weak := len(rs) - 1
	bm, err := dataset.Standard(fx.frame, cfg.Lookback, cfg.Horizon)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Params()
	HC := cfg.Horizon * cfg.Channels
	E := len(p.HeadW2) / (cfg.Frequencies * HC)
	scale := func(xs []float64, s float64) {
		for i := range xs {
			xs[i] *= s
		}
	}
	var share float64
	for range 20 {
		met, err := measure.Evaluate(context.Background(), m, bm.Test, measure.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if share = met.RhythmShares[weak]; share < explain.MinCycleShare/2 {
			break
		}
		for _, id := range free[:2] {
			scale(p.HeadW2[id*E*HC:(id+1)*E*HC], 0.5)
			scale(p.Clock[id*2*cfg.Channels:(id+1)*2*cfg.Channels], 0.5)
			if len(p.Band) > 0 {
				scale(p.Band[id*2*cfg.Horizon:(id+1)*2*cfg.Horizon], 0.5)
			}
		}
	}
	if !(share > 1e-5 && share < explain.MinCycleShare/2) {
		t.Fatalf("the added rhythm's share is %v; want it below %v but not nothing", share, explain.MinCycleShare/2)
	}
	r, err := report.Build(context.Background(), m, report.Options{Data: fx.frame})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(r.Cycles, func(c report.Cycle) bool { return c.Index == weak }) {
		t.Fatalf("the rhythm of %v is shown as a cycle with a share of %v", share, r.Cycles)
	}
	if len(r.Cycles) == 0 {
		t.Fatal("no cycle is shown; the fixture's day should be")
	}
	// Its lines move this forecast, and not always the same way.
	e, err := explain.New(m, 1)
	if err != nil {
		t.Fatal(err)
	}
	fc := r.Forecast
	e.Forecast(fc.History, []int64{fc.Time.UnixNano()})
	ex := e.Explain(0, nil)
	var own, summed float64
	for h := range cfg.Horizon {
		sum := 0.0
		for _, ct := range ex.Contributions {
			if slices.Contains(free[:2], ct.ID) {
				sum += ct.Values[h]
				own += math.Abs(ct.Values[h])
			}
		}
		summed += math.Abs(sum)
	}
	if !(summed > 0 && own > summed*(1+1e-6)) {
		t.Fatalf("the weak rhythm's lines come to %v on their own and %v summed; the test needs lines that partly cancel", own, summed)
	}
	checkPartShares(t, m, fc, r.Cycles)
}

// TestChannelMixNamesItsResidual: the residual of a model with the channel
// mix reads every channel's leftover, and the report's part, table and
// spectrum say so.
func TestChannelMixNamesItsResidual(t *testing.T) {
	fx := fixtureOf(t, model.Mixed)
	cfg := fx.m.Config()
	cfg.ChannelMix = true
	m, err := model.New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The trained model's weights, the residual's on its own block and a
	// mix of zero: the same forecasts, parts and cycles (model's
	// TestChannelMixStartsAsTheModelWithout), told apart only by the residual's name.
	m.Meta = fx.m.Meta
	m.SetRhythms(fx.m.Meta.Rhythms)
	p, q := fx.m.Params(), m.Params()
	for _, v := range [][2][]float64{{p.InW, q.InW}, {p.InB, q.InB}, {p.Theta, q.Theta}, {p.Phi, q.Phi}, {p.ScW1, q.ScW1},
		{p.ScB1, q.ScB1}, {p.ScW2, q.ScW2}, {p.FreqBias, q.FreqBias}, {p.HeadW1, q.HeadW1}, {p.HeadW2, q.HeadW2},
		{p.ResW1, q.ResW1}, {p.ResB1, q.ResB1}, {p.ResW2, q.ResW2}, {p.ResB2, q.ResB2}, {p.Fusion, q.Fusion},
		{p.Clock, q.Clock}, {p.Band, q.Band}} {
		copy(v[1], v[0]) // ResW1: the trained rows are the first L, the block of the own leftover
	}
	for _, c := range []struct {
		m    *model.Model
		want string
	}{{fx.m, "residual MLP"}, {m, "residual (all channels)"}} {
		r, err := report.Build(context.Background(), c.m, report.Options{Data: fx.frame})
		if err != nil {
			t.Fatal(err)
		}
		if r.ResidualName != c.want || !slices.ContainsFunc(r.Forecast.Parts, func(p report.Part) bool { return p.Name == c.want }) {
			t.Errorf("channel mix %t: residual named %q, forecast parts %v; want %q", c.m.Config().ChannelMix, r.ResidualName, r.Forecast.Parts, c.want)
		}
		dir := t.TempDir()
		if _, err := r.Write(dir); err != nil {
			t.Fatal(err)
		}
		page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
		if !strings.Contains(string(page), "<td>"+c.want+"</td>") {
			t.Errorf("channel mix %t: the page's table does not name the residual %q (%d cycles)", c.m.Config().ChannelMix, c.want, len(r.Cycles))
		}
	}
}
