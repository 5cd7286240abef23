package service

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/freqlens/freqlens/model"
)

// TestOutboxRetriesUntilWritten: drift events that fail while their topic
// is away are written in order once it is back, the outbox says it is
// failing meanwhile; a model version the learner could not publish is
// published in the background, unless a newer one was; an event that finds
// the outbox full is counted.
func TestOutboxRetriesUntilWritten(t *testing.T) {
	reg := prometheus.NewRegistry()
	o, err := newOutbox(slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	down := true
	var written []int
	var published []int64
	write := func(i int) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			if down {
				return errors.New("topic away")
			}
			written = append(written, i)
			return nil
		}
	}
	publish := o.publisher(func(_ context.Context, m *model.Model) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return errors.New("topic away")
		}
		published = append(published, m.Meta.Version)
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); o.run(ctx) }()
	defer func() { cancel(); <-done }()

	for i := range 5 {
		o.event("event", write(i))
	}
	v2, v3 := &model.Model{}, &model.Model{}
	v2.Meta.Version, v3.Meta.Version = 2, 3
	if err := publish(ctx, v2); err == nil {
		t.Fatal("publishing while the topic is away succeeded")
	}
	if err := publish(ctx, v3); err == nil {
		t.Fatal("publishing while the topic is away succeeded")
	}
	if !waitUntil(5*time.Second, func() bool { return !o.status().FailingSince.IsZero() }) {
		t.Fatal("the outbox does not say it is failing")
	}
	if n := o.pending(); n != 6 {
		t.Errorf("%d waiting, want 5 events and 1 version", n)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	if !waitUntil(15*time.Second, func() bool { return o.pending() == 0 }) {
		t.Fatalf("%d still waiting after the topic came back", o.pending())
	}
	mu.Lock()
	if len(written) != 5 || written[0] != 0 || written[4] != 4 {
		t.Errorf("written %v, want events 0 … 4 in order", written)
	}
	if len(published) != 1 || published[0] != 3 {
		t.Errorf("published %v, want only the newest version, 3", published)
	}
	mu.Unlock()
	if !o.status().FailingSince.IsZero() {
		t.Error("the outbox still says it is failing")
	}

	// Full: the event beyond outboxSize is dropped and counted.
	mu.Lock()
	down = true
	mu.Unlock()
	for i := range outboxSize + 2 {
		o.event("event", write(i))
	}
	if got := testutil.ToFloat64(o.dropped); got < 1 {
		t.Errorf("dropped = %v with %d events for room of %d, want some", got, outboxSize+2, outboxSize)
	}
}

func waitUntil(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
