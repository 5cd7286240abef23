package sinktest

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/wire"
)

// ReadKafka reads the topics of cfg (the Kafka sink's configuration, as
// given to sink.New) from their beginning to their current end with
// kafka-go Readers, checks every message's key and headers, decodes it in
// cfg.Format and returns the forecasts merged with their attributions
// (matched by forecast-id), partition after partition in offset order. Any problem fails tb.
func ReadKafka(tb testing.TB, kc *kafkaconn.Client, cfg sink.Config) []wire.Forecast {
	tb.Helper()
	if cfg.Attributions == wire.AttributionsOff {
		cfg.AttributionTopic = ""
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(tb, 0)

	decode := func(kind string, data []byte) (wire.Forecast, error) {
		switch {
		case kind == "forecast" && cfg.Format == wire.FormatArrow:
			return wire.DecodeForecastArrow(data, mem)
		case kind == "forecast":
			return wire.DecodeForecastJSON(data)
		case cfg.Format == wire.FormatArrow:
			return wire.DecodeAttributionArrow(data, mem)
		default:
			return wire.DecodeAttributionJSON(data)
		}
	}
	read := func(topic, kind string) ([]wire.Forecast, []string) {
		var fs []wire.Forecast
		var ids []string
		for _, m := range kafkatest.ReadAll(tb, kc, topic) {
			f, err := decode(kind, m.Value)
			if err != nil {
				tb.Fatalf("topic %s partition %d offset %d: %v", topic, m.Partition, m.Offset, err)
			}
			id := checkHeaders(tb, m, f, cfg.Format)
			fs, ids = append(fs, f), append(ids, id)
		}
		return fs, ids
	}
	forecasts, ids := read(cfg.ForecastTopic, "forecast")
	if cfg.AttributionTopic == "" {
		return forecasts
	}
	attrs, aids := read(cfg.AttributionTopic, "attribution")
	byID := map[string][]wire.Forecast{}
	for i, a := range attrs {
		byID[aids[i]] = append(byID[aids[i]], a)
	}
	for i, f := range forecasts {
		as := byID[ids[i]]
		if len(as) == 0 {
			tb.Errorf("forecast %q@%s (forecast-id %s) has no attribution on topic %s",
				f.Series, f.TS.Format(time.RFC3339), ids[i], cfg.AttributionTopic)
			continue
		}
		merged, err := wire.Merge(f, as[0])
		if err != nil {
			tb.Fatal(err)
		}
		forecasts[i], byID[ids[i]] = merged, as[1:]
	}
	for id, as := range byID {
		if len(as) > 0 {
			tb.Errorf("%d attributions with forecast-id %s have no forecast", len(as), id)
		}
	}
	return forecasts
}

// checkHeaders checks the key and headers of m against its decoded forecast
// and returns its forecast-id.
func checkHeaders(tb testing.TB, m kafka.Message, f wire.Forecast, format wire.Format) string {
	tb.Helper()
	where := fmt.Sprintf("topic %s partition %d offset %d", m.Topic, m.Partition, m.Offset)
	if string(m.Key) != f.Series {
		tb.Errorf("%s: key %q, series %q", where, m.Key, f.Series)
	}
	h := map[string]string{}
	for _, kv := range m.Headers {
		if _, dup := h[kv.Key]; dup {
			tb.Errorf("%s: header %s appears twice", where, kv.Key)
		}
		h[kv.Key] = string(kv.Value)
	}
	if got, want := h[wire.HeaderForecastID], wire.ForecastID(f.Series, f.TS, f.ModelVersion); got != want {
		tb.Errorf("%s: header %s = %q, want %q", where, wire.HeaderForecastID, got, want)
	}
	if got, want := h[wire.HeaderModelVersion], strconv.FormatInt(f.ModelVersion, 10); got != want {
		tb.Errorf("%s: header %s = %q, want %q", where, wire.HeaderModelVersion, got, want)
	}
	if got, want := h[wire.HeaderContentType], format.ContentType(); got != want {
		tb.Errorf("%s: header %s = %q, want %q", where, wire.HeaderContentType, got, want)
	}
	return h[wire.HeaderForecastID]
}
