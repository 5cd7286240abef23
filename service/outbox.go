package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/internal/registry"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/pipeline"
)

// outboxSize bounds the drift events waiting for their topic: a drift event
// is rare (a handful a day), so a thousand is days of an outage.
const outboxSize = 1000

// outbox writes what the learner emits to Kafka in the background and
// retries what fails until it is written: the drift events, in order, and
// the newest promoted model version the learner could not publish itself
// (a newer one replaces it). A broker outage or a deleted topic delays
// them; while they fail the outbox says so (delivery, which /readyz
// reports), and an event that finds the outbox full is dropped with an
// ERROR and counted, never lost silently.
type outbox struct {
	log     *slog.Logger
	events  chan outboxEvent
	wake    chan struct{}
	dropped prometheus.Counter
	waiting prometheus.GaugeFunc

	mu       sync.Mutex
	holding  bool         // run holds an event taken from events, not written yet
	version  *model.Model // the newest version to publish again; nil when none
	publish  func(context.Context, *model.Model) error
	delivery pipeline.Delivery
}

// outboxEvent is one drift event to write.
type outboxEvent struct {
	what  string
	write func(context.Context) error
}

func newOutbox(log *slog.Logger, reg prometheus.Registerer) (*outbox, error) {
	o := &outbox{log: log, events: make(chan outboxEvent, outboxSize), wake: make(chan struct{}, 1)}
	o.dropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "freqlens_service_outbox_dropped_total",
		Help: "Drift events dropped because 1000 were already waiting for their topic (each is logged at ERROR).",
	})
	o.waiting = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "freqlens_service_outbox_waiting",
		Help: "Drift events and model versions waiting to be written to their topics (retried until they are).",
	}, func() float64 { return float64(o.pending()) })
	if err := registry.Register(reg, "service", o.dropped, o.waiting); err != nil {
		return nil, err
	}
	return o, nil
}

// event queues a drift event; what names it in logs ("drift event of
// rhythm 0 to topics.drift").
func (o *outbox) event(what string, write func(context.Context) error) {
	select {
	case o.events <- outboxEvent{what: what, write: write}:
	default:
		o.dropped.Inc()
		o.log.Error("drift event dropped: the outbox is full of events waiting for their topic", "event", what, "waiting", outboxSize)
	}
}

// publisher wraps publish, which writes a promoted version to topics.models:
// a version it cannot write is published again in the background until it
// is, or until a newer one is.
func (o *outbox) publisher(publish func(context.Context, *model.Model) error) func(context.Context, *model.Model) error {
	o.mu.Lock()
	o.publish = publish
	o.mu.Unlock()
	return func(ctx context.Context, m *model.Model) error {
		err := publish(ctx, m)
		o.mu.Lock()
		if err != nil {
			o.version = m
		} else if o.version != nil && o.version.Meta.Version <= m.Meta.Version {
			o.version = nil
		}
		o.mu.Unlock()
		if err != nil {
			select {
			case o.wake <- struct{}{}:
			default:
			}
		}
		return err
	}
}

// pending counts what waits.
func (o *outbox) pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(o.events)
	if o.holding {
		n++
	}
	if o.version != nil {
		n++
	}
	return n
}

// status returns whether the outbox's writes are failing.
func (o *outbox) status() pipeline.Delivery {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.delivery
}

// run writes until ctx ends.
func (o *outbox) run(ctx context.Context) {
	wait := 100 * time.Millisecond
	var ev *outboxEvent
	take := func(e outboxEvent) {
		o.mu.Lock()
		ev, o.holding = &e, true
		o.mu.Unlock()
	}
	for {
		if ev == nil {
			select {
			case e := <-o.events:
				take(e)
			default:
			}
		}
		o.mu.Lock()
		m, publish := o.version, o.publish
		o.mu.Unlock()
		if ev == nil && m == nil {
			select {
			case e := <-o.events:
				take(e)
				continue
			case <-o.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		what, err := "", error(nil)
		if ev != nil {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			what, err = ev.what, ev.write(wctx)
			cancel()
			if err == nil {
				o.mu.Lock()
				ev, o.holding = nil, false
				o.mu.Unlock()
			}
		} else {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			what, err = "model version to topics.models", publish(wctx, m)
			cancel()
			if err == nil {
				o.mu.Lock()
				if o.version == m {
					o.version = nil
				}
				o.mu.Unlock()
				o.log.Info("published a promoted version that had failed before", "version", m.Meta.Version)
			}
		}
		if ctx.Err() != nil {
			return
		}
		o.mu.Lock()
		if err == nil {
			o.delivery = pipeline.Delivery{}
			wait = 100 * time.Millisecond
			o.mu.Unlock()
			continue
		}
		if o.delivery.FailingSince.IsZero() {
			o.delivery.FailingSince = time.Now()
		}
		o.delivery.What, o.delivery.Err = what, err
		o.mu.Unlock()
		o.log.Debug("outbox write failed; retrying", "what", what, "err", err, "wait", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		wait = min(2*wait, 5*time.Second)
	}
}
