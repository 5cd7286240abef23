package pipeline

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/internal/registry"
	"github.com/freqlens/freqlens/window"
)

// metrics are the pipeline's own, plus the window counters it exports on
// the window package's behalf (window keeps no Prometheus dependency).
type metrics struct {
	forward      prometheus.Histogram
	batchWindows prometheus.Histogram
	processing   prometheus.Histogram
	endToEnd     prometheus.Histogram
	lastCommit   prometheus.Gauge
	modelVersion prometheus.Gauge
	windowErrors prometheus.Counter
	deadLettered prometheus.Counter
	nonFinite    prometheus.Counter
	windowStats  *windowCollector
}

func newMetrics(p *Pipeline) (*metrics, error) {
	m := &metrics{
		forward: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "freqlens_model_forward_duration_seconds",
			Help:    "Time of one batched forward pass with its attributions.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14),
		}),
		batchWindows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "freqlens_pipeline_batch_windows",
			Help:    "Windows per forward pass.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		processing: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "freqlens_pipeline_processing_duration_seconds",
			Help:    "Time from a decoded batch to its forecasts: windows, forward passes and attributions.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 2, 14),
		}),
		endToEnd: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "freqlens_pipeline_end_to_end_latency_seconds",
			Help:    "Time from a reading's Kafka timestamp to the acknowledgement of the forecast it completed.",
			Buckets: prometheus.ExponentialBuckets(1e-3, 2, 14),
		}),
		lastCommit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "freqlens_pipeline_last_commit_timestamp_seconds",
			Help: "Unix time of the last commit of input offsets.",
		}),
		modelVersion: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "freqlens_model_version",
			Help: "Version number of the model serving new batches.",
		}),
		windowErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "freqlens_pipeline_window_errors_total",
			Help: "Batches whose readings could not be put into windows; their messages went to the dead-letter topic.",
		}),
		deadLettered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "freqlens_pipeline_dead_lettered_readings_total",
			Help: "Messages the pipeline wrote to the dead-letter topic after decoding (batches the windows refused, readings out of range, readings whose forecast was non-finite), or dropped with input.drop_poison.",
		}),
		nonFinite: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "freqlens_pipeline_nonfinite_forecasts_total",
			Help: "Forecasts not written because a forecast or attribution value was NaN or infinite; the reading that completed each window was dead-lettered.",
		}),
		windowStats: newWindowCollector(),
	}
	m.modelVersion.Set(float64(p.wiring.ModelVersion))
	if err := registry.Register(p.reg, "pipeline", m.forward, m.batchWindows, m.processing, m.endToEnd, m.lastCommit, m.modelVersion,
		m.windowErrors, m.deadLettered, m.nonFinite, m.windowStats); err != nil {
		return nil, err
	}
	return m, nil
}

// windowCollector exports the workers' window counters from a snapshot the
// processor takes after each batch; the windows themselves are never read
// from the collector's goroutine.
type windowCollector struct {
	mu    sync.Mutex
	stats window.Stats

	active                                                             *prometheus.Desc
	created, expired, rejected, restarts, gaps, lateUp, lateDrop, dups *prometheus.Desc
	ready, outOfRange                                                  *prometheus.Desc
}

func newWindowCollector() *windowCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &windowCollector{
		active:   d("freqlens_window_series_active", "Series with a live window."),
		created:  d("freqlens_window_series_created_total", "Series seen for the first time (or again after expiry)."),
		expired:  d("freqlens_window_series_expired_total", "Series forgotten after being idle longer than the TTL."),
		rejected: d("freqlens_window_series_rejected_total", "Readings of new series rejected because max_series was reached."),
		restarts: d("freqlens_window_restarts_total", "Series windows restarted after a gap longer than max_gap."),
		gaps:     d("freqlens_window_gap_fills_total", "Missing steps filled by interpolation or by holding the last value."),
		lateUp:   d("freqlens_window_late_updates_total", "Late readings within the allowed lateness that updated their step."),
		lateDrop: d("freqlens_window_late_drops_total", "Readings too late to update their step (window.allowed_lateness): dead-lettered as too_late (window.late: dead_letter) or dropped."),
		dups:     d("freqlens_window_duplicates_total", "Readings for a step that already had one (last write wins)."),
		ready:    d("freqlens_window_windows_ready_total", "Windows that became ready for a forecast."),
		outOfRange: d("freqlens_window_out_of_range_total",
			"Readings refused because their value lay far outside the range of their series' window (window.max_jump); they were dead-lettered."),
	}
}

func (c *windowCollector) update(ws []*worker) {
	var s window.Stats
	for _, w := range ws {
		s.Add(w.stats)
	}
	c.mu.Lock()
	c.stats = s
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *windowCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.active, c.created, c.expired, c.rejected, c.restarts, c.gaps, c.lateUp, c.lateDrop, c.dups, c.ready, c.outOfRange} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *windowCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	s := c.stats
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(s.Active))
	for _, e := range []struct {
		d *prometheus.Desc
		v uint64
	}{
		{c.created, s.Created}, {c.expired, s.Expired}, {c.rejected, s.Rejected}, {c.restarts, s.Restarts},
		{c.gaps, s.GapFilled}, {c.lateUp, s.LateUpdated}, {c.lateDrop, s.LateDropped}, {c.dups, s.Duplicates}, {c.ready, s.Ready},
		{c.outOfRange, s.OutOfRange},
	} {
		ch <- prometheus.MustNewConstMetric(e.d, prometheus.CounterValue, float64(e.v))
	}
}
