package stream

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestStartBroker(t *testing.T) {
	b, err := StartBroker("127.0.0.1:0", map[string]int{"a": 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addrs := b.Addrs()
	if len(addrs) != 1 || !strings.HasPrefix(addrs[0], "127.0.0.1:") || strings.HasSuffix(addrs[0], ":0") {
		t.Fatalf("Addrs() = %q, want one 127.0.0.1 address with a real port", addrs)
	}
	if err := b.CreateTopics(map[string]int{"b": 2, "a": 3}); err != nil {
		t.Fatalf("CreateTopics with a new and an existing topic: %v", err)
	}
	conn, err := kafka.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions("a", "b")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, p := range parts {
		count[p.Topic]++
	}
	if count["a"] != 3 || count["b"] != 2 {
		t.Errorf("partitions = %v, want a:3 b:2", count)
	}

	// A second broker on the same address fails, saying why.
	if _, err := StartBroker(addrs[0], nil); err == nil || !strings.Contains(err.Error(), "listening on") {
		t.Errorf("second broker on %s: %v, want an address-in-use error", addrs[0], err)
	}
	b.Close()
	b.Close() // idempotent
}

func TestStartBrokerRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		addr   string
		topics map[string]int
		want   string
	}{
		{name: "no port", addr: "127.0.0.1", want: "host:port"},
		{name: "zero partitions", addr: "127.0.0.1:0", topics: map[string]int{"a": 0}, want: `topic "a" has 0 partitions`},
		{name: "empty topic name", addr: "127.0.0.1:0", topics: map[string]int{"": 1}, want: "topic name is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := StartBroker(tc.addr, tc.topics)
			if err == nil {
				b.Close()
				t.Fatal("StartBroker succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// selfSigned returns a server and a client TLS config for 127.0.0.1.
func selfSigned(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kfake"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool}
}

// TestConsumerTLSAndSASL runs the consumer and its dead-letter writer
// against a kfake cluster that requires TLS and/or SASL.
func TestConsumerTLSAndSASL(t *testing.T) {
	serverTLS, clientTLS := selfSigned(t)
	for _, tc := range []struct {
		name string
		tls  bool
		sasl SASL
		kfm  string // kfake's name of the mechanism
	}{
		{name: "plain", sasl: SASL{Mechanism: "plain", Username: "u", Password: "p"}, kfm: "PLAIN"},
		{name: "scram-sha-256", sasl: SASL{Mechanism: "scram-sha-256", Username: "u", Password: "p"}, kfm: "SCRAM-SHA-256"},
		{name: "scram-sha-512 over TLS", tls: true, sasl: SASL{Mechanism: "scram-sha-512", Username: "u", Password: "p"}, kfm: "SCRAM-SHA-512"},
		{name: "TLS", tls: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "dlq")}
			if tc.sasl.Mechanism != "" {
				opts = append(opts, kfake.EnableSASL(), kfake.Superuser(tc.kfm, tc.sasl.Username, tc.sasl.Password))
			}
			cfg := Config{Group: "g", Topic: "in", DeadLetterTopic: "dlq", SASL: tc.sasl, BatchLatency: time.Millisecond}
			if tc.tls {
				opts = append(opts, kfake.TLS(serverTLS))
				cfg.TLS = clientTLS
			}
			c, err := kfake.NewCluster(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cfg.Brokers = c.ListenAddrs()

			w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: "in", BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll,
				Transport: &kafka.Transport{TLS: cfg.TLS, SASL: cfg.SASL.mechanism()}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = w.WriteMessages(ctx,
				kafka.Message{Key: []byte("a"), Value: AppendJSON(nil, readingsFor(1, 1, 1)[0], cfg)},
				kafka.Message{Key: []byte("b"), Value: []byte("poison")})
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			r := start(t, cfg)
			rows, _ := r.collect(t, 2)
			if len(rows) != 1 {
				t.Errorf("%d rows, want 1", len(rows))
			}
			if got := testutil.ToFloat64(r.c.m.deadLetters); got != 1 {
				t.Errorf("dead letters = %v, want 1", got)
			}
		})
	}
}
