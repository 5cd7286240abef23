package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"os"
	"path/filepath"
)

// Write draws r into dir (created when missing): spectrum.png and .svg,
// with data also forecast.* and horizon.*, and index.html, which shows
// them with relative links. It overwrites those files and touches no
// other. It returns the paths written, the page last.
func (r *Report) Write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: create the output directory: %w", err)
	}
	var written []string
	for _, fig := range r.figures() {
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
	}
	page, err := r.Page()
	if err != nil {
		return written, err
	}
	path := filepath.Join(dir, "index.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		return written, fmt.Errorf("report: %w", err)
	}
	return append(written, path), nil
}

// figures lists the figures r has numbers for.
func (r *Report) figures() []figure {
	figs := []figure{r.spectrumFigure()}
	if r.Forecast != nil {
		figs = append(figs, r.forecastFigure())
	}
	if r.Errors != nil {
		figs = append(figs, r.horizonFigure())
	}
	return figs
}

// Page returns index.html: the figures (by relative links to the files
// Write puts beside it) with the numbers behind them in tables. It fetches
// nothing: the style is inline and there is no script.
func (r *Report) Page() ([]byte, error) {
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, r); err != nil {
		return nil, fmt.Errorf("report: write the page: %w", err)
	}
	return b.Bytes(), nil
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"pct": func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	"num": func(v float64) string {
		if math.IsNaN(v) {
			return "not recorded"
		}
		return fmt.Sprintf("%.4g", v)
	},
	"steps":    func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"stepName": stepName,
	"cycleCSS": func(i int) template.CSS { return cssColor(cycleColor(i)) },
	"partCSS":  func(p Part) template.CSS { return cssColor(partColor(p)) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>FreqLens report: {{.Name}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; max-width: 70rem; margin: 1.5rem auto; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: .9rem; color: #555; }
table { border-collapse: collapse; font-size: .9rem; margin: .5rem 0; }
th, td { padding: .2rem .7rem; border-bottom: 1px solid #eee; text-align: right; } th:first-child, td:first-child { text-align: left; }
.swatch { display: inline-block; width: .8rem; height: .8rem; margin-right: .4rem; vertical-align: -.1rem; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2rem 1rem; } dt { color: #555; } dd { margin: 0; }
</style>
</head>
<body>
<h1>FreqLens report: {{.Name}}</h1>
<dl>
<dt>trained on</dt><dd>{{if .TrainedOn}}{{.TrainedOn}}{{else}}unknown{{end}}</dd>
<dt>model</dt><dd>{{.Mode}}, lookback {{.Lookback}} steps, horizon {{.Horizon}} steps, {{.Channels}} channel(s){{if .Cadence}}, 1 step = {{stepName .Cadence}}{{end}}</dd>
<dt>α (fusion weight of the frequency heads)</dt><dd>{{printf "%.3f" .Alpha}}</dd>
<dt>test MSE recorded in the model file</dt><dd>{{num .TestMSE}}</dd>
<dt>attribution shares counted on</dt><dd>{{if .SharesFrom}}{{.SharesFrom}}{{else}}unknown: the model file holds none; pass --data{{end}}</dd>
</dl>
<h2>Learned spectrum</h2>
<figure><a href="spectrum.svg"><img src="spectrum.png" alt="the learned frequencies by period and share of the attribution, the discovered cycles highlighted"></a>
<figcaption>Every learned frequency at its period, as high as its mean share of the attribution (level excluded).
Coloured: the cycles of the data, each a rhythm (a fundamental period found in the training data's spectrum) with the
frequencies at its harmonics in its colour, named at the lowest with the cycle's share (what its frequencies add up to: a cycle's
lines can partly cancel, so it can be less than the sum of their heights); those that carry at least 1% of the attribution. Dashed: the reference periods 12h, 24h and 168h. <a href="spectrum.svg">SVG</a></figcaption></figure>
{{if .Cycles}}<table>
<tr><th>cycle</th><th>period (steps)</th><th>share of the attribution</th><th>frequencies (harmonic: id)</th></tr>
{{range $i, $c := .Cycles}}<tr><td><span class="swatch" style="background: {{cycleCSS $i}}"></span>{{$c.Name}}</td><td>{{steps $c.PeriodSteps}}</td><td>{{pct $c.Share}}{{with $c.Cancelled}} ({{.}}){{end}}</td><td>{{range $j, $id := $c.Frequencies}}{{if $j}}, {{end}}{{index $c.Harmonics $j}}: {{$id}}{{end}}</td></tr>
{{end}}<tr><td>other frequencies</td><td></td><td>{{pct .OtherShare}}</td><td></td></tr>
<tr><td>{{.ResidualName}}</td><td></td><td>{{pct .ResidualShare}}</td><td></td></tr>
</table>{{else}}<p>No cycles{{if .SharesFrom}}: no rhythm of the training data carries 1% of the attribution{{end}}.</p>{{end}}
{{with .Forecast}}
<h2>One forecast and what it is made of</h2>
<figure><a href="forecast.svg"><img src="forecast.png" alt="one forecast against the actual values, and the forecast split into its cycles, other frequencies and residual"></a>
<figcaption>Above: the input window of {{.Channel}} ending at {{.When}}, the forecast and the actual values{{if .Intervals}}, with the 80% and 95%
prediction intervals a served model starts from (the quantiles of its errors on the test split, recorded at training, step by step){{end}}. Below: the same forecast step by step as
its exact parts, stacked from zero (positive parts up, negative down); at every step they add up to the forecast minus the level
{{printf "%.4g" .Level}}. <a href="forecast.svg">SVG</a></figcaption></figure>
<table><tr><th>part</th><th>share of this forecast</th></tr>
{{range .Parts}}<tr><td><span class="swatch" style="background: {{partCSS .}}"></span>{{.Name}}</td><td>{{pct .Share}}</td></tr>
{{end}}</table>
{{end}}{{with .Errors}}
<h2>Error by horizon step</h2>
<figure><a href="horizon.svg"><img src="horizon.png" alt="the test split's MSE and MAE by horizon step, and the MSE of repeating the last value"></a>
<figcaption>Every window of the test split of {{.Data}} ({{.Protocol}} protocol, {{.Windows}} windows × {{.Channels}} channels), z-scored with the training rows'
statistics: MSE {{printf "%.4f" .MeanMSE}}, MAE {{printf "%.4f" .MeanMAE}} over all steps.{{with .Note}} <strong>{{.}}</strong>{{end}} <a href="horizon.svg">SVG</a></figcaption></figure>
{{end}}
{{if not .Forecast}}<p>Pass <code>--data CSV</code> (a file with the model's columns) to add a forecast with its parts and the test split's error by horizon step.</p>{{end}}
</body>
</html>
`))

// cssColor writes c as a CSS hex colour.
func cssColor(c color.RGBA) template.CSS {
	return template.CSS(fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B))
}
