package model

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/freqlens/freqlens/cycles"
)

// TestTimeZoneKeepsTheLocalHour: with a time zone the clock reads a
// window's time as the local wall clock, so the same window ending at 08:00
// in Berlin in January (07:00 UTC) and in July (06:00 UTC) gets the same
// forecast; in UTC it does not, an hour of the day apart. The zone survives
// the model file, and a name that is no zone is refused.
func TestTimeZoneKeepsTheLocalHour(t *testing.T) {
	m, err := New(Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: Independent, Hidden: 16, Frequencies: 8, TopK: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	m.SetRhythms([]cycles.Rhythm{{PeriodSteps: 24, Frequencies: []int{0, 1}, Harmonics: []int{1, 2}}})
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range m.Params().Clock {
		m.Params().Clock[i] = rng.NormFloat64()
	}
	x := make([]float64, 24)
	for i := range x {
		x[i] = math.Sin(2*math.Pi*float64(i)/24) + 0.1*rng.NormFloat64()
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	winter, summer := time.Date(2026, 1, 12, 8, 0, 0, 0, berlin), time.Date(2026, 7, 13, 8, 0, 0, 0, berlin)
	forecast := func(m *Model, at time.Time) []float64 {
		return m.Forward(m.NewWorkspace(1), nil, x, []int64{at.UnixNano()})
	}
	maxDiff := func(a, b []float64) float64 {
		d := 0.0
		for i := range a {
			d = max(d, math.Abs(a[i]-b[i]))
		}
		return d
	}
	if d := maxDiff(forecast(m, winter), forecast(m, summer)); d < 1e-3 {
		t.Fatalf("in UTC, 08:00 Berlin in winter and in summer forecast alike (largest difference %g): the test cannot tell", d)
	}
	if err := m.SetTimeZone("Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(forecast(m, winter), forecast(m, summer)); d > 1e-9 {
		t.Errorf("on Berlin's clock, 08:00 in winter and in summer forecast %g apart, want alike", d)
	}
	if got, want := m.ClockStep(summer)-m.ClockStep(winter), float64(summer.Sub(winter)/time.Hour)+1; got != want {
		t.Errorf("clock steps from winter to summer = %v, want %v (the hour daylight saving takes back)", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { m.ClockStep(summer) }); n != 0 {
		t.Errorf("reading a time on the zone's clock allocates %v times; the forward pass must not", n)
	}
	if err := m.SetTimeZone("Mars/Olympus_Mons"); err == nil {
		t.Error("SetTimeZone took a name that is no zone")
	}
	if err := m.SetTimeZone("UTC"); err != nil || m.Meta.TimeZone != "" {
		t.Errorf("SetTimeZone(UTC): %v, zone %q; want UTC kept as none", err, m.Meta.TimeZone)
	}
}
