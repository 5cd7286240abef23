// Package liveview is the service's live view: a page served at / on the
// metrics listener that shows, for a series picked from those seen
// recently, its latest window of readings, the latest forecast with its
// prediction-interval band, the forecast split into its parts (each
// discovered cycle, the residual and the window's level), and, from the
// learner's /online report, the learned spectrum (period, share and drift
// of each frequency) and the rolling online error by horizon bucket. The
// page polls small JSON endpoints every second; it is one HTML file, one
// script and one stylesheet embedded in the binary, drawn on canvases by
// hand, so nothing is fetched from the internet. Every response carries a
// Content-Security-Policy that allows the page's own script, styles and
// requests only (the page holds no inline code), nosniff, no framing and
// no referrer.
//
// It exists so that an operator (or someone running `freqlens demo`) can
// watch what the model does without Grafana, Kafka tooling or a notebook:
// what the metrics aggregate away (one series, one forecast, its parts) is
// what it shows.
//
// # Where it sits
//
//	pipeline worker ──Observe(forecast, window, level)──► View ──GET /live/*──► page (/)
//	online.Learner ──/online (service) ────────────────────────────────────────► page
//
// liveview imports wire only: the pipeline calls Observe through
// pipeline.WithForecastObserver, and service wires the two and registers
// the handlers beside /metrics and /online. It does not import model,
// pipeline, stream or Kafka. The spectrum and the online error are not
// copied here: the page reads the learner's Report from /online.
//
// # Cost and concurrency
//
// Observe is on the pipeline's hot path, whose slices are reused after the
// call: it copies the forecast, its parts, intervals and window into the
// series' preallocated buffers under a mutex and, once every kept series
// has been seen with its shapes, allocates nothing (a few hundred
// nanoseconds per forecast at L = 96, H = 24, one field and 4 or 16
// contributions: go test -run '^$' -bench Observe ./liveview/). At most
// Config.MaxSeries series are kept (metrics.live_view_series); a new
// series takes the place of the one forecast least recently only when
// that one has had no forecast for Config.StaleAfter (15 minutes), else it
// is not shown, so the list a user picks from does not churn. The handlers
// copy a series under the same mutex and encode it after releasing it, so
// a slow client never holds a pipeline worker. A View is safe for
// concurrent use.
package liveview
