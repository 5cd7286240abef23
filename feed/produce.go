package feed

import (
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/readings"
)

// message returns r as a message of the input topic: keyed by its series,
// so that a series' readings land in one partition and keep their order,
// with r encoded in format (FormatJSON or FormatCSV) under cfg.
func message(r readings.Reading, format readings.Format, cfg readings.Config) kafka.Message {
	var v []byte
	if format == readings.FormatCSV {
		v = readings.AppendCSV(nil, r, cfg)
	} else {
		v = readings.AppendJSON(nil, r, cfg)
	}
	return kafka.Message{Key: []byte(r.Series), Value: v}
}

// writeError is the error of a write that failed while ctx was live; what
// names the messages (such as "rows 10–19").
func writeError(topic, what string, err error) error {
	return fmt.Errorf("feed: write %s to topic %s: %w; is the broker reachable and does the topic exist?", what, topic, err)
}
