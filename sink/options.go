package sink

import "github.com/prometheus/client_golang/prometheus"

// Option sets a collaborator of a sink.
type Option func(*options)

type options struct {
	reg prometheus.Registerer
}

// WithRegisterer registers the sink's metrics with reg. Without it they are
// kept in a private registry. Sinks given the same registerer share their
// metrics, told apart by the topic label.
func WithRegisterer(reg prometheus.Registerer) Option {
	return func(o *options) { o.reg = reg }
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.reg == nil {
		o.reg = prometheus.NewRegistry()
	}
	return o
}
