package kafkaconn

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
)

// partitionsTTL is how long a Writer's count of its topic's partitions is
// taken from the last answer. The shared Transport's own metadata cache
// already answers up to its MetadataTTL (6 s) late, so a partition added
// to a topic is seen at most this much later than it would be without.
const partitionsTTL = time.Second

// partitionsCache is the Transport of one Writer. kafka-go's
// Writer.WriteMessages asks the Transport for the topic's metadata once
// for every message, to count its partitions; the shared Transport answers
// from its cache but builds a new response each time (a filtered copy of
// the cluster's metadata and the request's objects: 0.24 of 6.9 s of CPU in
// the production throughput benchmark, where every forecast is two
// messages, with the benchmark's producer of readings). partitionsCache answers those
// requests from the last good answer for partitionsTTL and passes every
// other request to the shared Transport unchanged.
//
// The cached response is shared by the Writer's concurrent writes; kafka-go
// only reads it. Errors and answers that name the topic with an error or
// without partitions are not kept, so a missing topic is asked about again;
// a request whose context is done fails with its error, as the Transport
// fails it, so a cancelled write queues nothing.
type partitionsCache struct {
	rt  kafka.RoundTripper
	now func() time.Time

	mu   sync.Mutex
	last *metadataAPI.Response
	of   metadataAPI.Request // the request last answers: its one topic and auto-creation
	at   time.Time
}

func newPartitionsCache(rt kafka.RoundTripper) *partitionsCache {
	return &partitionsCache{rt: rt, now: time.Now}
}

// RoundTrip implements kafka.RoundTripper.
func (p *partitionsCache) RoundTrip(ctx context.Context, addr net.Addr, req kafka.Request) (kafka.Response, error) {
	mr, ok := req.(*metadataAPI.Request)
	if !ok || len(mr.TopicNames) != 1 {
		return p.rt.RoundTrip(ctx, addr, req)
	}
	topic := mr.TopicNames[0]
	now := p.now()
	p.mu.Lock()
	if p.last != nil && p.of.TopicNames[0] == topic && p.of.AllowAutoTopicCreation == mr.AllowAutoTopicCreation &&
		now.Sub(p.at) < partitionsTTL {
		r := p.last
		p.mu.Unlock()
		// As the Transport does: a request of a cancelled write fails, so
		// that kafka-go queues none of its messages.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return r, nil
	}
	p.mu.Unlock()
	r, err := p.rt.RoundTrip(ctx, addr, req)
	if err != nil {
		return r, err
	}
	if res, ok := r.(*metadataAPI.Response); ok && answers(res, topic) {
		p.mu.Lock()
		p.last, p.at = res, now
		p.of = metadataAPI.Request{TopicNames: []string{topic}, AllowAutoTopicCreation: mr.AllowAutoTopicCreation}
		p.mu.Unlock()
	}
	return r, nil
}

// answers reports whether res names topic without an error and with its
// partitions, the answer worth keeping.
func answers(res *metadataAPI.Response, topic string) bool {
	for _, t := range res.Topics {
		if t.Name == topic {
			return t.ErrorCode == 0 && len(t.Partitions) > 0
		}
	}
	return false
}
