package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history/historytest"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/training"
	"github.com/freqlens/freqlens/wire"
)

// tensorBytes returns the tensor data of a safetensors model file: what
// follows the header, whose metadata names the source file.
func tensorBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b[:8])
	return b[8+n:]
}

// TestTrainFromEveryFormat: the same readings as a wide CSV, as long CSV,
// as an Arrow IPC file and as Parquet train the same model, bit for bit,
// with the same seed, in both modes: long-format history of one series
// covering every step is the wide file's standard split.
func TestTrainFromEveryFormat(t *testing.T) {
	dir := t.TempDir()
	wide := writeSynthetic(t, dir, "sensors.csv", 2, 700)
	frame, err := dataset.LoadCSV(wide)
	if err != nil {
		t.Fatal(err)
	}
	layout := historytest.Layout{Series: "plant", Time: "at", Values: frame.Columns}
	rows := make([]historytest.Row, frame.Rows())
	for r := range rows {
		rows[r] = historytest.Row{Series: "north", Ms: frame.Times[r].UnixMilli(), Values: frame.Row(r)}
	}
	config := filepath.Join(dir, "serve.yaml")
	yaml := "input: {series_field: plant, time_field: at, value_fields: [" + strings.Join(frame.Columns, ", ") + "]}\n"
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"wide CSV": wide}
	for name, write := range map[string]func(testing.TB, string, historytest.Layout, []historytest.Row){
		"long.csv": historytest.WriteCSV, "long.arrow": historytest.WriteArrowFile, "long.parquet": historytest.WriteParquet,
	} {
		files[name] = filepath.Join(dir, name)
		write(t, files[name], layout, rows)
	}
	for _, mode := range []string{"mixed", "independent"} {
		var want []byte
		for _, name := range []string{"wide CSV", "long.csv", "long.arrow", "long.parquet"} {
			out := filepath.Join(dir, mode+"-"+name+".safetensors")
			code, stdout, stderr := runCLI("train", "--data", files[name], "--config", config, "--mode", mode,
				"--lookback", "48", "--horizon", "24", "--epochs", "2", "--seed", "3", "--out", out, "--json")
			if code != 0 {
				t.Fatalf("%s, %s: exit %d\n%s\n%s", mode, name, code, stdout, stderr)
			}
			got := tensorBytes(t, out)
			if want == nil {
				want = got
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: the model trained on %s differs from the one trained on the wide CSV", mode, name)
			}
		}
	}
	checkReadsAsTrained(t, filepath.Join(dir, "independent-long.parquet.safetensors"), filepath.Join(dir, "independent-wide CSV.safetensors"),
		files["long.csv"], frame.Times[600].UTC().Format(time.RFC3339))
}

// checkReadsAsTrained: the model trained on long-format data with --config
// (fields named plant and at) keeps those settings, so eval, predict,
// inspect --data and report read a file of the same layout without
// --config, and say so; the one trained on a wide file keeps none.
func checkReadsAsTrained(t *testing.T, longModel, wideModel, long, at string) {
	t.Helper()
	const note = "with the settings the model was trained with: input.series_field: plant, input.time_field: at"
	for _, args := range [][]string{
		{"eval", "--model", longModel, "--data", long},
		{"inspect", "--model", longModel, "--data", long},
		{"predict", "--model", longModel, "--data", long, "--series", "north", "--at", at},
		{"report", "--model", longModel, "--data", long, "--series", "north", "--out", t.TempDir()},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != 0 || !strings.Contains(stderr, note) {
			t.Errorf("%s without --config: exit %d, stderr lacks %q\n%s\n%s", args[0], code, note, stdout, stderr)
		}
	}
	code, stdout, stderr := runCLI("inspect", "--model", longModel, "--json")
	var rep struct {
		Input map[string]string `json:"input"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil || rep.Input["input.series_field"] != "plant" || rep.Input["input.value_fields"] == "" {
		t.Errorf("inspect --json: exit %d, input %v (%v)\n%s", code, rep.Input, err, stderr)
	}
	if code, stdout, _ = runCLI("inspect", "--model", wideModel, "--json"); code != 0 || strings.Contains(stdout, `"input"`) {
		t.Errorf("a model trained on a wide CSV records input settings: %s", stdout)
	}
}

// TestTrainFromTopicThenServe is the path from a topic to forecasts: two
// weeks of hourly readings of 100 simulated road sensors (1% of them
// missing) wait in the input topic; `train --from-topic` learns a model
// from them through the serve configuration, finds the daily cycle, and
// `serve` with that model forecasts every series.
func TestTrainFromTopicThenServe(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 100,000 readings and a training; TestServeBootstraps reads a topic too")
	}
	const series, steps = 100, 14 * 24
	b, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 3, "forecasts": 3, "readings.dlq": 1, "drift": 1, "models": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	kc := kafkatest.Client(t, b.Addrs())
	msgs := produceTraffic(t, kc, series, steps)

	dir := t.TempDir()
	modelPath := filepath.Join(dir, "model.safetensors")
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("model: {path: %q}\nkafka: {brokers: [%q]}\ninput: {cadence: 1h, max_future: 100000h}\n"+
		"window: {stride: 24}\ntopics: {attributions: \"\"}\n", modelPath, b.Addrs()[0])), 0o644)
	code, stdout, stderr := runCLI("train", "--from-topic", "--config", cfg, "--lookback", "48", "--horizon", "24",
		"--epochs", "3", "--out", modelPath, "--json")
	if code != 0 {
		t.Fatalf("train --from-topic: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rep trainReport
	lastJSON(t, stdout, &rep)
	if rep.Mode != "independent" || rep.Data != "topic readings" || rep.Protocol != "time" || rep.TrainWindows < series*100 {
		t.Errorf("train report %+v; want an independent model of topic readings split by time over every series", rep)
	}
	if !slices.ContainsFunc(rep.Rhythms, func(r rhythmReport) bool { return r.Period == "24.0h" }) {
		t.Errorf("no 24h cycle among %+v", rep.Rhythms)
	}
	if want := fmt.Sprintf("%d messages, %d readings", msgs, msgs); !strings.Contains(stderr, want) || !strings.Contains(stderr, fmt.Sprintf("%d series", series)) {
		t.Errorf("train did not say what it read (%q, %d series):\n%s", want, series, stderr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveErr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg, "--metrics-addr", ""}, &bytes.Buffer{}, &serveErr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d; stderr:\n%s", code, serveErr.String())
		}
	}()
	waitForEverySeries(t, kc, series, 90*time.Second, serveErr.String)
}

// waitForEverySeries waits until the forecasts topic holds a forecast of
// series distinct series, failing the test with logs() after timeout.
func waitForEverySeries(t *testing.T, kc *kafkaconn.Client, series int, timeout time.Duration, logs func() string) {
	t.Helper()
	seen := map[string]bool{}
	for deadline := time.Now().Add(timeout); len(seen) < series; {
		if time.Now().After(deadline) {
			t.Fatalf("forecasts for %d of %d series after %v:\n%s", len(seen), series, timeout, logs())
		}
		time.Sleep(500 * time.Millisecond)
		for _, m := range kafkatest.ReadAll(t, kc, "forecasts") {
			f, err := wire.DecodeForecastJSON(m.Value)
			if err != nil {
				t.Fatal(err)
			}
			seen[f.Series] = true
		}
	}
}

// produceTraffic writes steps hourly readings of series simulated road
// sensors (dataset.Traffic; 1% of the readings missing) to the topic
// readings as JSON, and returns how many it wrote.
func produceTraffic(tb testing.TB, kc *kafkaconn.Client, series, steps int) int {
	tb.Helper()
	frame, err := dataset.Synthetic(dataset.Traffic(series, steps, time.Hour, 9))
	if err != nil {
		tb.Fatal(err)
	}
	return produceRows(tb, kc, frame, 0, steps)
}

// produceRows writes rows [from, to) of frame to the topic readings, one
// JSON reading per column (the column's name is the series), leaving out
// the missing (NaN) ones as a sensor that sent nothing would, and returns
// how many it wrote.
func produceRows(tb testing.TB, kc *kafkaconn.Client, frame *dataset.Frame, from, to int) int {
	tb.Helper()
	msgs := make([]kafka.Message, 0, (to-from)*frame.Channels())
	for r := from; r < to; r++ {
		for c, name := range frame.Columns {
			v := frame.Values[r*frame.Channels()+c]
			if math.IsNaN(v) {
				continue
			}
			msgs = append(msgs, kafka.Message{Key: []byte(name), Value: readings.AppendJSON(nil,
				readings.Reading{Series: name, Time: frame.Times[r], Values: []float64{v}}, readings.DefaultConfig())})
		}
	}
	kafkatest.Produce(tb, kc, "readings", msgs...)
	return len(msgs)
}

// BenchmarkTrainFromTopic measures the README's path from a topic to a
// model: 1,000 simulated road sensors × 30 days of hourly readings in the
// input topic, `train --from-topic` with the defaults (L = 96, H = 24,
// --max-windows 100000, early stopping). It reports the seconds to read the
// topic and to train, and the test MSE.
//
//	go test -run '^$' -bench TrainFromTopic -benchtime 1x -timeout 0 ./cmd/freqlens/
func BenchmarkTrainFromTopic(b *testing.B) {
	const series, steps = 1000, 30 * 24
	br, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 6})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	kc := kafkatest.Client(b, br.Addrs())
	msgs := produceTraffic(b, kc, series, steps)
	dir := b.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("kafka: {brokers: [%q]}\ninput: {cadence: 1h, max_future: 100000h}\n", br.Addrs()[0])), 0o644)
	for b.Loop() {
		start := time.Now()
		code, stdout, stderr := runCLI("train", "--from-topic", "--config", cfg, "--horizon", "24",
			"--out", filepath.Join(dir, "m.safetensors"), "--json")
		if code != 0 {
			b.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		var rep trainReport
		lastJSON(b, stdout, &rep)
		read := regexp.MustCompile(`read topic readings in ([0-9.]+m?s)`).FindStringSubmatch(stderr)
		readTime, _ := time.ParseDuration(read[1])
		b.ReportMetric(time.Since(start).Seconds(), "s/total")
		b.ReportMetric(readTime.Seconds(), "s/read")
		b.ReportMetric(rep.TrainSeconds, "s/train")
		b.ReportMetric(float64(rep.EpochsRun), "epochs")
		b.ReportMetric(rep.TestMSE, "test_mse")
		b.ReportMetric(float64(msgs), "messages")
		b.Logf("%s", stderr)
	}
}

// TestServeBootstraps: two replicas start together with model.bootstrap and
// no model file while the topic holds two days of history. Both wait,
// /readyz 503 saying why and the history gauge at two days; once six days
// are there exactly one trains the first model, the other takes it from the
// models topic, both write it to their model.path and forecast.
func TestServeBootstraps(t *testing.T) {
	const series = 40
	b, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 3, "forecasts": 3, "readings.dlq": 1, "drift": 1, "models": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	kc := kafkatest.Client(t, b.Addrs())
	frame, err := dataset.Synthetic(dataset.Traffic(series, 6*24, time.Hour, 3))
	if err != nil {
		t.Fatal(err)
	}
	produceRows(t, kc, frame, 0, 2*24)

	ctx, cancel := context.WithCancel(context.Background())
	var replicas []*bootstrapReplica
	for range 2 {
		replicas = append(replicas, startBootstrapReplica(ctx, t, b.Addrs()[0]))
	}
	defer func() {
		cancel()
		for _, r := range replicas {
			if code := <-r.done; code != 0 {
				t.Errorf("serve exited %d:\n%s", code, r.stderr.String())
			}
		}
	}()
	// Both wait for history, and say so.
	for _, r := range replicas {
		r.waitForHistory(t)
	}
	waitForOneTrainer(t, replicas)
	var hist float64
	for deadline := time.Now().Add(30 * time.Second); hist == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, r := range replicas {
			hist = max(hist, scrape(t, "http://"+r.metrics+"/metrics", "freqlens_bootstrap_history_seconds"))
		}
	}
	if hist != 2*24*3600 {
		t.Errorf("freqlens_bootstrap_history_seconds = %v, want two days", hist)
	}

	produceRows(t, kc, frame, 2*24, 6*24)
	waitForEverySeries(t, kc, series, 120*time.Second, func() string { return replicas[0].stderr.String() + "\n" + replicas[1].stderr.String() })
	// Every series is forecast once one replica serves; the other may still
	// be polling the models topic (every 2 s): wait until both are ready.
	for _, r := range replicas {
		r.waitUntilReady(t)
	}
	trained := 0
	for _, r := range replicas {
		log := r.stderr.String()
		if strings.Contains(log, "bootstrap: first model trained") {
			trained++
		} else if !strings.Contains(log, "the first model came from the models topic") {
			t.Errorf("a replica neither trained nor took the model from the models topic:\n%s", log)
		}
		if _, err := os.Stat(r.model); err != nil {
			t.Errorf("model.path after the bootstrap: %v", err)
		}
	}
	if trained != 1 {
		t.Errorf("%d replicas trained the first model, want exactly one", trained)
	}
}

// bootstrapReplica is a replica of TestServeBootstraps: where it writes
// its model, its metrics address, its log, and its exit code once done.
type bootstrapReplica struct {
	model, metrics string
	stderr         *lockedBuffer
	done           chan int
}

// startBootstrapReplica starts serve with model.bootstrap and no model
// file, on the broker at broker, until ctx is done.
func startBootstrapReplica(ctx context.Context, t *testing.T, broker string) *bootstrapReplica {
	dir := t.TempDir()
	r := &bootstrapReplica{model: filepath.Join(dir, "model.safetensors"), metrics: kafkatest.FreeAddr(t), stderr: &lockedBuffer{}, done: make(chan int, 1)}
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("model: {path: %q, bootstrap: {min_history: 3d, horizon: 12, lookback: 24, epochs: 2, check_every: 1s}}\n"+
		"kafka: {brokers: [%q]}\ninput: {cadence: 1h, max_future: 100000h}\ntopics: {attributions: \"\", models: models}\n", r.model, broker)), 0o644)
	go func() {
		r.done <- run(ctx, []string{"serve", "--config", cfg, "--metrics-addr", r.metrics}, &bytes.Buffer{}, r.stderr)
	}()
	return r
}

// waitForHistory waits up to 30 s for r's /readyz to say it waits for
// history, answering 503 meanwhile, and checks it is bootstrapping.
func (r *bootstrapReplica) waitForHistory(t *testing.T) {
	t.Helper()
	var body struct {
		Ready         bool
		Bootstrapping bool
		Reason        string
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(body.Reason, "min_history"); {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never said the replica waits for history: %+v\n%s", body, r.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
		if resp, err := http.Get("http://" + r.metrics + "/readyz"); err == nil {
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("/readyz answered %s while bootstrapping, want 503", resp.Status)
			}
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
		}
	}
	if body.Ready || !body.Bootstrapping {
		t.Errorf("/readyz %+v while bootstrapping", body)
	}
}

// waitForOneTrainer waits up to 30 s for the replicas to settle on one
// trainer: one is elected to train, the other waits for its model. It
// waits until the election has settled before the history is complete.
func waitForOneTrainer(t *testing.T, replicas []*bootstrapReplica) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		reasons := ""
		for _, r := range replicas {
			if resp, err := http.Get("http://" + r.metrics + "/readyz"); err == nil {
				var body struct{ Reason string }
				json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				reasons += body.Reason + "\n"
			}
		}
		if strings.Count(reasons, "another replica trains") == 1 && strings.Count(reasons, "waiting: topic readings holds") == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replicas never settled on one trainer:\n%s", reasons)
		}
	}
}

// waitUntilReady waits up to 30 s for r's /readyz to answer 200.
func (r *bootstrapReplica) waitUntilReady(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get("http://" + r.metrics + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("a replica is not ready 30 s after the first model:\n%s", r.stderr.String())
		}
	}
}

// scrape returns the value of an unlabelled metric on a /metrics page, or
// 0 when it is absent.
func scrape(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			x, _ := strconv.ParseFloat(v, 64)
			return x
		}
	}
	return 0
}

// TestTrainSettings: --top-k, --dropout, --learning-rate, --patience,
// --weight-decay, --input-noise and --fill-harmonics reach the model and its training (the file keeps K and the settings, the
// report shows them), leaving them out trains with the model package's
// defaults, and a value that cannot work is refused before any training.
func TestTrainSettings(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir, "sensors.csv", 2, 700)
	train := func(extra ...string) trainReport {
		t.Helper()
		out := filepath.Join(dir, fmt.Sprintf("m%d.safetensors", len(extra)))
		args := append([]string{"train", "--data", data, "--lookback", "48", "--horizon", "12", "--epochs", "1", "--out", out, "--json"}, extra...)
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", extra, code, stdout, stderr)
		}
		var rep trainReport
		lastJSON(t, stdout, &rep)
		m, err := modelfile.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		if m.Config().TopK != rep.TopK || m.Meta.Training["dropout"] != rep.Dropout ||
			m.Meta.Training["learning_rate"] != rep.LearningRate || int(m.Meta.Training["patience"]) != rep.Patience ||
			int(m.Meta.Training["fill_harmonics"]) != rep.FillHarmonics ||
			m.Meta.Training["weight_decay"] != rep.WeightDecay || m.Meta.Training["input_noise"] != rep.InputNoise ||
			m.Config().ChannelMix != rep.ChannelMix {
			t.Errorf("%v: the report says K %d, dropout %g, rate %g, patience %d, fill harmonics %d; the file %d and %v",
				extra, rep.TopK, rep.Dropout, rep.LearningRate, rep.Patience, rep.FillHarmonics, m.Config().TopK, m.Meta.Training)
		}
		return rep
	}
	if rep := train(); rep.TopK != model.DefaultTopK || rep.Dropout != training.DefaultDropout || rep.LearningRate != training.DefaultLearningRate || rep.Patience != training.DefaultPatience {
		t.Errorf("defaults: K %d, dropout %g, rate %g, patience %d; want the model package's %d, %g, %g, %d",
			rep.TopK, rep.Dropout, rep.LearningRate, rep.Patience, model.DefaultTopK, training.DefaultDropout, training.DefaultLearningRate, training.DefaultPatience)
	}
	if rep := train("--top-k", "5", "--dropout", "0.25", "--learning-rate", "0.002", "--patience", "3"); rep.TopK != 5 || rep.Dropout != 0.25 || rep.LearningRate != 0.002 || rep.Patience != 3 {
		t.Errorf("set: K %d, dropout %g, rate %g, patience %d; want 5, 0.25, 0.002, 3", rep.TopK, rep.Dropout, rep.LearningRate, rep.Patience)
	}
	if rep := train("--dropout", "0"); rep.Dropout != 0 || rep.FillHarmonics != 0 || rep.WeightDecay != 0 || rep.InputNoise != 0 || rep.ChannelMix {
		t.Errorf("--dropout 0 trained with dropout %g, fill harmonics %d, weight decay %g, input noise %g, channel mix %v; want all off",
			rep.Dropout, rep.FillHarmonics, rep.WeightDecay, rep.InputNoise, rep.ChannelMix)
	}
	if rep := train("--channel-mix"); !rep.ChannelMix {
		t.Error("--channel-mix trained a model without the mix")
	}
	if rep := train("--weight-decay", "0.05", "--input-noise", "0.2"); rep.WeightDecay != 0.05 || rep.InputNoise != 0.2 {
		t.Errorf("--weight-decay 0.05 --input-noise 0.2 trained with %g and %g", rep.WeightDecay, rep.InputNoise)
	}
	if rep := train("--fill-harmonics", "6"); rep.FillHarmonics != 6 {
		t.Errorf("--fill-harmonics 6 trained with %d", rep.FillHarmonics)
	}
	args := []string{"train", "--data", data, "--lookback", "48", "--horizon", "12", "--epochs", "1", "--out", filepath.Join(dir, "bad.safetensors"), "--channel-mix", "--mode", "independent"}
	if code, _, stderr := runCLI(args...); code == 0 || !strings.Contains(stderr, "--channel-mix") {
		t.Errorf("--channel-mix --mode independent: exit %d, stderr %q; want a refusal naming --channel-mix", code, stderr)
	}
	for _, bad := range [][]string{
		{"--dropout", "1"}, {"--dropout", "-0.5"}, {"--top-k", "0"}, {"--top-k", "40"},
		{"--learning-rate", "-1"}, {"--learning-rate", "0"}, {"--learning-rate", "1e-09"}, {"--learning-rate", "2"}, {"--patience", "-2"},
		{"--fill-harmonics", "-1"}, {"--fill-harmonics", "33"},
		{"--weight-decay", "-0.1"}, {"--weight-decay", "NaN"}, {"--input-noise", "-1"}, {"--input-noise", "+Inf"},
	} {
		args := append([]string{"train", "--data", data, "--lookback", "48", "--horizon", "12", "--epochs", "1", "--out", filepath.Join(dir, "bad.safetensors")}, bad...)
		if code, _, stderr := runCLI(args...); code == 0 || !strings.Contains(stderr, bad[0]+" "+bad[1]+":") {
			t.Errorf("%v: exit %d, stderr %q; want a refusal that names the flag and its value", bad, code, stderr)
		}
	}
}

// cancelOn cancels when what it is written contains a phrase.
type cancelOn struct {
	bytes.Buffer
	phrase string
	cancel context.CancelFunc
}

func (w *cancelOn) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if strings.Contains(w.String(), w.phrase) {
		w.cancel()
	}
	return n, err
}

// TestTrainResumesAfterInterrupt: a run stopped after its second epoch
// (Ctrl-C) writes its best epoch so far and keeps its checkpoint; the same
// command run again goes on from there and writes the model, bit for bit,
// of a run that never stopped, then deletes the checkpoint.
func TestTrainResumesAfterInterrupt(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir, "sensors.csv", 2, 700)
	args := func(out string, extra ...string) []string {
		return append([]string{"train", "--data", data, "--lookback", "48", "--horizon", "12", "--epochs", "4", "--seed", "3",
			"--channel-shuffle", "0.5", "--out", out, "--json"}, extra...)
	}
	whole := filepath.Join(dir, "whole.safetensors")
	if code, stdout, stderr := runCLI(args(whole)...); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(whole + ".checkpoint"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a finished run left its checkpoint: %v", err)
	}

	out := filepath.Join(dir, "stopped.safetensors")
	interrupt := func(extra ...string) string {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stderr := &cancelOn{phrase: "epoch 2/4", cancel: cancel}
		var stdout bytes.Buffer
		if code := run(ctx, args(out, extra...), &stdout, stderr); code != 130 {
			t.Fatalf("interrupted run: exit %d, want 130\n%s\n%s", code, stdout.String(), stderr.String())
		}
		return stderr.String()
	}
	interrupt("--checkpoint", "none")
	if _, err := os.Stat(out + ".checkpoint"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--checkpoint none kept a checkpoint: %v", err)
	}
	if msg := interrupt(); !strings.Contains(msg, "go on from epoch 2") {
		t.Errorf("the interrupted run does not say how to go on:\n%s", msg)
	}
	if _, err := os.Stat(out + ".checkpoint"); err != nil {
		t.Fatalf("the interrupted run kept no checkpoint: %v", err)
	}
	// inspect tells the interrupted run's model from a finished one's.
	inspected := func() (string, inspectReport) {
		t.Helper()
		_, text, _ := runCLI("inspect", "--model", out)
		_, js, _ := runCLI("inspect", "--model", out, "--json")
		var in inspectReport
		lastJSON(t, js, &in)
		return text, in
	}
	if text, in := inspected(); !in.Interrupted || !strings.Contains(text, "trained 2 epochs, best 2 (interrupted") {
		t.Errorf("inspect of the interrupted run's model: interrupted %v, text:\n%s", in.Interrupted, text)
	}
	code, stdout, stderr := runCLI(args(out)...)
	if code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rep trainReport
	lastJSON(t, stdout, &rep)
	if rep.ResumedFrom != 2 || strings.Count(stderr, "(from the checkpoint)") != 2 {
		t.Errorf("resumed from %d, stderr:\n%s\nwant 2 epochs from the checkpoint", rep.ResumedFrom, stderr)
	}
	if !bytes.Equal(tensorBytes(t, out), tensorBytes(t, whole)) {
		t.Error("the resumed run's model differs from the one of the run that never stopped")
	}
	if text, in := inspected(); in.Interrupted || !strings.Contains(text, "trained 4 epochs") || strings.Contains(text, "interrupted") {
		t.Errorf("inspect of the finished run's model: interrupted %v, text:\n%s", in.Interrupted, text)
	}
	if _, err := os.Stat(out + ".checkpoint"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the finished run left its checkpoint: %v", err)
	}
	if code, _, stderr := runCLI(args(filepath.Join(dir, "missing", "m.safetensors"))...); code == 0 || !strings.Contains(stderr, "cannot write in") || strings.Contains(stderr, "epoch 1/") {
		t.Errorf("--out in a missing directory: exit %d, %s; want a refusal before training", code, stderr)
	}
	// A checkpoint that cannot be written is warned of once, and the run
	// finishes with its model.
	code, _, stderr = runCLI(args(filepath.Join(dir, "nockpt.safetensors"), "--checkpoint", filepath.Join(dir, "missing", "c"))...)
	if code != 0 || strings.Count(stderr, "warning: the checkpoint") != 1 || !strings.Contains(stderr, "training goes on") {
		t.Errorf("an unwritable checkpoint: exit %d, stderr:\n%s\nwant one warning and the model", code, stderr)
	}
	for _, same := range []string{out, dir + "/./" + filepath.Base(out)} {
		if code, _, stderr := runCLI(args(out, "--checkpoint", same)...); code == 0 || !strings.Contains(stderr, "--checkpoint names the model file") {
			t.Errorf("--checkpoint %s on the model file: exit %d, %s", same, code, stderr)
		}
	}
}

// TestWideCSVGapsFilledAndSaid: a wide CSV missing 5% of its steps in one
// run is trained, scored and explained on every step, the missing ones
// filled, and each command says so on stderr; so is a glitch.
func TestWideCSVGapsFilledAndSaid(t *testing.T) {
	dir := t.TempDir()
	full := writeSynthetic(t, dir, "full.csv", 2, 800)
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	gapped := filepath.Join(dir, "gapped.csv")
	// Lines 401–440 are the steps 400–439.
	if err := os.WriteFile(gapped, []byte(strings.Join(append(slices.Clone(lines[:401]), lines[441:]...), "")), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m.safetensors")
	const note = "gapped.csv: 40 missing steps in 1 gap from 20"
	code, stdout, stderr := runCLI("train", "--data", gapped, "--lookback", "48", "--horizon", "12", "--epochs", "1", "--out", out, "--json")
	if code != 0 || !strings.Contains(stderr, note) || !strings.Contains(stderr, "filled by linear interpolation") {
		t.Fatalf("train: exit %d, stderr:\n%s\nwant the gap said", code, stderr)
	}
	var rep trainReport
	lastJSON(t, stdout, &rep)
	var whole trainReport
	code, stdout, _ = runCLI("train", "--data", full, "--lookback", "48", "--horizon", "12", "--epochs", "1", "--out", filepath.Join(dir, "w.safetensors"), "--json")
	if code != 0 {
		t.Fatal(stdout)
	}
	lastJSON(t, stdout, &whole)
	if rep.TrainWindows != whole.TrainWindows || rep.TestWindows != whole.TestWindows {
		t.Errorf("the gapped file gave %d/%d training/test windows, the whole one %d/%d: every step should be a row", rep.TrainWindows, rep.TestWindows, whole.TrainWindows, whole.TestWindows)
	}
	// --at counts the file's rows: row 460 of the gapped file is step 500.
	var atGapped, atFull predictReport
	for _, c := range []struct {
		file, row string
		rep       *predictReport
	}{{gapped, "460", &atGapped}, {full, "500", &atFull}} {
		code, stdout, stderr := runCLI("predict", "--model", out, "--data", c.file, "--at", c.row, "--json")
		if code != 0 {
			t.Fatalf("predict --at %s: exit %d: %s", c.row, code, stderr)
		}
		lastJSON(t, stdout, c.rep)
	}
	if atGapped.Time != atFull.Time || atGapped.At == nil || *atGapped.At != 460 {
		t.Errorf("predict --at 460 on the gapped file: row %v at %s; want row 460 at %s, the whole file's row 500", atGapped.At, atGapped.Time, atFull.Time)
	}
	// A glitch is said too, by column, value and time.
	fields := strings.Split(lines[300], ",")
	fields[1] = "1e9"
	spiked := filepath.Join(dir, "spiked.csv")
	spikedLines := slices.Clone(lines)
	spikedLines[300] = strings.Join(fields, ",")
	if err := os.WriteFile(spiked, []byte(strings.Join(spikedLines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	column := strings.Split(lines[0], ",")[1]
	if code, _, stderr := runCLI("eval", "--model", out, "--data", spiked); code != 0 || !strings.Contains(stderr, "far outside the rest") ||
		!strings.Contains(stderr, fmt.Sprintf("%q 1 (the first 1e+09 at ", column)) {
		t.Errorf("eval on a file with a glitch: exit %d, stderr:\n%s\nwant it said", code, stderr)
	}
	for _, args := range [][]string{
		{"eval", "--model", out, "--data", gapped},
		{"predict", "--model", out, "--data", gapped, "--at", "500"},
		{"inspect", "--model", out, "--data", gapped},
	} {
		if code, _, stderr := runCLI(args...); code != 0 || !strings.Contains(stderr, note) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant the gap said", args[0], code, stderr)
		}
	}
}

// TestTrainSaysHowMuchHistoryACycleNeeds: five days of hourly readings hold
// the day only 3.5 times in the training part, so no cycle is found, and
// train says how much history would show it; with a month it finds the day
// and says nothing of the kind.
func TestTrainSaysHowMuchHistoryACycleNeeds(t *testing.T) {
	dir := t.TempDir()
	const hint = "(a cycle is found when the training part, the first 70% of the history, holds it about four times"
	for _, tc := range []struct {
		steps int
		says  bool
	}{{120, true}, {720, false}} {
		data := writeSynthetic(t, dir, fmt.Sprintf("s%d.csv", tc.steps), 1, tc.steps)
		code, stdout, stderr := runCLI("train", "--data", data, "--lookback", "24", "--horizon", "6", "--epochs", "1", "--batch-size", "16", "--out", filepath.Join(dir, fmt.Sprintf("m%d.safetensors", tc.steps)))
		if code != 0 {
			t.Fatalf("%d steps: exit %d\n%s", tc.steps, code, stderr)
		}
		if got := strings.Contains(stdout, hint); got != tc.says {
			t.Errorf("%d hourly steps: train says how much history a cycle needs: %v, want %v\n%s", tc.steps, got, tc.says, stdout)
		}
	}
}

// TestTrainTimeZone: --time-zone is kept in the model, and inspect says
// whose wall clock its cycles keep; a name that is no zone is refused
// before any training.
func TestTrainTimeZone(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir, "sensors.csv", 2, 400)
	out := filepath.Join(dir, "m.safetensors")
	if code, _, stderr := runCLI("train", "--data", data, "--lookback", "24", "--horizon", "6", "--epochs", "1", "--time-zone", "Europe/Berlin", "--out", out); code != 0 {
		t.Fatalf("train exited %d: %s", code, stderr)
	}
	if _, text, _ := runCLI("inspect", "--model", out); !strings.Contains(text, "clock: the cycles keep Europe/Berlin's wall clock") {
		t.Errorf("inspect does not say the model's clock:\n%s", text)
	}
	_, js, _ := runCLI("inspect", "--model", out, "--json")
	var in inspectReport
	lastJSON(t, js, &in)
	if in.TimeZone != "Europe/Berlin" {
		t.Errorf("inspect --json time_zone = %q, want Europe/Berlin", in.TimeZone)
	}
	if code, _, stderr := runCLI("train", "--data", data, "--horizon", "6", "--time-zone", "Berlin", "--out", out); code != 2 || !strings.Contains(stderr, `--time-zone "Berlin" is no time zone; use an IANA name such as Europe/Berlin`) || strings.Contains(stderr, "epoch") {
		t.Errorf("--time-zone Berlin: exit %d, %s", code, stderr)
	}
}

// TestInspectMatchesACyclePeriodWithoutItsLine: a week seen only through
// its sidebands (lines at 168/5 and 168/9 hours, none at 168) still
// matches the known 7.0d period, as that cycle's period; inspect does not
// say "no match" beside a 7.0d cycle it lists.
func TestInspectMatchesACyclePeriodWithoutItsLine(t *testing.T) {
	m, err := model.New(model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 16, Frequencies: 8, TopK: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	m.SetRhythms([]cycles.Rhythm{
		{PeriodSteps: 24, Frequencies: []int{0, 1}, Harmonics: []int{1, 2}},
		{PeriodSteps: 168, Frequencies: []int{2, 3}, Harmonics: []int{5, 9}},
	})
	path := filepath.Join(t.TempDir(), "week.safetensors")
	if err := modelfile.Save(m, path); err != nil {
		t.Fatal(err)
	}
	_, js, errOut := runCLI("inspect", "--model", path, "--json")
	var in inspectReport
	lastJSON(t, js, &in)
	found := false
	for _, k := range in.KnownPeriods {
		if k.Known == "7.0d" {
			found = true
			if !k.Match || !k.CyclePeriod || k.Cycle != "7.0d cycle" {
				t.Errorf("known 7.0d: %+v; want a match with the 7.0d cycle's period (%s)", k, errOut)
			}
		}
	}
	if !found {
		t.Fatalf("inspect lists no known 7.0d period: %+v", in.KnownPeriods)
	}
	if _, text, _ := runCLI("inspect", "--model", path); !strings.Contains(text, "match, the period of the 7.0d cycle") {
		t.Errorf("inspect text does not say the week matches by its period:\n%s", text)
	}
}
