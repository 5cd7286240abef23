package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/readings"
)

const (
	fetchQueue      = 1024             // messages between the partition fetchers and batching
	dlqBatchTimeout = time.Millisecond // the dead-letter writer's linger
	endEvery        = 2 * time.Second  // how often the partitions' end offsets are refreshed (lag)
	joinWarnEvery   = 30 * time.Second // a failing join is logged at warning level at most this often
)

// ErrClosed is returned by Run when the Consumer was closed under it.
var ErrClosed = errors.New("stream: consumer closed")

// Consumer reads the input topic in a consumer group, decodes messages into
// Arrow batches and sends poison messages to the dead-letter topic.
//
// It follows the group's generations (kafka-go's ConsumerGroup): each
// assignment is logged, the windows of partitions that left are forgotten,
// and those of partitions that arrived are rebuilt from the messages before
// their committed offsets (Config.RebuildSpan of event time) before
// anything new of them is read. When a rebalance begins, fetching stops and
// the batches in flight are written and committed (for at most half of
// Config.RebalanceTimeout) before the member rejoins, so a partition that
// stays needs no rebuild and one that moves is picked up exactly where it
// was committed.
//
// Delivery is at-least-once: offsets move only when the pipeline calls
// Batch.Commit, so a forced stop may reprocess, never drops; windows
// forecast before the stop and not committed are forecast again, from the
// same rebuilt windows, so the copies are identical. Poison is written to
// the dead-letter topic before the batch covering it is sent, so after a
// restart it may be dead-lettered twice, never lost.
//
// Dead letters keep their original key and are partitioned as every
// other FreqLens writer partitions (kafkaconn.Client.NewWriter: kafka-go's
// Hash balancer, FNV-1a of the key), the sink's forecasts and the readings
// replay and the demo write included: a series' dead letters stay in one
// partition of the dead-letter topic, in order, and with as many
// partitions as the input they land in the partition number of its
// readings, as its forecasts do, when the input was written with the same
// partitioner. Whoever re-drives the topic chooses where a message goes
// back to: a producer keyed by series puts it where its own partitioner
// says; to put it back beside its series whatever partitioner wrote the
// input (the Java client's murmur2, for one), write it to the partition
// in its freqlens-source-partition header.
type Consumer struct {
	cfg       Config
	kc        *kafkaconn.Client
	log       *slog.Logger
	dec       readings.Decoder
	probeDec  readings.Decoder // decodes the samples of the rebuild's search
	maxPastMs int64            // input.max_past, applied per partition through SetOldest
	mem       memory.Allocator
	schema    *arrow.Schema
	dlq       *kafka.Writer // nil with DropPoison
	m         *metrics
	flow      *flow
	signal    chan struct{} // a commit happened (drain waits on it)

	mu     sync.Mutex
	group  *kafka.ConsumerGroup
	cur    *generation        // the generation whose batches may commit; nil before the first
	parts  map[int]*partition // the partitions of cur, kept after it ends to judge the next assignment
	status Status

	running   atomic.Bool
	closing   chan struct{} // closed when Close begins
	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// partition is what the Consumer knows of one assigned partition.
type partition struct {
	committed int64 // the committed offset, where a new owner resumes
	acked     int64 // the offset after the last live batch whose Commit was called: committed, or not when its generation had ended
	next      int64 // the offset after the last message sent in a live batch
	end       int64 // the high watermark last seen
	newest    int64 // the newest event time decoded (ms), for input.max_past
	whole     bool  // every rebuild batch of its windows was sent (a rebalance can cut a rebuild short)
}

// generation is one assignment of the group.
type generation struct {
	c        *Consumer
	g        *kafka.Generation
	id       int32
	begun    time.Time
	parts    []int // assigned, sorted
	rebuild  []int // assigned partitions whose windows are rebuilt
	forget   []int // partitions whose windows the pipeline drops first
	readings int64 // read back by the rebuild
	over     bool  // drained and left: its batches no longer commit (guarded by c.mu)
	// ended is closed when kafka-go ends the generation (a rebalance, or a
	// heartbeat that failed: its coordinator connection may be gone).
	ended <-chan struct{}
}

// hasEnded reports whether kafka-go ended the generation.
func (g *generation) hasEnded() bool {
	select {
	case <-g.ended:
		return true
	default:
		return false
	}
}

// Status is what a Consumer can say about its place in the group.
type Status struct {
	// Joined is true while the consumer is a member of a current
	// generation of the group.
	Joined bool
	// Generation is the group generation last joined.
	Generation int32
	// Partitions are the input partitions assigned in it.
	Partitions []int
	// Rebuilt is true once the pipeline has applied every rebuild batch of
	// the generation: the windows of its partitions are what they were
	// where their committed offsets point.
	Rebuilt bool
}

// NewConsumer validates cfg and in and returns a consumer of the input
// topic through kc, with cfg and in taken as given (start from
// DefaultConfig and readings.DefaultConfig), decoding messages as in says
// (readings.NewDecoder, with the clock of WithClock) and bounding each partition's readings by in.MaxPast behind
// the newest time it has seen. The group is joined by
// Run. The dead-letter writer and the partition readers are built from kc;
// Close closes them, not kc.
func NewConsumer(cfg Config, in readings.Config, kc *kafkaconn.Client, opts ...Option) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	o := newOptions(opts)
	dec, err := readings.NewDecoder(in, o.clock)
	if err != nil {
		return nil, err
	}
	probe, err := readings.NewDecoder(in, o.clock)
	if err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg:       cfg,
		kc:        kc,
		log:       o.logger.With("component", "stream", "topic", cfg.Topic),
		dec:       dec,
		probeDec:  probe,
		maxPastMs: in.MaxPast.Milliseconds(),
		mem:       o.mem,
		schema:    readings.Schema(in.ValueFields...),
		flow:      newFlow(cfg.MaxInflightBytes),
		signal:    make(chan struct{}, 1),
		parts:     map[int]*partition{},
		closing:   make(chan struct{}),
	}
	if !cfg.DropPoison {
		// kafkaconn's writer partitions by kafka-go's Hash balancer, as the
		// sink does (see Consumer): no Balancer of its own.
		c.dlq = kc.NewWriter(cfg.DeadLetterTopic)
		c.dlq.BatchTimeout = dlqBatchTimeout
	}
	if c.m, err = newMetrics(o.reg, cfg.Topic, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Lag returns how many records of the assigned partitions are not
// committed yet: the sum over them of the high watermark (refreshed every
// 2s and by every fetch) minus the committed offset. Between generations
// (a rebalance, a broker cut) it counts the last generation's partitions
// with the last high watermarks seen, so it does not fall to 0 while
// nothing is consumed. The gauge freqlens_stream_consumer_lag_records
// reads it when scraped. It is safe for concurrent use.
func (c *Consumer) Lag() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return 0
	}
	var n int64
	for _, p := range c.cur.parts {
		if st := c.parts[p]; st != nil && st.end > st.committed {
			n += st.end - st.committed
		}
	}
	return n
}

// Status returns the consumer's place in the group. It is safe for
// concurrent use.
func (c *Consumer) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.status
	s.Partitions = slices.Clone(s.Partitions)
	return s
}

// Run joins the group and, generation after generation, sends the rebuild
// batches of the assigned partitions and then their live batches on out,
// until ctx is done; it then returns ctx.Err(). It returns earlier only
// with a fatal error (a dead-letter write that failed after kafka-go's
// retries, or ErrClosed). Failures to join or fetch are logged and
// retried. Run never closes out (the pipeline owns it) and may be called
// once per Consumer.
//
// A live batch is sent when it holds Config.BatchRows rows or messages, a
// quarter of Config.MaxInflightBytes, or Config.BatchLatency after its
// first message, whichever comes first; batches of only poison messages
// are sent too, so their offsets get committed. Poison messages are written
// to the dead-letter topic (synchronously, before the batch that covers
// them is sent) and counted. The batch being filled when ctx ends is
// dropped uncommitted: its messages are delivered again after a restart.
func (c *Consumer) Run(ctx context.Context, out chan<- *Batch) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("stream: Run was called twice; a Consumer runs once, create a new one to consume again")
	}
	group, err := c.join()
	if err != nil {
		return err
	}
	var lastWarn time.Time
	for {
		kg, err := group.Next(ctx)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.Is(err, kafka.ErrGroupClosed):
				return ErrClosed
			}
			level := slog.LevelDebug
			if time.Since(lastWarn) >= joinWarnEvery {
				level, lastWarn = slog.LevelWarn, time.Now()
			}
			c.log.Log(ctx, level, "joining the consumer group failed; retrying", "group", c.cfg.Group, "err", err)
			continue
		}
		if err := c.runGeneration(ctx, kg, out); err != nil {
			return err
		}
	}
}

// join creates the consumer group member (kafka-go joins in the
// background).
func (c *Consumer) join() (*kafka.ConsumerGroup, error) {
	g := kafkaconn.Group{
		ID:                    c.cfg.Group,
		Topics:                []string{c.cfg.Topic},
		SessionTimeout:        c.cfg.SessionTimeout,
		HeartbeatInterval:     c.cfg.HeartbeatInterval,
		RebalanceTimeout:      c.cfg.RebalanceTimeout,
		JoinGroupBackoff:      c.cfg.JoinGroupBackoff,
		WatchPartitionChanges: true,
		StartOffset:           kafka.FirstOffset,
	}
	if c.cfg.StartOffset == "last" {
		g.StartOffset = kafka.LastOffset
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closing:
		return nil, ErrClosed
	default:
	}
	cg, err := c.kc.NewConsumerGroup(g)
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	c.group = cg
	return cg, nil
}

// runGeneration serves one generation: it rebuilds, consumes until the
// generation ends, then drains. It returns nil when the generation ended,
// ctx.Err() on shutdown, and a fatal error otherwise.
func (c *Consumer) runGeneration(ctx context.Context, kg *kafka.Generation, out chan<- *Batch) error {
	// The holder keeps the generation (and its coordinator connection, which
	// commits use) open after it ends until the batches in flight are
	// committed, or the consumer closes.
	genDone, drained := make(chan struct{}), make(chan struct{})
	kg.Start(func(kctx context.Context) {
		<-kctx.Done()
		close(genDone)
		select {
		case <-drained:
		case <-c.closing:
		}
	})
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-genDone:
			cancel()
		case <-gctx.Done():
		}
	}()

	gen, err := c.begin(gctx, kg, genDone)
	if err == nil {
		err = c.rebuild(gctx, gen, out)
	}
	if err == nil {
		err = c.consume(ctx, gctx, gen, out)
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err() // shutting down: the pipeline's last commits still use this generation until Close
	case err != nil && gctx.Err() == nil:
		close(drained)
		return err
	}
	if gen != nil {
		c.drain(ctx, gen)
	}
	c.mu.Lock()
	if gen != nil {
		gen.over = true
	}
	c.status.Joined = false
	c.mu.Unlock()
	close(drained)
	return nil
}

// begin records the generation's assignment: which partitions keep their
// windows (this consumer owned them, and everything it sent of them was
// committed where the group says, and its rebuild was not cut short by a
// rebalance), which are rebuilt, and which are forgotten; and logs it.
func (c *Consumer) begin(ctx context.Context, kg *kafka.Generation, ended <-chan struct{}) (*generation, error) {
	ranges, err := c.ranges(ctx)
	if err != nil {
		return nil, err
	}
	gen := &generation{c: c, g: kg, id: kg.ID, begun: time.Now(), ended: ended}
	offsets := map[int]int64{}
	for _, a := range kg.Assignments[c.cfg.Topic] {
		off, r := a.Offset, ranges[a.ID]
		switch {
		case off == kafka.LastOffset:
			off = r.End
		case off < r.First: // kafka.FirstOffset, or a commit retention has deleted
			off = r.First
		}
		offsets[a.ID] = off
		gen.parts = append(gen.parts, a.ID)
	}
	slices.Sort(gen.parts)

	c.recommit(kg, gen.parts, offsets)
	c.mu.Lock()
	var kept, revoked []int
	parts := map[int]*partition{}
	for _, p := range gen.parts {
		old := c.parts[p]
		if old != nil && old.whole && old.next == old.committed && old.committed == offsets[p] {
			parts[p] = old
			kept = append(kept, p)
			continue
		}
		parts[p] = &partition{committed: offsets[p], acked: offsets[p], next: offsets[p], end: ranges[p].End, newest: readings.NoTime}
		gen.rebuild = append(gen.rebuild, p)
	}
	for p := range c.parts {
		if parts[p] == nil {
			revoked = append(revoked, p)
		}
	}
	slices.Sort(revoked)
	gen.forget = slices.Concat(revoked, gen.rebuild)
	slices.Sort(gen.forget)
	c.parts, c.cur = parts, gen
	c.status = Status{Joined: true, Generation: gen.id, Partitions: slices.Clone(gen.parts)}
	c.mu.Unlock()

	c.m.rebalances.Inc()
	c.m.assigned.Set(float64(len(gen.parts)))
	c.log.Info("partitions assigned", "group", c.cfg.Group, "generation", gen.id, "partitions", gen.parts,
		"kept", kept, "rebuilt", gen.rebuild, "revoked", revoked)
	return gen, nil
}

// ranges returns the offset range of every partition of the input topic,
// retrying until ctx ends.
func (c *Consumer) ranges(ctx context.Context) (map[int]kafkaconn.PartitionRange, error) {
	wait := 100 * time.Millisecond
	for {
		rs, err := c.kc.Partitions(ctx, c.cfg.Topic)
		if err == nil {
			out := make(map[int]kafkaconn.PartitionRange, len(rs))
			for _, r := range rs {
				out[r.Partition] = r
			}
			return out, nil
		}
		c.log.Debug("offsets of the input topic; retrying", "err", err, "wait", wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// consume fetches the generation's partitions and sends live batches until
// gctx ends. When the generation ended (ctx still live) the batch being
// filled is sent, so that drain can see it committed.
func (c *Consumer) consume(ctx, gctx context.Context, gen *generation, out chan<- *Batch) error {
	msgs := make(chan kafka.Message, fetchQueue)
	var wg sync.WaitGroup
	c.mu.Lock()
	parts := c.parts // this generation's; only newest is used here, by this goroutine alone
	starts := make(map[int]int64, len(gen.parts))
	for _, p := range gen.parts {
		starts[p] = parts[p].next
	}
	c.mu.Unlock()
	for _, p := range gen.parts {
		r, err := c.kc.NewPartitionReader(c.cfg.Topic, p, starts[p], kafkaconn.Fetch{MinBytes: c.cfg.MinBytes, MaxBytes: c.cfg.MaxBytes, MaxWait: c.cfg.MaxWait})
		if err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			c.fetch(gctx, p, r, msgs)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.watchEnds(gctx, gen)
	}()
	defer func() {
		wg.Wait()
		for len(msgs) > 0 {
			m := <-msgs
			c.flow.release(int64(len(m.Key) + len(m.Value)))
		}
	}()

	b := c.newBatcher()
	defer b.release()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var deadline <-chan time.Time
	for {
		select {
		case <-gctx.Done():
			if ctx.Err() != nil {
				b.discard()
				return nil
			}
			batch, err := b.take(ctx, gen)
			if err != nil || batch == nil {
				return err
			}
			return send(ctx, out, batch)
		case m := <-msgs:
			if b.messages == 0 {
				timer.Reset(c.cfg.BatchLatency)
				deadline = timer.C
			}
			b.add(m, parts[m.Partition])
			if !b.full() {
				continue
			}
		case <-deadline:
		}
		timer.Stop()
		deadline = nil
		// ctx, not gctx: a batch taken is sent even if the generation ends
		// meanwhile, so that it is committed while the generation drains.
		batch, err := b.take(ctx, gen)
		if err != nil {
			return err
		}
		if err := send(ctx, out, batch); err != nil {
			return err
		}
	}
}

// fetch feeds msgs from one partition's reader until ctx ends.
func (c *Consumer) fetch(ctx context.Context, p int, r *kafka.Reader, msgs chan<- kafka.Message) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Debug("fetch failed; retrying", "partition", p, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		c.noteEnd(p, m.HighWaterMark)
		n := int64(len(m.Key) + len(m.Value))
		if err := c.flow.acquire(ctx, n); err != nil {
			return
		}
		select {
		case msgs <- m:
		case <-ctx.Done():
			c.flow.release(n)
			return
		}
	}
}

// noteEnd raises partition p's known high watermark.
func (c *Consumer) noteEnd(p int, end int64) {
	c.mu.Lock()
	if st := c.parts[p]; st != nil {
		st.end = max(st.end, end)
	}
	c.mu.Unlock()
}

// watchEnds refreshes the end offsets of the generation's partitions every
// endEvery, so that the lag is right when nothing is fetched (a stalled
// pipeline, or a backlog behind the fetch queue).
func (c *Consumer) watchEnds(ctx context.Context, gen *generation) {
	t := time.NewTicker(endEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rs, err := c.kc.Partitions(ctx, c.cfg.Topic)
		if err != nil {
			continue
		}
		for _, r := range rs {
			c.noteEnd(r.Partition, r.End)
		}
	}
}

// rebuilt marks gen's rebuild applied by the pipeline.
func (c *Consumer) rebuilt(gen *generation) {
	c.mu.Lock()
	current := gen == c.cur && !gen.over
	if current {
		c.status.Rebuilt = true
	}
	c.mu.Unlock()
	if !current {
		return
	}
	took := time.Since(gen.begun)
	c.m.rebuildSeconds.Observe(took.Seconds())
	c.log.Info("windows rebuilt; forecasting", "generation", gen.id, "partitions", gen.parts, "rebuilt", gen.rebuild,
		"readings", gen.readings, "took", took.Round(time.Millisecond))
}

// Close leaves the group and closes the dead-letter writer, waiting for
// them until ctx ends. Call it after the last Batch.Commit: later commits
// fail. If ctx ends first Close returns its error and the closing goes on
// in the background. Run, if still running, returns ErrClosed. Close is
// idempotent.
func (c *Consumer) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		close(c.closing)
		c.mu.Lock()
		group := c.group
		c.status.Joined = false
		c.mu.Unlock()
		c.m.assigned.Set(0)
		c.closed = make(chan struct{})
		go func() {
			defer close(c.closed)
			var errs []error
			if group != nil {
				if err := group.Close(); err != nil {
					errs = append(errs, fmt.Errorf("leave group %s: %w", c.cfg.Group, err))
				}
			}
			if c.dlq != nil {
				if err := c.dlq.Close(); err != nil {
					errs = append(errs, fmt.Errorf("close dead-letter writer of %s: %w", c.cfg.DeadLetterTopic, err))
				}
			}
			c.closeErr = errors.Join(errs...)
		}()
	})
	select {
	case <-c.closed:
		return c.closeErr
	case <-ctx.Done():
		return fmt.Errorf("close consumer of %s: %w", c.cfg.Topic, ctx.Err())
	}
}

// flow bounds the bytes of messages between fetching and the release of
// their batch (Config.MaxInflightBytes).
type flow struct {
	max  int64
	mu   sync.Mutex
	used int64
	wake chan struct{} // closed and replaced on every release
}

func newFlow(max int64) *flow { return &flow{max: max, wake: make(chan struct{})} }

// batchBytes is the size at which a batch is sent, so that several
// batches fit in flight.
func (f *flow) batchBytes() int64 { return max(f.max/4, 1) }

// inUse returns the bytes in flight.
func (f *flow) inUse() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used
}

// acquire counts n more bytes, waiting while the bytes in flight are at
// the limit (one message is admitted whatever its size when nothing is in
// flight).
func (f *flow) acquire(ctx context.Context, n int64) error {
	for {
		f.mu.Lock()
		if f.used < f.max || f.used == 0 {
			f.used += n
			f.mu.Unlock()
			return nil
		}
		w := f.wake
		f.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tryAcquire counts n more bytes when that stays within the limit.
func (f *flow) tryAcquire(n int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used+n > f.max && f.used > 0 {
		return false
	}
	f.used += n
	return true
}

func (f *flow) release(n int64) {
	if n == 0 {
		return
	}
	f.mu.Lock()
	f.used -= n
	close(f.wake)
	f.wake = make(chan struct{})
	f.mu.Unlock()
}
