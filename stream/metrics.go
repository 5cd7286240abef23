package stream

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are a Consumer's Prometheus metrics.
type metrics struct {
	readings     prometheus.Counter // bound to the input topic
	messages     prometheus.Counter // bound to the input topic
	decodeErrors map[string]prometheus.Counter
	deadLetters  prometheus.Counter
	batchRows    prometheus.Histogram
	lag          prometheus.Collector
}

// newMetrics registers the metrics with reg. Metrics already registered
// there by an earlier Consumer (a restart in the same process) are reused,
// except the lag gauge, which is replaced by this consumer's.
func newMetrics(reg prometheus.Registerer, topic string, lag func() int64) (*metrics, error) {
	readings := prometheus.NewCounterVec(prometheus.CounterOpts{
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

	var err error
	if readings, err = register(reg, readings); err != nil {
		return nil, err
	}
	if messages, err = register(reg, messages); err != nil {
		return nil, err
	}
	if decodeErrors, err = register(reg, decodeErrors); err != nil {
		return nil, err
	}
	if deadLetters, err = register(reg, deadLetters); err != nil {
		return nil, err
	}
	if batchRows, err = register(reg, batchRows); err != nil {
		return nil, err
	}
	lagGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "freqlens_stream_consumer_lag_records",
		Help: "Records between the consumer's position and the high watermark of the partition it fetched last (kafka-go Reader.Stats().Lag).",
	}, func() float64 { return float64(lag()) })
	if err := reg.Register(lagGauge); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, fmt.Errorf("stream: register metric freqlens_stream_consumer_lag_records: %w", err)
		}
		reg.Unregister(are.ExistingCollector)
		if err := reg.Register(lagGauge); err != nil {
			return nil, fmt.Errorf("stream: register metric freqlens_stream_consumer_lag_records: %w", err)
		}
	}

	m := &metrics{
		readings:     readings.WithLabelValues(topic),
		messages:     messages.WithLabelValues(topic),
		decodeErrors: make(map[string]prometheus.Counter, len(Reasons)),
		deadLetters:  deadLetters,
		batchRows:    batchRows,
		lag:          lagGauge,
	}
	for _, r := range Reasons {
		m.decodeErrors[r] = decodeErrors.WithLabelValues(r)
	}
	return m, nil
}

// register registers c with reg, or returns the collector of the same
// name that is already there.
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
	return c, fmt.Errorf("stream: register metrics: %w; is another collector using a freqlens_stream_ name?", err)
}
