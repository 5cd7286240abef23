package report

import (
	"bytes"
	"image/color"
	"math"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// DPI is the resolution of the PNG figures.
const DPI = 96

// The colours of the figures. Cycles take CycleColors in the order of
// Report.Cycles (largest share first) in every figure, so a cycle keeps its
// colour from the spectrum to the forecast; the palette is Okabe and Ito's,
// which colour-blind readers can tell apart, extended by three of Tol's.
var (
	CycleColors = []color.RGBA{
		{0xe6, 0x9f, 0x00, 0xff}, // orange
		{0x56, 0xb4, 0xe9, 0xff}, // sky blue
		{0x00, 0x9e, 0x73, 0xff}, // bluish green
		{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
		{0xd5, 0x5e, 0x00, 0xff}, // vermillion
		{0xf0, 0xe4, 0x42, 0xff}, // yellow
		{0x88, 0x22, 0x55, 0xff}, // wine
		{0x44, 0xaa, 0x99, 0xff}, // teal
		{0x99, 0x99, 0x33, 0xff}, // olive
	}
	// OtherColor draws the frequencies that are not discovered cycles.
	OtherColor = color.RGBA{0xbb, 0xbb, 0xbb, 0xff}
	// ResidualColor draws the residual MLP's part.
	ResidualColor = color.RGBA{0x8c, 0x6d, 0x46, 0xff}
	// ForecastColor draws forecasts and the model's error.
	ForecastColor = color.RGBA{0x00, 0x72, 0xb2, 0xff}
	// ActualColor draws realised values and sums.
	ActualColor = color.RGBA{0x00, 0x00, 0x00, 0xff}
	// HistoryColor draws the input window.
	HistoryColor = color.RGBA{0x77, 0x77, 0x77, 0xff}
	// ReferenceColor draws the 12h/24h/168h reference periods.
	ReferenceColor = color.RGBA{0xc0, 0x00, 0x30, 0xff}
	// BaselineColor draws the persistence baseline.
	BaselineColor = color.RGBA{0x99, 0x99, 0x99, 0xff}
	// MAEColor draws the mean absolute error.
	MAEColor = color.RGBA{0xd5, 0x5e, 0x00, 0xff}
	// BandColors fill the 80% and the 95% prediction interval.
	BandColors = [...]color.RGBA{{0x9e, 0xc9, 0xe2, 0xff}, {0xd4, 0xe6, 0xf1, 0xff}}
	// LevelColor draws the window's level.
	LevelColor = color.RGBA{0x44, 0x44, 0x44, 0xff}
	// PlacedColor draws frequencies placed on a spectral peak that the
	// forecasts barely use (below explain.MinCycleShare).
	PlacedColor = color.RGBA{0x66, 0x66, 0x66, 0xff}
)

// cycleColor returns the colour of cycle i of a report; cycles beyond the
// palette are drawn as other frequencies.
func cycleColor(i int) color.RGBA {
	if i >= 0 && i < len(CycleColors) {
		return CycleColors[i]
	}
	return OtherColor
}

// sans is the figures' typeface, Liberation Sans (bundled with gonum/plot,
// so PNGs render the same everywhere).
func sans(size vg.Length) font.Font {
	return font.From(font.Font{Typeface: "Liberation", Variant: "Sans"}, size)
}

// newPlot returns a plot with the figures' fonts and a light grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(12)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(10)
		a.Tick.Label.Font = sans(9)
	}
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.Y.Tick.Marker = trimmedTicks{}
	p.Legend.TextStyle.Font = sans(9)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(14)
	return p
}

// textStyle is a plain text style in the figures' font.
func textStyle(size vg.Length, c color.Color, xa draw.XAlignment, ya draw.YAlignment) draw.TextStyle {
	return draw.TextStyle{Color: c, Font: sans(size), XAlign: xa, YAlign: ya, Handler: plot.DefaultTextHandler}
}

// figure is one image: its file name without extension, its size and what
// draws it.
type figure struct {
	name string
	w, h vg.Length
	draw func(dc draw.Canvas)
}

// png renders fig as a PNG at DPI.
func (fig figure) png() ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(fig.w, fig.h), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	fig.draw(draw.New(c))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// svg renders fig as an SVG that names its fonts rather than embedding them
// (a viewer without Liberation Sans substitutes a sans-serif).
func (fig figure) svg() ([]byte, error) {
	c := vgsvg.New(fig.w, fig.h)
	fig.draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// legendWidth is the strip right of the plots that holds their legends.
const legendWidth = 2.2 * vg.Inch

// drawPanels draws plots one above the other in dc with aligned data areas,
// and each plot's legend in the strip to the right of its plot, where it
// covers no data. The plots are not changed, so a figure draws the same
// twice (PNG, then SVG).
func drawPanels(dc draw.Canvas, plots ...*plot.Plot) {
	rows := make([][]*plot.Plot, len(plots))
	bare := make([]plot.Plot, len(plots))
	for i, p := range plots {
		bare[i] = *p
		bare[i].Legend = plot.NewLegend()
		rows[i] = []*plot.Plot{&bare[i]}
	}
	area := draw.Crop(dc, 0, -legendWidth, 0, 0)
	cs := plot.Align(rows, draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(4),
		PadBottom: vg.Points(2), PadLeft: vg.Points(2), PadRight: vg.Points(6)}, area)
	for i, p := range plots {
		tile := cs[i][0]
		bare[i].Draw(tile)
		lg := p.Legend
		lg.Top, lg.Left = true, true
		top := tile.Max.Y
		if p.Title.Text != "" {
			top -= p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		}
		lg.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: tile.Max.X + vg.Points(4), Y: tile.Min.Y},
			Max: vg.Point{X: dc.Max.X - vg.Points(2), Y: top - vg.Points(4)}}})
	}
}

// stems draws one vertical line from 0 with a dot at its top per point: a
// line spectrum.
type stems struct {
	xs, ys []float64
	colors []color.Color
	width  vg.Length
	radius []vg.Length
}

// Plot implements plot.Plotter.
func (s *stems) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i := range s.xs {
		x, y0, y1 := trX(s.xs[i]), trY(0), trY(s.ys[i])
		c.StrokeLine2(draw.LineStyle{Color: s.colors[i], Width: s.width}, x, y0, x, y1)
		c.DrawGlyph(draw.GlyphStyle{Color: s.colors[i], Radius: s.radius[i], Shape: draw.CircleGlyph{}}, vg.Point{X: x, Y: y1})
	}
}

// DataRange implements plot.DataRanger.
func (s *stems) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 0, 0
	for i := range s.xs {
		xmin, xmax = min(xmin, s.xs[i]), max(xmax, s.xs[i])
		ymin, ymax = min(ymin, s.ys[i]), max(ymax, s.ys[i])
	}
	return xmin, xmax, ymin, ymax
}

// GlyphBoxes implements plot.GlyphBoxer, so the dots are not cut at the
// edges.
func (s *stems) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	bs := make([]plot.GlyphBox, len(s.xs))
	for i := range s.xs {
		r := s.radius[i]
		bs[i] = plot.GlyphBox{X: p.X.Norm(s.xs[i]), Y: p.Y.Norm(s.ys[i]),
			Rectangle: vg.Rectangle{Min: vg.Point{X: -r, Y: -r}, Max: vg.Point{X: r, Y: r}}}
	}
	return bs
}

// vlines draws dashed vertical reference lines across the data area, each
// labelled at its top. It has no data range: the plot's x range must hold
// the lines.
type vlines struct {
	xs     []float64
	labels []string
	color  color.Color
}

// Plot implements plot.Plotter.
func (v *vlines) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := referenceStyle(v.color)
	ts := textStyle(9, v.color, draw.XLeft, draw.YTop)
	for i, x := range v.xs {
		px := trX(x)
		c.StrokeLine2(sty, px, c.Min.Y, px, c.Max.Y)
		c.FillText(ts, vg.Point{X: px + vg.Points(2), Y: c.Max.Y - vg.Points(2)}, v.labels[i])
	}
}

// divergingBars draws, at each x, one bar per series stacked away from
// zero: positive values upwards, negative values downwards, in series
// order. The bars at an x therefore reach the sum of its positive values
// above zero and the sum of its negative values below, and the series' sum
// lies between them.
type divergingBars struct {
	x      []float64
	series [][]float64
	colors []color.Color
	width  float64 // in x units
}

// Plot implements plot.Plotter.
func (b *divergingBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, x := range b.x {
		x0, x1 := trX(x-b.width/2), trX(x+b.width/2)
		pos, neg := 0.0, 0.0
		for s, vals := range b.series {
			v := vals[i]
			var lo, hi float64
			if v >= 0 {
				lo, hi = pos, pos+v
				pos = hi
			} else {
				lo, hi = neg+v, neg
				neg = lo
			}
			if hi == lo {
				continue
			}
			y0, y1 := trY(lo), trY(hi)
			c.FillPolygon(b.colors[s], c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
		}
	}
}

// DataRange implements plot.DataRanger.
func (b *divergingBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for i, x := range b.x {
		xmin, xmax = min(xmin, x-b.width/2), max(xmax, x+b.width/2)
		pos, neg := 0.0, 0.0
		for _, vals := range b.series {
			if v := vals[i]; v >= 0 {
				pos += v
			} else {
				neg += v
			}
		}
		ymin, ymax = min(ymin, neg), max(ymax, pos)
	}
	return xmin, xmax, ymin, ymax
}

// band fills the area between lower and upper over xs.
type band struct {
	xs, lower, upper []float64
	color            color.Color
}

// Plot implements plot.Plotter.
func (b *band) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	pts := make([]vg.Point, 0, 2*len(b.xs))
	for i, x := range b.xs {
		pts = append(pts, vg.Point{X: trX(x), Y: trY(b.lower[i])})
	}
	for i := len(b.xs) - 1; i >= 0; i-- {
		pts = append(pts, vg.Point{X: trX(b.xs[i]), Y: trY(b.upper[i])})
	}
	c.FillPolygon(b.color, c.ClipPolygonXY(pts))
}

// DataRange implements plot.DataRanger.
func (b *band) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, x := range b.xs {
		xmin, xmax = min(xmin, x), max(xmax, x)
		ymin, ymax = min(ymin, b.lower[i]), max(ymax, b.upper[i])
	}
	return xmin, xmax, ymin, ymax
}

// swatch is a legend entry's filled square.
type swatch struct{ color color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.color, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// lineThumb is a legend entry's line.
type lineThumb struct{ style draw.LineStyle }

// Thumbnail implements plot.Thumbnailer.
func (l lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.style, c.Min.X, y, c.Max.X, y)
}

// dotThumb is a legend entry's dot on a stem.
type dotThumb struct{ color color.Color }

// Thumbnail implements plot.Thumbnailer.
func (d dotThumb) Thumbnail(c *draw.Canvas) {
	ctr := c.Center()
	c.StrokeLine2(draw.LineStyle{Color: d.color, Width: vg.Points(1.5)}, ctr.X, c.Min.Y, ctr.X, ctr.Y)
	c.DrawGlyph(draw.GlyphStyle{Color: d.color, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}, ctr)
}

// polyline is a plotter that draws a line through points in one style.
type polyline struct {
	xs, ys []float64
	style  draw.LineStyle
}

// Plot implements plot.Plotter.
func (l *polyline) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	pts := make([]vg.Point, len(l.xs))
	for i := range l.xs {
		pts[i] = vg.Point{X: trX(l.xs[i]), Y: trY(l.ys[i])}
	}
	c.StrokeLines(l.style, c.ClipLinesXY(pts)...)
}

// DataRange implements plot.DataRanger.
func (l *polyline) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i := range l.xs {
		xmin, xmax = min(xmin, l.xs[i]), max(xmax, l.xs[i])
		ymin, ymax = min(ymin, l.ys[i]), max(ymax, l.ys[i])
	}
	return xmin, xmax, ymin, ymax
}

// referenceStyle is the dashed style of reference lines: 2pt wide, so at
// least one column of pixels shows their colour unblended.
func referenceStyle(c color.Color) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: vg.Points(2), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
}

// solid and dashed are line styles of width w points.
func solid(c color.Color, w float64) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: vg.Points(w)}
}

func dashed(c color.Color, w float64) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: vg.Points(w), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}
}

// intTicks marks whole numbers 1, 2 or 5 × 10^k apart, at most about eight
// of them: horizon steps have no halves.
type intTicks struct{}

// Ticks implements plot.Ticker.
func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 1.0
	for k := 0; (hi-lo)/step > 8; k++ {
		step = []float64{2, 5, 10}[k%3] * math.Pow(10, float64(k/3))
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return ticks
}

// trimmedTicks are gonum's default ticks with the trailing zeros of their
// labels dropped: "50", "0.8" rather than "50.00", "0.80".
type trimmedTicks struct{}

// Ticks implements plot.Ticker.
func (trimmedTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if strings.Contains(t.Label, ".") && !strings.ContainsAny(t.Label, "eE") {
			ticks[i].Label = strings.TrimSuffix(strings.TrimRight(t.Label, "0"), ".")
		}
	}
	return ticks
}

// stepName says how long a step is, "1h" rather than "1h0m0s".
func stepName(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}
