package sink_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/sink/sinktest"
	"github.com/freqlens/freqlens/wire"
)

func TestMemorySuite(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) (sink.Sink, sinktest.Delivered) {
		m := sink.NewMemory()
		return m, func(testing.TB) []wire.Forecast { return m.Forecasts() }
	})
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

func TestWriterSuite(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) (sink.Sink, sinktest.Delivered) {
		var out lockedBuffer
		w, err := sink.NewWriter(&out, sink.WriterConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return w, func(tb testing.TB) []wire.Forecast {
			fs, err := sinktest.ReadLines(out.Bytes())
			if err != nil {
				tb.Fatal(err)
			}
			return fs
		}
	})
}

// newCluster starts an in-process Kafka broker with the given topics of
// three partitions each and returns it with a client of it.
func newCluster(t testing.TB, topics ...string) (*kfake.Cluster, *kafkaconn.Client) {
	t.Helper()
	c := kafkatest.NewCluster(t, topics)
	return c, kafkatest.Client(t, c.ListenAddrs())
}

// configWith returns sink.DefaultConfig (topics forecasts and
// attributions) with edit applied.
func configWith(edit func(*sink.Config)) sink.Config {
	cfg := sink.DefaultConfig()
	edit(&cfg)
	return cfg
}

// newProducer returns a Kafka sink on a fresh cluster with the topics
// forecasts and attributions, and a client of that cluster; cfg starts from
// sink.DefaultConfig.
func newProducer(t testing.TB, cfg sink.Config, opts ...sink.Option) (*sink.Producer, sink.Config, *kfake.Cluster, *kafkaconn.Client) {
	t.Helper()
	c, kc := newCluster(t, "forecasts", "attributions")
	p, err := sink.New(cfg, kc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	return p, p.Config(), c, kc
}

func TestKafkaSuite(t *testing.T) {
	for _, format := range []wire.Format{wire.FormatJSON, wire.FormatArrow} {
		t.Run(string(format), func(t *testing.T) {
			sinktest.Run(t, func(t *testing.T) (sink.Sink, sinktest.Delivered) {
				p, cfg, _, kc := newProducer(t, configWith(func(cfg *sink.Config) { cfg.Format = format }))
				return p, func(tb testing.TB) []wire.Forecast { return sinktest.ReadKafka(tb, kc, cfg) }
			})
		})
	}
}

// TestKafkaSuiteRealBrokers runs the suite against the brokers in
// FREQLENS_TEST_BROKERS (comma-separated host:port), creating two fresh
// topics per case.
func TestKafkaSuiteRealBrokers(t *testing.T) {
	env := os.Getenv("FREQLENS_TEST_BROKERS")
	if env == "" {
		t.Skip("FREQLENS_TEST_BROKERS is not set: set it to host:port of a Kafka cluster to run the suite against it")
	}
	brokers := strings.Split(env, ",")
	n := 0
	sinktest.Run(t, func(t *testing.T) (sink.Sink, sinktest.Delivered) {
		n++
		prefix := fmt.Sprintf("freqlens-sinktest-%d-%d", time.Now().UnixNano(), n)
		cfg := configWith(func(cfg *sink.Config) {
			cfg.ForecastTopic, cfg.AttributionTopic = prefix+"-forecasts", prefix+"-attributions"
		})
		kc := kafkatest.Client(t, brokers)
		client := kc.Admin(30 * time.Second)
		resp, err := client.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
			{Topic: cfg.ForecastTopic, NumPartitions: 3, ReplicationFactor: -1},
			{Topic: cfg.AttributionTopic, NumPartitions: 3, ReplicationFactor: -1},
		}})
		if err != nil {
			t.Fatal(err)
		}
		for topic, err := range resp.Errors {
			if err != nil {
				t.Fatalf("create topic %s: %v", topic, err)
			}
		}
		t.Cleanup(func() {
			client.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{cfg.ForecastTopic, cfg.AttributionTopic}})
		})
		p, err := sink.New(cfg, kc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(context.Background()) })
		return p, func(tb testing.TB) []wire.Forecast { return sinktest.ReadKafka(tb, kc, cfg) }
	})
}
