// Package registry is how every FreqLens package registers its Prometheus
// collectors: one policy instead of one per package.
//
//   - A component registers with the prometheus.Registerer its constructor
//     was given; nil means its metrics are kept but not exported (tests,
//     and library users who do not scrape).
//   - Registration errors are returned, with the metric's name and what to
//     do; nothing panics on a caller's registry and nothing falls back
//     silently to a registry nobody scrapes.
//   - A name registered twice is an error (Register), unless the component
//     says its instances add to one total (Shared: two sinks in one
//     process, a consumer created again after a restart in the same
//     process), or that the newest instance answers a gauge read at scrape
//     time (Replace: the consumer's lag).
//
// It imports the standard library and client_golang only.
package registry

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers every collector with reg and returns the first error,
// naming the component and the metric. With a nil reg it does nothing.
func Register(reg prometheus.Registerer, component string, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return registerError(component, c, err)
		}
	}
	return nil
}

// Shared registers c with reg, or returns the collector of the same name and
// type already there, so that instances of one component add to one total.
// With a nil reg it returns c.
func Shared[C prometheus.Collector](reg prometheus.Registerer, component string, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
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
	return c, registerError(component, c, err)
}

// Replace registers c with reg in place of a collector of the same name,
// for a gauge that reads the newest instance of a component at scrape
// time. With a nil reg it does nothing.
func Replace(reg prometheus.Registerer, component string, c prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		reg.Unregister(are.ExistingCollector)
		err = reg.Register(c)
	}
	if err != nil {
		return registerError(component, c, err)
	}
	return nil
}

// registerError says which metric of which component could not be
// registered, and why.
func registerError(component string, c prometheus.Collector, err error) error {
	name := "a metric"
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if name == "a metric" {
			name = d.String()
		}
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		return fmt.Errorf("%s: register %s: it is already registered (a second %s on the same registry? give each its own registry): %w",
			component, name, component, err)
	}
	return fmt.Errorf("%s: register %s: %w", component, name, err)
}
