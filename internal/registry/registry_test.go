package registry

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func counter(name string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: "A test counter."})
}

func TestRegisterReturnsErrorsNamingTheMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg, "thing", counter("x_total"), counter("y_total")); err != nil {
		t.Fatal(err)
	}
	err := Register(reg, "thing", counter("x_total"))
	if err == nil || !strings.Contains(err.Error(), "x_total") || !strings.Contains(err.Error(), "thing") ||
		!strings.Contains(err.Error(), "already registered") {
		t.Errorf("a second x_total: err = %v; want an error naming the component and the metric", err)
	}
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "y_total", Help: "Another help."})
	if err := Register(reg, "thing", other); err == nil || !strings.Contains(err.Error(), "y_total") {
		t.Errorf("y_total with another help: err = %v; want an error naming it", err)
	}
	if err := Register(nil, "thing", counter("x_total")); err != nil {
		t.Errorf("a nil registry: err = %v; want none", err)
	}
}

func TestSharedReturnsTheRegisteredCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := Shared(reg, "thing", counter("x_total"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := Shared(reg, "thing", counter("x_total"))
	if err != nil || second != first {
		t.Errorf("Shared again = %v, %v; want the first collector", second, err)
	}
	// Another type under the name is an error, not a silent mix.
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_total", Help: "A test counter."})
	if _, err := Shared(reg, "thing", g); err == nil {
		t.Error("a gauge shared the name of a counter")
	}
}

func TestReplaceAnswersWithTheNewest(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, v := range []float64{1, 2} {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lag", Help: "h"}, func() float64 { return v })
		if err := Replace(reg, "thing", g); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].Metric[0].GetGauge().GetValue() != 2 {
		t.Errorf("after two Replace calls the registry holds %v (%v); want one lag gauge reading 2", mfs, err)
	}
}
