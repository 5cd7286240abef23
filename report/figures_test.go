package report_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/report"
)

func TestFiguresShowTheirData(t *testing.T) {
	r := build(t, model.Mixed, report.Options{})
	dir := t.TempDir()
	files, err := r.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if want := []string{"spectrum.png", "spectrum.svg", "forecast.png", "forecast.svg", "horizon.png", "horizon.svg", "index.html"}; !slices.Equal(names, want) {
		t.Fatalf("wrote %v, want %v", names, want)
	}

	t.Run("spectrum", func(t *testing.T) { checkSpectrumFigure(t, r, dir) })
	t.Run("forecast", func(t *testing.T) { checkForecastFigure(t, r, dir) })
	t.Run("horizon", func(t *testing.T) { checkHorizonFigure(t, dir) })
	t.Run("svg", func(t *testing.T) { checkSVGFigures(t, dir) })
}

// checkSpectrumFigure checks spectrum.png in dir, drawn of r: its size,
// every discovered cycle and the other frequencies in their colours, and
// the reference lines on a log axis of periods, with the 24h cycle's
// stems on its harmonics.
func checkSpectrumFigure(t *testing.T, r *report.Report, dir string) {
	p := decode(t, filepath.Join(dir, "spectrum.png"))
	if p.w != 9*report.DPI || p.h != int(math.Ceil(4.6*report.DPI)) {
		t.Errorf("spectrum is %d×%d px, want %d×%d", p.w, p.h, 9*report.DPI, int(math.Ceil(4.6*report.DPI)))
	}
	// The plot area (left of the legend strip): every discovered cycle
	// in its colour, the other frequencies, the reference lines.
	for i := range r.Cycles {
		if n := p.count(report.CycleColors[i], 0.08, 0.74, 0.1, 0.92); n < 40 {
			t.Errorf("cycle %s: %d pixels of its colour in the plot area, want its stem and dot (≥ 40)", r.Cycles[i].Name, n)
		}
	}
	if n := p.count(report.OtherColor, 0.08, 0.74, 0.1, 0.92); n < 40 {
		t.Errorf("other frequencies: %d pixels, want ≥ 40", n)
	}
	// Three dashed reference lines at 12h, 24h, 168h, and the 24h
	// cycle's stem on the middle one, its other tall stems on its
	// harmonics 24h/k: the x axis maps periods right.
	refs := clusters(p.columns(report.ReferenceColor, 20), 3)
	if len(refs) != 3 {
		t.Fatalf("reference lines at x = %v, want three (12h, 24h, 168h)", refs)
	}
	day := slices.IndexFunc(r.Cycles, func(c report.Cycle) bool { return c.Name == "24.0h" })
	stems := clusters(p.columns(report.CycleColors[day], 30), 3)
	octave := refs[1] - refs[0] // pixels from 24h to 12h
	if !slices.ContainsFunc(stems, func(x float64) bool { return math.Abs(x-refs[1]) <= 3 }) {
		t.Errorf("the 24h cycle's stems are at x = %v, none on the 24h reference line at %.0f", stems, refs[1])
	}
	for _, x := range stems {
		k := math.Exp2((refs[1] - x) / octave) // the harmonic whose period 24h/k lies at x
		if math.Abs(k-math.Round(k)) > 0.05 || math.Round(k) < 1 {
			t.Errorf("a stem of the 24h cycle at x = %.1f is at 24h/%.2f, not on a harmonic (stems %v, 24h at %.0f, 12h at %.0f)", x, k, stems, refs[1], refs[0])
		}
	}
	if g := (refs[2] - refs[1]) / (refs[1] - refs[0]); math.Abs(g-math.Log(7)/math.Log(2)) > 0.05 {
		t.Errorf("reference lines at %v: 24h→168h is %.2f× 12h→24h, want log 7 / log 2 = %.2f (a log axis)", refs, g, math.Log(7)/math.Log(2))
	}
}

// checkForecastFigure checks forecast.png in dir, drawn of r: its size,
// the input, actuals, forecast and bands in the upper plot, and the
// parts' bars in the lower.
func checkForecastFigure(t *testing.T, r *report.Report, dir string) {
	p := decode(t, filepath.Join(dir, "forecast.png"))
	if p.w != 9*report.DPI || p.h != 7*report.DPI {
		t.Errorf("forecast is %d×%d px, want %d×%d", p.w, p.h, 9*report.DPI, 7*report.DPI)
	}
	// Upper half: the input, the actual values and the forecast; the
	// forecast and the actuals only in the right part (after the window).
	for _, c := range []struct {
		name   string
		color  color.Color
		x0, x1 float64
	}{{"input", report.HistoryColor, 0.08, 0.45}, {"forecast", report.ForecastColor, 0.5, 0.76}, {"actual", report.ActualColor, 0.5, 0.76}} {
		if n := p.count(c.color, c.x0, c.x1, 0.08, 0.48); n < 30 {
			t.Errorf("%s: %d pixels of its colour in the upper plot, want ≥ 30", c.name, n)
		}
	}
	if n := p.count(report.ForecastColor, 0.08, 0.4, 0.08, 0.48); n > 0 {
		t.Errorf("%d forecast pixels over the input window", n)
	}
	// The intervals' bands, around the forecast only.
	if len(r.Forecast.Intervals) != 2 {
		t.Fatalf("%d intervals, want the 80%% and 95%% ones from the model's error quantiles", len(r.Forecast.Intervals))
	}
	for k, c := range report.BandColors {
		if n := p.count(c, 0.5, 0.76, 0.08, 0.48); n < 200 {
			t.Errorf("the %.0f%% band covers %d pixels after the window, want ≥ 200", 100*r.Forecast.Intervals[k].Level, n)
		}
		if n := p.count(c, 0.08, 0.4, 0.08, 0.48); n > 0 {
			t.Errorf("%d pixels of a band over the input window", n)
		}
	}
	checkPartBars(t, r, p)
}

// checkPartBars checks the lower half of the forecast figure p, drawn of
// r: the parts' bars, each with an area in proportion to its share of
// the forecast (equal widths, heights |value|).
func checkPartBars(t *testing.T, r *report.Report, p picture) {
	t.Helper()
	counts, total := map[string]int{}, 0
	for _, part := range r.Forecast.Parts {
		counts[part.Name] = p.count(partColor(part), 0.08, 0.74, 0.55, 0.95)
		total += counts[part.Name]
	}
	for _, part := range r.Forecast.Parts {
		if got := float64(counts[part.Name]) / float64(total); math.Abs(got-part.Share) > 0.04 {
			t.Errorf("part %s covers %.1f%% of the bars' pixels, but is %.1f%% of the forecast", part.Name, 100*got, 100*part.Share)
		}
	}
	for _, part := range r.Forecast.Parts {
		abs := 0.0
		for _, v := range part.Values {
			abs += math.Abs(v)
		}
		n := counts[part.Name]
		if part.Share > 0.02 && n < 20 {
			t.Errorf("part %s (%.1f%% of the forecast): %d pixels of its colour in the lower plot, want ≥ 20", part.Name, 100*part.Share, n)
		}
		if abs == 0 && n > 0 {
			t.Errorf("part %s is zero but has %d pixels", part.Name, n)
		}
	}
}

// checkHorizonFigure checks horizon.png in dir: its size and the lines of
// the MSE, the MAE and persistence.
func checkHorizonFigure(t *testing.T, dir string) {
	p := decode(t, filepath.Join(dir, "horizon.png"))
	if p.w != 9*report.DPI || p.h != 4*report.DPI {
		t.Errorf("horizon is %d×%d px, want %d×%d", p.w, p.h, 9*report.DPI, 4*report.DPI)
	}
	for name, c := range map[string]color.Color{"MSE": report.ForecastColor, "MAE": report.MAEColor, "persistence": report.BaselineColor} {
		if n := p.count(c, 0.08, 0.74, 0.1, 0.9); n < 50 {
			t.Errorf("%s: %d pixels of its colour in the plot area, want a line (≥ 50)", name, n)
		}
	}
}

// checkSVGFigures checks the SVG figures in dir: XML holding the drawn
// data as paths, in the forecast colour where a figure draws a forecast.
func checkSVGFigures(t *testing.T, dir string) {
	for _, name := range []string{"spectrum", "forecast", "horizon"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		paths := 0
		d := xml.NewDecoder(bytes.NewReader(b))
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s.svg is not XML: %v", name, err)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
				paths++
			}
		}
		if paths < 20 {
			t.Errorf("%s.svg has %d paths, want the drawn data (≥ 20)", name, paths)
		}
		if hex := fmt.Sprintf("#%02X%02X%02X", report.ForecastColor.R, report.ForecastColor.G, report.ForecastColor.B); name != "spectrum" && !bytes.Contains(b, []byte(hex)) {
			t.Errorf("%s.svg never uses the forecast colour %s", name, hex)
		}
	}
}
