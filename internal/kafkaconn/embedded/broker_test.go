package embedded_test

import (
	"context"
	"strings"
	"testing"

	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
)

func TestStart(t *testing.T) {
	b, err := embedded.Start("127.0.0.1:0", map[string]int{"a": 3})
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
	if _, err := embedded.Start(addrs[0], nil); err == nil || !strings.Contains(err.Error(), "listening on") {
		t.Errorf("second broker on %s: %v, want an address-in-use error", addrs[0], err)
	}
	b.Close()
	b.Close() // idempotent
}

func TestStartRejects(t *testing.T) {
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
			b, err := embedded.Start(tc.addr, tc.topics)
			if err == nil {
				b.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}
