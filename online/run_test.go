package online_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/freqlens/freqlens/online"
)

// rounds counts the rounds a learner ran, whatever their outcome.
func rounds(l *online.Learner) int64 {
	n := int64(0)
	for _, c := range l.Outcomes() {
		n += c
	}
	return n
}

// startRun runs l.Run until the returned stop is called, which returns
// once it has stopped.
func startRun(t *testing.T, l *online.Learner, srv *server) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := l.Run(ctx, srv); err != nil {
			t.Error(err)
		}
	})
	return func() { cancel(); wg.Wait() }
}

// TestRunLearnsOnlyFromNewPairs: Run starts a round on its interval only
// when pairs arrived since the last round began (with no new readings a
// round every interval would promote versions on the noise of one
// holdout, 27 in 20 minutes), and a kick for min_new_samples pairs that
// the last round already took starts none (else rounds come in pairs, the
// second on a dozen new pairs).
func TestRunLearnsOnlyFromNewPairs(t *testing.T) {
	sc := newScenario(t, 4, trainSteps+400, -1)
	m := newIndependent(t, scL, scH)
	srv := &server{m: m, version: 1}
	cfg := func(interval time.Duration) online.Config {
		return configWith(func(c *online.Config) {
			c.Enabled, c.Steps, c.MinHoldout, c.MinNewSamples, c.Interval = true, 2, 32, 200, interval
		})
	}

	// New pairs: a round; none after it: no round in 25 intervals.
	l, err := online.New(cfg(20*time.Millisecond), m)
	if err != nil {
		t.Fatal(err)
	}
	sc.run(t, l, srv, 1<<30, false)
	if l.Totals().Pairs < 400 {
		t.Fatalf("the feed realised %d pairs, want enough for a round", l.Totals().Pairs)
	}
	stop := startRun(t, l, srv)
	for deadline := time.Now().Add(30 * time.Second); rounds(l) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	stop()
	if n := rounds(l); n != 1 {
		t.Errorf("with no new pairs after the first round, Run ran %d rounds in 25 intervals (%v), want 1", n, l.Outcomes())
	}

	// A kick left from before a round that took its pairs: no round on the
	// few pairs that came since.
	srv = &server{m: m, version: 1}
	l, err = online.New(cfg(time.Hour), m)
	if err != nil {
		t.Fatal(err)
	}
	sc.steps = trainSteps + 300
	sc.run(t, l, srv, 1<<30, false) // well over min_new_samples: a kick waits
	l.Round(context.Background(), srv)
	sc.steps = trainSteps + 303
	sc.run(t, l, srv, 1<<30, false)
	stop = startRun(t, l, srv)
	time.Sleep(300 * time.Millisecond)
	stop()
	if n := rounds(l); n != 1 {
		t.Errorf("a stale kick started a round on a few new pairs: %d rounds (%v), want the 1 called directly", n, l.Outcomes())
	}
}
