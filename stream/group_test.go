package stream

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/internal/registry/registrytest"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/readings/readingstest"
)

// dropping returns DefaultConfig with the given group and input topic and
// input.drop_poison set.
func dropping(group, topic string) Config {
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison = group, topic, true
	return cfg
}

// groupTimings are short group timeouts for tests that rebalance.
func groupTimings(cfg Config) Config {
	cfg.SessionTimeout, cfg.HeartbeatInterval, cfg.RebalanceTimeout = 6*time.Second, time.Second, 6*time.Second
	return cfg
}

// eventually reports whether cond became true within d.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// TestRebuildReadsBackTheSpan: a consumer assigned a partition with
// committed offsets first sends rebuild batches holding the messages from
// where the event time is RebuildSpan before the newest time near the
// commit up to the commit, the first with the partition to forget; once
// they are committed its Status says rebuilt, and live batches start at
// the committed offset.
func TestRebuildReadsBackTheSpan(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison, cfg.BatchRows, cfg.BatchLatency = "g", "in", true, 50, 5*time.Millisecond
	rs := readingsFor(600, 3, 1) // 3 series, one reading a minute each: 200 minutes
	var msgs []kafka.Message
	for _, r := range rs {
		msgs = append(msgs, kafka.Message{Key: []byte(r.Series), Value: readings.AppendJSON(nil, r, readings.DefaultConfig())})
	}
	produce(t, kc, "in", msgs...)

	// A first consumer commits whole batches until at least 450 messages
	// are committed. Batches flush after BatchLatency too, so on a loaded
	// machine one may be short and the commit land past 450.
	first := start(t, kc, cfg)
	committed := 0
	for committed < 450 {
		b := first.next(t, 20*time.Second)
		committed += b.Messages
		if err := b.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	if n := kafkatest.Uncommitted(t, kc, "g", "in"); n != int64(600-committed) {
		t.Fatalf("%d messages uncommitted, want %d", n, 600-committed)
	}

	cfg.RebuildSpan = 30 * time.Minute
	reg := prometheus.NewRegistry()
	second := start(t, kc, cfg, WithRegisterer(reg))
	var rebuilt []readingstest.Row
	var offsets []int64
	b := second.nextAny(t, 20*time.Second)
	if !b.Rebuild || !slices.Equal(b.Forget, []int{0}) {
		t.Fatalf("first batch: Rebuild %v, Forget %v; want a rebuild batch that forgets partition 0", b.Rebuild, b.Forget)
	}
	for b.Rebuild {
		rebuilt = append(rebuilt, readingstest.Rows(t, b.Record)...)
		for i := range int(b.Record.NumRows()) {
			offsets = append(offsets, b.Offset(i))
		}
		if st := second.c.Status(); st.Rebuilt {
			t.Fatal("Status says rebuilt before the rebuild batches were committed")
		}
		if err := b.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Release()
		b = second.nextAny(t, 20*time.Second)
	}
	if st := second.c.Status(); !st.Rebuilt || !st.Joined || !slices.Equal(st.Partitions, []int{0}) {
		t.Errorf("Status after the rebuild = %+v, want joined, partition 0, rebuilt", st)
	}
	if got := b.Offset(0); got != int64(committed) {
		t.Errorf("the first live batch starts at offset %d, want the committed %d", got, committed)
	}
	b.Release()

	// Contiguous offsets ending just before the commit, covering the span
	// and at most one probe (32 messages) more.
	newest := rs[committed-1].Time.UnixMilli()
	cutoff := newest - (30 * time.Minute).Milliseconds()
	if len(offsets) == 0 || offsets[len(offsets)-1] != int64(committed-1) {
		t.Fatalf("rebuild offsets end at %v, want %d", offsets[max(len(offsets)-1, 0):], committed-1)
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] != offsets[i-1]+1 {
			t.Fatalf("rebuild offsets jump from %d to %d", offsets[i-1], offsets[i])
		}
	}
	oldest := rebuilt[0].TS
	if oldest > cutoff {
		t.Errorf("the rebuild starts at %s, after the cutoff %s: the span is not covered", time.UnixMilli(oldest).UTC(), time.UnixMilli(cutoff).UTC())
	}
	if extra := (cutoff - oldest) / 60_000; extra > probeMessages/3+1 {
		t.Errorf("the rebuild starts %d minutes before the cutoff, more than one probe of %d messages", extra, probeMessages)
	}
	if got := testutil.ToFloat64(second.c.m.rebuildReadings); got != float64(len(rebuilt)) {
		t.Errorf("freqlens_stream_rebuild_readings_total = %v, want %d", got, len(rebuilt))
	}
	t.Logf("rebuilt %d readings from offset %d", len(rebuilt), offsets[0])
}

// consumed is what one consumer delivered live: partition → offsets.
type consumed struct {
	mu   sync.Mutex
	seen map[int][]int64
}

func (c *consumed) add(b *Batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range int(b.Record.NumRows()) {
		c.seen[b.Partition(i)] = append(c.seen[b.Partition(i)], b.Offset(i))
	}
}

// commitAll commits every batch r sends, each after delay, as a pipeline
// whose sink takes that long, recording the live ones, until r stops.
func commitAll(t *testing.T, r *running, delay time.Duration) *consumed {
	c := &consumed{seen: map[int][]int64{}}
	go func() {
		for {
			select {
			case b := <-r.out:
				if !b.Rebuild {
					c.add(b)
					time.Sleep(delay)
				}
				if err := b.Commit(context.Background()); err != nil {
					t.Error(err)
				}
				b.Release()
			case <-time.After(30 * time.Second):
				return
			}
		}
	}()
	return c
}

// TestRebalanceDrainsBeforeHandingOver: when a second member joins, the
// first stops fetching, commits what it sent (its pipeline takes 50 ms a
// batch, so batches are in flight) and only then rejoins, so the
// partitions that move are picked up exactly where they were committed and
// every message is delivered live once; the assignments are disjoint and
// cover the topic.
func TestRebalanceDrainsBeforeHandingOver(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 3})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison, cfg.BatchRows, cfg.BatchLatency, cfg.RebuildSpan = "g", "in", true, 20, 5*time.Millisecond, time.Hour
	cfg = groupTimings(cfg)
	produceN := func(from, n int) {
		var msgs []kafka.Message
		for i := from; i < from+n; i++ {
			r := readings.Reading{Series: fmt.Sprintf("s-%d", i%30), Time: base.Add(time.Duration(i/30) * time.Minute), Values: []float64{float64(i)}}
			msgs = append(msgs, kafka.Message{Key: []byte(r.Series), Value: readings.AppendJSON(nil, r, readings.DefaultConfig())})
		}
		produce(t, kc, "in", msgs...)
	}
	a := start(t, kc, cfg)
	ca := commitAll(t, a, 50*time.Millisecond)
	produceN(0, 600)
	if !eventually(30*time.Second, func() bool { return kafkatest.Uncommitted(t, kc, "g", "in") == 0 }) {
		t.Fatal("the first member did not commit 600 messages within 30s")
	}

	b := start(t, kc, cfg)
	cb := commitAll(t, b, 50*time.Millisecond)
	// Traffic while the group rebalances.
	for i := range 10 {
		produceN(600+i*60, 60)
		time.Sleep(100 * time.Millisecond)
	}
	if !eventually(40*time.Second, func() bool {
		sa, sb := a.c.Status(), b.c.Status()
		return sa.Joined && sb.Joined && sa.Rebuilt && sb.Rebuilt && len(sa.Partitions)+len(sb.Partitions) == 3 && len(sb.Partitions) > 0
	}) {
		t.Fatalf("no stable two-member assignment within 40s: %+v / %+v", a.c.Status(), b.c.Status())
	}
	produceN(1200, 300)
	if !eventually(30*time.Second, func() bool { return kafkatest.Uncommitted(t, kc, "g", "in") == 0 }) {
		t.Fatal("1500 messages not committed within 30s")
	}
	sa, sb := a.c.Status(), b.c.Status()
	all := slices.Sorted(slices.Values(slices.Concat(sa.Partitions, sb.Partitions)))
	if !slices.Equal(all, []int{0, 1, 2}) {
		t.Errorf("assignments %v and %v do not partition the topic", sa.Partitions, sb.Partitions)
	}
	ends, err := kc.Partitions(context.Background(), "in")
	if err != nil {
		t.Fatal(err)
	}
	ca.mu.Lock()
	cb.mu.Lock()
	defer ca.mu.Unlock()
	defer cb.mu.Unlock()
	for _, r := range ends {
		got := slices.Concat(ca.seen[r.Partition], cb.seen[r.Partition])
		slices.Sort(got)
		want := make([]int64, 0, r.End)
		for o := int64(0); o < r.End; o++ {
			want = append(want, o)
		}
		if !slices.Equal(got, want) {
			t.Errorf("partition %d: %d offsets delivered live for %d messages (duplicates or gaps)", r.Partition, len(got), r.End)
		}
	}
}

// TestLagCountsTheBacklog: the lag gauge is the number of records not yet
// committed, also for a backlog fetched but not committed, and follows
// the commits.
func TestLagCountsTheBacklog(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 3})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison, cfg.BatchLatency = "g", "in", true, 5*time.Millisecond
	var msgs []kafka.Message
	for _, r := range readingsFor(15000, 100, 1) {
		msgs = append(msgs, kafka.Message{Key: []byte(r.Series), Value: readings.AppendJSON(nil, r, readings.DefaultConfig())})
	}
	produce(t, kc, "in", msgs...)
	reg := prometheus.NewRegistry()
	r := start(t, kc, cfg, WithRegisterer(reg))
	lag := func() float64 {
		v, err := testutil.GatherAndCount(reg, "freqlens_stream_consumer_lag_records")
		if err != nil || v != 1 {
			t.Fatalf("lag gauge: %d series, %v", v, err)
		}
		if v, ok := registrytest.Value(reg, "freqlens_stream_consumer_lag_records"); ok {
			return v
		}
		return -1
	}
	// Take batches without committing until all 15,000 are fetched.
	var held []*Batch
	for n := 0; n < 15000; {
		b := r.next(t, 20*time.Second)
		n += b.Messages
		held = append(held, b)
	}
	if !eventually(10*time.Second, func() bool { return lag() == 15000 }) {
		t.Fatalf("lag = %v with 15,000 readings fetched and none committed, want 15000", lag())
	}
	for _, b := range held[:len(held)/2] {
		if err := b.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := float64(kafkatest.Uncommitted(t, kc, "g", "in"))
	if got := lag(); got != want || want == 0 || want == 15000 {
		t.Errorf("lag = %v after committing half the batches, want %v (uncommitted by the broker's account)", got, want)
	}
	for _, b := range held {
		b.Release()
	}
}

// TestInflightIsBounded: batches the pipeline has not released hold at
// most MaxInflightBytes of messages (plus one message); fetching resumes
// as they are released.
func TestInflightIsBounded(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1})
	const limit = 32 << 10
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison, cfg.BatchLatency, cfg.MaxBytes, cfg.MaxInflightBytes = "g", "in", true, 5*time.Millisecond, 8<<10, limit
	var msgs []kafka.Message
	for _, r := range readingsFor(5000, 10, 1) {
		msgs = append(msgs, kafka.Message{Key: []byte(r.Series), Value: readings.AppendJSON(nil, r, readings.DefaultConfig())})
	}
	produce(t, kc, "in", msgs...)
	r := start(t, kc, cfg)
	var held []*Batch
	got := 0
	for {
		select {
		case b := <-r.out:
			got += b.Messages
			held = append(held, b)
			continue
		case <-time.After(time.Second):
		}
		break
	}
	largest := 0
	for _, m := range msgs {
		largest = max(largest, len(m.Key)+len(m.Value))
	}
	if used := r.c.flow.inUse(); used > limit+int64(largest) || got == len(msgs) {
		t.Fatalf("%d bytes in flight in %d messages held, want at most %d (and fewer than all %d messages)", used, got, limit+largest, len(msgs))
	}
	for got < len(msgs) {
		for _, b := range held {
			b.Commit(context.Background())
			b.Release()
		}
		held = held[:0]
		b := r.next(t, 10*time.Second)
		got += b.Messages
		held = append(held, b)
	}
	for _, b := range held {
		b.Release()
	}
}

// TestTooOldIsPerPartition: the consumer bounds a partition's readings by
// the newest time that partition has seen: a reading stamped 1970 after
// 2026 readings is dead-lettered as too old.
func TestTooOldIsPerPartition(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1, "dlq": 1})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DeadLetterTopic, cfg.BatchLatency = "g", "in", "dlq", 5*time.Millisecond
	var msgs []kafka.Message
	for _, r := range readingsFor(10, 2, 1) {
		msgs = append(msgs, kafka.Message{Key: []byte(r.Series), Value: readings.AppendJSON(nil, r, readings.DefaultConfig())})
	}
	old := readings.Reading{Series: "new-series", Time: time.Unix(0, 0), Values: []float64{1}}
	msgs = append(msgs, kafka.Message{Key: []byte(old.Series), Value: readings.AppendJSON(nil, old, readings.DefaultConfig())})
	produce(t, kc, "in", msgs...)
	r := start(t, kc, cfg)
	rows, _ := r.collect(t, len(msgs))
	if len(rows) != 10 {
		t.Errorf("%d readings passed, want the 10 of 2026", len(rows))
	}
	dlq := dlqMessages(t, kc, "dlq", 1)
	if got := header(dlq[0], HeaderReason); got != readings.ReasonTooOld {
		t.Errorf("dead letter reason %q, want %q", got, readings.ReasonTooOld)
	}
}

// TestAssignmentDecisions: at a new generation a partition keeps its
// windows only if this consumer held it whole (its rebuild was not cut
// short), committed everything it sent, and the group resumes it at that
// commit; every other assigned partition is rebuilt, and those no longer
// assigned are forgotten with the rebuilt ones.
func TestAssignmentDecisions(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 6})
	c, err := NewConsumer(dropping("g", "in"), readings.DefaultConfig(), kc)
	if err != nil {
		t.Fatal(err)
	}
	c.parts = map[int]*partition{
		0: {committed: 5, next: 5, whole: true},  // consistent: kept
		1: {committed: 5, next: 9, whole: true},  // sent beyond the commit: rebuilt
		2: {committed: 5, next: 5, whole: true},  // another member committed further: rebuilt
		3: {committed: 5, next: 5, whole: false}, // its rebuild was cut short: rebuilt
		4: {committed: 5, next: 5, whole: true},  // no longer assigned: forgotten
	}
	kg := &kafka.Generation{ID: 7, Assignments: map[string][]kafka.PartitionAssignment{"in": {
		{ID: 0, Offset: 5}, {ID: 1, Offset: 5}, {ID: 2, Offset: 8}, {ID: 3, Offset: 5}, {ID: 5, Offset: kafka.FirstOffset},
	}}}
	gen, err := c.begin(context.Background(), kg, make(chan struct{}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 3, 5}; !slices.Equal(gen.rebuild, want) {
		t.Errorf("rebuilt %v, want %v", gen.rebuild, want)
	}
	if want := []int{1, 2, 3, 4, 5}; !slices.Equal(gen.forget, want) {
		t.Errorf("forgotten %v, want %v", gen.forget, want)
	}
	if st := c.Status(); !st.Joined || st.Rebuilt || !slices.Equal(st.Partitions, []int{0, 1, 2, 3, 5}) || st.Generation != 7 {
		t.Errorf("Status = %+v", st)
	}
	if got := c.parts[2].committed; got != 8 {
		t.Errorf("partition 2 resumes at %d, want the group's 8", got)
	}
	if got := c.parts[5].committed; got != 0 {
		t.Errorf("partition 5 (no commit) resumes at %d, want its first offset 0", got)
	}
}
