package fault

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/wire"
)

// stateConfig is the YAML of a replica of group that publishes to
// forecasts with prediction intervals, keeping their calibration on the
// state topic state ("" keeps it in memory) as replica, and saving it
// every second.
func stateConfig(brokers, modelPath, group, forecasts, state, replica string) string {
	y := serveConfig(brokers, modelPath, fmt.Sprintf("online: {enabled: false, calibration_every: 1s, replica: %q}\n", replica))
	y = strings.Replace(y, "kafka:\n", fmt.Sprintf("kafka:\n  group: %s\n", group), 1)
	y = strings.Replace(y, `topics: {attributions: "", drift: ""}`,
		fmt.Sprintf(`topics: {attributions: "", drift: "", forecasts: %q, state: %q}`, forecasts, state), 1)
	return strings.Replace(y, "output: {", "output: {intervals: [0.8, 0.95], ", 1)
}

// widths reads topic's forecasts of version 1 and returns the width of
// each one's 80% band at the horizon's end, by series and step.
func widths(t *testing.T, c *cluster, topic string) map[string]map[int]float64 {
	t.Helper()
	out := map[string]map[int]float64{}
	for _, m := range kafkatest.ReadAll(t, c.kc, topic) {
		f, err := wire.DecodeForecastJSON(m.Value)
		if err != nil {
			t.Fatalf("a forecast on %s: %v", topic, err)
		}
		if len(f.Intervals) == 0 || f.ModelVersion != 1 {
			continue
		}
		k := int(f.TS.Sub(t0) / time.Hour)
		iv := f.Intervals[0]
		if out[f.Series] == nil {
			out[f.Series] = map[int]float64{}
		}
		out[f.Series][k] = iv.Upper[len(iv.Upper)-1] - iv.Lower[len(iv.Lower)-1]
	}
	return out
}

// assignedPartitions is the input partitions of a replica's last
// assignment, from its log.
func assignedPartitions(t *testing.T, r *replica) []int {
	t.Helper()
	ms := regexp.MustCompile(`msg="partitions assigned".* partitions="?\[([0-9 ]*)\]`).FindAllStringSubmatch(r.log(), -1)
	if len(ms) == 0 {
		t.Fatalf("%s logged no assignment", r.name)
	}
	var out []int
	for _, f := range strings.Fields(ms[len(ms)-1][1]) {
		p, _ := strconv.Atoi(f)
		out = append(out, p)
	}
	return out
}

// TestStateTopicThroughAKill runs three replicas of `freqlens serve` that
// keep the series' interval calibration on topics.state, and a reference
// replica in a group of its own that serves every series throughout. One
// of the three is killed with SIGKILL: no window is lost, the survivors
// take the calibration of every series it had from the topic (their log
// says how many; with the topic off they take none, and the test fails),
// and their first bands for the moved series are as close to the
// reference's as the bands of the step before the kill. (That the topic
// restores a series' bands bit for bit, as the files do, is
// online.TestStateTopicKeepsWhatFilesKeep: here the suite's untrained
// model leaves the series' calibrations too alike to tell apart.)
func TestStateTopicThroughAKill(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	for _, topic := range []string{"state", "forecasts-ref"} {
		if err := createTopic(c, topic, 3); err != nil {
			t.Fatal(err)
		}
	}
	modelPath := modelFile(t, t.TempDir())
	cfg := func(replica string) string {
		return stateConfig(c.proxy.Addr(), modelPath, "freqlens", "forecasts", "state", replica)
	}
	f := newFeed(c, nSeries)
	// Series whose errors lie a hundredfold apart: calibration sets each
	// one's band, which the model's quantiles cannot.
	f.rng = rand.New(rand.NewPCG(7, 70))
	f.noise = make([]float64, nSeries)
	for i := range f.noise {
		f.noise[i] = 0.1 * math.Pow(100, f.rng.Float64())
	}
	ref := start(t, "ref", stateConfig(c.proxy.Addr(), modelPath, "ref", "forecasts-ref", "", "ref"))
	// Each replica its own name, as pods have: on one host they would
	// all be named after it.
	rs := []*replica{start(t, "a", cfg("a")), start(t, "b", cfg("b")), start(t, "c", cfg("c"))}
	const killAt, steps = 90, 120
	var victim *replica
	var moved []int
	f.produce(0, steps, pace, func(k int) {
		switch k {
		case 1:
			for _, r := range append(rs, ref) {
				r.waitReady(60 * time.Second)
			}
		case killAt:
			// Two saves after the last step, then the kill: the victim's
			// saved calibration is its latest.
			c.waitCommitted(60*time.Second, rs...)
			time.Sleep(2500 * time.Millisecond)
			for _, r := range rs {
				if ps := assignedPartitions(t, r); len(ps) > 0 && victim == nil {
					victim, moved = r, ps
				}
			}
			victim.kill()
		}
	})
	c.waitCommitted(90*time.Second, rs...)
	for _, r := range rs {
		if r == victim {
			continue
		}
		if !(r.metric("freqlens_online_state_bytes_written_total") > 0) {
			t.Errorf("%s wrote nothing to the state topic (freqlens_online_state_bytes_written_total %v)", r.name, r.metric("freqlens_online_state_bytes_written_total"))
		}
		r.term()
	}
	ref.term()
	if o := c.checkWindows(f.series, lookback-1, steps); o.lost != 0 || o.unexpected != 0 {
		t.Fatal("the kill lost or invented windows")
	}

	// The survivors took the moved series' calibration from the topic.
	nMoved, took := 0, 0
	for _, s := range f.series {
		if slices.Contains(moved, (&kafka.Hash{}).Balance(kafka.Message{Key: []byte(s)}, 0, 1, 2)) {
			nMoved++
		}
	}
	for _, r := range rs {
		if r == victim {
			continue
		}
		for _, m := range regexp.MustCompile(`took the interval calibration of the replica that had them"? series=(\d+)`).FindAllStringSubmatch(r.log(), -1) {
			n, _ := strconv.Atoi(m[1])
			took += n
		}
	}
	if took < nMoved {
		t.Errorf("the survivors took the calibration of %d series from the state topic, want at least the %d the kill moved", took, nMoved)
	}

	// And their bands right after the move are the reference's, as close
	// as the bands before the kill were.
	got, want := widths(t, c, "forecasts"), widths(t, c, "forecasts-ref")
	off := func(k int, movedOnly bool) []float64 {
		var d []float64
		for _, s := range f.series {
			if movedOnly && !slices.Contains(moved, (&kafka.Hash{}).Balance(kafka.Message{Key: []byte(s)}, 0, 1, 2)) {
				continue
			}
			g, w := got[s][k], want[s][k]
			if !(g > 0 && w > 0) {
				t.Fatalf("%s at step %d: bands %v wide here, %v on the reference: want both published", s, k, g, w)
			}
			d = append(d, math.Abs(g-w)/w)
		}
		slices.Sort(d)
		return d
	}
	before, after := off(killAt-1, false), off(killAt, true)
	t.Logf("%s killed (partitions %v, %d series; the survivors took %d series' calibration): band widths off the reference's, the step before the kill a median %.3g, the moved series' first step after %.3g (at most %.3g)",
		victim.name, moved, nMoved, took, before[len(before)/2], after[len(after)/2], after[len(after)-1])
	if m := after[len(after)/2]; m > 2*before[len(before)/2]+0.01 {
		t.Errorf("the moved series' first bands after the kill are a median %.3g off the reference's, want about the %.3g of the step before", m, before[len(before)/2])
	}
}

// createTopic creates topic with partitions on the cluster.
func createTopic(c *cluster, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.kc.Admin(10*time.Second).CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}}})
	if err == nil {
		err = res.Errors[topic]
	}
	return err
}
