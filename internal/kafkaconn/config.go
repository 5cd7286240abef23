package kafkaconn

import (
	"fmt"
	"net"
	"time"
)

// Config says how to reach and authenticate to the brokers: the kafka.* keys
// of the service's YAML file, each naming its key, which Validate's errors
// name too. New takes it as given: no field is filled in, so start from
// DefaultConfig and change what you mean to. The defaults below are
// DefaultConfig's.
type Config struct {
	// Brokers is the seed list, "host:port" each (kafka.brokers). Required.
	Brokers []string
	// ClientID is sent to the brokers with every request, for their logs
	// and quotas (kafka.client_id); required.
	//
	// Default: freqlens
	ClientID string
	// DialTimeout bounds one connection to one broker, TLS and SASL
	// handshakes included (kafka.dial_timeout); positive.
	//
	// Default: 10s
	DialTimeout time.Duration
	// ConnectTimeout bounds how long a starting service tries to reach the
	// brokers (Connect) before it gives up with an error that says what to
	// check (kafka.connect_timeout); positive.
	//
	// Default: 30s
	ConnectTimeout time.Duration
	// UnreachableAfter is how long the brokers may be unreachable while the
	// service runs before it logs an error (once; recovery is logged too)
	// (kafka.unreachable_after); positive.
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

// DefaultConfig returns the defaults of every field, the Config to start
// from; Brokers is empty (the deployment's to name).
func DefaultConfig() Config {
	return Config{ClientID: "freqlens", DialTimeout: 10 * time.Second, ConnectTimeout: 30 * time.Second, UnreachableAfter: 30 * time.Second}
}

// Validate reports the first setting that cannot work, naming its YAML key
// and saying what to write instead. Every field is checked as it is: a zero
// is a value, not the default, and only an empty TLSCAFile (the system's
// roots) and SASL (none) mean something.
func (c Config) Validate() error {
	d := DefaultConfig()
	if len(c.Brokers) == 0 {
		return fmt.Errorf(`kafka.brokers is empty; list at least one broker as "host:port"`)
	}
	for i, b := range c.Brokers {
		if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
			return fmt.Errorf("kafka.brokers[%d] = %q is not host:port; write it like %q", i, b, "127.0.0.1:9092")
		}
	}
	switch {
	case c.ClientID == "":
		return fmt.Errorf("kafka.client_id is empty; name the client the brokers log and apply quotas to (default %q)", d.ClientID)
	case c.DialTimeout <= 0:
		return fmt.Errorf("kafka.dial_timeout = %v; use a positive duration (default %v)", c.DialTimeout, d.DialTimeout)
	case c.ConnectTimeout <= 0:
		return fmt.Errorf("kafka.connect_timeout = %v; use a positive duration (default %v)", c.ConnectTimeout, d.ConnectTimeout)
	case c.UnreachableAfter <= 0:
		return fmt.Errorf("kafka.unreachable_after = %v; use a positive duration (default %v)", c.UnreachableAfter, d.UnreachableAfter)
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
