// Package report draws what a FreqLens model learned and how it forecasts,
// as figures a person reads: PNG and SVG files made with gonum.org/v1/plot,
// and an HTML page that ties them together.
//
// It sits beside the pipeline, not in it: `freqlens report` loads a model
// (and optionally a CSV), calls Build to compute the numbers and Write to
// draw them. Three figures:
//
//   - spectrum: every learned frequency at its period against the 12h, 24h
//     and 168h reference periods, its height its mean share of the
//     attribution; the discovered cycles (explain.Cycles) highlighted
//     and named. Like the paper's discovery figure.
//   - forecast (with data): one window's forecast against the actual values,
//     and below it the same forecast split into its exact parts: each
//     discovered cycle by name, the other frequencies together, the
//     residual MLP, all relative to the window's level. The parts come from
//     explain.Explainer, so they sum to the forecast.
//   - horizon (with data): the test split's error by horizon step, with
//     repeating the last value as the baseline. The model runs over the
//     test windows as measure.Evaluate runs it, so the mean over the steps
//     is Evaluate's MSE (tested).
//
// Every number drawn is computed here from the model and the data; nothing
// is estimated for the picture. Output is deterministic (no timestamps, no
// map order): the same model, data and options give the same bytes, so a
// report can be diffed or cached. The tests decode the PNGs and count the
// pixels of each colour in the plot areas rather than compare with golden
// images, which any change of font rendering would break. The page is
// self-contained (inline style, relative links, nothing fetched from the
// internet).
//
// The package imports model and dataset and nothing of Kafka or the
// service. Build and Write hold no state between calls and are safe to call
// from several goroutines on different models.
package report
