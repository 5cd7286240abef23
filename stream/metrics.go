package stream

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/internal/registry"
	"github.com/freqlens/freqlens/readings"
)

// metrics are a Consumer's Prometheus metrics.
type metrics struct {
	readings     prometheus.Counter // bound to the input topic
	messages     prometheus.Counter // bound to the input topic
	decodeErrors map[string]prometheus.Counter
	deadLetters  prometheus.Counter
	batchRows    prometheus.Histogram

	assigned        prometheus.Gauge
	rebalances      prometheus.Counter
	rebuildReadings prometheus.Counter
	rebuildSeconds  prometheus.Histogram
	commitsSkipped  prometheus.Counter
}

// newMetrics registers the metrics with reg. Metrics already registered
// there by an earlier Consumer (a restart in the same process) are reused,
// except the gauges read from c at scrape time, which are replaced by this
// consumer's.
func newMetrics(reg prometheus.Registerer, topic string, c *Consumer) (*metrics, error) {
	readingsVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "freqlens_stream_readings_consumed_total",
		Help: "Readings decoded from the input topic into batches (rows; an Arrow message holds many).",
	}, []string{"topic"})
	messages := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "freqlens_stream_messages_consumed_total",
		Help: "Kafka messages fetched from the input topic, poison included.",
	}, []string{"topic"})
	decodeErrors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "freqlens_stream_decode_errors_total",
		Help: "Poison messages (rejected whole), by reason.",
	}, []string{"reason"})
	deadLetters := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "freqlens_stream_dead_letters_total",
		Help: "Poison messages written to the dead-letter topic.",
	})
	batchRows := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "freqlens_stream_batch_rows",
		Help:    "Rows per batch handed to the pipeline.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 9), // 1 … 65536
	})

	assigned := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "freqlens_stream_assigned_partitions",
		Help: "Input partitions assigned to this consumer in the current generation of the group.",
	})
	rebalances := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "freqlens_stream_rebalances_total",
		Help: "Generations of the consumer group this consumer joined (each a rebalance).",
	})
	rebuildReadings := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "freqlens_stream_rebuild_readings_total",
		Help: "Readings read back from before the committed offsets to rebuild the windows of assigned partitions.",
	})
	rebuildSeconds := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "freqlens_stream_rebuild_duration_seconds",
		Help:    "Time from an assignment to its windows rebuilt, when forecasting resumes.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14), // 10 ms … 80 s
	})
	commitsSkipped := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "freqlens_stream_commits_skipped_total",
		Help: "Batch commits dropped because their generation was over (the partitions' next owner reprocesses them).",
	})

	// Instances in one process (a consumer created again after a restart)
	// add to the same totals.
	const component = "stream"
	var err error
	if assigned, err = registry.Shared(reg, component, assigned); err != nil {
		return nil, err
	}
	if rebalances, err = registry.Shared(reg, component, rebalances); err != nil {
		return nil, err
	}
	if rebuildReadings, err = registry.Shared(reg, component, rebuildReadings); err != nil {
		return nil, err
	}
	if rebuildSeconds, err = registry.Shared(reg, component, rebuildSeconds); err != nil {
		return nil, err
	}
	if commitsSkipped, err = registry.Shared(reg, component, commitsSkipped); err != nil {
		return nil, err
	}
	if readingsVec, err = registry.Shared(reg, component, readingsVec); err != nil {
		return nil, err
	}
	if messages, err = registry.Shared(reg, component, messages); err != nil {
		return nil, err
	}
	if decodeErrors, err = registry.Shared(reg, component, decodeErrors); err != nil {
		return nil, err
	}
	if deadLetters, err = registry.Shared(reg, component, deadLetters); err != nil {
		return nil, err
	}
	if batchRows, err = registry.Shared(reg, component, batchRows); err != nil {
		return nil, err
	}
	// The gauges read at scrape time answer for the newest consumer.
	for _, g := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "freqlens_stream_consumer_lag_records",
			Help: "Records of the assigned partitions not committed yet: the sum of their high watermarks minus their committed offsets.",
		}, func() float64 { return float64(c.Lag()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "freqlens_stream_inflight_bytes",
			Help: "Bytes of input messages fetched and not yet released by the pipeline (bounded by service.max_inflight_bytes).",
		}, func() float64 { return float64(c.flow.inUse()) }),
	} {
		if err := registry.Replace(reg, component, g); err != nil {
			return nil, err
		}
	}

	m := &metrics{
		readings:        readingsVec.WithLabelValues(topic),
		messages:        messages.WithLabelValues(topic),
		decodeErrors:    make(map[string]prometheus.Counter, len(readings.Reasons)),
		deadLetters:     deadLetters,
		batchRows:       batchRows,
		assigned:        assigned,
		rebalances:      rebalances,
		rebuildReadings: rebuildReadings,
		rebuildSeconds:  rebuildSeconds,
		commitsSkipped:  commitsSkipped,
	}
	for _, r := range readings.Reasons {
		m.decodeErrors[r] = decodeErrors.WithLabelValues(r)
	}
	return m, nil
}
