package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/readings/readingstest"
)

// newBroker starts an embedded broker for one test and returns a client of it.
func newBroker(t *testing.T, topics map[string]int) *kafkaconn.Client {
	t.Helper()
	b, err := embedded.Start("127.0.0.1:0", topics)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return kafkatest.Client(t, b.Addrs())
}

// produce writes msgs to topic with the real kafka-go client.
func produce(t *testing.T, kc *kafkaconn.Client, topic string, msgs ...kafka.Message) {
	t.Helper()
	kafkatest.Produce(t, kc, topic, msgs...)
}

// running is a Consumer whose Run runs in the background.
type running struct {
	c    *Consumer
	out  chan *Batch
	done chan error
	stop func() error
}

// start creates a Consumer of readings in the default format and runs it
// until the test ends or stop is called; stop cancels Run, checks it
// returns context.Canceled, and closes the consumer.
func start(t *testing.T, kc *kafkaconn.Client, cfg Config, opts ...Option) *running {
	t.Helper()
	return startWith(t, kc, cfg, readings.DefaultConfig(), opts...)
}

// startWith is start with readings in the format in.
func startWith(t *testing.T, kc *kafkaconn.Client, cfg Config, in readings.Config, opts ...Option) *running {
	t.Helper()
	return startOut(t, kc, cfg, in, 100, opts...)
}

// startOut is startWith with room for capacity batches between Run and
// the test, as the pipeline has one.
func startOut(t *testing.T, kc *kafkaconn.Client, cfg Config, in readings.Config, capacity int, opts ...Option) *running {
	t.Helper()
	c, err := NewConsumer(cfg, in, kc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{c: c, out: make(chan *Batch, capacity), done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx, r.out) }()
	stopped := false
	r.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-r.done:
			if !errors.Is(err, context.Canceled) {
				return fmt.Errorf("Run returned %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			return errors.New("Run did not return within 5s of cancel")
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		for len(r.out) > 0 {
			(<-r.out).Release()
		}
		return c.Close(cctx)
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// next returns the next live batch, failing after timeout; rebuild
// batches before it are committed and released, as the pipeline does.
func (r *running) next(t *testing.T, timeout time.Duration) *Batch {
	t.Helper()
	for {
		b := r.nextAny(t, timeout)
		if !b.Rebuild {
			return b
		}
		if err := b.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
}

// nextAny returns the next batch, live or rebuild, failing after timeout.
func (r *running) nextAny(t *testing.T, timeout time.Duration) *Batch {
	t.Helper()
	select {
	case b := <-r.out:
		return b
	case err := <-r.done:
		t.Fatalf("Run returned %v while a batch was awaited", err)
	case <-time.After(timeout):
		t.Fatalf("no batch within %v", timeout)
	}
	return nil
}

// collect reads batches until they cover n messages, committing each.
func (r *running) collect(t *testing.T, n int) (rows []readingstest.Row, batches []*Batch) {
	t.Helper()
	got := 0
	for got < n {
		b := r.next(t, 20*time.Second)
		got += b.Messages
		rows = append(rows, readingstest.Rows(t, b.Record)...)
		if err := b.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Release()
		batches = append(batches, b)
	}
	if got != n {
		t.Fatalf("batches cover %d messages, want %d", got, n)
	}
	return rows, batches
}

// dlqMessages waits for n messages on topic and returns them.
func dlqMessages(t *testing.T, kc *kafkaconn.Client, topic string, n int) []kafka.Message {
	t.Helper()
	return kafkatest.ReadN(t, kc, topic, n, 10*time.Second)
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return "<missing>"
}

// base is the event time of produced readings: in the past of the real
// clock the Consumer uses.
var base = time.Now().Add(-48 * time.Hour).Truncate(time.Hour).UTC()

// readingsFor returns n readings over series s-0 … s-(series-1), each
// series in time order, from base.
func readingsFor(n, series, channels int) []readings.Reading {
	return readingstest.Sequence(n, series, channels, base)
}

func TestConsumerEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		format readings.Format
		poison []poisonMsg
	}{
		{format: readings.FormatJSON, poison: []poisonMsg{
			{"p-1", `not json`, readings.ReasonUnparsable},
			{"p-2", `{"series":"p-2","ts":"2026-01-05T08:00:00Z","temp":"NaN","humidity":1}`, readings.ReasonNonFinite},
			{"p-3", `{"series":"p-3","ts":"yesterday","temp":1,"humidity":1}`, readings.ReasonBadTimestamp},
			{"p-4", `{"series":"p-4","ts":"2099-01-01T00:00:00Z","temp":1,"humidity":1}`, readings.ReasonFutureTimestamp},
		}},
		{format: readings.FormatCSV, poison: []poisonMsg{
			{"p-1", `p-1,2026-01-05T08:00:00Z,1`, readings.ReasonBadSchema},
			{"p-2", `p-2,2026-01-05T08:00:00Z,1,+Inf`, readings.ReasonNonFinite},
			{"p-3", `,2026-01-05T08:00:00Z,1,2`, readings.ReasonEmptySeries},
		}},
		{format: readings.FormatArrow, poison: []poisonMsg{
			{"p-1", "ARROW1\x00\x00garbage", readings.ReasonUnparsable},
		}},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			kc := newBroker(t, map[string]int{"readings": 3, "readings.dlq": 1})
			cfg := DefaultConfig()
			cfg.Group, cfg.Topic, cfg.DeadLetterTopic, cfg.BatchRows = "freqlens", "readings", "readings.dlq", 64
			in := readings.DefaultConfig()
			in.Format, in.ValueFields = tc.format, []string{"temp", "humidity"}
			rs := readingsFor(600, 7, 2)
			msgs, poison := endToEndMessages(t, in, rs, tc.poison)
			produce(t, kc, "readings", msgs...)

			reg := prometheus.NewPedanticRegistry()
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := startWith(t, kc, cfg, in, WithRegisterer(reg), WithAllocator(mem))
			got, _ := r.collect(t, len(msgs))

			checkEveryReadingArrived(t, got, rs)
			reasons := checkDeadLetters(t, kc, poison)
			checkEndToEndMetrics(t, r, reg, len(rs), len(msgs), len(poison), reasons)
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// poisonMsg is a message no reading decodes from, and the reason its
// dead letter gives.
type poisonMsg struct {
	key, value string
	reason     string
}

// endToEndMessages returns the messages of readings rs in the format of
// in, with the poison messages among them, and the poison: for Arrow,
// with a bad Arrow message added.
func endToEndMessages(t *testing.T, in readings.Config, rs []readings.Reading, poison []poisonMsg) ([]kafka.Message, []poisonMsg) {
	t.Helper()
	var msgs []kafka.Message
	if in.Format == readings.FormatArrow {
		// One message per series, many readings each.
		bySeries := map[string][]readings.Reading{}
		for _, r := range rs {
			bySeries[r.Series] = append(bySeries[r.Series], r)
		}
		for s, rr := range bySeries {
			v, err := readings.AppendArrow(nil, rr, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, kafka.Message{Key: []byte(s), Value: v})
		}
		// A bad Arrow message: one NaN among valid rows.
		bad := slices.Clone(rs[:5])
		bad[3] = readings.Reading{Series: bad[3].Series, Time: bad[3].Time, Values: []float64{math.NaN(), 1}}
		v, err := readings.AppendArrow(nil, bad, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		poison = append(poison, poisonMsg{"p-2", string(v), readings.ReasonNonFinite})
	} else {
		for _, r := range rs {
			var v []byte
			if in.Format == readings.FormatCSV {
				v = readings.AppendCSV(nil, r, in)
			} else {
				v = readings.AppendJSON(nil, r, in)
			}
			msgs = append(msgs, kafka.Message{Key: []byte(r.Series), Value: v})
		}
	}
	// Poison in the middle of the traffic, with a header to keep.
	for i, p := range poison {
		m := kafka.Message{Key: []byte(p.key), Value: []byte(p.value), Headers: []kafka.Header{{Key: "origin", Value: []byte("test")}}}
		msgs = slices.Insert(msgs, (i+1)*len(msgs)/(len(poison)+1), m)
	}
	return msgs, poison
}

// checkEveryReadingArrived checks the rows got against readings rs:
// every reading, bit-exact, each series in Kafka (= time) order, each row
// with an ingest time.
func checkEveryReadingArrived(t *testing.T, got []readingstest.Row, rs []readings.Reading) {
	t.Helper()
	want := readingstest.FromReadings(rs, 0)
	for i := range got {
		if got[i].Ingest <= 0 {
			t.Fatalf("row %d has ingest_ts %d", i, got[i].Ingest)
		}
	}
	for i := range got {
		got[i].Ingest = 0
	}
	for i := range want {
		want[i].Ingest = 0
	}
	for s := range 7 {
		var ts []int64
		for _, g := range got {
			if g.Series == fmt.Sprintf("s-%d", s) {
				ts = append(ts, g.TS)
			}
		}
		if !slices.IsSorted(ts) {
			t.Errorf("series s-%d arrived out of order: %v", s, ts)
		}
	}
	readingstest.Sort(got)
	readingstest.Sort(want)
	if !readingstest.SameRows(got, want) {
		t.Fatalf("got %d rows, want %d; they differ", len(got), len(want))
	}
}

// checkDeadLetters checks the dead letters of the poison messages: the
// original key, value and headers, plus ours. It returns how many
// poison messages there are of each reason.
func checkDeadLetters(t *testing.T, kc *kafkaconn.Client, poison []poisonMsg) map[string]float64 {
	t.Helper()
	dead := dlqMessages(t, kc, "readings.dlq", len(poison))
	sort.Slice(dead, func(i, j int) bool { return string(dead[i].Key) < string(dead[j].Key) })
	reasons := map[string]float64{}
	for i, p := range poison {
		d := dead[i]
		reasons[p.reason]++
		if string(d.Key) != p.key || string(d.Value) != p.value {
			t.Errorf("dead letter %d = %q: %q, want %q: %q", i, d.Key, d.Value, p.key, p.value)
		}
		if got := header(d, HeaderReason); got != p.reason {
			t.Errorf("dead letter %q: %s = %q, want %q", p.key, HeaderReason, got, p.reason)
		}
		if got := header(d, HeaderError); !strings.HasPrefix(got, "decode readings/") || !strings.Contains(got, p.reason) {
			t.Errorf("dead letter %q: %s = %q, want the DecodeError", p.key, HeaderError, got)
		}
		if got := header(d, HeaderSourceTopic); got != "readings" {
			t.Errorf("dead letter %q: %s = %q, want readings", p.key, HeaderSourceTopic, got)
		}
		part, err1 := strconv.Atoi(header(d, HeaderSourcePartition))
		off, err2 := strconv.ParseInt(header(d, HeaderSourceOffset), 10, 64)
		if err1 != nil || err2 != nil || part < 0 || part > 2 || off < 0 {
			t.Errorf("dead letter %q: source partition %q offset %q", p.key, header(d, HeaderSourcePartition), header(d, HeaderSourceOffset))
		}
		if got := header(d, "origin"); got != "test" {
			t.Errorf("dead letter %q lost its original header: origin = %q", p.key, got)
		}
	}
	return reasons
}

// checkEndToEndMetrics checks r's metrics: the readings, messages and
// dead letters counted, the decode errors of each reason, and that reg's
// metrics pass the linter.
func checkEndToEndMetrics(t *testing.T, r *running, reg *prometheus.Registry, nReadings, nMsgs, nPoison int, reasons map[string]float64) {
	t.Helper()
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"readings consumed", testutil.ToFloat64(r.c.m.readings), float64(nReadings)},
		{"messages consumed", testutil.ToFloat64(r.c.m.messages), float64(nMsgs)},
		{"dead letters", testutil.ToFloat64(r.c.m.deadLetters), float64(nPoison)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	for _, reason := range readings.Reasons {
		if got := testutil.ToFloat64(r.c.m.decodeErrors[reason]); got != reasons[reason] {
			t.Errorf("decode errors{reason=%q} = %v, want %v", reason, got, reasons[reason])
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("GatherAndLint: %v %v", problems, err)
	}
	if n, err := testutil.GatherAndCount(reg, "freqlens_stream_readings_consumed_total"); err != nil || n != 1 {
		t.Errorf("freqlens_stream_readings_consumed_total: %d series, %v", n, err)
	}
}

// TestDeadLettersPartitionLikeTheInput: dead letters keep their key and
// are partitioned as every FreqLens writer partitions (kafkaconn's writer,
// the sink's too), so with as many partitions as the input each lands in
// the partition number its message had.
func TestDeadLettersPartitionLikeTheInput(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 3, "dlq": 3})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DeadLetterTopic, cfg.BatchLatency = "g", "in", "dlq", 5*time.Millisecond
	var msgs []kafka.Message
	for i := range 40 {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint("sensor-", i)), Value: []byte("poison")})
	}
	produce(t, kc, "in", msgs...)
	r := start(t, kc, cfg)
	r.collect(t, len(msgs))
	used := map[int]bool{}
	for _, d := range dlqMessages(t, kc, "dlq", len(msgs)) {
		used[d.Partition] = true
		if src := header(d, HeaderSourcePartition); src != strconv.Itoa(d.Partition) {
			t.Errorf("dead letter of %q in partition %d; its message was in partition %s", d.Key, d.Partition, src)
		}
	}
	if len(used) < 2 {
		t.Errorf("40 keys used the partitions %v of 3; the test needs several", used)
	}
}

// TestConsumerResumesAfterCommit: a restarted consumer in the same group
// resumes after the committed offsets, and gets the uncommitted batch again
// (at-least-once).
func TestConsumerResumesAfterCommit(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1, "dlq": 1})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DeadLetterTopic, cfg.BatchRows, cfg.BatchLatency = "g", "in", "dlq", 5, time.Hour
	rs := readingsFor(12, 1, 1)
	var msgs []kafka.Message
	for _, r := range rs {
		msgs = append(msgs, kafka.Message{Value: readings.AppendJSON(nil, r, readings.DefaultConfig())})
	}
	produce(t, kc, "in", msgs...)

	first := start(t, kc, cfg)
	b1 := first.next(t, 20*time.Second)
	if err := b1.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	b2 := first.next(t, 20*time.Second) // never committed
	if got := readingstest.Rows(t, b2.Record); got[0].TS != rs[5].Time.UnixMilli() {
		t.Fatalf("second batch starts at %s, want %s", time.UnixMilli(got[0].TS).UTC(), rs[5].Time)
	}
	b1.Release()
	b2.Release()
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	second := start(t, kc, cfg)
	b := second.next(t, 20*time.Second)
	defer b.Release()
	got := readingstest.Rows(t, b.Record)
	want := readingstest.FromReadings(rs[5:10], 0)
	for i := range got {
		got[i].Ingest = 0
	}
	for i := range want {
		want[i].Ingest = 0
	}
	if !readingstest.SameRows(got, want) {
		t.Errorf("after the restart: %v, want the uncommitted batch again: %v", got, want)
	}
}

func TestConsumerBatchesByRows(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison, cfg.BatchRows, cfg.BatchLatency = "g", "in", true, 10, time.Hour
	var msgs []kafka.Message
	for _, r := range readingsFor(25, 3, 1) {
		msgs = append(msgs, kafka.Message{Value: readings.AppendJSON(nil, r, readings.DefaultConfig())})
	}
	produce(t, kc, "in", msgs...)
	r := start(t, kc, cfg)
	for i := 0; i < 2; i++ {
		b := r.next(t, 20*time.Second)
		if b.Record.NumRows() != 10 || b.Messages != 10 {
			t.Errorf("batch %d: %d rows of %d messages, want 10 of 10", i, b.Record.NumRows(), b.Messages)
		}
		b.Release()
	}
	select {
	case b := <-r.out:
		t.Errorf("a third batch of %d rows came before BatchLatency", b.Record.NumRows())
		b.Release()
	case <-time.After(300 * time.Millisecond):
	}
}

func TestConsumerBatchesByLatency(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison, cfg.BatchRows, cfg.BatchLatency = "g", "in", true, 1000, 20*time.Millisecond
	r := start(t, kc, cfg)
	// Wait for the group to be joined: one message through.
	produce(t, kc, "in", kafka.Message{Value: readings.AppendJSON(nil, readingsFor(1, 1, 1)[0], readings.DefaultConfig())})
	r.next(t, 20*time.Second).Release()

	var msgs []kafka.Message
	for _, rd := range readingsFor(3, 3, 1) {
		msgs = append(msgs, kafka.Message{Value: readings.AppendJSON(nil, rd, readings.DefaultConfig())})
	}
	sent := time.Now()
	produce(t, kc, "in", msgs...)
	rows := 0
	for rows < 3 {
		b := r.next(t, 5*time.Second)
		rows += int(b.Record.NumRows())
		b.Release()
	}
	if d := time.Since(sent); d > time.Second {
		t.Errorf("3 readings took %v to arrive with BatchLatency 20ms", d)
	}
}

// TestConsumerPoisonOnlyBatch: a batch of only poison is sent, and
// committing it moves the group past the poison.
func TestConsumerPoisonOnlyBatch(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1, "dlq": 1})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DeadLetterTopic, cfg.BatchLatency = "g", "in", "dlq", 5*time.Millisecond
	produce(t, kc, "in", kafka.Message{Key: []byte("a"), Value: []byte("{")}, kafka.Message{Key: []byte("b"), Value: []byte("}")})
	r := start(t, kc, cfg)
	got, _ := r.collect(t, 2)
	if len(got) != 0 {
		t.Errorf("poison-only batches hold %d rows", len(got))
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	produce(t, kc, "in", kafka.Message{Key: []byte("c"), Value: readings.AppendJSON(nil, readingsFor(1, 1, 1)[0], readings.DefaultConfig())})
	r2 := start(t, kc, cfg)
	b := r2.next(t, 20*time.Second)
	defer b.Release()
	if b.Messages != 1 || b.Record.NumRows() != 1 {
		t.Errorf("after the restart: %d messages, %d rows; want only the new reading", b.Messages, b.Record.NumRows())
	}
	if n := len(dlqMessages(t, kc, "dlq", 2)); n != 2 {
		t.Errorf("%d dead letters, want 2", n)
	}
}

func TestConsumerDropPoison(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1})
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison, cfg.BatchLatency = "g", "in", true, 5*time.Millisecond
	produce(t, kc, "in", kafka.Message{Key: []byte("a"), Value: []byte(`{"series":"a","ts":1,"value":"NaN"}`)})
	r := start(t, kc, cfg, WithRegisterer(reg))
	r.collect(t, 1)
	if got := testutil.ToFloat64(r.c.m.decodeErrors[readings.ReasonNonFinite]); got != 1 {
		t.Errorf("decode errors{non_finite} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(r.c.m.deadLetters); got != 0 {
		t.Errorf("dead letters = %v with DropPoison, want 0", got)
	}
}

func TestConsumerShutdown(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 2, "dlq": 1})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DeadLetterTopic = "g", "in", "dlq"
	c, err := NewConsumer(cfg, readings.DefaultConfig(), kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	out := make(chan *Batch) // nobody reads: Run must still stop
	go func() { done <- c.Run(ctx, out) }()
	produce(t, kc, "in", kafka.Message{Value: readings.AppendJSON(nil, readingsFor(1, 1, 1)[0], readings.DefaultConfig())})
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return within 2s of cancel")
	}
	if err := c.Run(context.Background(), out); err == nil || !strings.Contains(err.Error(), "once") {
		t.Errorf("second Run = %v, want an error saying it runs once", err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer ccancel()
	began := time.Now()
	if err := c.Close(cctx); err != nil {
		t.Errorf("Close = %v", err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("Close took %v, past its deadline", d)
	}
	if err := c.Close(cctx); err != nil {
		t.Errorf("second Close = %v, want nil (idempotent)", err)
	}
}

func TestConsumerCloseStopsRun(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1})
	c, err := NewConsumer(dropping("g", "in"), readings.DefaultConfig(), kc)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background(), make(chan *Batch)) }()
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Run = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Close")
	}
}

func TestCloseHonoursDeadline(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1})
	c, err := NewConsumer(dropping("g", "in"), readings.DefaultConfig(), kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Close with a done context = %v, want nil or context.Canceled", err)
	}
	done, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := c.Close(done); err != nil {
		t.Errorf("Close after the background close = %v", err)
	}
}

func TestConsumerMetricsLint(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1})
	reg := prometheus.NewPedanticRegistry()
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DropPoison = "g", "in", true
	r := start(t, kc, cfg, WithRegisterer(reg))
	produce(t, kc, "in", kafka.Message{Value: readings.AppendJSON(nil, readingsFor(1, 1, 1)[0], readings.DefaultConfig())})
	r.collect(t, 1)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	for _, name := range []string{
		"freqlens_stream_readings_consumed_total", "freqlens_stream_messages_consumed_total",
		"freqlens_stream_decode_errors_total", "freqlens_stream_dead_letters_total",
		"freqlens_stream_batch_rows", "freqlens_stream_consumer_lag_records",
	} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n == 0 {
			t.Errorf("metric %s: %d series, %v", name, n, err)
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// A restarted consumer registers with the same registry.
	c2, err := NewConsumer(cfg, readings.DefaultConfig(), kc, WithRegisterer(reg))
	if err != nil {
		t.Fatalf("second consumer on the same registry: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c2.Close(ctx); err != nil {
		t.Error(err)
	}
}

// TestConsumerOverSASLAndTLS runs the consumer and its dead-letter writer
// against a kfake cluster that requires SCRAM over TLS, through a client
// configured like the service's kafka.* keys (the mechanisms one by one are
// internal/kafkaconn's tests).
func TestConsumerOverSASLAndTLS(t *testing.T) {
	serverTLS, caFile := kafkatest.SelfSigned(t)
	cluster := kafkatest.NewCluster(t, []string{"in", "dlq"}, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "u", "p"), kfake.TLS(serverTLS))
	kcfg := kafkaconn.DefaultConfig()
	kcfg.Brokers, kcfg.TLSCAFile = cluster.ListenAddrs(), caFile
	kcfg.SASL = kafkaconn.SASL{Mechanism: "scram-sha-512", Username: "u", Password: "p"}
	kc, err := kafkaconn.New(kcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DeadLetterTopic, cfg.BatchLatency = "g", "in", "dlq", time.Millisecond
	kafkatest.Produce(t, kc, "in",
		kafka.Message{Key: []byte("a"), Value: readings.AppendJSON(nil, readingsFor(1, 1, 1)[0], readings.DefaultConfig())},
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
