package sink

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
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
	var err error
	m.forecasts, err = register(reg, m.forecasts)
	if err == nil {
		m.messages, err = register(reg, m.messages)
	}
	if err == nil {
		m.bytes, err = register(reg, m.bytes)
	}
	if err == nil {
		m.errors, err = register(reg, m.errors)
	}
	if err == nil {
		m.duration, err = register(reg, m.duration)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the equal collector already registered.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

func (m *metrics) topic(name string) topicMetrics {
	return topicMetrics{
		forecasts: m.forecasts.WithLabelValues(name),
		messages:  m.messages.WithLabelValues(name),
		bytes:     m.bytes.WithLabelValues(name),
		errors:    m.errors.WithLabelValues(name),
	}
}
