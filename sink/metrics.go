package sink

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/internal/registry"
)

// metrics are the sink's Prometheus collectors. Two sinks given the same
// registerer share them.
type metrics struct {
	forecasts *prometheus.CounterVec
	messages  *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	errors    *prometheus.CounterVec
	duration  prometheus.Histogram
}

// topicMetrics are the counters of one topic, resolved once.
type topicMetrics struct {
	forecasts, messages, bytes, errors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		forecasts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "freqlens_sink_forecasts_written_total",
			Help: "Forecasts whose message on the topic was acknowledged.",
		}, []string{"topic"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "freqlens_sink_messages_written_total",
			Help: "Messages acknowledged by the topic.",
		}, []string{"topic"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "freqlens_sink_bytes_written_total",
			Help: "Key and value bytes of the messages acknowledged by the topic.",
		}, []string{"topic"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "freqlens_sink_write_errors_total",
			Help: "Messages for the topic that could not be encoded or were not acknowledged.",
		}, []string{"topic"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "freqlens_sink_write_duration_seconds",
			Help:    "Duration of a sink Write: encoding, producing and waiting for every acknowledgement.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15), // 0.5ms … 8s
		}),
	}
	// Two sinks given the same registerer add to the same totals.
	const component = "sink"
	var err error
	if m.forecasts, err = registry.Shared(reg, component, m.forecasts); err != nil {
		return nil, err
	}
	if m.messages, err = registry.Shared(reg, component, m.messages); err != nil {
		return nil, err
	}
	if m.bytes, err = registry.Shared(reg, component, m.bytes); err != nil {
		return nil, err
	}
	if m.errors, err = registry.Shared(reg, component, m.errors); err != nil {
		return nil, err
	}
	if m.duration, err = registry.Shared(reg, component, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) topic(name string) topicMetrics {
	return topicMetrics{
		forecasts: m.forecasts.WithLabelValues(name),
		messages:  m.messages.WithLabelValues(name),
		bytes:     m.bytes.WithLabelValues(name),
		errors:    m.errors.WithLabelValues(name),
	}
}
