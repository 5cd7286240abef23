package fault

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
	"github.com/freqlens/freqlens/readings"
)

// The measurements of docs/reliability.md: runs of minutes,
// skipped unless asked for by their environment variable.

// envInt returns the integer in environment variable name, or skips the
// test when it is unset.
func envInt(t *testing.T, name string) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("a measurement: set %s to run it", name)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s = %q: want a positive number", name, v)
	}
	return n
}

// rssMB returns the resident set of process pid in MB, from /proc.
func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return float64(kb) / 1024
}

// produceSteps writes steps [from, to) of n series as fast as the broker
// takes them.
func produceSteps(t *testing.T, kc *kafkaconn.Client, n, from, to int) {
	t.Helper()
	w := kc.NewWriter("readings")
	w.BatchTimeout, w.BatchSize, w.BatchBytes = time.Millisecond, 10000, 4<<20
	defer w.Close()
	msgs := make([]kafka.Message, 0, n)
	for k := from; k < to; k++ {
		msgs = msgs[:0]
		for i := range n {
			s := fmt.Sprintf("sensor-%06d", i)
			r := readings.Reading{Series: s, Time: t0.Add(time.Duration(k) * time.Hour), Values: []float64{value(i, k)}}
			msgs = append(msgs, kafka.Message{Key: []byte(s), Value: readings.AppendJSON(nil, r, readings.DefaultConfig())})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("produce step %d: %v", k, err)
		}
		cancel()
	}
}

// TestResumeTime measures the time to resume after a move of every
// partition: a replica forecasts FREQLENS_FAULT_RESUME_SERIES series with a
// model of L = 96 (H = 24), stops with SIGTERM, and a new one starts; the
// new replica's log says how long the rebuild of the windows took from its
// assignment, and the test measures the time from its start to the
// forecasts of the next step of every series.
//
//	FREQLENS_FAULT_RESUME_SERIES=10000 go test -run TestResumeTime -v -timeout 30m ./fault/
func TestResumeTime(t *testing.T) {
	n := envInt(t, "FREQLENS_FAULT_RESUME_SERIES")
	c := newCluster(t)
	modelPath := paperModelFile(t, 24)
	cfg := serveConfig(c.proxy.Addr(), modelPath, "")
	const steps = 96 + 4 // windows ending at steps 95 … 99: 5 per series
	began := time.Now()
	produceSteps(t, c.kc, n, 0, steps)
	t.Logf("produced %d readings in %v", n*steps, time.Since(began).Round(time.Millisecond))
	first := start(t, "first", cfg)
	c.waitCommitted(30*time.Minute, first)
	t.Logf("the first replica forecast them; RSS %.0f MB", rssMB(first.cmd.Process.Pid))
	first.term()

	began = time.Now()
	second := start(t, "second", cfg)
	second.waitReady(10 * time.Minute)
	ready := time.Since(began)
	produceSteps(t, c.kc, n, steps, steps+1)
	c.waitCommitted(10*time.Minute, second)
	forecasting := time.Since(began)
	all := kafkatest.ReadAll(t, c.kc, "forecasts")
	if want := n * (steps - 96 + 2); len(all) < want {
		t.Errorf("%d forecasts, want at least %d: the next step was not forecast for every series", len(all), want)
	}
	log := second.log()
	var rebuilt, took string
	if m := regexp.MustCompile(`windows rebuilt.* readings=(\d+) took=(\S+)`).FindStringSubmatch(log); m != nil {
		rebuilt, took = m[1], m[2]
	}
	t.Logf("%d series: the new replica rebuilt %s readings in %s after its assignment; ready %v after its start, "+
		"the next step of every series forecast and committed %v after its start; RSS %.0f MB",
		n, rebuilt, took, ready.Round(time.Millisecond), forecasting.Round(time.Millisecond), rssMB(second.cmd.Process.Pid))
	second.term()
}

// TestCardinalityBurst measures memory under a burst of new series: a
// replica with window.max_series 50000 and series_ttl 20s gets one
// reading each of FREQLENS_FAULT_BURST_SERIES new series; the test samples
// its RSS and series_active until the series have expired, and checks the
// cap and the expiry time.
//
//	FREQLENS_FAULT_BURST_SERIES=100000 go test -run TestCardinalityBurst -v -timeout 30m ./fault/
func TestCardinalityBurst(t *testing.T) {
	n := envInt(t, "FREQLENS_FAULT_BURST_SERIES")
	c := newCluster(t)
	modelPath := paperModelFile(t, 24)
	r := start(t, "replica", serveConfig(c.proxy.Addr(), modelPath, "window: {max_series: 50000, series_ttl: 20s}\n"))
	r.waitReady(60 * time.Second)
	pid := r.cmd.Process.Pid
	t.Logf("before the burst: RSS %.0f MB", rssMB(pid))
	produceSteps(t, c.kc, n, 0, 1)
	sent := time.Now()
	peakRSS, peakActive, peakInflight := 0.0, 0.0, 0.0
	var expired time.Duration
	for time.Since(sent) < 90*time.Second {
		rss, active := rssMB(pid), r.metric("freqlens_window_series_active")
		peakRSS, peakActive = max(peakRSS, rss), max(peakActive, active)
		peakInflight = max(peakInflight, r.metric("freqlens_stream_inflight_bytes"))
		if active == 0 && peakActive > 0 && expired == 0 {
			expired = time.Since(sent)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if peakActive > 50000 {
		t.Errorf("series_active peaked at %v with window.max_series 50000", peakActive)
	}
	t.Logf("%d new series: series_active peaked at %v (cap 50000), rejected %v; all expired %v after the burst (TTL 20s); "+
		"RSS peak %.0f MB, %.0f MB 90s after the burst; input bytes in flight at most %.0f (sampled every 0.5s)",
		n, peakActive, r.metric("freqlens_window_series_rejected_total"), expired.Round(time.Second), peakRSS, rssMB(pid), peakInflight)
	if expired == 0 || expired > 20*time.Second*5/4+10*time.Second {
		t.Errorf("the series expired %v after the burst, want within 1.25 × TTL (+ the time to consume the burst)", expired)
	}
	r.term()
}

// TestBacklogMemory measures what a backlog costs: FREQLENS_FAULT_BACKLOG
// readings of 100 series (L = H = 96, 80% and 95% intervals, the learner
// on) wait in the topic when a replica starts, and it catches up; the test
// samples its RSS every 0.2 s until everything is committed and for
// 150 s after (the pipeline trims its buffers after an expiry period, 1 min,
// without batches). It compares with the same readings arriving paced, one
// step of every series at a time, and with a broker cut: the first half
// paced, then the brokers cut off for 30 s, then the second half at once
// and the catch-up. The backlog is measured again with summary attributions
// (output.attributions: summary), whose forecasts keep no per-step parts.
//
//	FREQLENS_FAULT_BACKLOG=30000 go test -count=1 -run TestBacklogMemory -v -timeout 30m ./fault/
func TestBacklogMemory(t *testing.T) {
	n := envInt(t, "FREQLENS_FAULT_BACKLOG")
	const series = 100
	steps := n / series
	modelPath := paperModelFile(t, 96)
	extra := "output: {intervals: [0.8, 0.95], write_timeout: 3s, max_attempts: 3}\nonline: {enabled: true}\n"
	run := func(name string) {
		c := newCluster(t)
		x := extra
		if name == "backlog, summary attributions" {
			x = strings.Replace(extra, "output: {", "output: {attributions: summary, ", 1)
		}
		cfg := strings.Replace(serveConfig(c.proxy.Addr(), modelPath, x), "output: {write_timeout: 3s, max_attempts: 3}\n", "", 1)
		if strings.HasPrefix(name, "backlog") {
			produceSteps(t, c.kc, series, 0, steps)
		}
		r := start(t, name, cfg)
		r.waitReady(60 * time.Second)
		pid := r.cmd.Process.Pid
		began := rssMB(pid)
		peak := began
		paced := func(from, to int) {
			for k := from; k < to; k++ {
				produceSteps(t, c.kc, series, k, k+1)
				peak = max(peak, rssMB(pid))
				time.Sleep(20 * time.Millisecond)
			}
		}
		switch name {
		case "paced":
			paced(0, steps)
		case "cut":
			paced(0, steps/2)
			c.proxy.Cut()
			time.Sleep(30 * time.Second)
			c.proxy.Restore()
			// The broker advertises the proxy, so the readings of the cut
			// arrive when it ends, at once, as from producers that
			// buffered them.
			produceSteps(t, c.kc, series, steps/2, steps)
		}
		var caughtUp time.Duration
		start := time.Now()
		for time.Since(start) < 10*time.Minute {
			peak = max(peak, rssMB(pid))
			if kafkatest.Uncommitted(t, c.kc, "freqlens", "readings") == 0 {
				caughtUp = time.Since(start)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if caughtUp == 0 {
			t.Errorf("%s: readings still uncommitted after 10 minutes", name)
		}
		after := time.Now()
		for time.Since(after) < 150*time.Second {
			peak = max(peak, rssMB(pid))
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("%s: %d readings of %d series: RSS %.0f MB at start, peak %.0f MB, %.0f MB 150 s after catching up (in %v); heap in use %.0f MB, heap released to the OS %.0f MB",
			name, series*steps, series, began, peak, rssMB(pid), caughtUp.Round(100*time.Millisecond),
			r.metric("go_memstats_heap_inuse_bytes")/1e6, r.metric("go_memstats_heap_released_bytes")/1e6)
		r.term()
	}
	run("backlog")
	run("backlog, summary attributions")
	run("paced")
	run("cut")
}

// paperModelFile writes an untrained hourly model of the paper's size
// (L = 96, default hidden width, frequencies and K) with the given horizon,
// so that the measurements carry a real model's memory and cost.
func paperModelFile(t *testing.T, horizon int) string {
	t.Helper()
	m, err := model.New(model.Config{Lookback: 96, Horizon: horizon, Channels: 1, Mode: model.Independent}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := modelfile.Save(m, path); err != nil {
		t.Fatal(err)
	}
	return path
}
