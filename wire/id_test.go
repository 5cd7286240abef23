package wire_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/freqlens/freqlens/wire"
)

func TestForecastID(t *testing.T) {
	now := time.Now()
	monotonic := now.Add(origin.Sub(now.Round(0))) // origin, with a monotonic clock reading
	sum := sha256.Sum256([]byte("s-17\x002026-01-05T08:00:00Z\x003"))
	want := hex.EncodeToString(sum[:16])
	if got := wire.ForecastID("s-17", origin, 3); got != want {
		t.Errorf("ForecastID = %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name    string
		series  string
		ts      time.Time
		version int64
		same    bool
	}{
		{"same instant in another zone", "s-17", origin.In(time.FixedZone("X", 7200)), 3, true},
		{"same instant with a monotonic reading", "s-17", monotonic, 3, true},
		{"another series", "s-18", origin, 3, false},
		{"another ts", "s-17", origin.Add(time.Hour), 3, false},
		{"another nanosecond", "s-17", origin.Add(time.Nanosecond), 3, false},
		{"another version", "s-17", origin, 4, false},
		{"series and version cannot trade digits", "s-1", origin, 73, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := wire.ForecastID(tc.series, tc.ts, tc.version)
			if (got == want) != tc.same {
				t.Errorf("ForecastID(%q, %s, %d) = %s, same as %s: %v, want %v",
					tc.series, tc.ts, tc.version, got, want, got == want, tc.same)
			}
		})
	}
	if got := string(wire.AppendForecastID([]byte("id="), "s-17", origin, 3)); got != "id="+want {
		t.Errorf("AppendForecastID kept no prefix: %s", got)
	}
}
