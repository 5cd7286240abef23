package window

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestExpire(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		ttl        time.Duration
		now        time.Duration // after t0
		want       int
		wantActive int
	}{
		{name: "nothing idle", ttl: time.Hour, now: 30 * time.Minute, want: 0, wantActive: 2},
		{name: "idle exactly TTL is kept", ttl: time.Hour, now: time.Hour, want: 0, wantActive: 2},
		{name: "idle longer than TTL is evicted", ttl: time.Hour, now: time.Hour + time.Millisecond, want: 1, wantActive: 1},
		{name: "both idle", ttl: time.Hour, now: 3 * time.Hour, want: 2, wantActive: 0},
		{name: "default TTL is 24h", ttl: DefaultConfig().SeriesTTL, now: 24*time.Hour + time.Second, want: 1, wantActive: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: t0}
			s := mustNew(t, Shape{Lookback: 2, Fields: one, Cadence: time.Hour}, configWith(func(c *Config) { c.SeriesTTL = tc.ttl }), WithClock(clk.now))
			feed(t, s, one, []rd{at("old", 0, 0), at("new", 0, 0)})
			clk.advance(30 * time.Minute)
			// A reading that is dropped still proves the series alive.
			feed(t, s, one, []rd{at("new", -5, 1)})
			if got := s.Expire(t0.Add(tc.now)); got != tc.want {
				t.Errorf("Expire() = %d, want %d", got, tc.want)
			}
			if st := s.Stats(); st.Active != tc.wantActive || st.Expired != uint64(tc.want) {
				t.Errorf("Stats() Active = %d Expired = %d, want %d and %d", st.Active, st.Expired, tc.wantActive, tc.want)
			}
		})
	}

	t.Run("an expired series starts over", func(t *testing.T) {
		clk := &fakeClock{t: t0}
		s := mustNew(t, Shape{Lookback: 2, Fields: one, Cadence: time.Hour}, configWith(func(c *Config) { c.SeriesTTL = time.Hour }), WithClock(clk.now))
		got := feed(t, s, one, []rd{at("a", 0, 0), at("a", 1, 1)})
		clk.advance(2 * time.Hour)
		if n := s.Expire(clk.now()); n != 1 {
			t.Fatalf("Expire() = %d, want 1", n)
		}
		got = append(got, feed(t, s, one, []rd{at("a", 2, 2), at("a", 3, 3)})...)
		want := []win{{"a", 1, []float64{0, 1}, 1*hour + 1000}, {"a", 3, []float64{2, 3}, 3*hour + 1000}}
		if !equalWins(got, want) {
			t.Errorf("windows:\n got %v\nwant %v", got, want)
		}
		if st := s.Stats(); st.Created != 2 || st.Ready != 2 {
			t.Errorf("Stats() = %+v, want Created 2, Ready 2", st)
		}
	})

	t.Run("mass expiry shrinks the map and keeps the survivors", func(t *testing.T) {
		clk := &fakeClock{t: t0}
		s := mustNew(t, Shape{Lookback: 1, Fields: one, Cadence: time.Hour}, configWith(func(c *Config) { c.SeriesTTL = time.Hour }), WithClock(clk.now))
		var rs []rd
		for i := range 5000 {
			rs = append(rs, at("s-"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa(i), 0, 0))
		}
		feed(t, s, one, rs)
		clk.advance(2 * time.Hour)
		feed(t, s, one, []rd{at(rs[17].series, 1, 1)})
		if n := s.Expire(clk.now()); n != 4999 {
			t.Fatalf("Expire() = %d, want 4999", n)
		}
		if s.peak != 1 {
			t.Errorf("peak after rebuilding = %d, want 1", s.peak)
		}
		got := feed(t, s, one, []rd{at(rs[17].series, 2, 2)})
		if want := []win{{rs[17].series, 2, []float64{2}, 2*hour + 1000}}; !equalWins(got, want) {
			t.Errorf("survivor's windows = %v, want %v", got, want)
		}
	})
}

func TestMaxSeries(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	clk := &fakeClock{t: t0}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	s := mustNew(t, Shape{Lookback: 1, Fields: one, Cadence: time.Hour}, configWith(func(c *Config) { c.MaxSeries, c.SeriesTTL = 2, time.Hour }),
		WithClock(clk.now), WithLogger(logger))

	for _, step := range []struct {
		name        string
		advance     time.Duration
		readings    []rd
		wantWindows int
		wantStats   Stats
		wantLines   int
		wantLog     string
	}{
		{
			name:        "two series fit",
			readings:    []rd{at("a", 0, 0), at("b", 0, 0)},
			wantWindows: 2,
			wantStats:   Stats{Active: 2, Created: 2, Ready: 2},
		},
		{
			name:        "a third is rejected and logged; existing series go on",
			readings:    []rd{at("c", 0, 0), at("a", 1, 1)},
			wantWindows: 1,
			wantStats:   Stats{Active: 2, Created: 2, Rejected: 1, Ready: 3},
			wantLines:   1,
			wantLog:     `level=WARN msg="window: series rejected: the max_series cap is reached; raise window.max_series or lower window.series_ttl" series=c max_series=2 rejected_total=1`,
		},
		{
			name:      "more rejections within the second are counted, not logged",
			advance:   999 * time.Millisecond,
			readings:  []rd{at("d", 0, 0), at("c", 1, 0)},
			wantStats: Stats{Active: 2, Created: 2, Rejected: 3, Ready: 3},
			wantLines: 1,
		},
		{
			name:      "a second later the next rejection is logged",
			advance:   time.Millisecond,
			readings:  []rd{at("e", 0, 0)},
			wantStats: Stats{Active: 2, Created: 2, Rejected: 4, Ready: 3},
			wantLines: 2,
			wantLog:   `series=e max_series=2 rejected_total=4`,
		},
	} {
		clk.advance(step.advance)
		got := feed(t, s, one, step.readings)
		if len(got) != step.wantWindows {
			t.Errorf("%s: %d windows, want %d", step.name, len(got), step.wantWindows)
		}
		if st := s.Stats(); st != step.wantStats {
			t.Errorf("%s: Stats() = %+v\nwant %+v", step.name, st, step.wantStats)
		}
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		if logs.Len() == 0 {
			lines = nil
		}
		if len(lines) != step.wantLines {
			t.Errorf("%s: %d log lines, want %d:\n%s", step.name, len(lines), step.wantLines, logs.String())
		} else if step.wantLog != "" && !strings.Contains(lines[len(lines)-1], step.wantLog) {
			t.Errorf("%s: log line\n%s\nwant it to contain\n%s", step.name, lines[len(lines)-1], step.wantLog)
		}
	}

	// Expiry frees room for new series.
	clk.advance(2 * time.Hour)
	if n := s.Expire(clk.now()); n != 2 {
		t.Fatalf("Expire() = %d, want 2", n)
	}
	feed(t, s, one, []rd{at("c", 5, 5)})
	if st := s.Stats(); st.Active != 1 || st.Created != 3 {
		t.Errorf("after expiry: Stats() = %+v, want Active 1, Created 3", st)
	}
}
