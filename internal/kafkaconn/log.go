package kafkaconn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// repeatEvery is how often a kafka-go logger above debug level writes at
// its level; the lines in between go to debug. kafka-go retries a broker
// that is down several times a second per reader and writer: the service's
// broker watch says it once, at error level, instead.
const repeatEvery = 30 * time.Second

// KafkaLogger adapts kafka-go's printf logging to the Client's logger at
// level, with attrs added to every record. It is the project's one such
// adapter. Above debug level it writes at most one line per 30s at level,
// the rest at debug. An idle long-poll fetch that outlived its read
// deadline ("i/o timeout": kafka-go reconnects and nothing is lost) is
// logged at debug level whatever level says. Nothing is formatted when the
// level is off.
func (c *Client) KafkaLogger(level slog.Level, attrs ...any) kafka.Logger {
	l := c.log
	var last atomic.Int64 // Unix ns of the last line at level
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
		if lv > slog.LevelDebug {
			now, prev := time.Now().UnixNano(), last.Load()
			if now-prev < int64(repeatEvery) || !last.CompareAndSwap(prev, now) {
				lv = slog.LevelDebug
			}
		}
		if l.Enabled(ctx, lv) {
			l.Log(ctx, lv, "kafka-go: "+msg, attrs...)
		}
	})
}
