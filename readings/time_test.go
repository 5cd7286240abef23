package readings

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestParseRFC3339MatchesTime checks the hand-written parser against
// time.Parse on random times in random zones and precisions.
func TestParseRFC3339MatchesTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	layouts := []string{time.RFC3339, time.RFC3339Nano, "2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.0Z07:00"}
	for i := 0; i < 20000; i++ {
		ms := minRFC3339Ms + 86400000 + rng.Int64N(maxRFC3339Ms-minRFC3339Ms-2*86400000)
		tm := time.UnixMilli(ms).Add(time.Duration(rng.Int64N(1e6)))
		zone := time.FixedZone("", (rng.IntN(48)-24)*1800)
		s := tm.In(zone).Format(layouts[rng.IntN(len(layouts))])
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("time.Parse(%q): %v", s, err)
		}
		got, ok := parseRFC3339([]byte(s))
		if !ok {
			t.Fatalf("parseRFC3339(%q) failed", s)
		}
		if w := want.UnixMilli(); got != w {
			t.Fatalf("parseRFC3339(%q) = %d, want %d", s, got, w)
		}
	}
}

// TestAppendTimeMatchesTime checks the hand-written formatter against
// time.Format over the RFC 3339 range, and its inverse.
func TestAppendTimeMatchesTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 20000; i++ {
		ms := minRFC3339Ms + rng.Int64N(maxRFC3339Ms-minRFC3339Ms+1)
		if i < 4 {
			ms = []int64{minRFC3339Ms, maxRFC3339Ms, 0, -1}[i]
		}
		got := string(appendTime(nil, ms, false))
		want := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
		if ms%1000 == 0 {
			want = time.UnixMilli(ms).UTC().Format(time.RFC3339)
		}
		if got != want {
			t.Fatalf("appendTime(%d) = %s, want %s", ms, got, want)
		}
		if back, ok := parseRFC3339([]byte(got)); !ok || back != ms {
			t.Fatalf("parseRFC3339(%s) = %d, %v, want %d", got, back, ok, ms)
		}
	}
}

func TestParseTimeText(t *testing.T) {
	const t0 = 1767600000000 // 2026-01-05T08:00:00Z
	for _, tc := range []struct {
		in     string
		want   int64
		reason string
		msg    string // in the error, when there is one
	}{
		{in: "0", want: 0},
		{in: "-1", want: -1},
		{in: "9223372036854775807", want: 9223372036854775807},
		{in: "-9223372036854775808", want: -9223372036854775808},
		{in: "9223372036854775808", reason: ReasonBadTimestamp},
		{in: "2026-01-05 08:00:00z", want: t0},
		{in: "2026-01-05t08:00:00-00:30", want: t0 + 1800000},
		{in: "2024-02-29T00:00:00Z", want: 1709164800000},
		{in: "2026-01-05T08:00:00.Z", reason: ReasonBadTimestamp},
		{in: "2026-01-05T24:00:00Z", reason: ReasonBadTimestamp},
		{in: "2026-01-05T08:00:00+01", reason: ReasonBadTimestamp},
		{in: "", reason: ReasonMissingField},
		{in: "2026-01-05 08:00:00", reason: ReasonBadTimestamp, msg: "has no time zone: a reading's time is RFC 3339 with its zone; write 2026-01-05 08:00:00Z for UTC"},
		{in: "2026-01-05T08:00:00.250", reason: ReasonBadTimestamp, msg: "has no time zone"},
		{in: "1767600000", reason: ReasonBadTimestamp, msg: "is epoch seconds (2026-01-05T08:00:00Z), not the epoch milliseconds FreqLens reads; write 1767600000000"},
		{in: "1767600000.25", reason: ReasonBadTimestamp, msg: "is epoch seconds (2026-01-05T08:00:00.25Z), not the epoch milliseconds FreqLens reads; write 1767600000250"},
		{in: "yesterday", reason: ReasonBadTimestamp, msg: "is neither RFC 3339 nor integral epoch milliseconds"},
		{in: "99999999", want: 99999999},
		{in: "10000000000", want: 10000000000},
	} {
		got, perr := parseTimeText("ts", []byte(tc.in), false)
		if perr != nil {
			if perr.Reason != tc.reason || !strings.Contains(perr.Error(), tc.msg) {
				t.Errorf("parseTimeText(%q) = %s (%s), want reason %q and %q", tc.in, perr.Reason, perr, tc.reason, tc.msg)
			}
			continue
		}
		if tc.reason != "" || got != tc.want {
			t.Errorf("parseTimeText(%q) = %d, want %d (reason %q)", tc.in, got, tc.want, tc.reason)
		}
	}
	// Files of history read a time without its zone as UTC.
	for _, tc := range []struct {
		in   string
		want int64
	}{{"2026-01-05 08:00:00", t0}, {"2026-01-05T08:00:00.250", t0 + 250}, {"2026-01-05T08:00:00+01:00", t0 - 3600000},
		{"2026-01-05 08:00", t0}, {"2026-01-05", t0 - 8*3600000}} {
		if got, perr := parseTimeText("ts", []byte(tc.in), true); perr != nil || got != tc.want {
			t.Errorf("parseTimeText(%q) with zonelessUTC = %d, %v; want %d", tc.in, got, perr, tc.want)
		}
	}
}
