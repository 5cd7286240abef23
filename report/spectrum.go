package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ReferencePeriods are the cycles sensor data usually carries, drawn as
// reference lines when the model knows its cadence.
var ReferencePeriods = []time.Duration{12 * time.Hour, 24 * time.Hour, 168 * time.Hour}

// spectrumFigure draws every learned frequency at its period, as high as
// its share of the attribution, with the discovered cycles in their colours
// and named, against the reference periods.
func (r *Report) spectrumFigure() figure {
	hours := r.Cadence > 0
	unit := func(steps float64) float64 {
		if hours {
			return steps * r.Cadence.Hours()
		}
		return steps
	}
	known := r.SharesFrom != ""
	s := &stems{width: vg.Points(1.5)}
	lab := &stemLabels{}
	for _, f := range r.Frequencies {
		x, y := unit(f.PeriodSteps), 100*f.Share
		if !known {
			y = 1
		}
		c, rad := color.Color(OtherColor), vg.Points(2.5)
		switch {
		case f.Cycle >= 0:
			c, rad = cycleColor(f.Cycle), vg.Points(4.5)
			// The cycle's name at its fundamental; its other harmonics
			// take its colour.
			if lowestHarmonic(r, f) {
				lab.xs, lab.ys = append(lab.xs, x), append(lab.ys, y)
				lab.labels = append(lab.labels, fmt.Sprintf("%s cycle\n%.1f%%", r.Cycles[f.Cycle].Name, 100*r.Cycles[f.Cycle].Share))
				lab.colors = append(lab.colors, c)
			}
		case f.Placed:
			c = PlacedColor
		}
		s.xs, s.ys = append(s.xs, x), append(s.ys, y)
		s.colors, s.radius = append(s.colors, c), append(s.radius, rad)
	}

	xLabel := "period (steps; the model does not know its cadence)"
	if hours {
		xLabel = "period (log scale)"
	}
	yLabel := "mean share of the attribution (%)"
	if !known {
		yLabel = "shares unknown: pass --data"
	}
	cycles := fmt.Sprintf("%d cycles", len(r.Cycles))
	if len(r.Cycles) == 1 {
		cycles = "1 cycle"
	}
	// Three short lines: a longer one is wider than the figure and is cut.
	title := fmt.Sprintf("Learned spectrum: %s\n%d frequencies; %s of the data (with their harmonics)\ncarrying %.1f%% of the attribution; %s %.1f%%",
		r.Name, len(r.Frequencies), cycles, 100*r.cycleShare(), r.ResidualName, 100*r.ResidualShare)
	if !known {
		title = fmt.Sprintf("Learned spectrum: %s\n%d frequencies (attribution shares unknown: the model file holds none)", r.Name, len(r.Frequencies))
	}
	p := newPlot(title, xLabel, yLabel)
	p.X.Scale = plot.LogScale{}
	p.Add(s)

	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range s.xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	if hours {
		ref := &vlines{color: ReferenceColor}
		for _, d := range ReferencePeriods {
			ref.xs = append(ref.xs, d.Hours())
			ref.labels = append(ref.labels, strconv.FormatFloat(d.Hours(), 'f', -1, 64)+"h")
			lo, hi = min(lo, d.Hours()), max(hi, d.Hours())
		}
		p.Add(ref)
		p.Legend.Add("reference period", lineThumb{referenceStyle(ReferenceColor)})
	}
	p.Add(lab) // the reference lines cross the stems, not the labels
	p.X.Min, p.X.Max = lo/1.3, hi*1.3
	p.X.Tick.Marker = periodTicks{hours: hours}
	p.Y.Min = 0
	p.Y.Max = 1.35 * max(p.Y.Max, 1e-9) // room for the labels
	if !known {
		p.Y.Tick.Marker = plot.ConstantTicks{}
	}
	if len(r.Cycles) > 0 {
		p.Legend.Add("a cycle's frequencies", dotThumb{cycleColor(0)})
	}
	if len(r.Cycles) > len(CycleColors) {
		p.Legend.Add(fmt.Sprintf("(cycles after the %d largest: grey)", len(CycleColors)))
	}
	if slices.ContainsFunc(r.Frequencies, func(f Frequency) bool { return f.Placed && f.Cycle < 0 }) {
		p.Legend.Add("spectral peak, barely used", dotThumb{PlacedColor})
	}
	p.Legend.Add("other learned frequency", dotThumb{OtherColor})
	return figure{name: "spectrum", w: 9 * vg.Inch, h: 4.6 * vg.Inch, draw: func(dc draw.Canvas) { drawPanels(dc, p) }}
}

// cycleShare is the discovered cycles' part of the attribution.
func (r *Report) cycleShare() float64 {
	s := 0.0
	for _, c := range r.Cycles {
		s += c.Share
	}
	return s
}

// stemLabels writes a label centred above each point, moving a label up
// when it would overlap the one before it.
type stemLabels struct {
	xs, ys []float64
	labels []string
	colors []color.Color
}

// Plot implements plot.Plotter.
func (l *stemLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	type box struct{ x0, x1, y0, y1 vg.Length }
	var placed []box
	for i := range l.xs {
		ts := textStyle(9, l.colors[i], draw.XCenter, draw.YBottom)
		w, h := ts.Width(l.labels[i]), ts.Height(l.labels[i])
		x, y := trX(l.xs[i]), trY(l.ys[i])+vg.Points(7)
		b := box{x - w/2, x + w/2, y, y + h}
		for moved := true; moved; {
			moved = false
			for _, o := range placed {
				if b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1 {
					b.y0, b.y1 = o.y1+vg.Points(1), o.y1+vg.Points(1)+h
					moved = true
				}
			}
		}
		placed = append(placed, b)
		m := vg.Points(1)
		c.FillPolygon(color.White, []vg.Point{{X: b.x0 - m, Y: b.y0 - m}, {X: b.x1 + m, Y: b.y0 - m}, {X: b.x1 + m, Y: b.y1 + m}, {X: b.x0 - m, Y: b.y1 + m}})
		c.FillText(ts, vg.Point{X: x, Y: b.y0}, l.labels[i])
	}
}

// periodTicks marks periods people name (2h, 12h, 1d, 1w) in hours, or
// 1-2-5 steps without a cadence.
type periodTicks struct{ hours bool }

// Ticks implements plot.Ticker.
func (t periodTicks) Ticks(lo, hi float64) []plot.Tick {
	type mark struct {
		v     float64
		label string
	}
	var marks []mark
	if t.hours {
		marks = []mark{{1.0 / 60, "1m"}, {5.0 / 60, "5m"}, {0.25, "15m"}, {0.5, "30m"}, {1, "1h"}, {2, "2h"},
			{3, "3h"}, {6, "6h"}, {12, "12h"}, {24, "1d"}, {48, "2d"}, {96, "4d"}, {168, "1w"}, {336, "2w"}, {672, "4w"},
			{1344, "8w"}, {24 * 365, "1y"}}
	} else {
		for e := 0; e < 7; e++ {
			for _, k := range []float64{1, 2, 5} {
				v := k * math.Pow(10, float64(e))
				marks = append(marks, mark{v, strconv.FormatFloat(v, 'f', -1, 64)})
			}
		}
	}
	var ticks []plot.Tick
	for _, m := range marks {
		if m.v >= lo && m.v <= hi {
			ticks = append(ticks, plot.Tick{Value: m.v, Label: m.label})
		}
	}
	if len(ticks) < 2 {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	return ticks
}

// lowestHarmonic reports whether f is the lowest harmonic of its cycle
// (its fundamental when the model has a frequency there).
func lowestHarmonic(r *Report, f Frequency) bool {
	return !slices.ContainsFunc(r.Frequencies, func(g Frequency) bool { return g.Cycle == f.Cycle && g.Harmonic < f.Harmonic })
}
