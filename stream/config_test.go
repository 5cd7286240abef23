package stream

import (
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/readings"
)

func TestNewConsumerValidates(t *testing.T) {
	ok := Config{Group: "g", Topic: "in", DeadLetterTopic: "dlq"}
	with := func(f func(c *Config)) Config {
		c := ok
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		in   readings.Config
		want []string // the YAML key first, then the fix
	}{
		{name: "dead letters into the input", cfg: with(func(c *Config) { c.DeadLetterTopic = "in" }), want: []string{"topics.dead_letter", "another topic"}},
		{name: "negative BatchRows", cfg: with(func(c *Config) { c.BatchRows = -1 }), want: []string{"input.batch_rows = -1"}},
		{name: "negative BatchLatency", cfg: with(func(c *Config) { c.BatchLatency = -time.Millisecond }), want: []string{"input.batch_latency"}},
		{name: "MaxBytes below MinBytes", cfg: with(func(c *Config) { c.MinBytes = 10; c.MaxBytes = 5 }), want: []string{"input.fetch_max_bytes = 5", "input.fetch_min_bytes = 10"}},
		{name: "unknown start offset", cfg: with(func(c *Config) { c.StartOffset = "middle" }), want: []string{`input.start_offset = "middle"`, `"first" or "last"`}},
		{name: "heartbeat too slow for the session", cfg: with(func(c *Config) { c.HeartbeatInterval = 5 * time.Second }), want: []string{"kafka.heartbeat_interval = 5s", "at most 3.333333333s"}},
		{name: "in flight below one fetch", cfg: with(func(c *Config) { c.MaxInflightBytes = 1 << 20 }), want: []string{"service.max_inflight_bytes = 1048576", "input.fetch_max_bytes"}},
		// The readings' settings are checked too (package readings tests them one by one).
		{name: "unknown format", cfg: ok, in: readings.Config{Format: "xml"}, want: []string{`input.format = "xml"`, `"json", "csv" or "arrow"`}},
		{name: "negative max_past", cfg: ok, in: readings.Config{MaxPast: -time.Hour}, want: []string{"input.max_past = -1h0m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewConsumer(tc.cfg, tc.in, nil)
			if err == nil {
				t.Fatalf("NewConsumer accepted %+v, %+v", tc.cfg, tc.in)
			}
			if !strings.HasPrefix(err.Error(), tc.want[0]) {
				t.Errorf("error %q does not start with the YAML key %s", err, tc.want[0])
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// Zero fields take their defaults, so the zero Config is valid.
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("Config{}.Validate() = %v, want nil", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{}.withDefaults()
	want := Config{
		Group: "freqlens", Topic: "readings", DeadLetterTopic: "readings.dlq", BatchRows: 4096,
		BatchLatency: 10 * time.Millisecond, MaxWait: 250 * time.Millisecond, MinBytes: 1, MaxBytes: 10 << 20,
		StartOffset: "first", SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second,
		RebalanceTimeout: 30 * time.Second, JoinGroupBackoff: time.Second, MaxInflightBytes: 64 << 20,
	}
	if got != want {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	if got := (Config{DropPoison: true}).withDefaults().DeadLetterTopic; got != "" {
		t.Errorf("DeadLetterTopic with DropPoison = %q, want none", got)
	}
}
