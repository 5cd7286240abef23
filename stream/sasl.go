package stream

import (
	"context"

	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// mechanism returns the kafka-go SASL mechanism of s, or nil without one.
// SCRAM comes from franz-go (already required by kfake) because kafka-go's
// own SCRAM package needs a module this repository does not have.
func (s SASL) mechanism() sasl.Mechanism {
	auth := scram.Auth{User: s.Username, Pass: s.Password}
	switch s.Mechanism {
	case "plain":
		return plain.Mechanism{Username: s.Username, Password: s.Password}
	case "scram-sha-256":
		return franzMechanism{auth.AsSha256Mechanism()}
	case "scram-sha-512":
		return franzMechanism{auth.AsSha512Mechanism()}
	}
	return nil
}

// franzMechanism adapts a franz-go SASL mechanism to kafka-go's interface;
// both are the same challenge-response loop.
type franzMechanism struct{ m fsasl.Mechanism }

func (f franzMechanism) Name() string { return f.m.Name() }

func (f franzMechanism) Start(ctx context.Context) (sasl.StateMachine, []byte, error) {
	host := ""
	if md := sasl.MetadataFromContext(ctx); md != nil {
		host = md.Host
	}
	sess, first, err := f.m.Authenticate(ctx, host)
	if err != nil {
		return nil, nil, err
	}
	return franzSession{sess}, first, nil
}

type franzSession struct{ s fsasl.Session }

func (f franzSession) Next(_ context.Context, challenge []byte) (bool, []byte, error) {
	return f.s.Challenge(challenge)
}
