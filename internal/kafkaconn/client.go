package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// Client holds the connection settings every kafka-go object of the
// project is built from: one Dialer (readers, connections) and one
// Transport (writers, admin requests), both with the same client id, TLS
// and SASL. It is safe for concurrent use.
type Client struct {
	cfg Config
	log *slog.Logger
	// waitSaidAfter is how long Connect waits for the brokers before it
	// logs that it waits.
	waitSaidAfter time.Duration
	tls           *tls.Config
	mechanism     sasl.Mechanism
	dialer        *kafka.Dialer
	transport     *kafka.Transport
}

// Option sets a collaborator of a Client.
type Option func(*Client)

// WithLogger logs kafka-go's errors through l at warning level and its
// chatter at debug level. Default: nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) {
		if l != nil {
			c.log = l
		}
	}
}

// WithTLSConfig connects with TLS configured by tc (for example a private
// root pool or client certificates), whatever Config.TLS says. Default:
// Config.TLS and Config.TLSCAFile decide.
func WithTLSConfig(tc *tls.Config) Option {
	return func(c *Client) {
		if tc != nil {
			c.tls = tc
		}
	}
}

// New validates cfg, taken as given (start from DefaultConfig), and returns
// a Client. It does not connect: the first request does (call Ping to check
// the brokers now).
func New(cfg Config, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, log: slog.New(slog.DiscardHandler), waitSaidAfter: 5 * time.Second}
	for _, o := range opts {
		o(c)
	}
	if c.tls == nil && (cfg.TLS || cfg.TLSCAFile != "") {
		c.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.TLSCAFile != "" {
			pem, err := os.ReadFile(cfg.TLSCAFile)
			if err != nil {
				return nil, fmt.Errorf("kafka.tls_ca_file: %w; give the path of a PEM file of the brokers' certificate authorities", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("kafka.tls_ca_file = %q holds no PEM certificate; give the brokers' CA certificates in PEM", cfg.TLSCAFile)
			}
			c.tls.RootCAs = pool
		}
	}
	var err error
	if c.mechanism, err = cfg.SASL.mechanism(); err != nil {
		return nil, err
	}
	c.dialer = &kafka.Dialer{
		ClientID:      cfg.ClientID,
		Timeout:       cfg.DialTimeout,
		DualStack:     true,
		TLS:           c.tls,
		SASLMechanism: c.mechanism,
	}
	c.transport = &kafka.Transport{
		ClientID:    cfg.ClientID,
		DialTimeout: cfg.DialTimeout,
		TLS:         c.tls,
		SASL:        c.mechanism,
	}
	return c, nil
}

// mechanism returns kafka-go's SASL mechanism for s, nil without one.
func (s SASL) mechanism() (sasl.Mechanism, error) {
	var algo scram.Algorithm
	switch s.Mechanism {
	case "":
		return nil, nil
	case MechanismPlain:
		return plain.Mechanism{Username: s.Username, Password: s.Password}, nil
	case MechanismSCRAMSHA256:
		algo = scram.SHA256
	case MechanismSCRAMSHA512:
		algo = scram.SHA512
	}
	m, err := scram.Mechanism(algo, s.Username, s.Password)
	if err != nil {
		return nil, fmt.Errorf("kafka.sasl: cannot set up %s for user %q: %w; check kafka.sasl.username and kafka.sasl.password", s.Mechanism, s.Username, err)
	}
	return m, nil
}

// Config returns the configuration in use, as given to New.
func (c *Client) Config() Config { return c.cfg }

// Brokers returns the seed brokers.
func (c *Client) Brokers() []string { return append([]string(nil), c.cfg.Brokers...) }

// Dialer returns the shared Dialer, from which NewPartitionReader,
// NewGroupReader, NewConsumerGroup and direct connections (ReadPartition)
// dial. Do not modify it.
func (c *Client) Dialer() *kafka.Dialer { return c.dialer }

// Transport returns the shared Transport: for kafka.Writer.Transport and
// kafka.Client.Transport. Do not modify it.
func (c *Client) Transport() *kafka.Transport { return c.transport }

// Logger returns the logger the Client was given (a discarding one
// without WithLogger).
func (c *Client) Logger() *slog.Logger { return c.log }

// NewWriter returns a kafka-go Writer of topic on the shared Transport:
// messages are hashed to partitions by key (kafka-go's Hash balancer,
// FNV-1a, so a series stays on one partition), acknowledged by all in-sync
// replicas, and kafka-go's errors are logged. Its Transport wraps the
// shared one to count the topic's partitions once a second rather than for
// every message (partitionsCache). The caller may set the
// batching fields (BatchSize, BatchBytes, BatchTimeout, WriteTimeout,
// MaxAttempts, Compression, Balancer) before the first write, and closes it.
func (c *Client) NewWriter(topic string) *kafka.Writer {
	return &kafka.Writer{
		Addr:         kafka.TCP(c.cfg.Brokers...),
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		Transport:    newPartitionsCache(c.transport),
		Logger:       c.KafkaLogger(slog.LevelDebug, "topic", topic),
		ErrorLogger:  c.KafkaLogger(slog.LevelWarn, "topic", topic),
	}
}

// Admin returns a kafka-go Client on the shared Transport for metadata,
// CreateTopics, ListOffsets (also offsets for a time: kafka.TimeOffsetOf),
// OffsetFetch and the like; each request is bounded by timeout (the dial
// timeout when 0).
func (c *Client) Admin(timeout time.Duration) *kafka.Client {
	if timeout <= 0 {
		timeout = c.cfg.DialTimeout
	}
	return &kafka.Client{Addr: kafka.TCP(c.cfg.Brokers...), Timeout: timeout, Transport: c.transport}
}

// Ping connects to the seed brokers in turn, through TLS and SASL, and asks
// the first that accepts for its API versions; it returns nil when one
// answered before ctx ends. Every call makes a new connection: the shared
// Transport answers metadata requests from its cache, which would hide a
// broker that went away. Its error says what is likely misconfigured.
func (c *Client) Ping(ctx context.Context) error {
	var errs []error
	for _, b := range c.cfg.Brokers {
		err := c.ping(ctx, b)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return c.explain(errors.Join(errs...))
}

// ping asks broker b for its API versions on a new connection.
func (c *Client) ping(ctx context.Context, b string) error {
	conn, err := c.dialer.DialContext(ctx, "tcp", b)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(c.cfg.DialTimeout))
	}
	_, err = conn.ApiVersions()
	return err
}

// Connect pings the brokers until one answers, or until
// Config.ConnectTimeout has passed or parent ends: then it returns the last
// error, explained (see Ping), naming kafka.connect_timeout, or wrapping
// parent's error when parent ended it (a shutdown while waiting). A failed
// SASL authentication is returned at once: retrying cannot fix it.
func (c *Client) Connect(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, c.cfg.ConnectTimeout)
	defer cancel()
	var last error
	began, said := time.Now(), false
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		pctx, pcancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
		err := c.Ping(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		var kerr kafka.Error
		if errors.As(err, &kerr) && kerr == kafka.SASLAuthenticationFailed {
			return err
		}
		if !said && ctx.Err() == nil && time.Since(began) >= c.waitSaidAfter {
			// Said once, so that a service waiting for its brokers is not
			// silent for kafka.connect_timeout; a start that fails sooner
			// says only its error.
			c.log.Warn("waiting for the Kafka brokers", "brokers", c.cfg.Brokers, "error", err,
				"waited", time.Since(began).Round(time.Millisecond), "gives_up_after", c.cfg.ConnectTimeout)
			said = true
		}
		select {
		case <-ctx.Done():
			if err := parent.Err(); err != nil {
				return fmt.Errorf("stopped while waiting for the Kafka brokers (%w): %w", err, last)
			}
			return fmt.Errorf("%w (gave up after kafka.connect_timeout = %v)", last, c.cfg.ConnectTimeout)
		case <-time.After(wait):
		}
	}
}

// explain adds the likely misconfiguration to a connection error.
func (c *Client) explain(err error) error {
	hint := "are kafka.brokers right and reachable?"
	var kerr kafka.Error
	closed := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	switch {
	case errors.As(err, &kerr) && (kerr == kafka.SASLAuthenticationFailed || kerr == kafka.UnsupportedSASLMechanism ||
		kerr == kafka.IllegalSASLState):
		hint = "check kafka.sasl.mechanism, kafka.sasl.username and kafka.sasl.password"
	case closed && c.mechanism != nil:
		hint = "the broker closed the connection: are kafka.sasl.mechanism, kafka.sasl.username and kafka.sasl.password right, " +
			"and does the listener need TLS (kafka.tls)?"
	case closed && c.tls == nil:
		hint = "the broker closed the connection: does its listener need TLS (kafka.tls) or SASL (kafka.sasl)?"
	case c.tls != nil:
		hint += " Is kafka.tls enabled for a plaintext listener, or does the broker's certificate not match kafka.tls_ca_file?"
	}
	return fmt.Errorf("kafka: no broker of %v answered: %w; %s", c.cfg.Brokers, err, hint)
}

// Close closes the shared Transport's idle connections. Close the readers
// and writers built from the Client first.
func (c *Client) Close() { c.transport.CloseIdleConnections() }
