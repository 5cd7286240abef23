package embedded_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

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

// TestRetainBytes: with RetainBytes the broker drops a partition's oldest
// batches beyond the bound within about a second, keeps the newest and
// frees the memory; without it, it keeps everything.
func TestRetainBytes(t *testing.T) {
	const bound, value, n = 256 << 10, 1 << 10, 16 << 10 // 16 MiB produced, 256 KiB kept
	for _, retain := range []bool{false, true} {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var with []embedded.Option
		if retain {
			with = append(with, embedded.RetainBytes(bound))
		}
		b, err := embedded.Start("127.0.0.1:0", map[string]int{"a": 1}, with...)
		if err != nil {
			t.Fatal(err)
		}
		kc := kafkatest.Client(t, b.Addrs())
		w := kc.NewWriter("a")
		w.BatchSize, w.BatchTimeout = 16, time.Millisecond
		msgs := make([]kafka.Message, n)
		for i := range msgs {
			msgs[i] = kafka.Message{Value: bytes.Repeat([]byte{byte(i)}, value)}
		}
		if err := w.WriteMessages(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
		w.Close()
		offsets := func() (first, last int64) {
			conn, err := kafka.DialLeader(context.Background(), "tcp", b.Addrs()[0], "a", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if first, last, err = conn.ReadOffsets(); err != nil {
				t.Fatal(err)
			}
			return first, last
		}
		deadline := time.Now().Add(5 * time.Second)
		first, last := offsets()
		// A pass that ran while the batches were still arriving left more
		// than the bound: wait for one over the whole log.
		for retain && (last-first)*value > bound && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			first, last = offsets()
		}
		kept := (last - first) * value
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		switch {
		case retain && grew > 4*bound:
			t.Errorf("RetainBytes(%d): the heap grew by %d bytes for %d kept; the dropped batches were not freed", bound, grew, kept)
		case !retain && grew < n*value:
			t.Errorf("without RetainBytes the heap grew by %d bytes for %d produced; is the test measuring the broker?", grew, n*value)
		case last != n:
			t.Errorf("retain %v: high watermark %d; want %d", retain, last, n)
		case !retain && first != 0:
			t.Errorf("without RetainBytes the first offset is %d; want 0 (nothing dropped)", first)
		case retain && (kept > bound || kept < bound/2):
			t.Errorf("RetainBytes(%d): %d records of %d bytes kept (offsets %d to %d); want between half the bound and the bound", bound, last-first, value, first, last)
		}
		b.Close()
		b.Close() // idempotent
	}
}

// TestRetainBytesRefusesNoBytes: a bound that keeps nothing is refused, not
// read as "keep everything".
func TestRetainBytesRefusesNoBytes(t *testing.T) {
	for _, n := range []int64{0, -1} {
		if b, err := embedded.Start("127.0.0.1:0", map[string]int{"a": 1}, embedded.RetainBytes(n)); err == nil || !strings.Contains(err.Error(), "positive") {
			if b != nil {
				b.Close()
			}
			t.Errorf("RetainBytes(%d): err = %v; want it refused", n, err)
		}
	}
}
