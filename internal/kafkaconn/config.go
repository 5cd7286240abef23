package kafkaconn

import (
	"fmt"
	"net"
	"time"

	"github.com/freqlens/freqlens/internal/defaults"
)

// Config says how to reach and authenticate to the brokers: the kafka.* keys
// of the service's YAML file. A zero field means its default (DefaultConfig)
// unless its comment says otherwise.
type Config struct {
	// Brokers is the seed list, "host:port" each (kafka.brokers). Required.
	Brokers []string
	// ClientID is sent to the brokers with every request, for their logs
	// and quotas (kafka.client_id).
	//
	// Default: freqlens
	ClientID string
	// DialTimeout bounds one connection to one broker, TLS and SASL
	// handshakes included (kafka.dial_timeout).
	//
	// Default: 10s
	DialTimeout time.Duration
	// ConnectTimeout bounds how long a starting service tries to reach the
	// brokers (Connect) before it gives up with an error that says what to
	// check (kafka.connect_timeout).
	//
	// Default: 30s
	ConnectTimeout time.Duration
	// UnreachableAfter is how long the brokers may be unreachable while the
	// service runs before it logs an error (once; recovery is logged too)
	// (kafka.unreachable_after).
	//
	// Default: 30s
	UnreachableAfter time.Duration
	// TLS turns on TLS with the system's root certificates (kafka.tls).
	//
	// Default: false (plaintext)
	TLS bool
	// TLSCAFile is a PEM file of the certificate authorities that sign the
	// brokers' certificates, instead of the system's roots
	// (kafka.tls_ca_file). Setting it turns TLS on.
	//
	// Default: "" (the system's roots)
	TLSCAFile string
	// SASL authenticates every connection (kafka.sasl.*).
	//
	// Default: none
	SASL SASL
}

// SASL holds SASL credentials. The zero value disables SASL.
type SASL struct {
	// Mechanism is "plain", "scram-sha-256" or "scram-sha-512"
	// (kafka.sasl.mechanism).
	Mechanism string
	// Username and Password are the credentials (kafka.sasl.username,
	// kafka.sasl.password). Username is required with a Mechanism.
	Username string
	Password string
}

// The SASL mechanisms.
const (
	MechanismPlain       = "plain"
	MechanismSCRAMSHA256 = "scram-sha-256"
	MechanismSCRAMSHA512 = "scram-sha-512"
)

// DefaultConfig returns the defaults of every field; Brokers is empty.
func DefaultConfig() Config {
	return Config{ClientID: "freqlens", DialTimeout: 10 * time.Second, ConnectTimeout: 30 * time.Second, UnreachableAfter: 30 * time.Second}
}

// withDefaults returns c with every zero field that has a default set to it.
func (c Config) withDefaults() Config {
	defaults.Fill(&c, DefaultConfig())
	return c
}

// Validate reports the first setting that cannot work, naming its YAML key
// and saying what to write instead.
func (c Config) Validate() error {
	c = c.withDefaults()
	if len(c.Brokers) == 0 {
		return fmt.Errorf(`kafka.brokers is empty; list at least one broker as "host:port"`)
	}
	for i, b := range c.Brokers {
		if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
			return fmt.Errorf("kafka.brokers[%d] = %q is not host:port; write it like %q", i, b, "127.0.0.1:9092")
		}
	}
	if c.DialTimeout < 0 {
		return fmt.Errorf("kafka.dial_timeout = %v is negative; use a duration such as 10s", c.DialTimeout)
	}
	if c.ConnectTimeout < 0 {
		return fmt.Errorf("kafka.connect_timeout = %v is negative; use a duration such as 30s", c.ConnectTimeout)
	}
	if c.UnreachableAfter < 0 {
		return fmt.Errorf("kafka.unreachable_after = %v is negative; use a duration such as 30s", c.UnreachableAfter)
	}
	return c.SASL.validate()
}

func (s SASL) validate() error {
	switch s.Mechanism {
	case "":
		if s.Username != "" || s.Password != "" {
			return fmt.Errorf(`kafka.sasl.mechanism is empty but kafka.sasl.username is set; set the mechanism to %q, %q or %q`,
				MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512)
		}
		return nil
	case MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512:
	default:
		return fmt.Errorf(`kafka.sasl.mechanism = %q is not supported; use %q, %q or %q`,
			s.Mechanism, MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512)
	}
	if s.Username == "" {
		return fmt.Errorf("kafka.sasl.username is empty with kafka.sasl.mechanism %q; set the user name", s.Mechanism)
	}
	return nil
}
