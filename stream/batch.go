package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/readings"
)

// Dead-letter headers: a poison message is written to the dead-letter topic
// with its original key, value, timestamp and headers, plus these.
const (
	HeaderReason          = "freqlens-dlq-reason"       // one of readings.Reasons, or the reason given to DeadLetter or DeadLetterRows
	HeaderError           = "freqlens-dlq-error"        // the readings.DecodeError, for people (at most 1 KiB)
	HeaderSourceTopic     = "freqlens-source-topic"     // the input topic
	HeaderSourcePartition = "freqlens-source-partition" // decimal
	HeaderSourceOffset    = "freqlens-source-offset"    // decimal
)

const (
	maxErrorHeader  = 1024             // bytes of HeaderError kept
	poisonWarnEvery = 10 * time.Second // poison is logged at warning level at most this often
)

// Batch is the readings decoded from consecutive messages of the input
// topic, and what to commit once the outputs they caused are acknowledged.
//
// A Batch is one of two kinds. A live batch (Rebuild false) holds new
// readings: forecast them, then Commit. A rebuild batch holds readings from
// before the committed offsets of partitions this consumer was just
// assigned: the windows take them, but their windows were forecast before,
// so nothing is emitted, and Commit only tells the consumer they were
// applied. Every assignment starts with a rebuild batch whose Forget lists
// the partitions whose windows must be dropped first, and the rebuild is
// complete when its last rebuild batch is committed (Consumer.Status).
type Batch struct {
	// Record holds the readings (schema: readings.Schema of the value
	// fields given to NewConsumer); it may have no rows. The batch owns it:
	// call Release when done.
	Record arrow.Record
	// Messages is the number of Kafka messages the batch covers,
	// dead-lettered ones included.
	Messages int
	// Rebuild marks readings that were forecast before (see Batch).
	Rebuild bool
	// Forget lists the partitions whose windows must be forgotten before
	// this batch's rows are used: those revoked from this consumer and
	// those about to be rebuilt.
	Forget []int

	rowPart []int32 // the partition of each row
	rowOff  []int64 // the offset of each row's message

	commits []kafka.Message // the last message per partition: topic, partition, offset
	firsts  []int64         // the first offset per partition, in the order of commits
	poison  []kafka.Message // topic, partition and offset of the poison messages (already dead-lettered)
	bytes   int64           // message bytes counted against Config.MaxInflightBytes until Release
	gen     *generation
	last    bool // the last rebuild batch of its generation
	c       *Consumer
	local   *LocalHooks // a batch no consumer delivered (Local); nil otherwise
}

// Partition returns the input partition of row i of the Record.
func (b *Batch) Partition(i int) int { return int(b.rowPart[i]) }

// Offset returns the offset of the message that held row i of the Record.
func (b *Batch) Offset(i int) int64 { return b.rowOff[i] }

// Commit commits the offsets of every message in the batch: per partition,
// the offset after its last message. Commit batches in the order Run sent
// them, after the outputs they caused are acknowledged; commits after the
// Consumer is closed fail. A partition that moved to another member since
// the batch was sent is not committed and not an error: its new owner
// resumes from the last commit, and the messages are delivered again
// there. Committing a rebuild batch marks it applied.
func (b *Batch) Commit(ctx context.Context) error {
	if b.local != nil {
		return b.localCommit(ctx)
	}
	if b.Rebuild {
		if b.last {
			b.c.rebuilt(b.gen)
		}
		return nil
	}
	if len(b.commits) == 0 {
		return nil
	}
	return b.c.commit(ctx, b)
}

// DeadLetter writes every message of the batch that was not already
// dead-lettered as poison to the dead-letter topic with reason (for example
// pipeline.ReasonWindow) and cause in its headers, and returns how many it
// wrote. The pipeline calls it when a batch it cannot process would
// otherwise be committed unprocessed; commit the batch once it returns nil.
// The messages
// are read back from the input topic by their offsets, so a batch holds no
// copy of them. With Config.DropPoison nothing is written: the messages are
// counted and logged as dropped.
func (b *Batch) DeadLetter(ctx context.Context, reason string, cause error) (int, error) {
	if b.local != nil {
		return b.localRefuse(nil, reason, cause), nil
	}
	c := b.c
	var dead []kafka.Message
	for i, last := range b.commits {
		err := c.kc.ReadPartition(ctx, last.Topic, last.Partition, b.firsts[i], last.Offset+1, c.cfg.MaxBytes, func(m kafka.Message) error {
			if !b.isPoison(m) {
				dead = append(dead, deadLetter(m, &readings.DecodeError{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Reason: reason, Err: cause}))
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("dead-letter a batch of %s: read it back: %w", last.Topic, err)
		}
	}
	c.log.Error("batch dead-lettered", "reason", reason, "err", cause, "messages", len(dead), "dead_letter", c.dlq != nil)
	return c.writeDead(ctx, dead)
}

// DeadLetterRows writes the messages that hold the given rows of the Record
// to the dead-letter topic with reason and cause, each message once, and
// returns how many it wrote. The pipeline calls it for readings it refuses
// after decoding (readings.ReasonOutOfRange, pipeline.ReasonNonFiniteOutput)
// before it commits the batch. Like DeadLetter it reads the messages back by
// offset; an Arrow message is dead-lettered whole for any of its rows.
func (b *Batch) DeadLetterRows(ctx context.Context, rows []int, reason string, cause error) (int, error) {
	return b.DeadLetterRowsEach(ctx, rows, reason, cause, nil)
}

// DeadLetterRowsEach is DeadLetterRows with a cause of its own for each
// row: causeOf(i) is rows[i]'s (nil for cause), written in its message's
// freqlens-dlq-error header, so that a reading says what was wrong with it
// (how late it was); cause sums them up in the log. A message that holds
// several of the rows gets the first one's.
func (b *Batch) DeadLetterRowsEach(ctx context.Context, rows []int, reason string, cause error, causeOf func(i int) error) (int, error) {
	if b.local != nil {
		return b.localRefuse(rows, reason, cause), nil
	}
	type at struct {
		p   int
		off int64
	}
	byPart := map[int][]int64{}
	first := map[at]int{} // a message's first row, by index in rows
	for i, r := range rows {
		p, off := b.Partition(r), b.Offset(r)
		byPart[p] = append(byPart[p], off)
		if _, ok := first[at{p, off}]; !ok {
			first[at{p, off}] = i
		}
	}
	c := b.c
	var dead []kafka.Message
	for _, p := range slices.Sorted(maps.Keys(byPart)) {
		offs := byPart[p]
		slices.Sort(offs)
		offs = slices.Compact(offs)
		err := c.kc.ReadPartition(ctx, c.cfg.Topic, p, offs[0], offs[len(offs)-1]+1, c.cfg.MaxBytes, func(m kafka.Message) error {
			if _, ok := slices.BinarySearch(offs, m.Offset); ok {
				err := cause
				if causeOf != nil {
					if e := causeOf(first[at{p, m.Offset}]); e != nil {
						err = e
					}
				}
				dead = append(dead, deadLetter(m, &readings.DecodeError{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Reason: reason, Err: err}))
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("dead-letter %d readings of %s/%d: read them back: %w", len(offs), c.cfg.Topic, p, err)
		}
	}
	c.log.Warn("readings dead-lettered", "reason", reason, "err", cause, "messages", len(dead), "dead_letter", c.dlq != nil)
	return c.writeDead(ctx, dead)
}

func (b *Batch) isPoison(m kafka.Message) bool {
	for _, p := range b.poison {
		if p.Offset == m.Offset && p.Partition == m.Partition && p.Topic == m.Topic {
			return true
		}
	}
	return false
}

// Release releases the record and the batch's share of
// Config.MaxInflightBytes. It is idempotent. Commit and Release are
// independent: release the record once the windows have copied it, commit
// once the outputs are acknowledged.
func (b *Batch) Release() {
	if b.Record != nil {
		b.Record.Release()
		b.Record = nil
	}
	if b.bytes > 0 {
		b.c.flow.release(b.bytes)
		b.bytes = 0
	}
}

// deadLetter returns the dead-letter message of poison m.
func deadLetter(m kafka.Message, de *readings.DecodeError) kafka.Message {
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

// batcher is the batch being filled.
type batcher struct {
	c        *Consumer
	rb       *array.RecordBuilder
	rebuild  bool
	rows     int
	lastRows int
	messages int
	bytes    int64
	rowPart  []int32
	rowOff   []int64
	commits  []kafka.Message
	firsts   []int64
	poison   []kafka.Message
	dead     []kafka.Message
	lastWarn time.Time // of the last poison logged at warning level
	// quiet counts, by reason, the poison logged at debug level since the
	// last warning, which the next warning reports: one line every
	// poisonWarnEvery still says how much of the input is refused.
	quiet map[string]int
}

func (c *Consumer) newBatcher() *batcher {
	b := &batcher{c: c, rb: array.NewRecordBuilder(c.mem, c.schema), lastRows: 64}
	b.rb.Reserve(b.lastRows)
	return b
}

func (b *batcher) release() { b.rb.Release() }

// full reports whether the batch should be sent now.
func (b *batcher) full() bool {
	return b.rows >= b.c.cfg.BatchRows || b.messages >= b.c.cfg.BatchRows || b.bytes >= b.c.flow.batchBytes()
}

// add decodes m into the batch; st is m's partition. Poison of a live batch
// is counted, logged and queued for the dead-letter topic; poison of a
// rebuild batch was dealt with when it was first consumed and is skipped.
func (b *batcher) add(m kafka.Message, st *partition) {
	c := b.c
	b.messages++
	b.bytes += int64(len(m.Key) + len(m.Value))
	if !b.rebuild {
		c.m.messages.Inc()
	}
	before := b.rb.Field(readings.SeriesColumn).Len()
	oldest := readings.NoTime
	if st.newest > readings.NoTime+c.maxPastMs {
		oldest = st.newest - c.maxPastMs
	}
	c.dec.SetOldest(oldest)
	if err := c.dec.Decode(b.rb, m.Key, m.Value, m.Time); err != nil {
		if !b.rebuild {
			b.poisoned(m, err)
		}
	} else {
		st.newest = max(st.newest, c.dec.Newest())
		n := b.rb.Field(readings.SeriesColumn).Len() - before
		b.rows += n
		for range n {
			b.rowPart = append(b.rowPart, int32(m.Partition))
			b.rowOff = append(b.rowOff, m.Offset)
		}
		if !b.rebuild {
			c.m.readings.Add(float64(n))
		}
	}
	for i := range b.commits {
		if b.commits[i].Partition == m.Partition {
			b.commits[i].Offset = m.Offset
			return
		}
	}
	b.commits = append(b.commits, kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset})
	b.firsts = append(b.firsts, m.Offset)
}

// poisoned counts, logs and queues poison message m for the dead-letter
// topic.
func (b *batcher) poisoned(m kafka.Message, err error) {
	c := b.c
	var de *readings.DecodeError
	if !errors.As(err, &de) {
		de = &readings.DecodeError{Reason: readings.ReasonUnparsable, Err: err}
	}
	de.Topic, de.Partition, de.Offset = m.Topic, m.Partition, m.Offset
	if ctr, ok := c.m.decodeErrors[de.Reason]; ok {
		ctr.Inc()
	} else {
		c.m.decodeErrors[readings.ReasonUnparsable].Inc()
	}
	if now := time.Now(); now.Sub(b.lastWarn) >= poisonWarnEvery {
		// The first of a burst, then one per poisonWarnEvery.
		b.lastWarn = now
		attrs := []any{"partition", m.Partition, "offset", m.Offset, "reason", de.Reason, "err", de.Err, "dead_letter", c.dlq != nil}
		if len(b.quiet) > 0 {
			attrs = append(attrs, "also_refused_since_last_warning", quietCounts(b.quiet))
			clear(b.quiet)
		}
		c.log.Warn("poison message", attrs...)
	} else {
		if b.quiet == nil {
			b.quiet = map[string]int{}
		}
		b.quiet[de.Reason]++
		c.log.Debug("poison message", "partition", m.Partition, "offset", m.Offset,
			"reason", de.Reason, "err", de.Err, "dead_letter", c.dlq != nil)
	}
	if c.dlq != nil {
		b.dead = append(b.dead, deadLetter(m, de))
	}
	b.poison = append(b.poison, kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset})
}

// quietCounts writes poison counts by reason, the largest first:
// "missing_field 599, bad_timestamp 3".
func quietCounts(n map[string]int) string {
	reasons := slices.Collect(maps.Keys(n))
	slices.SortFunc(reasons, func(a, b string) int { return cmp.Or(cmp.Compare(n[b], n[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s %d", r, n[r])
	}
	return strings.Join(parts, ", ")
}

// discard drops what the batch holds, releasing its bytes.
func (b *batcher) discard() {
	b.c.flow.release(b.bytes)
	b.rb.NewRecord().Release()
	clear(b.dead)
	b.dead, b.poison = b.dead[:0], b.poison[:0]
	b.rows, b.messages, b.bytes = 0, 0, 0
	b.rowPart, b.rowOff, b.commits, b.firsts = b.rowPart[:0], b.rowOff[:0], b.commits[:0], b.firsts[:0]
}

// take returns the batch filled so far, for gen, and empties the batcher,
// after writing its dead letters. It returns nil for an empty live batch.
func (b *batcher) take(ctx context.Context, gen *generation) (*Batch, error) {
	c := b.c
	if b.messages == 0 && !b.rebuild {
		return nil, nil
	}
	if len(b.dead) > 0 {
		if err := c.writeDeadRetrying(ctx, b.dead); err != nil {
			return nil, err
		}
		clear(b.dead)
		b.dead = b.dead[:0]
	}
	batch := &Batch{
		Record:   b.rb.NewRecord(),
		Messages: b.messages,
		Rebuild:  b.rebuild,
		rowPart:  slices.Clone(b.rowPart),
		rowOff:   slices.Clone(b.rowOff),
		bytes:    b.bytes,
		gen:      gen,
		c:        c,
	}
	if !b.rebuild {
		batch.commits = slices.Clone(b.commits)
		batch.firsts = slices.Clone(b.firsts)
		c.m.batchRows.Observe(float64(b.rows))
		for _, m := range b.commits {
			gen.sent(m.Partition, m.Offset+1)
		}
	}
	if len(b.poison) > 0 {
		batch.poison = slices.Clone(b.poison)
		b.poison = b.poison[:0]
	}
	b.lastRows = max(b.rows, 16)
	b.rows, b.messages, b.bytes = 0, 0, 0
	b.rowPart, b.rowOff, b.commits, b.firsts = b.rowPart[:0], b.rowOff[:0], b.commits[:0], b.firsts[:0]
	b.rb.Reserve(min(b.lastRows, c.cfg.BatchRows))
	return batch, nil
}

// send hands batch to the pipeline; the batch is released if ctx ends
// first.
func send(ctx context.Context, out chan<- *Batch, batch *Batch) error {
	select {
	case out <- batch:
		return nil
	case <-ctx.Done():
		batch.Release()
		return ctx.Err()
	}
}

// writeDeadRetrying writes dead letters until it succeeds or ctx ends,
// backing off from 100ms to 5s: poison is not committed before it is
// dead-lettered, and a broker outage is no reason to stop.
func (c *Consumer) writeDeadRetrying(ctx context.Context, dead []kafka.Message) error {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err := c.writeDead(ctx, dead)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		level := slog.LevelDebug
		if attempt == 1 {
			level = slog.LevelWarn
		}
		c.log.Log(ctx, level, "dead-letter write failed; retrying (does the topic exist and may this client write to it?)",
			"err", err, "attempt", attempt, "wait", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// writeDead writes dead letters (counting them), or only counts them with
// DropPoison.
func (c *Consumer) writeDead(ctx context.Context, dead []kafka.Message) (int, error) {
	if c.dlq == nil || len(dead) == 0 {
		return len(dead), nil
	}
	if err := c.dlq.WriteMessages(ctx, dead...); err != nil {
		return 0, fmt.Errorf("write %d messages to dead-letter topic %s: %w", len(dead), c.cfg.DeadLetterTopic, err)
	}
	c.m.deadLetters.Add(float64(len(dead)))
	return len(dead), nil
}
