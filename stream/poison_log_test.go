package stream

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/readings"
)

// TestPoisonWarningsSayHowManyWereQuiet: poison is logged at warning level
// once per poisonWarnEvery, and the next warning says how many messages,
// by reason, were refused in between, so that a feed refused whole (a
// misnamed value field) reads as such in a log at info level.
func TestPoisonWarningsSayHowManyWereQuiet(t *testing.T) {
	kc := newBroker(t, map[string]int{"in": 1, "dlq": 1})
	cfg := DefaultConfig()
	cfg.Group, cfg.Topic, cfg.DeadLetterTopic = "g", "in", "dlq"
	var logs bytes.Buffer
	c, err := NewConsumer(cfg, readings.DefaultConfig(), kc, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	b := c.newBatcher()
	defer b.release()
	missing := &readings.DecodeError{Reason: readings.ReasonMissingField, Err: errors.New(`no "temperature" field`)}
	late := &readings.DecodeError{Reason: readings.ReasonBadTimestamp, Err: errors.New("ts is not a time")}
	for i := range 10 {
		var err error = missing
		if i%4 == 3 {
			err = late
		}
		b.poisoned(kafka.Message{Topic: "in", Offset: int64(i)}, err)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d warnings for a burst of 10, want 1:\n%s", n, logs.String())
	}
	b.lastWarn = b.lastWarn.Add(-poisonWarnEvery) // the next poison is due a warning
	b.poisoned(kafka.Message{Topic: "in", Offset: 10}, missing)
	last := strings.TrimSpace(logs.String()[strings.LastIndex(strings.TrimSpace(logs.String()), "\n")+1:])
	if want := `also_refused_since_last_warning="missing_field 7, bad_timestamp 2"`; !strings.Contains(last, want) {
		t.Errorf("the second warning %q does not say %s", last, want)
	}
	b.lastWarn = b.lastWarn.Add(-poisonWarnEvery)
	b.poisoned(kafka.Message{Topic: "in", Offset: 11}, late)
	if strings.Count(logs.String(), "also_refused_since_last_warning") != 1 {
		t.Errorf("a warning after none in between reports quiet ones:\n%s", logs.String())
	}
}
