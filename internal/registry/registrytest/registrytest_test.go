package registrytest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestValue(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "c"}, []string{"topic", "reason"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"})
	reg.MustRegister(c, g)
	c.WithLabelValues("a", "x").Add(2)
	c.WithLabelValues("b", "x").Add(3)
	c.WithLabelValues("b", "y").Add(5)
	g.Set(-1.5)
	cases := []struct {
		name   string
		labels []string
		want   float64
		ok     bool
	}{
		{"g", nil, -1.5, true},
		{"c_total", []string{"topic", "a"}, 2, true},
		{"c_total", []string{"topic", "b", "reason", "y"}, 5, true},
		{"c_total", []string{"reason", "y"}, 5, true},
		{"c_total", []string{"topic", "c"}, 0, false},
		{"absent", nil, 0, false},
	}
	for _, tc := range cases {
		got, ok := Value(reg, tc.name, tc.labels...)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Value(%s, %v) = %v, %v; want %v, %v", tc.name, tc.labels, got, ok, tc.want, tc.ok)
		}
	}
}
