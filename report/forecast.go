package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// partColor is the colour of a forecast part.
func partColor(p Part) color.RGBA {
	switch p.Kind {
	case PartCycle:
		return cycleColor(p.Cycle)
	case PartResidual:
		return ResidualColor
	}
	return OtherColor
}

// forecastFigure draws the explained window: above, the input, the
// forecast and the actual values; below, the forecast step by step as its
// parts stacked from zero (positive up, negative down) with the line
// forecast − level they sum to.
func (r *Report) forecastFigure() figure {
	fc := r.Forecast
	L, H := len(fc.History), len(fc.Values)
	when := fc.When
	step := ""
	if r.Cadence > 0 {
		step = "; 1 step = " + stepName(r.Cadence)
	}

	title := fmt.Sprintf("Forecast of %s after %s: %s", fc.Channel, when, r.Name)
	if n := len(fc.Actual); n > 0 {
		mse := 0.0
		for h, a := range fc.Actual {
			mse += (fc.Values[h] - a) * (fc.Values[h] - a) / float64(n)
		}
		title += fmt.Sprintf("\nMSE against the %d actual values %.4g (data units)", n, mse)
	} else {
		title += "\nno actual values: the window ends at the data's last row"
	}
	top := newPlot(title, "steps after "+when+step, fc.Channel)
	hx := make([]float64, L)
	for t := range L {
		hx[t] = float64(t - L + 1)
	}
	fx := make([]float64, H)
	for h := range H {
		fx[h] = float64(h + 1)
	}
	level := &polyline{xs: []float64{hx[0], fx[H-1]}, ys: []float64{fc.Level, fc.Level}, style: dashed(LevelColor, 1)}
	history := &polyline{xs: hx, ys: fc.History, style: solid(HistoryColor, 1.5)}
	forecast := &polyline{xs: fx, ys: fc.Values, style: solid(ForecastColor, 2)}
	// The widest band first, so that the narrower ones show on top of it.
	for k := len(fc.Intervals) - 1; k >= 0; k-- {
		iv := fc.Intervals[k]
		top.Add(&band{xs: fx, lower: iv.Lower, upper: iv.Upper, color: BandColors[k%len(BandColors)]})
	}
	top.Add(level, history)
	top.Legend.Add("input window", lineThumb{history.style})
	if len(fc.Actual) > 0 {
		actual := &polyline{xs: fx[:len(fc.Actual)], ys: fc.Actual, style: solid(ActualColor, 1.5)}
		top.Add(actual)
		top.Legend.Add("actual", lineThumb{actual.style})
	}
	top.Add(forecast)
	top.Legend.Add("forecast", lineThumb{forecast.style})
	top.Legend.Add(fmt.Sprintf("level %.4g", fc.Level), lineThumb{level.style})
	for k, iv := range fc.Intervals {
		top.Legend.Add(fmt.Sprintf("%.0f%% interval (test-split errors)", 100*iv.Level), swatch{BandColors[k%len(BandColors)]})
	}

	bars := &divergingBars{x: fx, width: 0.8}
	sum := make([]float64, H)
	for h := range H {
		sum[h] = fc.Values[h] - fc.Level
	}
	bottom := newPlot("The same forecast split into its parts (they add up to forecast − level)",
		"steps ahead"+step, "contribution (data units)")
	for _, p := range fc.Parts {
		c := partColor(p)
		bars.series = append(bars.series, p.Values)
		bars.colors = append(bars.colors, c)
		bottom.Legend.Add(fmt.Sprintf("%s %.1f%%", p.Name, 100*p.Share), swatch{c})
	}
	line := &polyline{xs: fx, ys: sum, style: solid(ActualColor, 1.5)}
	zero := &polyline{xs: []float64{0.5, float64(H) + 0.5}, ys: []float64{0, 0}, style: solid(LevelColor, 0.5)}
	bottom.Add(bars, zero, line)
	bottom.Legend.Add("forecast − level", lineThumb{line.style})
	bottom.X.Min, bottom.X.Max = 0.5, float64(H)+0.5
	bottom.X.Tick.Marker = intTicks{}
	top.X.Tick.Marker = intTicks{}
	pad(&bottom.Y.Min, &bottom.Y.Max)

	return figure{name: "forecast", w: 9 * vg.Inch, h: 7 * vg.Inch, draw: func(dc draw.Canvas) { drawPanels(dc, top, bottom) }}
}

// horizonFigure draws the test split's MSE and MAE by horizon step and the
// MSE of repeating the last value.
func (r *Report) horizonFigure() figure {
	e := r.Errors
	H := len(e.MSE)
	step := ""
	if r.Cadence > 0 {
		step = " (1 step = " + stepName(r.Cadence) + ")"
	}
	x := make([]float64, H)
	for h := range H {
		x[h] = float64(h + 1)
	}
	p := newPlot(fmt.Sprintf("Test-split error by horizon step: %s on %s (%s protocol)\n%d windows × %d channels, z-scored; MSE %.4f, MAE %.4f",
		r.Name, e.Data, e.Protocol, e.Windows, e.Channels, e.MeanMSE, e.MeanMAE), "steps ahead"+step, "error (z-scored units)")
	mse := &polyline{xs: x, ys: e.MSE, style: solid(ForecastColor, 2)}
	mae := &polyline{xs: x, ys: e.MAE, style: solid(MAEColor, 1.5)}
	base := &polyline{xs: x, ys: e.PersistenceMSE, style: dashed(BaselineColor, 1.5)}
	p.Add(base, mae, mse)
	p.Legend.Add("MSE", lineThumb{mse.style})
	p.Legend.Add("MAE", lineThumb{mae.style})
	p.Legend.Add("MSE, repeating the last value", lineThumb{base.style})
	p.X.Min, p.X.Max = 1, math.Max(2, float64(H))
	p.X.Tick.Marker = intTicks{}
	p.Y.Min = 0
	return figure{name: "horizon", w: 9 * vg.Inch, h: 4 * vg.Inch, draw: func(dc draw.Canvas) { drawPanels(dc, p) }}
}

// pad widens [lo, hi] by 5% on both sides so bars do not touch the frame.
func pad(lo, hi *float64) {
	d := 0.05 * (*hi - *lo)
	if d == 0 {
		d = 1
	}
	*lo -= d
	*hi += d
}
