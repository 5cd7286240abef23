package kafkaconn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/segmentio/kafka-go"
)

// KafkaLogger adapts kafka-go's printf logging to the Client's logger at
// level, with attrs added to every record. It is the project's one such
// adapter. An idle long-poll fetch that outlived its read deadline ("i/o
// timeout": kafka-go reconnects and nothing is lost) is logged at debug
// level whatever level says. Nothing is formatted when the level is off.
func (c *Client) KafkaLogger(level slog.Level, attrs ...any) kafka.Logger {
	l := c.log
	return kafka.LoggerFunc(func(format string, args ...any) {
		ctx := context.Background()
		if !l.Enabled(ctx, min(level, slog.LevelDebug)) {
			return
		}
		msg := fmt.Sprintf(format, args...)
		lv := level
		if strings.Contains(msg, "i/o timeout") {
			lv = slog.LevelDebug
		}
		if l.Enabled(ctx, lv) {
			l.Log(ctx, lv, "kafka-go: "+msg, attrs...)
		}
	})
}
