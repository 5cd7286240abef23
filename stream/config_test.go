package stream

import (
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/readings"
)

func TestNewConsumerValidates(t *testing.T) {
	ok := DefaultConfig()
	ok.Group, ok.Topic, ok.DeadLetterTopic = "g", "in", "dlq"
	with := func(f func(c *Config)) Config {
		c := ok
		f(&c)
		return c
	}
	inWith := func(f func(c *readings.Config)) readings.Config {
		c := readings.DefaultConfig()
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
		// A zero is a value, not the default: each zero that cannot work is
		// refused, naming its key and the default to write.
		{name: "no group", cfg: with(func(c *Config) { c.Group = "" }), want: []string{"kafka.group is empty", `"freqlens"`}},
		{name: "no input topic", cfg: with(func(c *Config) { c.Topic = "" }), want: []string{"topics.input is empty", `"readings"`}},
		{name: "no dead-letter topic", cfg: with(func(c *Config) { c.DeadLetterTopic = "" }), want: []string{"topics.dead_letter is empty", `"readings.dlq"`, "input.drop_poison: true"}},
		{name: "zero BatchRows", cfg: with(func(c *Config) { c.BatchRows = 0 }), want: []string{"input.batch_rows = 0", "at least 1", "4096"}},
		{name: "zero BatchLatency", cfg: with(func(c *Config) { c.BatchLatency = 0 }), want: []string{"input.batch_latency = 0s", "positive", "5ms"}},
		{name: "zero MaxWait", cfg: with(func(c *Config) { c.MaxWait = 0 }), want: []string{"input.fetch_max_wait = 0s", "positive", "250ms"}},
		{name: "zero MinBytes", cfg: with(func(c *Config) { c.MinBytes = 0 }), want: []string{"input.fetch_min_bytes = 0", "at least 1"}},
		{name: "zero MaxBytes", cfg: with(func(c *Config) { c.MaxBytes = 0 }), want: []string{"input.fetch_max_bytes = 0", "input.fetch_min_bytes = 1"}},
		{name: "empty StartOffset", cfg: with(func(c *Config) { c.StartOffset = "" }), want: []string{`input.start_offset = ""`, `"first" or "last"`}},
		{name: "zero SessionTimeout", cfg: with(func(c *Config) { c.SessionTimeout = 0 }), want: []string{"kafka.session_timeout = 0s", "positive", "10s"}},
		{name: "zero HeartbeatInterval", cfg: with(func(c *Config) { c.HeartbeatInterval = 0 }), want: []string{"kafka.heartbeat_interval = 0s", "positive", "3s"}},
		{name: "zero RebalanceTimeout", cfg: with(func(c *Config) { c.RebalanceTimeout = 0 }), want: []string{"kafka.rebalance_timeout = 0s", "positive", "30s"}},
		{name: "zero JoinGroupBackoff", cfg: with(func(c *Config) { c.JoinGroupBackoff = 0 }), want: []string{"kafka.join_group_backoff = 0s", "positive", "1s"}},
		{name: "zero MaxInflightBytes", cfg: with(func(c *Config) { c.MaxInflightBytes = 0 }), want: []string{"service.max_inflight_bytes = 0", "positive", "67108864"}},
		{name: "negative BatchLatency", cfg: with(func(c *Config) { c.BatchLatency = -time.Millisecond }), want: []string{"input.batch_latency"}},
		{name: "MaxBytes below MinBytes", cfg: with(func(c *Config) { c.MinBytes = 10; c.MaxBytes = 5 }), want: []string{"input.fetch_max_bytes = 5", "input.fetch_min_bytes = 10"}},
		{name: "unknown start offset", cfg: with(func(c *Config) { c.StartOffset = "middle" }), want: []string{`input.start_offset = "middle"`, `"first" or "last"`}},
		{name: "heartbeat too slow for the session", cfg: with(func(c *Config) { c.HeartbeatInterval = 5 * time.Second }), want: []string{"kafka.heartbeat_interval = 5s", "at most 3.333333333s"}},
		{name: "in flight below one fetch", cfg: with(func(c *Config) { c.MaxInflightBytes = 1 << 20 }), want: []string{"service.max_inflight_bytes = 1048576", "input.fetch_max_bytes"}},
		// The readings' settings are checked too, as given (package readings
		// tests them one by one).
		{name: "unknown format", cfg: ok, in: inWith(func(c *readings.Config) { c.Format = "xml" }), want: []string{`input.format = "xml"`, `"json", "csv" or "arrow"`}},
		{name: "negative max_past", cfg: ok, in: inWith(func(c *readings.Config) { c.MaxPast = -time.Hour }), want: []string{"input.max_past = -1h0m0s"}},
		{name: "zero max_past", cfg: ok, in: inWith(func(c *readings.Config) { c.MaxPast = 0 }), want: []string{"input.max_past = 0s", "positive"}},
		{name: "zero readings Config", cfg: ok, in: readings.Config{}, want: []string{`input.format = ""`}},
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
	if err := (Config{}).Validate(); err == nil {
		t.Error("Config{}.Validate() = nil; a zero Config names no group or topic")
	}
	// An empty dead-letter topic means something with input.drop_poison, and
	// a dropping consumer writes none, so its topic may even be the input's.
	for _, dlq := range []string{"", "in", "dlq"} {
		cfg := with(func(c *Config) { c.DropPoison, c.DeadLetterTopic = true, dlq })
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate() with drop_poison and topics.dead_letter %q = %v, want nil", dlq, err)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	want := Config{
		Group: "freqlens", Topic: "readings", DeadLetterTopic: "readings.dlq", BatchRows: 4096,
		BatchLatency: 5 * time.Millisecond, MaxWait: 250 * time.Millisecond, MinBytes: 1, MaxBytes: 10 << 20,
		StartOffset: "first", SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second,
		RebalanceTimeout: 30 * time.Second, JoinGroupBackoff: time.Second, MaxInflightBytes: 64 << 20,
	}
	if got := DefaultConfig(); got != want {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
}

// TestNewConsumerTakesConfigAsGiven: NewConsumer keeps every field as given,
// and a consumer with input.drop_poison has no dead-letter writer even when
// topics.dead_letter names a topic (it keeps its default).
func TestNewConsumerTakesConfigAsGiven(t *testing.T) {
	cfg := dropping("g", "in")
	cfg.BatchRows, cfg.MinBytes, cfg.StartOffset, cfg.RebuildSpan = 7, 3, "last", 0
	in := readings.DefaultConfig()
	in.MaxPast = 2 * time.Hour
	c, err := NewConsumer(cfg, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg != cfg {
		t.Errorf("consumer config = %+v, want %+v as given", c.cfg, cfg)
	}
	if c.maxPastMs != in.MaxPast.Milliseconds() {
		t.Errorf("consumer max past %dms, want input.max_past %v as given", c.maxPastMs, in.MaxPast)
	}
	if c.dlq != nil {
		t.Errorf("consumer with drop_poison and topics.dead_letter %q has a dead-letter writer", cfg.DeadLetterTopic)
	}
}
