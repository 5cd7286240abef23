package fault

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
)

// productionExtra is the production configuration of the capacity
// measurement: summary attributions on their topic, 80% and 95% intervals,
// the learner on, every series tracked (the default).
const productionExtra = "output: {attributions: summary, intervals: [0.8, 0.95], write_timeout: 3s, max_attempts: 3}\nonline: {enabled: true}\n"

// cpuSeconds returns the CPU time (user + system) process pid has used,
// from /proc, or -1.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis are space-separated, utime and stime 14th and
	// 15th of the line (12th and 13th after the state).
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return -1
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100 // USER_HZ is 100 on Linux
}

// TestCapacity measures what docs/operating.md's capacity table rests on: a
// replica in the production configuration (an hourly model of the paper's
// size, L = H = 96; productionExtra) serving FREQLENS_CAPACITY series, each
// through a full window, a horizon of scored forecasts and more:
//
//   - the replica's own CPU time per reading while its windows fill, and per
//     reading that makes a forecast (the broker and the producer share the
//     machine but not the replica's process, so this is what the replica
//     needs of its cores);
//   - its heap and RSS with every series live and tracked, against the
//     same replica before its first reading (with FREQLENS_CAPACITY_HEAP set
//     to a path, its heap profile then is written there);
//   - then a second replica joins the consumer group: how the input's six
//     partitions, and so the series, are split, and what the two together
//     and each alone spend per reading.
func TestCapacity(t *testing.T) {
	n := envInt(t, "FREQLENS_CAPACITY")
	const L, H, extraSteps, pairSteps = 96, 96, 8, 24
	modelPath := paperModelFile(t, H)
	// The broker keeps the newest 64 MiB of a partition, as a real one's
	// retention would: every forecast of the run (9.4 KB each) would
	// otherwise take tens of GB of this process, while the readings a new
	// replica rebuilds its windows from (L steps) fit in it.
	kc, proxy := kafkatest.BehindProxy(t, kfake.ClusterID("capacity"),
		kfake.SeedTopics(6, "readings", "forecasts", "attributions"), kfake.SeedTopics(1, "readings.dlq", "models"),
		kfake.BrokerConfigs(map[string]string{"log.retention.bytes": strconv.Itoa(64 << 20), "log.segment.bytes": strconv.Itoa(16 << 20)}))
	stopRetention := make(chan struct{})
	defer close(stopRetention)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopRetention:
				return
			case <-tick.C:
				kc.ApplyRetention()
			}
		}
	}()
	c := &cluster{t: t, kfake: kc, proxy: proxy, kc: kafkatest.Client(t, []string{proxy.Addr()})}
	cfg := strings.Replace(serveConfig(proxy.Addr(), modelPath, productionExtra), "output: {write_timeout: 3s, max_attempts: 3}\n", "", 1)
	cfg = strings.Replace(cfg, `topics: {attributions: "", drift: ""}`, `topics: {attributions: attributions, drift: ""}`, 1)
	cfg += "metrics: {pprof: true}\n"

	a := start(t, "a", cfg)
	a.waitReady(60 * time.Second)
	pid := a.cmd.Process.Pid
	time.Sleep(2 * time.Second)
	heap0, rss0 := a.metric("go_memstats_heap_inuse_bytes"), rssMB(pid)

	// phase produces steps [from, to) of every series and returns each
	// replica's CPU seconds and the wall time until all of them are
	// committed. The producer runs beside the replicas; its CPU is not
	// theirs.
	phase := func(name string, from, to int, rs ...*replica) (cpu []float64, wall time.Duration) {
		t.Helper()
		before := make([]float64, len(rs))
		for i, r := range rs {
			before[i] = cpuSeconds(r.cmd.Process.Pid)
		}
		began := time.Now()
		produceSteps(t, c.kc, n, from, to)
		c.waitCommitted(30*time.Minute, rs...)
		wall = time.Since(began)
		for i, r := range rs {
			cpu = append(cpu, cpuSeconds(r.cmd.Process.Pid)-before[i])
		}
		readingsN := float64(n * (to - from))
		total := 0.0
		for _, s := range cpu {
			total += s
		}
		t.Logf("%s: %.0f readings in %v (%.0f readings/s with the broker and the producer beside); replica CPU %.1f s, %.1f µs a reading",
			name, readingsN, wall.Round(100*time.Millisecond), readingsN/wall.Seconds(), total, total/readingsN*1e6)
		return cpu, wall
	}

	phase("filling windows (no forecasts)", 0, L-1, a)
	phase("forecasting, scoring and intervals", L-1, L-1+H+extraSteps, a)
	time.Sleep(150 * time.Second) // two service.expire_every and more: the backlog's buffers go
	heap, rss := a.metric("go_memstats_heap_inuse_bytes"), rssMB(pid)
	live := a.metric("freqlens_window_series_active")
	t.Logf("memory with %.0f live series: heap in use %.0f MB (%.0f MB before the first reading), RSS %.0f MB (%.0f MB); %.0f bytes of heap a series",
		live, heap/1e6, heap0/1e6, rss, rss0, (heap-heap0)/float64(n))
	if live != float64(n) {
		t.Errorf("%v live series; want %d", live, n)
	}
	if path := os.Getenv("FREQLENS_CAPACITY_HEAP"); path != "" {
		// What holds that memory: go tool pprof -sample_index=inuse_space -top PATH
		code, body := a.get("/debug/pprof/heap?gc=1")
		if code != http.StatusOK {
			t.Fatalf("GET /debug/pprof/heap: %d %.200s", code, body)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("heap profile with %.0f live series in %s", live, path)
	}

	// A second replica joins: the group splits the partitions, the new
	// member rebuilds the windows of the series it takes over from the
	// topic, and both serve.
	b := start(t, "b", cfg)
	b.waitReady(60 * time.Second)
	first := L - 1 + H + extraSteps
	if !eventually(2*time.Minute, func() bool {
		return a.metric("freqlens_stream_assigned_partitions") > 0 && b.metric("freqlens_stream_assigned_partitions") > 0
	}) {
		t.Fatalf("the second replica was given no partition: a %v, b %v", a.metric("freqlens_stream_assigned_partitions"), b.metric("freqlens_stream_assigned_partitions"))
	}
	phase("two replicas, first steps after the rebalance (the new one rebuilds its windows)", first, first+2, a, b)
	cpu, _ := phase("two replicas", first+2, first+2+pairSteps, a, b)
	for i, r := range []*replica{a, b} {
		t.Logf("replica %s: %v partitions, %.0f live series, %.1f µs of CPU a reading of the group", r.name,
			r.metric("freqlens_stream_assigned_partitions"), r.metric("freqlens_window_series_active"), cpu[i]/float64(n*pairSteps)*1e6)
	}
}
