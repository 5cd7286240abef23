// Package registrytest reads metric values out of a Prometheus registry,
// for the tests of the packages that register metrics.
package registrytest

import "github.com/prometheus/client_golang/prometheus"

// Value returns the value of the first series of the counter, gauge or
// untyped metric name in g whose labels include every name, value pair of
// labels (given as name1, value1, name2, value2 …), and whether there is
// one.
func Value(g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	mfs, err := g.Gather()
	if err != nil {
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}
				if !found {
					continue series
				}
			}
			return m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}
