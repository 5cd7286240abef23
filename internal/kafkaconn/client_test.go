package kafkaconn_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/internal/loopback"
)

// TestSecuredBroker runs every kind of Kafka use the project has — a
// writer, a consumer-group reader, a partition read, a partition reader, a
// consumer group member, admin metadata and offsets — through one Client against a kfake broker that requires SASL
// and/or TLS, configured only through Config (the kafka.* keys).
func TestSecuredBroker(t *testing.T) {
	serverTLS, caFile := kafkatest.SelfSigned(t)
	for _, tc := range []struct {
		name string
		tls  bool
		sasl kafkaconn.SASL
		kfm  string // kfake's name of the mechanism
	}{
		{name: "plain", sasl: kafkaconn.SASL{Mechanism: "plain", Username: "u", Password: "p"}, kfm: "PLAIN"},
		{name: "scram-sha-256", sasl: kafkaconn.SASL{Mechanism: "scram-sha-256", Username: "u", Password: "p"}, kfm: "SCRAM-SHA-256"},
		{name: "scram-sha-512 over TLS", tls: true, sasl: kafkaconn.SASL{Mechanism: "scram-sha-512", Username: "u", Password: "p"}, kfm: "SCRAM-SHA-512"},
		{name: "TLS", tls: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []kfake.Opt
			if tc.sasl.Mechanism != "" {
				opts = append(opts, kfake.EnableSASL(), kfake.Superuser(tc.kfm, tc.sasl.Username, tc.sasl.Password))
			}
			cfg := kafkaconn.DefaultConfig()
			cfg.SASL = tc.sasl
			if tc.tls {
				opts = append(opts, kfake.TLS(serverTLS))
				cfg.TLSCAFile = caFile
			}
			cluster := kafkatest.NewCluster(t, []string{"t"}, opts...)
			cfg.Brokers = cluster.ListenAddrs()
			c, err := kafkaconn.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := c.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}

			var msgs []kafka.Message
			for i := range 6 {
				msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint(i))})
			}
			kafkatest.Produce(t, c, "t", msgs...)

			if got := len(kafkatest.ReadAll(t, c, "t")); got != len(msgs) {
				t.Errorf("partition reads returned %d messages, want %d", got, len(msgs))
			}
			r := c.NewGroupReader("g", "t", kafka.FirstOffset, kafkaconn.Fetch{MaxWait: 50 * time.Millisecond})
			defer r.Close()
			for i := range msgs {
				if _, err := r.FetchMessage(ctx); err != nil {
					t.Fatalf("group reader, message %d: %v", i+1, err)
				}
			}

			// A partition reader starts where it is told: the last message
			// of the partition holding most.
			parts, err := c.Partitions(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			fullest := parts[0]
			for _, p := range parts {
				if p.End-p.First > fullest.End-fullest.First {
					fullest = p
				}
			}
			pr, err := c.NewPartitionReader("t", fullest.Partition, fullest.End-1, kafkaconn.Fetch{MaxWait: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			if m, err := pr.FetchMessage(ctx); err != nil || m.Offset != fullest.End-1 || m.Partition != fullest.Partition {
				t.Errorf("partition reader fetched %d/%d (%v), want %d/%d", m.Partition, m.Offset, err, fullest.Partition, fullest.End-1)
			}

			// A consumer group member joins and is assigned every partition.
			cg, err := c.NewConsumerGroup(kafkaconn.Group{ID: "cg", Topics: []string{"t"}})
			if err != nil {
				t.Fatal(err)
			}
			defer cg.Close()
			gen, err := cg.Next(ctx)
			if err != nil {
				t.Fatalf("consumer group: %v", err)
			}
			if got := len(gen.Assignments["t"]); got != len(parts) {
				t.Errorf("consumer group member assigned %d partitions of t, want %d", got, len(parts))
			}
		})
	}
}

// TestPingExplains: a client that cannot get in gets an error naming the
// keys to check, within its deadline.
func TestPingExplains(t *testing.T) {
	serverTLS, _ := kafkatest.SelfSigned(t)
	for _, tc := range []struct {
		name   string
		server []kfake.Opt
		client func(*kafkaconn.Config) // of DefaultConfig
		want   string
	}{
		{name: "wrong password", server: []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "u", "p")},
			client: func(c *kafkaconn.Config) {
				c.SASL = kafkaconn.SASL{Mechanism: "scram-sha-256", Username: "u", Password: "wrong"}
			}, want: "kafka.sasl.password"},
		{name: "plaintext client, TLS listener", server: []kfake.Opt{kfake.TLS(serverTLS)}, client: func(*kafkaconn.Config) {}, want: "kafka.tls"},
		{name: "TLS client, plaintext listener", client: func(c *kafkaconn.Config) { c.TLS = true }, want: "kafka.tls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := kafkatest.NewCluster(t, []string{"t"}, tc.server...)
			cfg := kafkaconn.DefaultConfig()
			tc.client(&cfg)
			cfg.Brokers = cluster.ListenAddrs()
			cfg.DialTimeout = 2 * time.Second
			c, err := kafkaconn.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = c.Ping(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Ping = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// withBroker returns DefaultConfig with the broker k:1, changed by edit.
func withBroker(edit func(*kafkaconn.Config)) kafkaconn.Config {
	cfg := kafkaconn.DefaultConfig()
	cfg.Brokers = []string{"k:1"}
	edit(&cfg)
	return cfg
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  kafkaconn.Config
		want []string // the YAML key first, then the fix; none for valid
	}{
		{name: "defaults with a broker", cfg: withBroker(func(*kafkaconn.Config) {})},
		{name: "no brokers", cfg: withBroker(func(c *kafkaconn.Config) { c.Brokers = nil }), want: []string{"kafka.brokers"}},
		{name: "broker without port", cfg: withBroker(func(c *kafkaconn.Config) { c.Brokers = []string{"k"} }), want: []string{"kafka.brokers[0]"}},
		{name: "negative dial timeout", cfg: withBroker(func(c *kafkaconn.Config) { c.DialTimeout = -1 }), want: []string{"kafka.dial_timeout"}},
		{name: "unknown mechanism", cfg: withBroker(func(c *kafkaconn.Config) { c.SASL = kafkaconn.SASL{Mechanism: "gssapi", Username: "u"} }), want: []string{"kafka.sasl.mechanism"}},
		{name: "mechanism without user", cfg: withBroker(func(c *kafkaconn.Config) { c.SASL = kafkaconn.SASL{Mechanism: "plain"} }), want: []string{"kafka.sasl.username"}},
		{name: "user without mechanism", cfg: withBroker(func(c *kafkaconn.Config) { c.SASL = kafkaconn.SASL{Username: "u"} }), want: []string{"kafka.sasl.mechanism"}},
		// A zero is a value, not the default: each zero that cannot work is
		// refused, naming its key and the default to write.
		{name: "no client id", cfg: withBroker(func(c *kafkaconn.Config) { c.ClientID = "" }), want: []string{"kafka.client_id is empty", `(default "freqlens")`}},
		{name: "zero dial timeout", cfg: withBroker(func(c *kafkaconn.Config) { c.DialTimeout = 0 }), want: []string{"kafka.dial_timeout = 0s", "positive", "(default 10s)"}},
		{name: "zero connect timeout", cfg: withBroker(func(c *kafkaconn.Config) { c.ConnectTimeout = 0 }), want: []string{"kafka.connect_timeout = 0s", "positive", "(default 30s)"}},
		{name: "zero unreachable after", cfg: withBroker(func(c *kafkaconn.Config) { c.UnreachableAfter = 0 }), want: []string{"kafka.unreachable_after = 0s", "positive", "(default 30s)"}},
		{name: "a zero Config but for the broker", cfg: kafkaconn.Config{Brokers: []string{"k:1"}}, want: []string{"kafka.client_id is empty"}},
		// An empty CA file (the system's roots) and SASL (none) mean
		// something.
		{name: "TLS with the system's roots", cfg: withBroker(func(c *kafkaconn.Config) { c.TLS, c.TLSCAFile = true, "" })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case len(tc.want) == 0 && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case len(tc.want) > 0 && (err == nil || !strings.HasPrefix(err.Error(), tc.want[0])):
				t.Errorf("Validate() = %v, want an error starting with %s", err, tc.want[0])
			case err != nil:
				for _, w := range tc.want[1:] {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
			}
			if _, nerr := kafkaconn.New(tc.cfg); (nerr == nil) != (err == nil) {
				t.Errorf("New() = %v, want Validate's %v", nerr, err)
			}
		})
	}
	if _, err := kafkaconn.New(withBroker(func(c *kafkaconn.Config) { c.TLSCAFile = "/nonexistent.pem" })); err == nil ||
		!strings.Contains(err.Error(), "kafka.tls_ca_file") {
		t.Errorf("New with a missing CA file = %v, want an error naming kafka.tls_ca_file", err)
	}
}

// TestDefaultConfig: the defaults, and a Client keeps its Config as given.
func TestDefaultConfig(t *testing.T) {
	want := kafkaconn.Config{ClientID: "freqlens", DialTimeout: 10 * time.Second, ConnectTimeout: 30 * time.Second, UnreachableAfter: 30 * time.Second}
	got := kafkaconn.DefaultConfig()
	if got.ClientID != want.ClientID || got.DialTimeout != want.DialTimeout || got.ConnectTimeout != want.ConnectTimeout ||
		got.UnreachableAfter != want.UnreachableAfter || len(got.Brokers) != 0 || got.TLS || got.TLSCAFile != "" || got.SASL != (kafkaconn.SASL{}) {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
	cfg := withBroker(func(c *kafkaconn.Config) { c.ClientID, c.UnreachableAfter = "replica-2", time.Second })
	c, err := kafkaconn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Config(); got.ClientID != "replica-2" || got.UnreachableAfter != time.Second || got.DialTimeout != cfg.DialTimeout {
		t.Errorf("Config() = %+v, want %+v as given", got, cfg)
	}
}

// TestConnectGivesUpInTime: Connect retries an unreachable broker until
// kafka.connect_timeout and then fails with an error naming it and the
// brokers; a reachable broker connects at once.
func TestConnectGivesUpInTime(t *testing.T) {
	closed := loopback.Refused(t)
	for _, tc := range []struct {
		name    string
		brokers []string
		want    string // "" = connects
	}{
		{"nothing listens", []string{closed}, "kafka.connect_timeout = 1s"},
		{"unresolvable host", []string{"no-such-host.invalid:9092"}, "kafka.brokers"},
		{"a broker", kafkatest.NewCluster(t, []string{"t"}).ListenAddrs(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := kafkaconn.DefaultConfig()
			cfg.Brokers, cfg.ConnectTimeout, cfg.DialTimeout = tc.brokers, time.Second, time.Second
			var logged bytes.Buffer
			c, err := kafkaconn.New(cfg, kafkaconn.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			began := time.Now()
			err = c.Connect(context.Background())
			took := time.Since(began)
			// A start that fails within kafka.connect_timeout's first
			// seconds says only its error (TestConnectSaysItWaits).
			if strings.Contains(logged.String(), "waiting for the Kafka brokers") {
				t.Errorf("a 1s wait was logged:\n%s", logged.String())
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Connect = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Connect = %v, want an error naming %q", err, tc.want)
			}
			if took > 3*time.Second {
				t.Errorf("Connect took %v with kafka.connect_timeout 1s", took)
			}
		})
	}
}
