package fault

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/internal/loopback"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/stream"
	"github.com/freqlens/freqlens/wire"
)

// The feed of the crash scenarios: 40 series, 120 steps (L = 24, so 97
// windows per series), one step every 40 ms.
const (
	nSeries = 40
	nSteps  = 120
	pace    = 40 * time.Millisecond
)

// stopDuringBursts feeds steps steps at the suite's pace, except that at
// stops evenly spaced steps it waits until r serves, produces 15 steps at
// once and, 20 to 100 ms into that burst, calls stop, which returns the
// replica that takes over. It returns the last one.
func (f *feed) stopDuringBursts(r *replica, steps, stops int, stop func(*replica) *replica) *replica {
	k := 0
	for i := 1; i <= stops; i++ {
		at := i * steps / (stops + 1)
		f.produce(k, at, pace, nil)
		r.waitReady(60 * time.Second)
		f.produce(at, at+15, 0, nil)
		time.Sleep(time.Duration(20+37*i%80) * time.Millisecond)
		r = stop(r)
		k = at + 15
	}
	f.produce(k, steps, pace, nil)
	return r
}

// kills returns how many times TestKill9 crashes the replica: 2, or
// FREQLENS_FAULT_KILLS for a longer run.
func kills(t *testing.T) int {
	if v := os.Getenv("FREQLENS_FAULT_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FREQLENS_FAULT_KILLS = %q: want a positive number", v)
		}
		return n
	}
	return 2
}

// resumeTimes returns the "took" of every "windows rebuilt" line of a
// replica's log: the time from an assignment to forecasting again.
func resumeTimes(log string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`windows rebuilt.* took=(\S+)`).FindAllStringSubmatch(log, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestKill9 crashes the only replica twice with SIGKILL in bursts of
// readings, restarting it each time: no window is lost, and the windows
// forecast before a crash and not committed are forecast again
// byte-identical. FREQLENS_FAULT_KILLS=n crashes it n times instead of 2.
// Each crash comes once the replica serves (/readyz): kfake
// never expires a member that dies between its JoinGroup and the reply
// (the reply cannot be delivered, and kfake starts the session timer only
// on a delivered reply), so a crash in mid-join would leave partitions
// assigned to a dead member for ever; a real broker expires it.
func TestKill9(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := serveConfig(c.proxy.Addr(), modelFile(t, t.TempDir()), "")
	// 10 ms of latency each way, so that a crash often comes between the
	// acknowledgement of a batch's forecasts and its commit: those are
	// forecast again after the restart.
	c.proxy.SetDelay(10 * time.Millisecond)
	f := newFeed(c, nSeries)
	n := kills(t)
	steps := max(nSteps, 40*(n+1))
	r := start(t, "replica", cfg)
	r = f.stopDuringBursts(r, steps, n, func(r *replica) *replica {
		r.kill()
		return start(t, "replica", cfg)
	})
	c.waitCommitted(90*time.Second, r)
	r.term()
	o := c.checkWindows(f.series, lookback-1, steps)
	t.Logf("resume after the second crash: %v", resumeTimes(r.log()))
	if o.lost != 0 || o.unexpected != 0 {
		t.Fatal("kill -9 lost or invented windows")
	}
}

// TestSIGTERM stops the only replica with SIGTERM twice in bursts of
// readings: it drains and commits, so the restarted replica forecasts
// every window once — none lost, none twice.
func TestSIGTERM(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := serveConfig(c.proxy.Addr(), modelFile(t, t.TempDir()), "")
	f := newFeed(c, nSeries)
	r := start(t, "replica", cfg)
	r = f.stopDuringBursts(r, nSteps, 2, func(r *replica) *replica {
		r.term()
		return start(t, "replica", cfg)
	})
	c.waitCommitted(90*time.Second, r)
	r.term()
	o := c.checkWindows(f.series, lookback-1, nSteps)
	if o.lost != 0 || o.unexpected != 0 || o.duplicates != 0 {
		t.Fatalf("SIGTERM: %d lost, %d duplicates; want none of either", o.lost, o.duplicates)
	}
}

// TestRebalanceOfThreeReplicas grows the group to three replicas while
// readings arrive, then stops one with SIGTERM, crashes another with
// SIGKILL and brings a third back: partitions move at every step, and no
// window is lost; duplicates are byte-identical. Each stop waits until the
// replicas serve (see TestKill9).
func TestRebalanceOfThreeReplicas(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := serveConfig(c.proxy.Addr(), modelFile(t, t.TempDir()), "")
	f := newFeed(c, nSeries)
	a := start(t, "a", cfg)
	var b, d *replica
	var all []*replica
	all = append(all, a)
	f.produce(0, 2*nSteps, pace, func(k int) {
		switch k {
		case 30:
			b = start(t, "b", cfg)
			all = append(all, b)
		case 60:
			d = start(t, "c", cfg)
			all = append(all, d)
		case 100:
			a.waitReady(60 * time.Second)
			b.waitReady(60 * time.Second)
			d.waitReady(60 * time.Second)
			b.term()
		case 140:
			a.waitReady(60 * time.Second)
			d.waitReady(60 * time.Second)
			d.kill()
		case 180:
			b = start(t, "b2", cfg)
			all = append(all, b)
		}
	})
	c.waitCommitted(90*time.Second, all...)
	for _, r := range []*replica{a, b} {
		t.Logf("%s resumed after its moves in %v", r.name, resumeTimes(r.log()))
	}
	if a.metric("freqlens_stream_assigned_partitions")+b.metric("freqlens_stream_assigned_partitions") != 3 {
		t.Errorf("the two live replicas hold %v + %v partitions, want 3 in all",
			a.metric("freqlens_stream_assigned_partitions"), b.metric("freqlens_stream_assigned_partitions"))
	}
	b.term()
	a.term()
	o := c.checkWindows(f.series, lookback-1, 2*nSteps)
	if o.lost != 0 || o.unexpected != 0 {
		t.Fatal("the rebalances lost or invented windows")
	}
	if !regexp.MustCompile(`msg="partitions assigned".* revoked="?\[[0-9]`).MatchString(a.log()) {
		t.Error("replica a logged no assignment that revoked a partition (INFO partitions assigned … revoked=[…])")
	}
}

// TestBrokerCut cuts the broker off (the proxy refuses connections) for
// 8 seconds while the service has readings in flight: /readyz turns 503,
// the brokers-reachable gauge 0, one ERROR says the brokers are
// unreachable, the failed writes are counted, one INFO says when they are
// back, /readyz turns 200 again, and no window is lost.
func TestBrokerCut(t *testing.T) {
	t.Parallel()
	c, f, r := servingHalf(t)
	f.produce(nSteps/2, nSteps/2+30, 0, nil) // a burst in flight when the cut comes
	c.proxy.Cut()
	cutAt := time.Now()
	if !eventually(15*time.Second, func() bool { code, _ := r.get("/readyz"); return code == http.StatusServiceUnavailable }) {
		t.Error("/readyz did not turn 503 within 15s of the cut")
	}
	if !eventually(15*time.Second, func() bool { return strings.Contains(r.log(), "kafka brokers unreachable") }) {
		t.Error("no ERROR within 15s of the cut (kafka.unreachable_after is 3s)")
	}
	if up := r.metric("freqlens_service_brokers_reachable"); up != 0 {
		t.Errorf("freqlens_service_brokers_reachable = %v during the cut, want 0", up)
	}
	time.Sleep(time.Until(cutAt.Add(8 * time.Second)))
	c.proxy.Restore()
	r.waitReady(60 * time.Second)
	f.produce(nSteps/2+30, nSteps, pace, nil)
	c.waitCommitted(90*time.Second, r)
	log := r.log()
	if n := strings.Count(log, "level=ERROR msg=\"kafka brokers unreachable"); n != 1 {
		t.Errorf("%d ERROR lines about unreachable brokers, want 1", n)
	}
	if !strings.Contains(log, "kafka brokers reachable again") {
		t.Error("no INFO line when the brokers came back")
	}
	warns := strings.Count(log, "level=WARN")
	if warns > 20 {
		t.Errorf("%d WARN lines for an 8s cut; the log floods:\n%s", warns, tail(log, 20))
	}
	t.Logf("%d WARN lines in all; %s", warns, regexp.MustCompile(`.*(kafka brokers (unreachable|reachable again)).*`).FindAllString(log, -1))
	if n := r.metric("freqlens_sink_write_errors_total"); !(n > 0) {
		t.Errorf("freqlens_sink_write_errors_total = %v after a cut with writes in flight, want some", n)
	} else {
		t.Logf("write errors counted: %v", n)
	}
	r.term()
	o := c.checkWindows(f.series, lookback-1, nSteps)
	if o.lost != 0 || o.unexpected != 0 {
		t.Fatal("the broker cut lost or invented windows")
	}
}

// TestBadInput feeds a non-finite spelling, a value near the float64
// limit, a 1e11 spike in a live series, a 100 KB series id, a reading
// stamped 1970 and bytes that are not JSON among good readings: each is
// dead-lettered with its reason and counted, no forecast holds a
// non-finite value, and no window of the good readings is lost.
func TestBadInput(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := serveConfig(c.proxy.Addr(), modelFile(t, t.TempDir()), "")
	f := newFeed(c, 10)
	r := start(t, "replica", cfg)
	reading := func(series string, at time.Time, v string) kafka.Message {
		return kafka.Message{Key: []byte(series), Value: fmt.Appendf(nil, `{"series":%q,"ts":%q,"value":%s}`, series, at.Format(time.RFC3339), v)}
	}
	long := strings.Repeat("x", 100<<10)
	bad := []struct {
		msg    kafka.Message
		reason string
	}{
		{reading("sensor-000", t0, `"NaN"`), readings.ReasonNonFinite},
		{reading("huge", t0, `1.7e308`), readings.ReasonOutOfRange},
		{reading(long, t0, `1`), readings.ReasonSeriesTooLong},
		{kafka.Message{Key: []byte("garbage"), Value: []byte("{not json")}, readings.ReasonUnparsable},
	}
	f.produce(0, lookback+10, pace, func(k int) {
		if k == 2 {
			for _, b := range bad {
				kafkatest.Produce(t, c.kc, "readings", b.msg)
			}
		}
	})
	// A spike in a live series, inside the static range (±1e15 for an
	// independent model) but 10⁹ times the series' range (its step is a
	// duplicate, refused before it replaces the good value), and a new
	// series stamped 1970 after the partition has seen 2026.
	spike := reading("sensor-003", t0.Add((lookback+9)*time.Hour), `1e11`)
	old := reading("sensor-003", time.Unix(0, 0).UTC(), `5`)
	kafkatest.Produce(t, c.kc, "readings", spike, old)
	bad = append(bad, struct {
		msg    kafka.Message
		reason string
	}{spike, readings.ReasonOutOfRange}, struct {
		msg    kafka.Message
		reason string
	}{old, readings.ReasonTooOld})
	f.produce(lookback+10, lookback+20, pace, nil)
	c.waitCommitted(90*time.Second, r)
	dlq := kafkatest.ReadN(t, c.kc, "readings.dlq", len(bad), 30*time.Second)
	got := map[string]string{}
	for _, m := range dlq {
		got[string(m.Value)] = kafkatest.Header(m, stream.HeaderReason)
	}
	for _, b := range bad {
		if reason := got[string(b.msg.Value)]; reason != b.reason {
			t.Errorf("reading %.60s: dead-letter reason %q, want %q", b.msg.Value, reason, b.reason)
		}
	}
	if len(dlq) != len(bad) {
		t.Errorf("%d dead letters, want %d", len(dlq), len(bad))
	}
	r.term()
	o := c.checkWindows(f.series, lookback-1, lookback+20)
	if o.lost != 0 || o.unexpected != 0 {
		t.Fatal("bad input lost or invented windows")
	}
}

// TestBadBrokers: a service that cannot reach or authenticate to the
// brokers at start exits with status 2 within kafka.connect_timeout, with
// one line on stderr that says what to check.
func TestBadBrokers(t *testing.T) {
	t.Parallel()
	plain := newCluster(t)
	closed := loopback.Refused(t)
	modelPath := modelFile(t, t.TempDir())
	for _, tc := range []struct {
		name, brokers, extra, want string
	}{
		{"wrong port", closed, "", "kafka.brokers"},
		{"unresolvable host", "no-such-broker.invalid:9092", "", "kafka.brokers"},
		{"TLS against a plaintext listener", plain.proxy.Addr(), "kafka: {tls: true}\n", "kafka.tls"},
		{"SASL against a broker without it", plain.proxy.Addr(), "kafka: {sasl: {mechanism: plain, username: u, password: p}}\n", "kafka.sasl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			r := start(t, "replica", yamlWith(serveConfig(tc.brokers, modelPath, ""), tc.extra))
			select {
			case <-r.exited:
			case <-time.After(30 * time.Second):
				t.Fatal("the service did not exit within 30s with kafka.connect_timeout 3s")
			}
			took := time.Since(began)
			log := strings.TrimSpace(r.log())
			if r.code != 2 || strings.Count(log, "\n") != 0 || !strings.Contains(log, tc.want) {
				t.Errorf("exit status %d, stderr:\n%s\nwant status 2 and one line naming %s", r.code, log, tc.want)
			}
			if took > 3*time.Second+5*time.Second {
				t.Errorf("took %v to give up with kafka.connect_timeout 3s", took)
			}
			t.Logf("%v: %s", took.Round(100*time.Millisecond), log)
		})
	}
}

// yamlWith sets kafka.connect_timeout to 3s in a serve config and adds
// the kafka settings of extra ("kafka: {…}") to its kafka section.
func yamlWith(yaml, extra string) string {
	yaml = strings.Replace(yaml, "connect_timeout: 20s", "connect_timeout: 3s", 1)
	if inner, ok := strings.CutPrefix(strings.TrimSpace(extra), "kafka: {"); ok {
		inner = strings.TrimSuffix(inner, "}")
		var lines []string
		for _, kv := range splitTop(inner) {
			lines = append(lines, "  "+strings.TrimSpace(kv))
		}
		yaml = strings.Replace(yaml, "kafka:\n", "kafka:\n"+strings.Join(lines, "\n")+"\n", 1)
	}
	return yaml
}

// splitTop splits "a: 1, b: {c: 2, d: 3}" at its top-level commas.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, ch := range s {
		switch ch {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// TestOneModelAcrossReplicas runs two replicas that fine-tune
// (online.enabled, online.learner auto) and share the models topic: only
// the owner of input partition 0 runs rounds; when it promotes a version
// the other serves that version within seconds (it follows the models
// topic), and the forecasts of the other's partitions carry it. A huge
// promote_margin without the paired test (a negative promote_z) promotes
// the first candidate, so that the test is about replicas, not about
// whether fine-tuning helps noise.
func TestOneModelAcrossReplicas(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := serveConfig(c.proxy.Addr(), modelFile(t, t.TempDir()), `online:
  enabled: true
  interval: 1s
  min_new_samples: 40
  steps: 3
  batch_size: 8
  min_holdout: 8
  promote_margin: 1000000
  promote_z: -1
  duty: 1
`)
	cfg = strings.Replace(cfg, `topics: {attributions: "", drift: ""}`, `topics: {attributions: "", drift: "", models: models}`, 1)
	f := newFeed(c, nSeries)
	a, b := start(t, "a", cfg), start(t, "b", cfg)
	// Both in the group before any reading, so that no round can run while
	// one of them is alone.
	if !eventually(60*time.Second, func() bool {
		return a.metric("freqlens_stream_assigned_partitions") > 0 && b.metric("freqlens_stream_assigned_partitions") > 0
	}) {
		t.Fatal("the two replicas did not share the partitions within 60s")
	}
	a.waitReady(60 * time.Second)
	b.waitReady(60 * time.Second)
	f.produce(0, lookback, pace, nil)
	k := lookback
	for ; k < 4*lookback && !(a.metric("freqlens_model_version") >= 2 || b.metric("freqlens_model_version") >= 2); k++ {
		f.produce(k, k+1, 4*pace, nil)
	}
	promoted := time.Now()
	learner, follower := a, b
	if b.metric("freqlens_service_learner") == 1 {
		learner, follower = b, a
	}
	if learner.metric("freqlens_service_learner") != 1 || follower.metric("freqlens_service_learner") != 0 {
		t.Fatalf("learner gauges %v and %v, want exactly one learner", a.metric("freqlens_service_learner"), b.metric("freqlens_service_learner"))
	}
	v := learner.metric("freqlens_model_version")
	if !(v >= 2) {
		t.Fatalf("no version promoted after %d steps:\n%s", k, tail(learner.log(), 20))
	}
	if !eventually(10*time.Second, func() bool { return follower.metric("freqlens_model_version") >= v }) {
		t.Fatalf("the follower serves version %v 10s after the learner promoted %v", follower.metric("freqlens_model_version"), v)
	}
	t.Logf("the follower served version %v %v after the learner's promotion was seen", v, time.Since(promoted).Round(10*time.Millisecond))
	if n := follower.metric(`freqlens_finetune_rounds_total{outcome="promoted"}`); n > 0 {
		t.Errorf("the follower promoted %v versions, want none", n)
	}
	// The follower's partitions get forecasts of the new version.
	_, body := follower.get("/readyz")
	f.produce(k, k+3, pace, nil)
	c.waitCommitted(60*time.Second, a, b)
	parts := map[int]bool{}
	for _, p := range regexp.MustCompile(`"partitions":\[([0-9,]*)\]`).FindStringSubmatch(body)[1:] {
		for _, s := range strings.Split(p, ",") {
			var n int
			fmt.Sscan(s, &n)
			parts[n] = true
		}
	}
	newest := map[int]int64{}
	for _, m := range kafkatest.ReadAll(t, c.kc, "forecasts") {
		fc, err := wire.DecodeForecastJSON(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if kafkatest.Header(m, wire.HeaderModelVersion) != fmt.Sprint(fc.ModelVersion) {
			t.Errorf("forecast of version %d has header model-version %q", fc.ModelVersion, kafkatest.Header(m, wire.HeaderModelVersion))
		}
		newest[m.Partition] = max(newest[m.Partition], fc.ModelVersion)
	}
	for p := range parts {
		if newest[p] < int64(v) {
			t.Errorf("partition %d (the follower's) has forecasts of version %d at most, want %v", p, newest[p], v)
		}
	}
	a.term()
	b.term()
}

// servingHalf starts one replica on a new cluster and feeds it the first
// half of the steps at the suite's pace, until it serves.
func servingHalf(t *testing.T) (*cluster, *feed, *replica) {
	t.Helper()
	c := newCluster(t)
	f := newFeed(c, nSeries)
	r := start(t, "replica", serveConfig(c.proxy.Addr(), modelFile(t, t.TempDir()), ""))
	f.produce(0, nSteps/2, pace, nil)
	r.waitReady(60 * time.Second)
	return c, f, r
}

// TestMissingTopic: a configured topic the brokers do not have stops the
// service at start with status 2 and one line naming its key, before it
// consumes anything, instead of consuming while every write fails.
func TestMissingTopic(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := strings.Replace(serveConfig(c.proxy.Addr(), modelFile(t, t.TempDir()), ""),
		`topics: {attributions: "", drift: ""}`, `topics: {attributions: "", drift: "", forecasts: forcasts}`, 1)
	r := start(t, "replica", cfg)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not exit within 30s with a missing output topic")
	}
	log := strings.TrimSpace(r.log())
	if r.code != 2 || strings.Count(log, "\n") != 0 || !strings.Contains(log, "topics.forecasts") || !strings.Contains(log, "forcasts") {
		t.Errorf("exit status %d, stderr:\n%s\nwant status 2 and one line naming topics.forecasts", r.code, log)
	}
	t.Log(log)
}

// TestTopicDeletedWhileServing: when the forecasts topic disappears while
// the service runs, its writes fail although the brokers answer: /readyz
// turns 503 and says why, one ERROR line is logged, nothing is committed;
// when the topic is back the writes succeed, one INFO line says so,
// /readyz is 200 and no window is lost.
func TestTopicDeletedWhileServing(t *testing.T) {
	t.Parallel()
	c, f, r := servingHalf(t)
	c.waitCommitted(60*time.Second, r)
	admin := c.kc.Admin(0)
	ctx := t.Context()
	if _, err := admin.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{"forecasts"}}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	f.produce(nSteps/2, nSteps/2+10, pace, nil)
	var body string
	if !eventually(20*time.Second, func() bool {
		code, b := r.get("/readyz")
		body = b
		return code == http.StatusServiceUnavailable
	}) {
		t.Fatalf("/readyz did not turn 503 within 20s of deleting the forecasts topic (kafka.unreachable_after is 3s): %s", body)
	}
	t.Logf("503 %v after the deletion: %s", time.Since(deleted).Round(100*time.Millisecond), strings.TrimSpace(body))
	if !strings.Contains(body, `"delivering":false`) || !strings.Contains(body, "write forecasts") {
		t.Errorf("/readyz body %s does not say the writes fail", body)
	}
	if !eventually(10*time.Second, func() bool { return strings.Contains(r.log(), "writes to kafka keep failing") }) {
		t.Error("no ERROR about failing writes")
	}
	if _, err := admin.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "forecasts", NumPartitions: 3, ReplicationFactor: 1}}}); err != nil {
		t.Fatal(err)
	}
	r.waitReady(60 * time.Second)
	f.produce(nSteps/2+10, nSteps, pace, nil)
	c.waitCommitted(90*time.Second, r)
	log := r.log()
	if n := strings.Count(log, `level=ERROR msg="writes to kafka keep failing`); n != 1 {
		t.Errorf("%d ERROR lines about failing writes, want 1", n)
	}
	if !strings.Contains(log, "writes to kafka succeed again") {
		t.Error("no INFO line when the writes succeeded again")
	}
	r.term()
	// The forecasts written before the deletion went with the topic; every
	// window from the deletion on must be there.
	o := c.checkWindows(f.series, nSteps/2, nSteps)
	if o.lost != 0 || o.unexpected != 0 {
		t.Fatal("the deleted topic lost or invented windows")
	}
}
