package wire

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendTimeMatchesRFC3339: the digit-by-digit path writes what Go's
// RFC 3339 formatter writes, for random instants from year 0 to 9999 with
// and without fractions of a second, in other zones, and at the edges.
func TestAppendTimeMatchesRFC3339(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lo := time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(10005, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	zone := time.FixedZone("x", -7*3600-1800)
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC), time.Date(1900, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 0), time.Unix(-1, 0), time.Date(2026, 1, 5, 8, 0, 0, 1, time.UTC),
	}
	for range 100000 {
		ts := time.Unix(lo+rng.Int64N(hi-lo), 0)
		switch rng.IntN(4) {
		case 0:
			ts = ts.Add(time.Duration(rng.IntN(1e9)))
		case 1:
			ts = ts.In(zone)
		}
		times = append(times, ts)
	}
	for _, ts := range times {
		want := ts.UTC().Format(time.RFC3339Nano)
		if got := string(appendTime(nil, ts)); got != want {
			t.Fatalf("appendTime(%v) = %s, want %s", ts, got, want)
		}
	}
}
