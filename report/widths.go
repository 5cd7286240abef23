package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Widths is what a backtest's figure of its bands over time draws (package
// backtest's Report.Timeline, which cmd/freqlens hands over): per stretch
// of data time, the mean width of the published bands at each level, that
// of the static split-conformal band, and the served forecasts' mean
// absolute error, all in units of each series' scale. A band that winds
// up after a shock and does not come back shows as a line that leaves the
// error's and stays away.
type Widths struct {
	// Title names what was replayed.
	Title  string
	Levels []float64
	// Start is each stretch's start; Width and StaticWidth hold per level
	// one value per stretch (StaticWidth nil when the model records no
	// error quantiles), MAE one per stretch. A stretch without forecasts
	// has NaN.
	Start       []time.Time
	Width       [][]float64
	StaticWidth [][]float64
	MAE         []float64
}

// WriteWidths draws w into dir (created when missing) as widths.png and
// widths.svg and returns their paths.
func WriteWidths(dir string, w Widths) ([]string, error) {
	if len(w.Start) == 0 {
		return nil, fmt.Errorf("report: the backtest has no timeline to draw (no forecast was scored)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: create the output directory: %w", err)
	}
	fig := widthsFigure(w)
	var written []string
	for _, f := range []struct {
		ext    string
		render func() ([]byte, error)
	}{{"png", fig.png}, {"svg", fig.svg}} {
		b, err := f.render()
		if err != nil {
			return written, fmt.Errorf("report: draw %s.%s: %w", fig.name, f.ext, err)
		}
		path := filepath.Join(dir, fig.name+"."+f.ext)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return written, fmt.Errorf("report: %w", err)
		}
		written = append(written, path)
	}
	return written, nil
}

// widthColors draw the published bands, the narrowest level first.
var widthColors = [...]color.RGBA{{0x00, 0x72, 0xb2, 0xff}, {0x56, 0xb4, 0xe9, 0xff}, {0x00, 0x9e, 0x73, 0xff}}

func widthsFigure(w Widths) figure {
	x := make([]float64, len(w.Start))
	for i, t := range w.Start {
		x[i] = float64(t.Unix())
	}
	p := newPlot(fmt.Sprintf("Prediction-interval width over time: %s\nper stretch of %s, in units of each series' scale",
		w.Title, stretchName(w.Start)), "data time", "width (series' scale)")
	p.X.Tick.Marker = plot.TimeTicks{Format: "Jan 2"}
	for l, level := range w.Levels {
		c := widthColors[min(l, len(widthColors)-1)]
		line := &gapline{xs: x, ys: finiteOrGap(w.Width[l]), style: solid(c, 2)}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%.0f%% bands published", 100*level), lineThumb{line.style})
		if l < len(w.StaticWidth) && w.StaticWidth[l] != nil {
			st := &gapline{xs: x, ys: finiteOrGap(w.StaticWidth[l]), style: dashed(c, 1.2)}
			p.Add(st)
			p.Legend.Add(fmt.Sprintf("%.0f%% static split conformal", 100*level), lineThumb{st.style})
		}
	}
	mae := &gapline{xs: x, ys: finiteOrGap(w.MAE), style: solid(MAEColor, 1.5)}
	p.Add(mae)
	p.Legend.Add("mean absolute error", lineThumb{mae.style})
	p.Y.Min = 0
	return figure{name: "widths", w: 10 * vg.Inch, h: 4.5 * vg.Inch, draw: func(dc draw.Canvas) { drawPanels(dc, p) }}
}

// finiteOrGap returns ys with the stretches without forecasts (NaN, or 0
// from a report that writes 0 for them) left out of the line as NaN.
func finiteOrGap(ys []float64) []float64 {
	out := make([]float64, len(ys))
	for i, y := range ys {
		out[i] = y
		if y == 0 || math.IsInf(y, 0) {
			out[i] = math.NaN()
		}
	}
	return out
}

// stretchName says how long a stretch of the timeline is.
func stretchName(starts []time.Time) string {
	if len(starts) < 2 {
		return "the backtest"
	}
	return stepName(starts[1].Sub(starts[0]))
}

// gapline is a polyline that leaves out its NaN points, drawing each run
// of the others.
type gapline struct {
	xs, ys []float64
	style  draw.LineStyle
}

// Plot implements plot.Plotter.
func (l *gapline) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	var run []vg.Point
	flush := func() {
		if len(run) > 1 {
			c.StrokeLines(l.style, c.ClipLinesXY(run)...)
		}
		run = run[:0]
	}
	for i := range l.xs {
		if math.IsNaN(l.ys[i]) {
			flush()
			continue
		}
		run = append(run, vg.Point{X: trX(l.xs[i]), Y: trY(l.ys[i])})
	}
	flush()
}

// DataRange implements plot.DataRanger.
func (l *gapline) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i := range l.xs {
		xmin, xmax = min(xmin, l.xs[i]), max(xmax, l.xs[i])
		if !math.IsNaN(l.ys[i]) {
			ymin, ymax = min(ymin, l.ys[i]), max(ymax, l.ys[i])
		}
	}
	if ymin > ymax {
		ymin, ymax = 0, 1
	}
	return xmin, xmax, ymin, ymax
}
