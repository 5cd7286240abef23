package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/feed"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/readings"
)

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	data := fs.String("data", "", "CSV to replay: a date column, then numeric columns")
	topic := fs.String("topic", "", "topic to produce the readings to (default with --config: its topics.input)")
	brokers := fs.String("brokers", "", "comma-separated brokers, host:port (overrides the kafka.brokers of --config)")
	cfgPath := fs.String("config", "", "serve configuration whose kafka.* keys (brokers, TLS, SASL, client id), topics.input and input.* fields and format to write the readings with")
	speed := fs.String("speed", "max", "replay speed relative to the file's timestamps, e.g. 60x, or max for as fast as possible")
	seriesCol := fs.String("series-column", "", "column naming the series of each row, as text (s-17); the date is the first other column and the rest are the reading's values; default: every column is its own series")
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
	kcfg := kafkaconn.DefaultConfig()
	var fields *readings.Config
	if *cfgPath != "" {
		f, err := loadConfig(*cfgPath)
		if err != nil {
			return err
		}
		kcfg, fields = f.Kafka, &f.Readings
		if *topic == "" {
			*topic = f.Stream.Topic
		}
		if !flagSet(fs, "format") {
			*format = string(f.Readings.Format)
			if fm := f.Readings.Format; fm != readings.FormatJSON && fm != readings.FormatCSV {
				return fmt.Errorf("the configuration's input.format is %s, which replay cannot write (it writes json or csv readings), and a service reading %[1]s refuses them; "+
					"replay to a topic of json or csv readings (--format, --topic)", fm)
			}
		}
		if flagSet(fs, "value-field") {
			return fmt.Errorf("--value-field names the value, and so does input.value_fields of --config; drop one")
		}
	}
	if *brokers != "" {
		kcfg.Brokers = strings.Split(*brokers, ",")
	}
	if len(kcfg.Brokers) == 0 || *topic == "" {
		return fmt.Errorf("--brokers and --topic are required without --config (a serve configuration naming kafka.brokers and topics.input)")
	}
	factor, err := parseSpeed(*speed)
	if err != nil {
		return err
	}
	load := dataset.LoadCSVRows // the readings as the file writes them, none filled
	if *seriesCol != "" {
		// Series ids are text, kept as written ("s-17").
		load = func(path string) (*dataset.Frame, error) { return dataset.LoadCSVSeries(path, *seriesCol) }
	}
	frame, err := load(*data)
	if err != nil {
		if name, value := history.TextColumn(*data); *seriesCol == "" && name != "" {
			return fmt.Errorf("%w\n  column %q holds text (%q): if it names each row's series, pass --series-column %s", err, name, value, name)
		}
		return err
	}
	kc, err := kafkaconn.New(kcfg)
	if err != nil {
		return err
	}
	defer kc.Close()
	rc := feed.DefaultReplayConfig()
	rc.Speed, rc.From, rc.Limit, rc.SeriesColumn, rc.ValueField, rc.Format = factor, *from, *limit, *seriesCol, *valueField, readings.Format(*format)
	rc.Fields = fields
	if factor > 0 {
		// A paced replay runs for as long as its rows span, divided by the
		// speed: say how far it is, at most every half minute (after a write).
		last := time.Now()
		rc.Progress = func(rows, total int, upTo time.Time) {
			if now := time.Now(); now.Sub(last) >= 30*time.Second {
				last = now
				fmt.Fprintf(stderr, "freqlens replay: %d of %d rows (%.0f%%), up to %s\n", rows, total, 100*float64(rows)/float64(max(total, 1)), dateTime(upTo))
			}
		}
	}
	r, err := feed.NewReplay(rc, kc, *topic, frame)
	if err != nil {
		return err
	}
	st, err := r.Run(ctx)
	if err != nil {
		return err
	}
	secs := st.Elapsed.Seconds()
	if *asJSON {
		fmt.Fprintf(stdout, `{"readings":%d,"rows":%d,"seconds":%.3f,"readings_per_second":%.0f}`+"\n", st.Readings, st.Rows, secs, float64(st.Readings)/secs)
		return nil
	}
	fmt.Fprintf(stdout, "replayed %d readings (%d rows of %s) to %s in %.1fs\n", st.Readings, st.Rows, *data, *topic, secs)
	return nil
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
