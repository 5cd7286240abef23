package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/config"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/readings"
)

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	data := fs.String("data", "", "CSV to replay: a date column, then numeric columns")
	topic := fs.String("topic", "", "topic to produce the readings to (default with --config: its topics.input)")
	brokers := fs.String("brokers", "", "comma-separated brokers, host:port (overrides the kafka.brokers of --config)")
	cfgPath := fs.String("config", "", "serve configuration whose kafka.* keys (brokers, TLS, SASL, client id) and topics.input to use")
	speed := fs.String("speed", "max", "replay speed relative to the file's timestamps, e.g. 60x, or max for as fast as possible")
	seriesCol := fs.String("series-column", "", "column naming the series (its other columns are the reading's values); default: every column is its own series")
	format := fs.String("format", "json", "message format: json or csv")
	valueField := fs.String("value-field", "value", "value field name when every column is its own series")
	from := fs.Int("from", 0, "first data row to replay (0-based)")
	limit := fs.Int("limit", 0, "rows to replay; 0 for all")
	asJSON := fs.Bool("json", false, "print a JSON summary")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "data"); err != nil {
		return err
	}
	var kcfg kafkaconn.Config
	if *cfgPath != "" {
		f, err := config.Load(*cfgPath, os.LookupEnv)
		if err != nil {
			return err
		}
		kcfg = f.Kafka
		if *topic == "" {
			*topic = f.Stream.Topic
		}
	}
	if *brokers != "" {
		kcfg.Brokers = strings.Split(*brokers, ",")
	}
	if len(kcfg.Brokers) == 0 || *topic == "" {
		return fmt.Errorf("--brokers and --topic are required without --config (a serve configuration naming kafka.brokers and topics.input)")
	}
	kc, err := kafkaconn.New(kcfg)
	if err != nil {
		return err
	}
	defer kc.Close()
	factor, err := parseSpeed(*speed)
	if err != nil {
		return err
	}
	if *format != "json" && *format != "csv" {
		return fmt.Errorf("--format %q is unknown; use json or csv", *format)
	}
	frame, err := dataset.LoadCSV(*data)
	if err != nil {
		return err
	}
	rows := frame.Rows()
	if *from < 0 || *from >= rows {
		return fmt.Errorf("--from %d is outside the file's %d data rows", *from, rows)
	}
	end := rows
	if *limit > 0 {
		end = min(rows, *from+*limit)
	}

	// What one row becomes: one reading per column, or one multichannel
	// reading per row whose series is the series column.
	cfg := readings.Config{ValueFields: []string{*valueField}}
	sc := -1
	if *seriesCol != "" {
		sc = slices.Index(frame.Columns, *seriesCol)
		if sc < 0 {
			return fmt.Errorf("--series-column %q is not a column of %s (columns: %s)", *seriesCol, *data, strings.Join(frame.Columns, ", "))
		}
		cfg.ValueFields = slices.Delete(slices.Clone(frame.Columns), sc, sc+1)
	}
	cfg.CSVColumns = append([]string{"series", "ts"}, cfg.ValueFields...)

	w := kc.NewWriter(*topic)
	w.BatchTimeout, w.BatchSize = 2*time.Millisecond, 1000
	defer w.Close()

	var msgs []kafka.Message
	encode := func(r readings.Reading) []byte {
		if *format == "csv" {
			return readings.AppendCSV(nil, r, cfg)
		}
		return readings.AppendJSON(nil, r, cfg)
	}
	flush := func() error {
		if len(msgs) == 0 {
			return nil
		}
		err := w.WriteMessages(ctx, msgs...)
		msgs = msgs[:0]
		return err
	}
	start := time.Now()
	sent := 0
	for r := *from; r < end; r++ {
		if factor > 0 && r > *from {
			due := time.Duration(float64(frame.Times[r].Sub(frame.Times[*from])) / factor)
			if wait := time.Until(start.Add(due)); wait > 0 {
				if err := flush(); err != nil {
					return err
				}
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		row := frame.Row(r)
		if sc >= 0 {
			vals := slices.Delete(slices.Clone(row), sc, sc+1)
			id := strconv.FormatFloat(row[sc], 'f', -1, 64)
			if row[sc] == math.Trunc(row[sc]) {
				id = strconv.FormatInt(int64(row[sc]), 10)
			}
			rd := readings.Reading{Series: id, Time: frame.Times[r], Values: vals}
			msgs = append(msgs, kafka.Message{Key: []byte(id), Value: encode(rd)})
		} else {
			for c, name := range frame.Columns {
				rd := readings.Reading{Series: name, Time: frame.Times[r], Values: []float64{row[c]}}
				msgs = append(msgs, kafka.Message{Key: []byte(name), Value: encode(rd)})
			}
		}
		sent += max(1, len(frame.Columns)*btoi(sc < 0))
		if len(msgs) >= 5000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	if *asJSON {
		fmt.Fprintf(stdout, `{"readings":%d,"rows":%d,"seconds":%.3f,"readings_per_second":%.0f}`+"\n", sent, end-*from, secs, float64(sent)/secs)
		return nil
	}
	fmt.Fprintf(stdout, "replayed %d readings (%d rows of %s) to %s in %.1fs\n", sent, end-*from, *data, *topic, secs)
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseSpeed reads "60x" (or "60") as a factor and "max" as 0 (no waiting).
func parseSpeed(s string) (float64, error) {
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "x"), 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("--speed %q: write a factor like 60x, or max", s)
	}
	return v, nil
}
