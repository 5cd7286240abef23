// Package kafkatest holds the Kafka helpers of the project's tests: an
// in-process kfake cluster, and producing and reading topics with the real
// kafka-go client built from a kafkaconn.Client, so that tests use the same
// connection code as the service.
package kafkatest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/freqlens/freqlens/internal/kafkaconn"
)

// NewCluster starts a one-broker kfake cluster with topics of three
// partitions each (plus opts) until the test ends.
func NewCluster(tb testing.TB, topics []string, opts ...kfake.Opt) *kfake.Cluster {
	tb.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, topics...)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Client returns a plaintext client of brokers (kafkaconn.DefaultConfig
// otherwise), closed when the test ends.
func Client(tb testing.TB, brokers []string) *kafkaconn.Client {
	tb.Helper()
	cfg := kafkaconn.DefaultConfig()
	cfg.Brokers = brokers
	c, err := kafkaconn.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Produce writes msgs to topic and waits for every acknowledgement; keyed
// messages go to partitions by hash. RequireAll matters: without acks
// kafka-go does not wait for one batch before sending the next, possibly
// on another connection, so a partition's messages could land out of
// order.
func Produce(tb testing.TB, c *kafkaconn.Client, topic string, msgs ...kafka.Message) {
	tb.Helper()
	w := c.NewWriter(topic)
	w.BatchTimeout = time.Millisecond
	w.BatchSize = 1000
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		tb.Fatalf("produce %d messages to %s: %v", len(msgs), topic, err)
	}
}

// ReadAll returns every message of every partition of topic, from the
// oldest to the partition's current end, partition after partition in
// offset order.
func ReadAll(tb testing.TB, c *kafkaconn.Client, topic string) []kafka.Message {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []kafka.Message
	for _, p := range partitions(ctx, tb, c, topic) {
		err := c.ReadPartition(ctx, topic, p.Partition, p.First, p.End, 64<<20, func(m kafka.Message) error {
			out = append(out, m)
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// ReadN waits until topic holds at least n messages and returns all of
// them (ReadAll's order), failing the test after timeout.
func ReadN(tb testing.TB, c *kafkaconn.Client, topic string, n int, timeout time.Duration) []kafka.Message {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msgs := ReadAll(tb, c, topic)
		if len(msgs) >= n {
			return msgs
		}
		if time.Now().After(deadline) {
			tb.Fatalf("topic %s holds %d messages after %v, want at least %d", topic, len(msgs), timeout, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Uncommitted returns how many messages of topic group has not committed:
// the sum over the partitions of the end offset minus the committed offset
// (the whole partition when the group committed nothing there, or does not
// exist yet). It fails the test when the broker cannot say.
func Uncommitted(tb testing.TB, c *kafkaconn.Client, group, topic string) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := UncommittedErr(ctx, c, group, topic)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// UncommittedErr is Uncommitted returning the error (an unreachable
// broker) instead of failing the test.
func UncommittedErr(ctx context.Context, c *kafkaconn.Client, group, topic string) (int64, error) {
	parts, err := c.Partitions(ctx, topic)
	if err != nil {
		return 0, err
	}
	ids := make([]int, len(parts))
	for i, p := range parts {
		ids[i] = p.Partition
	}
	resp, err := c.Admin(0).OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ids}})
	if err == nil {
		err = resp.Error
	}
	committed := map[int]int64{}
	if errors.Is(err, kafka.GroupIdNotFound) {
		// A group that has not joined yet (the in-process broker says so;
		// a real broker answers -1 offsets) has committed nothing.
		err, resp = nil, &kafka.OffsetFetchResponse{}
	}
	if err != nil {
		return 0, fmt.Errorf("committed offsets of group %s on %s: %w", group, topic, err)
	}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			return 0, fmt.Errorf("committed offset of group %s on %s partition %d: %w", group, topic, p.Partition, p.Error)
		}
		committed[p.Partition] = p.CommittedOffset
	}
	var n int64
	for _, p := range parts {
		from := p.First
		if off, ok := committed[p.Partition]; ok && off >= 0 {
			from = off
		}
		n += p.End - from
	}
	return n, nil
}

func partitions(ctx context.Context, tb testing.TB, c *kafkaconn.Client, topic string) []kafkaconn.PartitionRange {
	tb.Helper()
	parts, err := c.Partitions(ctx, topic)
	if err != nil {
		tb.Fatal(err)
	}
	return parts
}

// Header returns the value of m's header key, "" when absent.
func Header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// SelfSigned returns a server TLS config for 127.0.0.1 and the PEM file of
// its certificate, which a client trusts through kafka.tls_ca_file.
func SelfSigned(t testing.TB) (*tls.Config, string) {
	t.Helper()
	certFile, keyFile := SelfSignedFiles(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, certFile
}

// SelfSignedFiles writes a self-signed server certificate for 127.0.0.1
// and localhost, valid for an hour, and its private key as PEM files in a
// temporary directory, and returns their paths: for servers configured by
// files (the metrics listener's web configuration), and for clients that
// trust the certificate as its own authority.
func SelfSignedFiles(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "freqlens test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for _, f := range []struct {
		path string
		b    *pem.Block
	}{{certFile, &pem.Block{Type: "CERTIFICATE", Bytes: der}}, {keyFile, &pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(f.b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}
