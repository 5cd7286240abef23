package embedded

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/freqlens/freqlens/internal/kafkaconn"
)

// Broker is an in-process, single-node, Kafka-protocol broker
// (github.com/twmb/franz-go/pkg/kfake) for single-machine runs, the demo and
// tests. It keeps everything in memory: messages and committed offsets are
// gone when it closes. Production uses a real Kafka cluster through the
// same client code. Its methods are safe for concurrent use.
type Broker struct {
	c     *kfake.Cluster
	addrs []string
	stop  chan struct{} // closed by Close; ends the retention loop
	once  sync.Once
}

// Option configures Start.
type Option func(*options)

type options struct {
	retain      bool // RetainBytes was given
	retainBytes int64
}

// RetainBytes keeps at most n bytes of each partition, dropping its oldest
// record batches once a second, as a Kafka broker's retention.bytes does.
// Without it the broker keeps everything produced to it in memory, which a
// demo or a benchmark that produces forecasts for minutes grows by
// gigabytes (and a benchmark's collector then marks them beside the
// service it measures). Consumers that fall more than n bytes behind lose
// what was dropped, as with a real broker. n must be positive.
func RetainBytes(n int64) Option {
	return func(o *options) { o.retain, o.retainBytes = true, n }
}

// Start starts a broker listening on addr ("127.0.0.1:9092"; port 0
// picks a free port, see Addrs) and creates topics (name → partitions). It
// advertises the address it listens on, so clients must reach it by that
// address: listen on a concrete interface rather than ":9092" when they are
// not on this machine.
func Start(addr string, topics map[string]int, with ...Option) (*Broker, error) {
	var o options
	for _, opt := range with {
		opt(&o)
	}
	if o.retain && o.retainBytes < 1 {
		return nil, fmt.Errorf("embedded: RetainBytes(%d); keep a positive number of bytes per partition", o.retainBytes)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf(`embedded: broker address %q: %w; use "host:port", for example "127.0.0.1:9092"`, addr, err)
	}
	if err := checkTopics(topics); err != nil {
		return nil, err
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil {
				return nil, fmt.Errorf("is another broker or program listening on %s? %w", addr, err)
			}
			return ln, nil
		}),
		kfake.ClusterID("freqlens"),
	}
	if o.retain {
		// The broker writes a partition's batches into segments and frees a
		// segment only when all of it is past retention: segments of a
		// quarter of the bound keep what it holds within 1.25 times it
		// (kfake's default segment is 100 MiB).
		opts = append(opts, kfake.BrokerConfigs(map[string]string{
			"log.retention.bytes": strconv.FormatInt(o.retainBytes, 10),
			"log.segment.bytes":   strconv.FormatInt(max(o.retainBytes/4, 1), 10),
		}))
	}
	for _, name := range sortedTopics(topics) {
		opts = append(opts, kfake.SeedTopics(int32(topics[name]), name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("embedded: start the broker on %s: %w", addr, err)
	}
	b := &Broker{c: c, addrs: c.ListenAddrs(), stop: make(chan struct{})}
	if o.retain {
		go b.retain(time.Second)
	}
	return b, nil
}

// retain applies the retention every period until Close.
func (b *Broker) retain(period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.c.ApplyRetention()
		}
	}
}

// Addrs returns the broker's "host:port" addresses (one), the Brokers of a
// kafkaconn.Config.
func (b *Broker) Addrs() []string { return append([]string(nil), b.addrs...) }

// Close stops the broker and drops everything it holds. It is idempotent.
func (b *Broker) Close() {
	b.once.Do(func() { close(b.stop) })
	b.c.Close()
}

// CreateTopics creates topics (name → partitions). A topic that already
// exists is left as it is.
func (b *Broker) CreateTopics(topics map[string]int) error {
	if err := checkTopics(topics); err != nil {
		return err
	}
	req := &kafka.CreateTopicsRequest{}
	for _, name := range sortedTopics(topics) {
		req.Topics = append(req.Topics, kafka.TopicConfig{Topic: name, NumPartitions: topics[name], ReplicationFactor: 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kcfg := kafkaconn.DefaultConfig()
	kcfg.Brokers = b.addrs
	kc, err := kafkaconn.New(kcfg)
	if err != nil {
		return err
	}
	defer kc.Close()
	resp, err := kc.Admin(10*time.Second).CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("embedded: create topics: %w", err)
	}
	var errs []error
	for _, name := range sortedTopics(topics) {
		if err := resp.Errors[name]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("embedded: create topic %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func checkTopics(topics map[string]int) error {
	for _, name := range sortedTopics(topics) {
		if name == "" {
			return errors.New("embedded: a topic name is empty; name every topic")
		}
		if n := topics[name]; n < 1 {
			return fmt.Errorf("embedded: topic %q has %d partitions; give it at least 1", name, n)
		}
	}
	return nil
}

func sortedTopics(topics map[string]int) []string {
	return slices.Sorted(maps.Keys(topics))
}
