package sink

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"

	"github.com/freqlens/freqlens/wire"
)

// Producer is the Kafka sink: one kafka-go Writer per output topic, keyed by
// series and partitioned by kafka-go's Hash balancer (FNV-1a of the key), so
// a series' forecasts keep their order. Write returns once every message is
// acknowledged by all in-sync replicas. It is safe for concurrent use.
type Producer struct {
	cfg         Config
	metrics     *metrics
	fm, am      topicMetrics
	forecasts   *kafka.Writer
	attribution *kafka.Writer // nil when attributions are off
	contentType []byte

	pool sync.Pool // *kafkaBatch
	// perForecast is the bytes a forecast's messages took in the last
	// chunk encoded: a chunk's buffer is sized from it before encoding, so
	// it is allocated once at its size instead of growing by copies.
	perForecast atomic.Int64

	// stop cancels the Writes in flight when Close runs out of time.
	stopCtx context.Context
	stop    context.CancelFunc

	mu       sync.Mutex
	closed   bool
	inflight int
	drained  chan struct{} // closed once closed and inflight == 0
}

var _ Sink = (*Producer)(nil)

// New returns a Kafka sink writing to cfg's topics through kc. It checks cfg
// and takes it as given (start from DefaultConfig) but does not connect:
// the first Write does, and reports a missing topic or an unreachable
// broker. Close closes the writers, not kc.
func New(cfg Config, kc *kafkaconn.Client, opts ...Option) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	codec := codecs[strings.ToLower(cfg.Compression)]
	o := newOptions(opts)
	m, err := newMetrics(o.reg)
	if err != nil {
		return nil, fmt.Errorf("sink: register metrics: %w", err)
	}
	p := &Producer{
		cfg:         cfg,
		metrics:     m,
		fm:          m.topic(cfg.ForecastTopic),
		contentType: []byte(cfg.Format.ContentType()),
		drained:     make(chan struct{}),
	}
	p.stopCtx, p.stop = context.WithCancel(context.Background())
	p.forecasts = p.newWriter(kc, cfg.ForecastTopic, codec)
	if cfg.attributions() {
		p.am = m.topic(cfg.AttributionTopic)
		p.attribution = p.newWriter(kc, cfg.AttributionTopic, codec)
	}
	p.pool.New = func() any {
		b := &kafkaBatch{}
		if cfg.Format == wire.FormatArrow {
			b.arrow = wire.NewArrowEncoder(nil)
		}
		return b
	}
	return p, nil
}

func (p *Producer) newWriter(kc *kafkaconn.Client, topic string, codec kafka.Compression) *kafka.Writer {
	w := kc.NewWriter(topic)
	w.MaxAttempts = p.cfg.MaxAttempts
	// A Write hands the writer at most writeChunk messages at a time, and
	// the writer allocates BatchSize message slots for every partition
	// batch it opens, so a larger BatchSize would only allocate slots that
	// no batch fills (a 1000-slot batch is 150 KB, opened per partition and
	// topic on every Write).
	w.BatchSize = min(p.cfg.BatchSize, writeChunk)
	w.BatchBytes = p.cfg.BatchBytes
	w.BatchTimeout = p.cfg.BatchTimeout
	w.WriteTimeout = p.cfg.WriteTimeout
	w.Compression = codec
	return w
}

// Config returns the configuration in use, as given to New.
func (p *Producer) Config() Config { return p.cfg }

// writeChunk is the most forecasts one encode buffer holds: a Write of more
// (a backlog's batches) is produced chunk after chunk, so the buffers kept
// for reuse stay the size of a chunk, not of the largest batch ever
// written.
const writeChunk = 512

// minParallelChunk is the fewest forecasts a chunk is cut to so that a
// Write's encoding spreads over the cores: below it, the produce round
// trip an extra chunk costs outweighs the encoding it shares out.
const minParallelChunk = 64

// maxEncoders bounds the chunks encoded at once, and so the encode buffers
// a Write holds (one more than this, the chunk being produced): encoding
// a forecast as JSON costs more than everything else the service does
// with it, so on a 2-core replica two encoders keep both cores at it.
const maxEncoders = 4

// Write encodes every forecast (and its attribution, when on), produces them
// to both topics at once and returns when every message is acknowledged.
// It cuts the forecasts into chunks of even size (chunkSize: at most
// writeChunk, and one a core when each gets minParallelChunk), encodes up
// to GOMAXPROCS chunks (at most maxEncoders) at once while the chunk before
// them is in flight, and produces each chunk once the one before is
// acknowledged, so the messages keep their order. A forecast that fails
// Validate fails the Write before anything of its chunk is sent. After an
// error some messages may have been delivered; the caller must treat the
// whole batch as undelivered (at-least-once).
func (p *Producer) Write(ctx context.Context, fs []wire.Forecast) error {
	if err := p.enter(); err != nil {
		return err
	}
	defer p.leave()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sink: write %d forecasts: %w", len(fs), err)
	}
	if len(fs) == 0 {
		return nil
	}
	start := time.Now()
	defer func() { p.metrics.duration.Observe(time.Since(start).Seconds()) }()
	encoders := min(runtime.GOMAXPROCS(0), maxEncoders)
	size := chunkSize(len(fs), encoders)
	if size >= len(fs) {
		// One chunk: nothing to share out or overlap.
		b, err := p.encode(fs, 0, len(fs))
		if err != nil {
			p.refused(len(fs))
			return err
		}
		return p.send(ctx, b, len(fs))
	}
	chunks := (len(fs) + size - 1) / size
	encoded := make([]chan encodeResult, chunks)
	launched := 0
	launch := func() {
		lo := launched * size
		chunk := fs[lo:min(lo+size, len(fs))]
		ch := make(chan encodeResult, 1)
		encoded[launched] = ch
		launched++
		go func() {
			b, err := p.encode(chunk, lo, len(fs))
			ch <- encodeResult{b, err}
		}()
	}
	// abandon waits for the chunks still being encoded (they read fs, which
	// is the caller's again once Write returns) and returns their buffers.
	abandon := func(from int) {
		for i := from; i < launched; i++ {
			if r := <-encoded[i]; r.b != nil {
				p.pool.Put(r.b)
			}
		}
	}
	for launched < min(chunks, encoders) {
		launch()
	}
	for i := range chunks {
		r := <-encoded[i]
		n := min(size, len(fs)-i*size)
		if r.err != nil {
			p.refused(n)
			abandon(i + 1)
			return r.err
		}
		if launched < chunks {
			launch() // keeps every encoder busy while chunk i is in flight
		}
		if err := p.send(ctx, r.b, n); err != nil {
			abandon(i + 1)
			return err
		}
	}
	return nil
}

// encodeResult is one chunk's encoding: its buffer, or why it failed.
type encodeResult struct {
	b   *kafkaBatch
	err error
}

// chunkSize returns how many forecasts each chunk of a Write of n holds:
// as many chunks as writeChunk requires, or one for each of the encoders
// when that leaves each at least minParallelChunk, and the forecasts shared
// evenly among them, so that no chunk is a small tail that costs a produce
// round trip of its own.
func chunkSize(n, encoders int) int {
	if n <= 0 {
		return 1
	}
	chunks := max((n+writeChunk-1)/writeChunk, min(encoders, n/minParallelChunk))
	return (n + chunks - 1) / chunks
}

// encode encodes one chunk of a Write of total forecasts, the chunk that
// starts at the Write's forecast first, into a batch from the pool, whose
// buffer is first made room for an eighth more than the last chunk's bytes
// a forecast (encoding a chunk into a buffer that grows by doubling copies
// and allocates about as much again as it writes: 168 MB in a 5-second
// production benchmark).
func (p *Producer) encode(fs []wire.Forecast, first, total int) (*kafkaBatch, error) {
	b := p.pool.Get().(*kafkaBatch)
	if need := int64(len(fs)) * p.perForecast.Load() * 9 / 8; int64(cap(b.buf)) < need {
		b.buf = make([]byte, 0, need)
	}
	if err := b.encode(fs, first, total, &p.cfg, p.attribution != nil, p.contentType); err != nil {
		p.pool.Put(b)
		return nil, err
	}
	if len(fs) > 0 {
		p.perForecast.Store(int64((len(b.buf) + len(fs) - 1) / len(fs)))
	}
	return b, nil
}

// refused counts the n forecasts of the chunk whose encoding failed a
// Write as errors on both topics (a chunk encoded beside it and abandoned is
// not counted, whatever its fate).
func (p *Producer) refused(n int) {
	p.fm.errors.Add(float64(n))
	if p.attribution != nil {
		p.am.errors.Add(float64(n))
	}
}

// send produces an encoded chunk of n forecasts to both topics and waits
// for the acknowledgements.
func (p *Producer) send(ctx context.Context, b *kafkaBatch, n int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.stopCtx, cancel)()
	var (
		aerr error
		done chan struct{}
	)
	if p.attribution != nil {
		done = make(chan struct{})
		go func() {
			defer close(done)
			if aerr = p.attribution.WriteMessages(ctx, b.amsgs...); aerr != nil {
				cancel()
			}
		}()
	}
	ferr := p.forecasts.WriteMessages(ctx, b.fmsgs...)
	if ferr != nil {
		cancel()
	}
	if done != nil {
		<-done
	}
	p.account(p.fm, n, b.fbytes, ferr)
	if p.attribution != nil {
		p.account(p.am, n, b.abytes, aerr)
	}
	if ferr == nil && aerr == nil {
		p.pool.Put(b)
		return nil
	}
	// kafka-go may still hold b's bytes (a cancelled write goes on in the
	// background), so b is not reused.
	if p.stopCtx.Err() != nil {
		return fmt.Errorf("sink: write %d forecasts: cancelled by Close before every message was acknowledged: %w", n, ErrClosed)
	}
	topic, err := p.cfg.ForecastTopic, ferr
	if ferr == nil || (errors.Is(ferr, context.Canceled) && aerr != nil && !errors.Is(aerr, context.Canceled)) {
		// The attribution write failed first and cancelled this one.
		topic, err = p.cfg.AttributionTopic, aerr
	}
	return writeError(n, topic, err, p.cfg.BatchBytes)
}

// account updates the counters of one topic after a write of n messages.
func (p *Producer) account(m topicMetrics, n, bytes int, err error) {
	if err == nil {
		m.forecasts.Add(float64(n))
		m.messages.Add(float64(n))
		m.bytes.Add(float64(bytes))
		return
	}
	var werr kafka.WriteErrors
	if errors.As(err, &werr) {
		failed := werr.Count()
		m.errors.Add(float64(failed))
		// The others were acknowledged, but the Write failed as a whole.
		m.messages.Add(float64(len(werr) - failed))
		return
	}
	m.errors.Add(float64(n))
}

func writeError(n int, topic string, err error, batchBytes int64) error {
	var werr kafka.WriteErrors
	if errors.As(err, &werr) {
		var first error
		for _, e := range werr {
			if e != nil {
				first = e
				break
			}
		}
		return fmt.Errorf("sink: write %d forecasts to topic %s: %d of %d messages were not acknowledged: %w",
			n, topic, werr.Count(), len(werr), first)
	}
	var tooLarge kafka.MessageTooLargeError
	if errors.As(err, &tooLarge) {
		return fmt.Errorf("sink: write %d forecasts to topic %s: a message of series %q is larger than Config.BatchBytes = %d; "+
			"raise BatchBytes (and the topic's max.message.bytes) or write summary attributions: %w",
			n, topic, tooLarge.Message.Key, batchBytes, err)
	}
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return fmt.Errorf("sink: write %d forecasts: topic %s does not exist: create it, or check the topic names in the configuration: %w",
			n, topic, err)
	}
	return fmt.Errorf("sink: write %d forecasts to topic %s: %w", n, topic, err)
}

func (p *Producer) enter() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.inflight++
	return nil
}

func (p *Producer) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight--
	if p.closed && p.inflight == 0 {
		close(p.drained)
	}
}

// Close stops new Writes (they fail with ErrClosed), waits for the Writes in
// flight and closes the Kafka writers. Every Write is synchronous, so there is
// nothing else to flush. If ctx ends first, Close cancels the Writes in flight
// — they return errors, so their input is not committed and will be
// reprocessed: a forced stop may duplicate, never drop — and returns ctx's
// error; kafka-go then finishes the produce requests already sent (at most
// WriteTimeout each) in the background. Calling Close again returns nil.
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.inflight == 0 {
		close(p.drained)
	}
	p.mu.Unlock()

	var err error
	select {
	case <-p.drained: // idle: a done ctx does not matter
	default:
		select {
		case <-p.drained:
		case <-ctx.Done():
			p.stop()
			<-p.drained // cancelled Writes return at once
			err = fmt.Errorf("sink: close: writes were still waiting for acknowledgements: %w", ctx.Err())
		}
	}
	p.stop()
	closeWriters := func() {
		p.forecasts.Close()
		if p.attribution != nil {
			p.attribution.Close()
		}
	}
	if err != nil {
		go closeWriters()
		return err
	}
	closeWriters()
	return nil
}

// kafkaBatch is the scratch of one Write: every message's key, value and
// header bytes in one buffer, and the messages pointing into it. It is reused
// by later Writes once kafka-go has let go of it.
type kafkaBatch struct {
	buf            []byte
	spans          []msgSpan
	headers        []kafka.Header
	fmsgs, amsgs   []kafka.Message
	fbytes, abytes int
	arrow          *wire.ArrowEncoder
}

// msgSpan locates one forecast's bytes in kafkaBatch.buf.
type msgSpan struct {
	key, id, version, forecast, attribution [2]int
}

// headerOverhead bounds what a message costs beyond its key, value and
// header bytes in a produce request (kafka-go's totalSize).
const headerOverhead = 64

// encode encodes fs, the forecasts first … first+len(fs)−1 of a Write of
// total (the numbers its errors give), into b's buffer and messages.
func (b *kafkaBatch) encode(fs []wire.Forecast, first, total int, cfg *Config, attributions bool, contentType []byte) error {
	b.buf = b.buf[:0]
	b.spans = b.spans[:0]
	b.fbytes, b.abytes = 0, 0
	for i := range fs {
		f := &fs[i]
		var err error
		var s msgSpan
		s.key[0] = len(b.buf)
		b.buf = append(b.buf, f.Series...)
		s.key[1] = len(b.buf)
		b.buf = wire.AppendForecastID(b.buf, f.Series, f.TS, f.ModelVersion)
		s.id = [2]int{s.key[1], len(b.buf)}
		b.buf = strconv.AppendInt(b.buf, f.ModelVersion, 10)
		s.version = [2]int{s.id[1], len(b.buf)}
		if cfg.Format == wire.FormatArrow {
			b.buf, err = b.arrow.AppendForecast(b.buf, f)
		} else {
			b.buf, err = wire.AppendForecastJSON(b.buf, f)
		}
		if err != nil {
			return fmt.Errorf("sink: write %d forecasts: forecast %d: %w", total, first+i, err)
		}
		s.forecast = [2]int{s.version[1], len(b.buf)}
		s.attribution = [2]int{len(b.buf), len(b.buf)}
		if attributions {
			if cfg.Format == wire.FormatArrow {
				b.buf, err = b.arrow.AppendAttribution(b.buf, f, cfg.Attributions)
			} else {
				b.buf, err = wire.AppendAttributionJSON(b.buf, f, cfg.Attributions)
			}
			if err != nil {
				return fmt.Errorf("sink: write %d forecasts: forecast %d: %w", total, first+i, err)
			}
			s.attribution[1] = len(b.buf)
		}
		b.spans = append(b.spans, s)
	}

	// The buffer no longer moves: point the messages into it.
	n := len(fs)
	b.headers = grow(b.headers, 3*n)
	b.fmsgs = grow(b.fmsgs, n)
	b.amsgs = b.amsgs[:0]
	if attributions {
		b.amsgs = grow(b.amsgs, n)
	}
	sub := func(r [2]int) []byte { return b.buf[r[0]:r[1]:r[1]] }
	for i, s := range b.spans {
		h := b.headers[3*i : 3*i+3 : 3*i+3]
		h[0] = kafka.Header{Key: wire.HeaderForecastID, Value: sub(s.id)}
		h[1] = kafka.Header{Key: wire.HeaderModelVersion, Value: sub(s.version)}
		h[2] = kafka.Header{Key: wire.HeaderContentType, Value: contentType}
		hdrBytes := len(wire.HeaderForecastID) + len(wire.HeaderModelVersion) + len(wire.HeaderContentType) +
			(s.version[1] - s.id[0]) + len(contentType)
		key := sub(s.key)
		b.fmsgs[i] = kafka.Message{Key: key, Value: sub(s.forecast), Headers: h}
		if err := checkSize(len(key)+hdrBytes, s.forecast, cfg, fs[i].Series, "forecast"); err != nil {
			return err
		}
		b.fbytes += len(key) + s.forecast[1] - s.forecast[0]
		if attributions {
			b.amsgs[i] = kafka.Message{Key: key, Value: sub(s.attribution), Headers: h}
			if err := checkSize(len(key)+hdrBytes, s.attribution, cfg, fs[i].Series, "attribution"); err != nil {
				return err
			}
			b.abytes += len(key) + s.attribution[1] - s.attribution[0]
		}
	}
	return nil
}

func checkSize(extra int, value [2]int, cfg *Config, series, what string) error {
	size := int64(extra + value[1] - value[0] + headerOverhead)
	if size <= cfg.BatchBytes {
		return nil
	}
	hint := " or write summary attributions (output.attributions: summary)"
	if what == "forecast" {
		hint = " or configure fewer interval levels (output.intervals)"
	}
	return fmt.Errorf("sink: the %s message of series %q is %d bytes, more than Config.BatchBytes = %d allows; "+
		"raise BatchBytes (and the topic's max.message.bytes)%s", what, series, size, cfg.BatchBytes, hint)
}

// grow returns s with length n, reusing its storage when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
