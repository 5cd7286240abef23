package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
)

// Dead-letter headers: a poison message is written to the dead-letter topic
// with its original key, value, timestamp and headers, plus these.
const (
	HeaderReason          = "freqlens-dlq-reason"       // one of Reasons
	HeaderError           = "freqlens-dlq-error"        // the DecodeError, for people (at most 1 KiB)
	HeaderSourceTopic     = "freqlens-source-topic"     // the input topic
	HeaderSourcePartition = "freqlens-source-partition" // decimal
	HeaderSourceOffset    = "freqlens-source-offset"    // decimal
)

const (
	maxErrorHeader  = 1024             // bytes of HeaderError kept
	fetchQueue      = 1024             // messages between fetching and batching
	maxFetchBackoff = time.Second      // between failed fetches
	dlqBatchTimeout = time.Millisecond // the dead-letter writer's linger
	poisonWarnEvery = 10 * time.Second // poison is logged at warning level at most this often
)

// Batch is the readings decoded from consecutive messages of the input
// topic, and what to commit once the outputs they caused are acknowledged.
type Batch struct {
	// Record holds the readings (schema: Schema(cfg.ValueFields...)). The
	// batch owns it: call Release when done.
	Record arrow.Record
	// Messages is the number of Kafka messages the batch covers,
	// dead-lettered ones included.
	Messages int

	commits []kafka.Message // the last message per partition: topic, partition, offset
	firsts  []int64         // the first offset per partition, in the order of commits
	poison  []kafka.Message // topic, partition and offset of the poison messages (already dead-lettered)
	c       *Consumer
}

// Commit commits the offsets of every message in the batch: per partition,
// the offset after its last message. Commit batches in the order Run sent
// them, after the outputs they caused are acknowledged; commits after the
// Consumer is closed fail. A failed commit (for example after the group
// rebalanced) loses nothing: the messages are delivered again.
func (b *Batch) Commit(ctx context.Context) error {
	if len(b.commits) == 0 {
		return nil
	}
	if err := b.c.reader.CommitMessages(ctx, b.commits...); err != nil {
		return fmt.Errorf("commit %d messages of %s: %w", b.Messages, b.commits[0].Topic, err)
	}
	return nil
}

// ReasonWindow is the freqlens-dlq-reason of messages dead-lettered by
// Batch.DeadLetter because their batch could not be put into windows.
const ReasonWindow = "window_error"

// DeadLetter writes every message of the batch that was not already
// dead-lettered as poison to the dead-letter topic with reason (for example
// ReasonWindow) and cause in its headers, and returns how many it wrote.
// The pipeline calls it when a batch it cannot process would otherwise be
// committed unprocessed; commit the batch once it returns nil. The messages
// are read back from the input topic by their offsets, so a batch holds no
// copy of them. With Config.DropPoison nothing is written: the messages are
// counted and logged as dropped.
func (b *Batch) DeadLetter(ctx context.Context, reason string, cause error) (int, error) {
	c := b.c
	var dead []kafka.Message
	for i, last := range b.commits {
		err := c.kc.ReadPartition(ctx, last.Topic, last.Partition, b.firsts[i], last.Offset+1, c.cfg.MaxBytes, func(m kafka.Message) error {
			if !b.isPoison(m) {
				dead = append(dead, deadLetter(m, &DecodeError{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Reason: reason, Err: cause}))
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("dead-letter a batch of %s: read it back: %w", last.Topic, err)
		}
	}
	c.log.Error("batch dead-lettered", "reason", reason, "err", cause, "messages", len(dead), "dead_letter", c.dlq != nil)
	if c.dlq == nil || len(dead) == 0 {
		return len(dead), nil
	}
	if err := c.dlq.WriteMessages(ctx, dead...); err != nil {
		return 0, fmt.Errorf("write %d messages to dead-letter topic %s: %w", len(dead), c.cfg.DeadLetterTopic, err)
	}
	c.m.deadLetters.Add(float64(len(dead)))
	return len(dead), nil
}

func (b *Batch) isPoison(m kafka.Message) bool {
	for _, p := range b.poison {
		if p.Offset == m.Offset && p.Partition == m.Partition && p.Topic == m.Topic {
			return true
		}
	}
	return false
}

// Release releases the record. It is idempotent. Commit and Release are
// independent: release the record once the windows have copied it, commit
// once the outputs are acknowledged.
func (b *Batch) Release() {
	if b.Record != nil {
		b.Record.Release()
		b.Record = nil
	}
}

// Consumer reads the input topic in a consumer group, decodes messages into
// Arrow batches and sends poison messages to the dead-letter topic.
//
// Delivery is at-least-once: offsets move only when the pipeline calls
// Batch.Commit, so a forced stop may reprocess, never drops. Poison is
// written to the dead-letter topic before the batch covering it is sent, so
// after a restart it may be dead-lettered twice, never lost.
type Consumer struct {
	cfg    Config
	kc     *kafkaconn.Client
	log    *slog.Logger
	dec    Decoder
	mem    memory.Allocator
	schema *arrow.Schema
	reader *kafka.Reader
	dlq    *kafka.Writer // nil with DropPoison
	m      *metrics

	running   atomic.Bool
	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// NewConsumer validates cfg and joins the consumer group through kc (in the
// background; Run waits for the assignment). The reader and the dead-letter
// writer are built from kc; Close closes them, not kc.
func NewConsumer(cfg Config, kc *kafkaconn.Client, opts ...Option) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := newOptions(opts)
	dec, err := NewDecoder(cfg, opts...)
	if err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg:    cfg,
		kc:     kc,
		log:    o.logger.With("component", "stream", "topic", cfg.Topic),
		dec:    dec,
		mem:    o.mem,
		schema: Schema(cfg.ValueFields...),
	}
	rc := kc.ReaderConfig(cfg.Group, cfg.Topic)
	rc.QueueCapacity = fetchQueue
	rc.MinBytes, rc.MaxBytes, rc.MaxWait = cfg.MinBytes, cfg.MaxBytes, cfg.MaxWait
	rc.StartOffset = kafka.FirstOffset
	if cfg.StartOffset == "last" {
		rc.StartOffset = kafka.LastOffset
	}
	rc.WatchPartitionChanges = true
	rc.JoinGroupBackoff = time.Second
	c.reader = kafka.NewReader(rc)
	if cfg.DeadLetterTopic != "" {
		c.dlq = kc.NewWriter(cfg.DeadLetterTopic)
		c.dlq.Balancer = &kafka.Murmur2Balancer{}
		c.dlq.BatchTimeout = dlqBatchTimeout
	}
	if c.m, err = newMetrics(o.reg, cfg.Topic, c.Lag); err != nil {
		c.reader.Close()
		return nil, err
	}
	return c, nil
}

// Lag returns how many records the consumer is behind the high watermark of
// the partition it fetched last, from kafka-go's Reader.Stats. Lag is the
// only caller of Reader.Stats (whose counters reset on every call); the
// gauge freqlens_stream_consumer_lag_records calls Lag when scraped. It is
// safe for concurrent use.
func (c *Consumer) Lag() int64 { return c.reader.Stats().Lag }

// Run fetches, decodes and sends batches on out until ctx is done, then
// returns ctx.Err(); it returns earlier only with a fatal error (a
// dead-letter write that failed after kafka-go's retries, or ErrClosed).
// Fetch errors are logged and retried. Run never closes out (the pipeline
// owns it) and may be called once per Consumer.
//
// A batch is sent when it holds Config.BatchRows rows or messages, or
// Config.BatchLatency after its first message, whichever comes first;
// batches of only poison messages are sent too, so their offsets get
// committed. Poison messages are written to the dead-letter topic
// (synchronously, before the batch that covers them is sent) and counted.
// The batch being filled when ctx ends is dropped uncommitted: its messages
// are delivered again after a restart.
func (c *Consumer) Run(ctx context.Context, out chan<- *Batch) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("stream: Run was called twice; a Consumer runs once, create a new one to consume again")
	}
	ctx, cancel := context.WithCancel(ctx)
	msgs := make(chan kafka.Message, fetchQueue)
	fatal := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.fetch(ctx, msgs, fatal)
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()

	b := c.newBatcher()
	defer b.release()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var deadline <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-fatal:
			return err
		case m := <-msgs:
			if b.messages == 0 {
				timer.Reset(c.cfg.BatchLatency)
				deadline = timer.C
			}
			b.add(m)
			if b.rows < c.cfg.BatchRows && b.messages < c.cfg.BatchRows {
				continue
			}
		case <-deadline:
		}
		timer.Stop()
		deadline = nil
		if err := c.flush(ctx, b, out); err != nil {
			return err
		}
	}
}

// fetch feeds msgs from the reader until ctx ends or the reader closes.
func (c *Consumer) fetch(ctx context.Context, msgs chan<- kafka.Message, fatal chan<- error) {
	backoff := time.Duration(0)
	for {
		m, err := c.reader.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, io.EOF) {
				fatal <- ErrClosed
				return
			}
			backoff = min(max(2*backoff, 50*time.Millisecond), maxFetchBackoff)
			c.log.Warn("fetch failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		select {
		case msgs <- m:
		case <-ctx.Done():
			return
		}
	}
}

// batcher is the batch being filled.
type batcher struct {
	c        *Consumer
	rb       *array.RecordBuilder
	rows     int
	lastRows int
	messages int
	commits  []kafka.Message
	firsts   []int64
	poison   []kafka.Message
	dead     []kafka.Message
	lastWarn time.Time // of the last poison logged at warning level
}

func (c *Consumer) newBatcher() *batcher {
	b := &batcher{c: c, rb: array.NewRecordBuilder(c.mem, c.schema), lastRows: 64}
	b.rb.Reserve(b.lastRows)
	return b
}

func (b *batcher) release() { b.rb.Release() }

// add decodes m into the batch.
func (b *batcher) add(m kafka.Message) {
	c := b.c
	b.messages++
	c.m.messages.Inc()
	before := b.rb.Field(SeriesColumn).Len()
	if err := c.dec.Decode(b.rb, m.Key, m.Value, m.Time); err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			de = &DecodeError{Reason: ReasonUnparsable, Err: err}
		}
		de.Topic, de.Partition, de.Offset = m.Topic, m.Partition, m.Offset
		if ctr, ok := c.m.decodeErrors[de.Reason]; ok {
			ctr.Inc()
		} else {
			c.m.decodeErrors[ReasonUnparsable].Inc()
		}
		level := slog.LevelDebug
		if now := time.Now(); now.Sub(b.lastWarn) >= poisonWarnEvery {
			level, b.lastWarn = slog.LevelWarn, now // the first of a burst, then one per poisonWarnEvery
		}
		c.log.Log(context.Background(), level, "poison message", "partition", m.Partition, "offset", m.Offset,
			"reason", de.Reason, "err", de.Err, "dead_letter", c.dlq != nil)
		if c.dlq != nil {
			b.dead = append(b.dead, deadLetter(m, de))
		}
		b.poison = append(b.poison, kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset})
	} else {
		n := b.rb.Field(SeriesColumn).Len() - before
		b.rows += n
		c.m.readings.Add(float64(n))
	}
	for i := range b.commits {
		if b.commits[i].Partition == m.Partition && b.commits[i].Topic == m.Topic {
			b.commits[i].Offset = m.Offset
			return
		}
	}
	b.commits = append(b.commits, kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset})
	b.firsts = append(b.firsts, m.Offset)
}

// deadLetter returns the dead-letter message of poison m.
func deadLetter(m kafka.Message, de *DecodeError) kafka.Message {
	msg := de.Error()
	if len(msg) > maxErrorHeader {
		msg = msg[:maxErrorHeader]
	}
	headers := make([]kafka.Header, 0, len(m.Headers)+5)
	headers = append(headers, m.Headers...)
	headers = append(headers,
		kafka.Header{Key: HeaderReason, Value: []byte(de.Reason)},
		kafka.Header{Key: HeaderError, Value: []byte(msg)},
		kafka.Header{Key: HeaderSourceTopic, Value: []byte(m.Topic)},
		kafka.Header{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(m.Partition), 10)},
		kafka.Header{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, m.Offset, 10)},
	)
	return kafka.Message{Key: m.Key, Value: m.Value, Headers: headers, Time: m.Time}
}

// flush writes the batch's dead letters, then sends the batch on out.
func (c *Consumer) flush(ctx context.Context, b *batcher, out chan<- *Batch) error {
	if b.messages == 0 {
		return nil
	}
	if len(b.dead) > 0 {
		if err := c.dlq.WriteMessages(ctx, b.dead...); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("write %d poison messages to dead-letter topic %s: %w; does the topic exist and may this client write to it?",
				len(b.dead), c.cfg.DeadLetterTopic, err)
		}
		c.m.deadLetters.Add(float64(len(b.dead)))
		clear(b.dead)
		b.dead = b.dead[:0]
	}
	batch := &Batch{
		Record:   b.rb.NewRecord(),
		Messages: b.messages,
		commits:  append([]kafka.Message(nil), b.commits...),
		firsts:   append([]int64(nil), b.firsts...),
		c:        c,
	}
	if len(b.poison) > 0 {
		batch.poison = append([]kafka.Message(nil), b.poison...)
		b.poison = b.poison[:0]
	}
	c.m.batchRows.Observe(float64(b.rows))
	b.lastRows = max(b.rows, 16)
	b.rows, b.messages, b.commits, b.firsts = 0, 0, b.commits[:0], b.firsts[:0]
	b.rb.Reserve(min(b.lastRows, c.cfg.BatchRows))
	select {
	case out <- batch:
		return nil
	case <-ctx.Done():
		batch.Release()
		return ctx.Err()
	}
}

// Close closes the reader (leaving the group) and the dead-letter writer,
// waiting for them until ctx ends. Call it after the last Batch.Commit:
// later commits fail. If ctx ends first Close returns its error and the
// closing goes on in the background. Run, if still running, returns
// ErrClosed. Close is idempotent.
func (c *Consumer) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		c.closed = make(chan struct{})
		go func() {
			defer close(c.closed)
			var errs []error
			var wg sync.WaitGroup
			var rerr, werr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				rerr = c.reader.Close()
			}()
			if c.dlq != nil {
				werr = c.dlq.Close()
			}
			wg.Wait()
			if rerr != nil {
				errs = append(errs, fmt.Errorf("close reader of %s: %w", c.cfg.Topic, rerr))
			}
			if werr != nil {
				errs = append(errs, fmt.Errorf("close dead-letter writer of %s: %w", c.cfg.DeadLetterTopic, werr))
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
