package readings_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/readings"
)

// TestPlausibility: the decoders refuse series ids longer than
// MaxSeriesBytes, values outside ValueRange and readings more than MaxPast
// behind the newest time the partition has seen, in every format.
func TestPlausibility(t *testing.T) {
	long := strings.Repeat("s", 300)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, format := range []readings.Format{readings.FormatJSON, readings.FormatCSV, readings.FormatArrow} {
		cfg := configWith(func(c *readings.Config) {
			c.Format, c.ValueRange, c.MaxFuture = format, []float64{-1e6, 1e6}, 1e6*time.Hour
		})
		enc := func(r readings.Reading) []byte {
			switch format {
			case readings.FormatCSV:
				return readings.AppendCSV(nil, r, cfg)
			case readings.FormatArrow:
				b, err := readings.AppendArrow(nil, []readings.Reading{r}, cfg, mem)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			return readings.AppendJSON(nil, r, cfg)
		}
		at := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
		for _, tc := range []struct {
			name   string
			r      readings.Reading
			oldest time.Time
			want   string
		}{
			{"a plausible reading", readings.Reading{Series: "a", Time: at, Values: []float64{20}}, time.Time{}, ""},
			{"a 300-byte series id", readings.Reading{Series: long, Time: at, Values: []float64{20}}, time.Time{}, readings.ReasonSeriesTooLong},
			{"1e300", readings.Reading{Series: "a", Time: at, Values: []float64{1e300}}, time.Time{}, readings.ReasonOutOfRange},
			{"-2e6", readings.Reading{Series: "a", Time: at, Values: []float64{-2e6}}, time.Time{}, readings.ReasonOutOfRange},
			{"1970 behind a 2026 partition", readings.Reading{Series: "a", Time: time.Unix(0, 0), Values: []float64{1}}, at.Add(-168 * time.Hour), readings.ReasonTooOld},
			{"a week behind, just", readings.Reading{Series: "a", Time: at.Add(-168 * time.Hour), Values: []float64{1}}, at.Add(-168 * time.Hour), ""},
		} {
			t.Run(string(format)+"/"+tc.name, func(t *testing.T) {
				dec, err := readings.NewDecoder(cfg, testClock)
				if err != nil {
					t.Fatal(err)
				}
				if !tc.oldest.IsZero() {
					dec.SetOldest(tc.oldest.UnixMilli())
				}
				_, err = decodeOne(t, mem, dec, cfg.ValueFields, []byte("key"), enc(tc.r))
				if got := reasonOf(err); got != tc.want {
					t.Errorf("reason %q (%v), want %q", got, err, tc.want)
				}
				if got := dec.Newest(); tc.want == "" && got != tc.r.Time.UnixMilli() {
					t.Errorf("newest time of the message %s, want %s", time.UnixMilli(got).UTC(), tc.r.Time)
				}
			})
		}
	}
}

// TestTimeBounds: the bound SetOldest sets holds for every message until it
// is set again, and NoTime lifts it; Newest is the latest time of the last
// message decoded, NoTime for a message without readings.
func TestTimeBounds(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg := configWith(func(c *readings.Config) { c.Format = readings.FormatArrow })
	dec := newArrow(t, cfg)
	msg := func(rs ...readings.Reading) []byte {
		b, err := readings.AppendArrow(nil, rs, cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	two := msg(readings.Reading{Series: "a", Time: time.UnixMilli(t0 + 1000), Values: []float64{1}},
		readings.Reading{Series: "b", Time: time.UnixMilli(t0), Values: []float64{2}})
	if _, err := decodeOne(t, mem, dec, cfg.ValueFields, nil, two); err != nil {
		t.Fatal(err)
	}
	if got := dec.Newest(); got != t0+1000 {
		t.Errorf("Newest() = %d after two readings, want the later %d", got, t0+1000)
	}
	if _, err := decodeOne(t, mem, dec, cfg.ValueFields, nil, msg()); err != nil {
		t.Fatal(err)
	}
	if got := dec.Newest(); got != readings.NoTime {
		t.Errorf("Newest() = %d after a message without readings, want NoTime", got)
	}
	dec.SetOldest(t0 + 1)
	for i := range 2 {
		_, err := decodeOne(t, mem, dec, cfg.ValueFields, nil, two)
		if reasonOf(err) != readings.ReasonTooOld {
			t.Errorf("decode %d with the oldest time after a reading: %v, want %s", i+1, err, readings.ReasonTooOld)
		}
		// The time the message names is the oldest allowed, said as such.
		if cutoff := time.UnixMilli(t0 + 1).UTC().Format("2006-01-02T15:04:05.000Z"); err == nil || !strings.Contains(err.Error(), "is before "+cutoff[:19]) {
			t.Errorf("decode %d: %v; want it to name the oldest time allowed, %s", i+1, err, cutoff)
		}
	}
	dec.SetOldest(readings.NoTime)
	if _, err := decodeOne(t, mem, dec, cfg.ValueFields, nil, two); err != nil {
		t.Errorf("decode with SetOldest(NoTime): %v, want no bound", err)
	}
}
