package kafkaconn

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
	produceAPI "github.com/segmentio/kafka-go/protocol/produce"

	"github.com/freqlens/freqlens/internal/loopback"
)

// countingTransport answers metadata requests with the topics it knows
// (partitions by name; a missing one with UnknownTopicOrPartition), fails
// when fail is set, and counts the requests of each kind it saw.
type countingTransport struct {
	mu         sync.Mutex
	partitions map[string]int
	fail       error
	metadata   int
	other      int
}

func (c *countingTransport) RoundTrip(_ context.Context, _ net.Addr, req kafka.Request) (kafka.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	mr, ok := req.(*metadataAPI.Request)
	if !ok {
		c.other++
		return &produceAPI.Response{}, c.fail
	}
	c.metadata++
	if c.fail != nil {
		return nil, c.fail
	}
	res := &metadataAPI.Response{}
	for _, name := range mr.TopicNames {
		t := metadataAPI.ResponseTopic{Name: name}
		if n, ok := c.partitions[name]; ok {
			for i := range n {
				t.Partitions = append(t.Partitions, metadataAPI.ResponsePartition{PartitionIndex: int32(i)})
			}
		} else {
			t.ErrorCode = int16(kafka.UnknownTopicOrPartition)
		}
		res.Topics = append(res.Topics, t)
	}
	return res, nil
}

func (c *countingTransport) counts() (metadata, other int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.metadata, c.other
}

// TestPartitionsCache: a Writer's per-message metadata requests reach the
// shared Transport once a partitionsTTL; other requests, other topics,
// errors and answers naming the topic with an error always do.
func TestPartitionsCache(t *testing.T) {
	ct := &countingTransport{partitions: map[string]int{"t": 3, "u": 5}}
	p := newPartitionsCache(ct)
	clock := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return clock }
	ctx := context.Background()
	ask := func(topic string) (int, error) {
		t.Helper()
		r, err := p.RoundTrip(ctx, kafka.TCP("b:9092"), &metadataAPI.Request{TopicNames: []string{topic}})
		if err != nil {
			return 0, err
		}
		for _, tp := range r.(*metadataAPI.Response).Topics {
			if tp.Name == topic {
				if tp.ErrorCode != 0 {
					return 0, kafka.Error(tp.ErrorCode)
				}
				return len(tp.Partitions), nil
			}
		}
		t.Fatalf("the answer does not name %q", topic)
		return 0, nil
	}
	want := func(topic string, partitions, metadata, other int) {
		t.Helper()
		n, err := ask(topic)
		if err != nil || n != partitions {
			t.Fatalf("%s: %d partitions, %v; want %d", topic, n, err, partitions)
		}
		if m, o := ct.counts(); m != metadata || o != other {
			t.Fatalf("%s: the Transport saw %d metadata and %d other requests, want %d and %d", topic, m, o, metadata, other)
		}
	}

	for range 1000 {
		want("t", 3, 1, 0) // one message after another: one request in all
	}
	// A cancelled request fails even when the answer is kept.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.RoundTrip(cancelled, kafka.TCP("b:9092"), &metadataAPI.Request{TopicNames: []string{"t"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request was answered: %v", err)
	}
	if _, err := p.RoundTrip(ctx, kafka.TCP("b:9092"), &produceAPI.Request{}); err != nil {
		t.Fatal(err)
	}
	want("t", 3, 1, 1) // a produce request passes through
	want("u", 5, 2, 1) // another topic is asked for
	want("u", 5, 2, 1)
	want("t", 3, 3, 1) // one answer is kept, the last

	// The topic grows: seen once the answer is partitionsTTL old.
	ct.mu.Lock()
	ct.partitions["t"] = 4
	ct.mu.Unlock()
	clock = clock.Add(partitionsTTL - time.Millisecond)
	want("t", 3, 3, 1)
	clock = clock.Add(time.Millisecond)
	want("t", 4, 4, 1)

	// Errors are not kept: every request tries again.
	clock = clock.Add(partitionsTTL)
	ct.mu.Lock()
	ct.fail = errors.New("broker gone")
	ct.mu.Unlock()
	for i := range 3 {
		if _, err := ask("t"); err == nil {
			t.Fatal("an error of the Transport was not returned")
		}
		if m, _ := ct.counts(); m != 5+i {
			t.Fatalf("failing request %d: the Transport saw %d metadata requests, want %d", i, m, 5+i)
		}
	}
	ct.mu.Lock()
	ct.fail = nil
	ct.mu.Unlock()

	// Nor an answer that names the topic with an error.
	for i := range 3 {
		if _, err := ask("missing"); !errors.Is(err, kafka.UnknownTopicOrPartition) {
			t.Fatalf("a missing topic: %v", err)
		}
		if m, _ := ct.counts(); m != 8+i {
			t.Fatalf("missing topic, request %d: the Transport saw %d metadata requests, want %d", i, m, 8+i)
		}
	}

	// Requests for several topics, or auto-creation asked differently, pass through.
	if _, err := p.RoundTrip(ctx, kafka.TCP("b:9092"), &metadataAPI.Request{TopicNames: []string{"t", "u"}}); err != nil {
		t.Fatal(err)
	}
	want("t", 4, 12, 1) // the last answer is partitionsTTL old: asked again
	if _, err := p.RoundTrip(ctx, kafka.TCP("b:9092"), &metadataAPI.Request{TopicNames: []string{"t"}, AllowAutoTopicCreation: true}); err != nil {
		t.Fatal(err)
	}
	if m, _ := ct.counts(); m != 13 {
		t.Fatalf("a request with auto-creation on was answered from the cache: %d metadata requests, want 13", m)
	}
}

// TestConnectSaysItWaits: a wait for brokers longer than waitSaidAfter is
// logged once, not at every retry.
func TestConnectSaysItWaits(t *testing.T) {
	closed := loopback.Refused(t)
	cfg := DefaultConfig()
	cfg.Brokers, cfg.ConnectTimeout, cfg.DialTimeout = []string{closed}, 2*time.Second, time.Second
	var logged bytes.Buffer
	c, err := New(cfg, WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.waitSaidAfter = 300 * time.Millisecond
	if err := c.Connect(context.Background()); err == nil {
		t.Fatal("Connect to a closed port succeeded")
	}
	if n := strings.Count(logged.String(), "waiting for the Kafka brokers"); n != 1 {
		t.Errorf("the wait was logged %d times, want once:\n%s", n, logged.String())
	}
}
