package sink_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/internal/registry/registrytest"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/sink/sinktest"
	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

func TestNewValidates(t *testing.T) {
	ok := sink.DefaultConfig()
	for _, tc := range []struct {
		name   string
		modify func(*sink.Config)
		want   string
	}{
		{"same topics", func(c *sink.Config) { c.AttributionTopic = "forecasts" }, "topics.attributions = topics.forecasts"},
		{"bad format", func(c *sink.Config) { c.Format = "avro" }, `output.format = "avro"`},
		{"bad attributions", func(c *sink.Config) { c.Attributions = "some" }, `output.attributions = "some"`},
		{"negative batch timeout", func(c *sink.Config) { c.BatchTimeout = -time.Second }, "output.batch_timeout = -1s"},
		{"tiny batch bytes", func(c *sink.Config) { c.BatchBytes = 100 }, "output.batch_bytes = 100"},
		{"negative max attempts", func(c *sink.Config) { c.MaxAttempts = -1 }, "output.max_attempts = -1"},
		{"bad compression", func(c *sink.Config) { c.Compression = "brotli" }, `output.compression = "brotli"`},
		// A zero is a value, not the default: each zero that cannot work is
		// refused, naming its key and saying what to write.
		{"no forecasts topic", func(c *sink.Config) { c.ForecastTopic = "" }, `topics.forecasts is empty; name the topic the forecasts go to (default "forecasts")`},
		{"no format", func(c *sink.Config) { c.Format = "" }, `output.format = "" is not an output format; use "json" or "arrow"`},
		{"no attribution mode", func(c *sink.Config) { c.Attributions = "" }, `output.attributions = "" is not an attribution mode`},
		{"zero batch timeout", func(c *sink.Config) { c.BatchTimeout = 0 }, "output.batch_timeout = 0s; use a positive duration, at most a few milliseconds (default 50µs)"},
		{"zero batch size", func(c *sink.Config) { c.BatchSize = 0 }, "output.batch_size = 0; use at least 1 (default 1000)"},
		{"zero batch bytes", func(c *sink.Config) { c.BatchBytes = 0 }, "output.batch_bytes = 0 cannot hold a forecast message"},
		{"zero write timeout", func(c *sink.Config) { c.WriteTimeout = 0 }, "output.write_timeout = 0s; use a positive duration (default 10s)"},
		{"zero max attempts", func(c *sink.Config) { c.MaxAttempts = 0 }, "output.max_attempts = 0; use at least 1 (default 10)"},
		{"no compression", func(c *sink.Config) { c.Compression = "" }, `output.compression = "" is not a codec; use none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.modify(&cfg)
			_, err := sink.New(cfg, nil)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("New() = %v, want an error starting with %q", err, tc.want)
			}
		})
	}
	p, err := sink.New(ok, kafkatest.Client(t, []string{"127.0.0.1:9092"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Config(); got != ok {
		t.Errorf("Config() = %+v, want %+v as given", got, ok)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Error(err)
	}
	if err := (sink.Config{}).Validate(); err == nil {
		t.Error("Config{}.Validate() = nil; a zero Config names no forecasts topic")
	}
	// An empty attribution topic means something (no attributions), and with
	// attributions off the topic is not written, so it may be any name.
	for _, tc := range []struct {
		topic string
		mode  wire.AttributionMode
	}{{"", wire.AttributionsFull}, {"forecasts", wire.AttributionsOff}, {"attributions", wire.AttributionsOff}} {
		cfg := ok
		cfg.AttributionTopic, cfg.Attributions = tc.topic, tc.mode
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate() with topics.attributions %q and output.attributions %s = %v, want nil", tc.topic, tc.mode, err)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	want := sink.Config{
		ForecastTopic: "forecasts", AttributionTopic: "attributions", Format: wire.FormatJSON, Attributions: wire.AttributionsFull,
		BatchTimeout: 50 * time.Microsecond, BatchSize: 1000, BatchBytes: 1 << 20, WriteTimeout: 10 * time.Second, MaxAttempts: 10,
		Compression: "none",
	}
	if got := sink.DefaultConfig(); got != want {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
}

// TestKafkaPartitionsBySeries checks that every message of a series lands in
// one partition, with the same forecast-id on both topics.
func TestKafkaPartitionsBySeries(t *testing.T) {
	p, _, _, kc := newProducer(t, sink.DefaultConfig())
	fs := wiretest.Forecasts(11, 60, []string{"value"}, 4, 2)
	if err := p.Write(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, topic := range []string{"forecasts", "attributions"} {
		partition := map[string]int{}
		msgs := kafkatest.ReadAll(t, kc, topic)
		if len(msgs) != len(fs) {
			t.Fatalf("topic %s has %d messages, want %d", topic, len(msgs), len(fs))
		}
		for _, m := range msgs {
			if p, ok := partition[string(m.Key)]; ok && p != m.Partition {
				t.Errorf("topic %s: series %s in partitions %d and %d", topic, m.Key, p, m.Partition)
			}
			partition[string(m.Key)] = m.Partition
			for _, h := range m.Headers {
				if h.Key == wire.HeaderForecastID {
					ids[topic+"/"+string(h.Value)] = string(m.Key)
				}
			}
		}
		if len(partition) < 2 {
			t.Errorf("topic %s: all series in one partition", topic)
		}
	}
	for _, f := range fs {
		id := wire.ForecastID(f.Series, f.TS, f.ModelVersion)
		if ids["forecasts/"+id] != f.Series || ids["attributions/"+id] != f.Series {
			t.Errorf("forecast-id %s of %s@%s missing on a topic", id, f.Series, f.TS)
		}
	}
}

func TestKafkaAttributionModes(t *testing.T) {
	fs := wiretest.Forecasts(12, 10, []string{"temp", "humidity"}, 8, 3)
	for _, tc := range []struct {
		name     string
		cfg      sink.Config
		want     func(wire.Forecast) wire.Forecast
		attrMsgs int
	}{
		{"summary", configWith(func(cfg *sink.Config) { cfg.Attributions, cfg.Format = wire.AttributionsSummary, wire.FormatArrow }),
			func(f wire.Forecast) wire.Forecast {
				s := wiretest.AttributionPart(f, wire.AttributionsSummary, true)
				s.Values, s.Fields, s.Horizon, s.Intervals = f.Values, f.Fields, f.Horizon, f.Intervals
				return s
			}, len(fs)},
		{"no attribution topic", configWith(func(cfg *sink.Config) { cfg.AttributionTopic = "" }), wiretest.ForecastPart, 0},
		{"off", configWith(func(cfg *sink.Config) { cfg.Attributions = wire.AttributionsOff }), wiretest.ForecastPart, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, cfg, _, kc := newProducer(t, tc.cfg)
			if err := p.Write(context.Background(), fs); err != nil {
				t.Fatal(err)
			}
			got := sinktest.ReadKafka(t, kc, cfg)
			if len(got) != len(fs) {
				t.Fatalf("delivered %d, want %d", len(got), len(fs))
			}
			bySeries := map[string]wire.Forecast{} // one forecast per series
			for _, f := range got {
				bySeries[f.Series] = f
			}
			for i, f := range fs {
				if d := wiretest.Diff(bySeries[f.Series], tc.want(f)); d != "" {
					t.Errorf("forecast %d: %s", i, d)
				}
			}
			if n := len(kafkatest.ReadAll(t, kc, "attributions")); n != tc.attrMsgs {
				t.Errorf("attributions topic has %d messages, want %d", n, tc.attrMsgs)
			}
		})
	}
}

// sleepProduce makes the broker hold the first produce request until
// release is closed, and closes held once it holds it.
func sleepProduce(t *testing.T, c *kfake.Cluster) (held <-chan struct{}, release func()) {
	h, r := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var taken atomic.Bool
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if taken.CompareAndSwap(false, true) {
			close(h)
			c.SleepControl(func() { <-r })
		}
		return nil, nil, false
	})
	rel := func() { once.Do(func() { close(r) }) }
	t.Cleanup(rel)
	return h, rel
}

func TestKafkaCloseWaitsForWriteInFlight(t *testing.T) {
	p, cfg, c, kc := newProducer(t, sink.DefaultConfig())
	held, release := sleepProduce(t, c)
	fs := wiretest.Forecasts(13, 20, []string{"value"}, 4, 2)
	werr := make(chan error)
	go func() { werr <- p.Write(context.Background(), fs) }()
	<-held
	cerr := make(chan error)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cerr <- p.Close(ctx)
	}()
	select {
	case err := <-cerr:
		t.Fatalf("Close returned %v while a write was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if err := <-werr; err != nil {
		t.Errorf("Write = %v, want nil", err)
	}
	if err := <-cerr; err != nil {
		t.Errorf("Close = %v, want nil", err)
	}
	if got := sinktest.ReadKafka(t, kc, cfg); len(got) != len(fs) {
		t.Errorf("delivered %d, want %d", len(got), len(fs))
	}
}

func TestKafkaCloseDeadlineCancelsWrite(t *testing.T) {
	p, _, c, _ := newProducer(t, configWith(func(cfg *sink.Config) { cfg.AttributionTopic = "" }))
	held, _ := sleepProduce(t, c)
	werr := make(chan error)
	go func() { werr <- p.Write(context.Background(), wiretest.Forecasts(14, 5, []string{"value"}, 4, 2)) }()
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want context.DeadlineExceeded", err)
	}
	if err := <-werr; !errors.Is(err, sink.ErrClosed) {
		t.Errorf("Write = %v, want sink.ErrClosed", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %s with a 100ms deadline", d)
	}
}

func TestKafkaWriteCancelled(t *testing.T) {
	p, _, c, _ := newProducer(t, configWith(func(cfg *sink.Config) { cfg.AttributionTopic = "" }))
	held, _ := sleepProduce(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	werr := make(chan error)
	go func() { werr <- p.Write(ctx, wiretest.Forecasts(15, 5, []string{"value"}, 4, 2)) }()
	<-held
	cancel()
	if err := <-werr; !errors.Is(err, context.Canceled) {
		t.Errorf("Write = %v, want context.Canceled", err)
	}
}

func TestKafkaBrokerErrorFailsWrite(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, _, c, _ := newProducer(t, configWith(func(cfg *sink.Config) { cfg.MaxAttempts = 1 }), sink.WithRegisterer(reg))
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			if rt.Topic != "forecasts" {
				return nil, nil, false // attributions go through
			}
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = 29 // TOPIC_AUTHORIZATION_FAILED: not retriable
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	fs := wiretest.Forecasts(16, 12, []string{"value"}, 4, 2)
	err := p.Write(context.Background(), fs)
	if err == nil || !strings.Contains(err.Error(), "topic forecasts") {
		t.Fatalf("Write = %v, want an error naming topic forecasts", err)
	}
	if got := metric(t, reg, "freqlens_sink_write_errors_total", "forecasts"); got != float64(len(fs)) {
		t.Errorf("write errors on forecasts = %v, want %d", got, len(fs))
	}
	if got := metric(t, reg, "freqlens_sink_forecasts_written_total", "forecasts"); got != 0 {
		t.Errorf("forecasts written on forecasts = %v, want 0", got)
	}

	// A Write of several chunks fails with its first, while the next are
	// being encoded or done: it fails naming the topic, and only the failed
	// chunk counts as errors. (That Write waits for its encoders before it
	// returns is shown by TestKafkaChunksKeepOrder under the race detector.)
	big := wiretest.Forecasts(17, 1300, []string{"value"}, 4, 2)
	err = p.Write(context.Background(), big)
	if err == nil || !strings.Contains(err.Error(), "topic forecasts") {
		t.Fatalf("Write of 1300 = %v, want an error naming topic forecasts", err)
	}
	for i := range big {
		big[i].Values[0], big[i].Series = 0, "" // the caller's again
	}
	failed := metric(t, reg, "freqlens_sink_write_errors_total", "forecasts") - float64(len(fs))
	if failed < 1 || failed > 512 {
		t.Errorf("write errors of the 1300-forecast Write = %v, want those of its first chunk (at most 512)", failed)
	}
}

func TestKafkaMissingTopic(t *testing.T) {
	_, kc := newCluster(t, "forecasts")
	p, err := sink.New(configWith(func(cfg *sink.Config) { cfg.AttributionTopic, cfg.ForecastTopic, cfg.MaxAttempts = "", "nope", 1 }), kc)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = p.Write(ctx, wiretest.Forecasts(17, 1, []string{"value"}, 4, 2))
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Write to a missing topic = %v, want an error naming it", err)
	}
	t.Log(err)
}

func TestKafkaMessageTooLarge(t *testing.T) {
	p, _, _, kc := newProducer(t, configWith(func(cfg *sink.Config) { cfg.BatchBytes = 8192 }))
	fs := wiretest.Forecasts(18, 3, []string{"value"}, 96, 8)
	for i := range fs {
		fs[i].Intervals = nil // the forecast message fits; the attribution does not
	}
	err := p.Write(context.Background(), fs)
	if err == nil || !strings.Contains(err.Error(), "BatchBytes = 8192") || !strings.Contains(err.Error(), "summary") {
		t.Errorf("Write of large attributions = %v, want an error naming BatchBytes and summary attributions", err)
	}
	if n := len(kafkatest.ReadAll(t, kc, "forecasts")); n != 0 {
		t.Errorf("%d forecasts delivered, want 0", n)
	}
}

// metric returns the value of the counter name{topic=topic} in reg (0 when
// absent).
func metric(t *testing.T, reg *prometheus.Registry, name, topic string) float64 {
	t.Helper()
	v, _ := registrytest.Value(reg, name, "topic", topic)
	return v
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, _, _, _ := newProducer(t, sink.DefaultConfig(), sink.WithRegisterer(reg))
	// A second sink on the same registry shares the collectors.
	w, err := sink.NewWriter(&lockedBuffer{}, sink.WriterConfig{}, sink.WithRegisterer(reg))
	if err != nil {
		t.Fatalf("NewWriter on a registry that has the sink metrics: %v", err)
	}
	fs := wiretest.Forecasts(19, 7, []string{"value"}, 4, 2)
	for _, s := range []sink.Sink{p, w} {
		if err := s.Write(context.Background(), fs); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		t.Errorf("lint: %s: %s", pr.Metric, pr.Text)
	}
	for _, tc := range []struct {
		name, topic string
		want        float64
	}{
		{"freqlens_sink_forecasts_written_total", "forecasts", 7},
		{"freqlens_sink_forecasts_written_total", "attributions", 7},
		{"freqlens_sink_forecasts_written_total", "stdout", 7},
		{"freqlens_sink_messages_written_total", "forecasts", 7},
		{"freqlens_sink_messages_written_total", "stdout", 14},
		{"freqlens_sink_write_errors_total", "forecasts", 0},
	} {
		if got := metric(t, reg, tc.name, tc.topic); got != tc.want {
			t.Errorf("%s{topic=%q} = %v, want %v", tc.name, tc.topic, got, tc.want)
		}
	}
	if got := metric(t, reg, "freqlens_sink_bytes_written_total", "forecasts"); got < 7*100 {
		t.Errorf("bytes written to forecasts = %v, want more than 700", got)
	}
	n, err := testutil.GatherAndCount(reg, "freqlens_sink_write_duration_seconds")
	if err != nil || n != 1 {
		t.Errorf("freqlens_sink_write_duration_seconds: %d series, %v", n, err)
	}
}

// TestKafkaChunksKeepOrder: a Write of several chunks (encoded on several
// cores while the one before is in flight) delivers every message once, and
// each series' forecasts in the order written; a forecast that fails
// validation in a later chunk fails the Write, and once it returns no
// encoder reads the forecasts any more (the race detector sees to that).
func TestKafkaChunksKeepOrder(t *testing.T) {
	p, _, _, kc := newProducer(t, sink.DefaultConfig())
	fs := wiretest.Forecasts(5, 1300, []string{"value"}, 4, 2)
	if err := p.Write(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	msgs := kafkatest.ReadAll(t, kc, "forecasts")
	if len(msgs) != len(fs) {
		t.Fatalf("%d messages, want %d", len(msgs), len(fs))
	}
	last := map[string]time.Time{}
	for _, m := range msgs {
		f, err := wire.DecodeForecastJSON(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Key) != f.Series {
			t.Fatalf("a forecast of series %s under the key %q", f.Series, m.Key)
		}
		if prev, ok := last[f.Series]; ok && !f.TS.After(prev) {
			t.Fatalf("series %s: forecast of %v after the one of %v", f.Series, f.TS, prev)
		}
		last[f.Series] = f.TS
	}
	bad := wiretest.Forecasts(6, 1300, []string{"value"}, 4, 2)
	bad[1100].Values = bad[1100].Values[:1] // a horizon that does not match: fails validation
	err := p.Write(context.Background(), bad)
	if err == nil {
		t.Fatal("a Write with an invalid forecast in its third chunk succeeded")
	}
	// The error names the forecast's place in the Write, not in its chunk.
	if want := "write 1300 forecasts: forecast 1100:"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	// A failure in the first chunk, while the next is being encoded.
	bad = wiretest.Forecasts(7, 1300, []string{"value"}, 4, 2)
	bad[100].Values = bad[100].Values[:1]
	if err := p.Write(context.Background(), bad); err == nil {
		t.Fatal("a Write with an invalid forecast in its first chunk succeeded")
	}
	for i := range bad {
		bad[i].Values[0] = 0 // the caller's again
	}
}
