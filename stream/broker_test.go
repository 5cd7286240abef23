package stream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
)

func TestStartBroker(t *testing.T) {
	b, err := StartBroker("127.0.0.1:0", map[string]int{"a": 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addrs := b.Addrs()
	if len(addrs) != 1 || !strings.HasPrefix(addrs[0], "127.0.0.1:") || strings.HasSuffix(addrs[0], ":0") {
		t.Fatalf("Addrs() = %q, want one 127.0.0.1 address with a real port", addrs)
	}
	if err := b.CreateTopics(map[string]int{"b": 2, "a": 3}); err != nil {
		t.Fatalf("CreateTopics with a new and an existing topic: %v", err)
	}
	kc := kafkatest.Client(t, addrs)
	count := map[string]int{}
	for _, topic := range []string{"a", "b"} {
		parts, err := kc.Partitions(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		count[topic] = len(parts)
	}
	if count["a"] != 3 || count["b"] != 2 {
		t.Errorf("partitions = %v, want a:3 b:2", count)
	}

	// A second broker on the same address fails, saying why.
	if _, err := StartBroker(addrs[0], nil); err == nil || !strings.Contains(err.Error(), "listening on") {
		t.Errorf("second broker on %s: %v, want an address-in-use error", addrs[0], err)
	}
	b.Close()
	b.Close() // idempotent
}

func TestStartBrokerRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		addr   string
		topics map[string]int
		want   string
	}{
		{name: "no port", addr: "127.0.0.1", want: "host:port"},
		{name: "zero partitions", addr: "127.0.0.1:0", topics: map[string]int{"a": 0}, want: `topic "a" has 0 partitions`},
		{name: "empty topic name", addr: "127.0.0.1:0", topics: map[string]int{"": 1}, want: "topic name is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := StartBroker(tc.addr, tc.topics)
			if err == nil {
				b.Close()
				t.Fatal("StartBroker succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestConsumerOverSASLAndTLS runs the consumer and its dead-letter writer
// against a kfake cluster that requires SCRAM over TLS, through a client
// configured like the service's kafka.* keys (the mechanisms one by one are
// internal/kafkaconn's tests).
func TestConsumerOverSASLAndTLS(t *testing.T) {
	serverTLS, caFile := kafkatest.SelfSigned(t)
	cluster := kafkatest.NewCluster(t, []string{"in", "dlq"}, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "u", "p"), kfake.TLS(serverTLS))
	kc, err := kafkaconn.New(kafkaconn.Config{Brokers: cluster.ListenAddrs(), TLSCAFile: caFile,
		SASL: kafkaconn.SASL{Mechanism: "scram-sha-512", Username: "u", Password: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	cfg := Config{Group: "g", Topic: "in", DeadLetterTopic: "dlq", BatchLatency: time.Millisecond}
	kafkatest.Produce(t, kc, "in",
		kafka.Message{Key: []byte("a"), Value: AppendJSON(nil, readingsFor(1, 1, 1)[0], cfg)},
		kafka.Message{Key: []byte("b"), Value: []byte("poison")})
	r := start(t, kc, cfg)
	rows, _ := r.collect(t, 2)
	if len(rows) != 1 {
		t.Errorf("%d rows, want 1", len(rows))
	}
	if got := testutil.ToFloat64(r.c.m.deadLetters); got != 1 {
		t.Errorf("dead letters = %v, want 1", got)
	}
	if n := len(dlqMessages(t, kc, "dlq", 1)); n != 1 {
		t.Errorf("%d messages on the dead-letter topic, want 1", n)
	}
}
