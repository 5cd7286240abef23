package online

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/broadcast"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/online/calibration"
)

// stateBroker is a kfake broker whose topics are state topics.
type stateBroker struct {
	kc *kafkaconn.Client
	n  int
}

func newStateBroker(t testing.TB) *stateBroker {
	c := kafkatest.NewCluster(t, nil)
	return &stateBroker{kc: kafkatest.Client(t, c.ListenAddrs())}
}

// topic creates a new state topic of three partitions and returns its name.
func (sb *stateBroker) topic(t testing.TB) string {
	t.Helper()
	sb.n++
	name := fmt.Sprintf("state-%d", sb.n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := sb.kc.Admin(10*time.Second).CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: name, NumPartitions: 3, ReplicationFactor: 1, ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}}}})
	if err == nil {
		err = res.Errors[name]
	}
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// states is a replica's own reader and writer of topic.
func (sb *stateBroker) states(t testing.TB, topic string) *broadcast.States {
	t.Helper()
	s, err := broadcast.NewStates(sb.kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stateLearner returns replica's learner of m at levels, keeping its
// calibration in dir (when not "") or on topic, logging to logs (when not
// nil) and registering its metrics with reg (when not nil).
func (sb *stateBroker) learner(t testing.TB, m *model.Model, dir, topic, replica string, reg prometheus.Registerer, logs *strings.Builder) *Learner {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Intervals, cfg.CheckpointDir, cfg.Replica = []float64{0.8, 0.95}, dir, replica
	var opts []Option
	if topic != "" {
		opts = append(opts, WithStateStore(sb.states(t, topic)))
	}
	if reg != nil {
		opts = append(opts, WithRegisterer(reg))
	}
	if logs != nil {
		opts = append(opts, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	}
	l, err := New(cfg, m, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// sameBits fails unless the widths of the file store's learner (w[0]) and
// the topic's (w[1]) are the same numbers, bit for bit, and published.
func sameBits(t *testing.T, feed *CalibrationFeed, from int, w [][]float64, what string) {
	t.Helper()
	for s := range w[0] {
		f, k := w[0][s], w[1][s]
		if math.IsNaN(f) || math.Float64bits(f) != math.Float64bits(k) {
			t.Fatalf("%s, %s: the band on the state topic is %v wide, with the files %v: want the same, published", what, feed.Sensors[from+s].Name, k, f)
		}
	}
}

// TestStateTopicKeepsWhatFilesKeep: replicas that keep their interval
// calibration on a state topic publish, through a kill -9, a rebalance, a
// SIGTERM and a restart under another name (a new pod), the very bands,
// bit for bit, that replicas sharing a directory publish. The series a
// killed replica had go on from its last save, and the bands there are
// those a replica that never lost them publishes, up to what the kill
// lost: its last minute.
func TestStateTopicKeepsWhatFilesKeep(t *testing.T) {
	const L, H, series = 24, 6, 40
	sb := newStateBroker(t)
	topic, dir := sb.topic(t), t.TempDir()
	m := keepModel(t)
	m.Meta.ErrorQuantiles = UnitErrorQuantiles(H)
	feed := NewCalibrationFeed(L, H, 2*series, rand.New(rand.NewPCG(5, 50)))
	fa, fb := sb.learner(t, m, dir, "", "a", nil, nil), sb.learner(t, m, dir, "", "b", nil, nil)
	ta, tb := sb.learner(t, m, "", topic, "a", nil, nil), sb.learner(t, m, "", topic, "b", nil, nil)
	ref := sb.learner(t, m, "", "", "ref", nil, nil) // serves a's series throughout, keeps nothing
	step := 0
	run := func(steps int, aAlive bool) {
		for range steps {
			if aAlive {
				feed.Observe(step, 0, series, false, fa, ta, ref)
			} else {
				feed.Observe(step, 0, series, false, fb, tb, ref)
			}
			feed.Observe(step, series, 2*series, false, fb, tb)
			step++
		}
	}
	save := func(ls ...*Learner) {
		for _, l := range ls {
			l.adoptCalibrations()
			l.keepCalibration()
		}
	}
	run(200, true)
	save(fa, ta, fb, tb) // the minute's save
	run(3, true)
	// a is killed: no save. Its series move to b, which reads its last
	// save and the last window of each again.
	save(fb, tb)
	w := feed.Observe(step-1, 0, series, true, fb, tb, ref)
	sameBits(t, feed, 0, w, "after the kill")
	var d []float64
	for s := range series {
		d = append(d, math.Abs(w[1][s]-w[2][s])/w[2][s])
	}
	slices.Sort(d)
	if med := d[len(d)/2]; med > 0.1 {
		t.Errorf("the moved series' bands are a median %.3g off those of a replica that kept them, want within 10%%", med)
	}
	run(5, false)
	w = feed.Observe(step, 0, 2*series, false, fb, tb)
	step++
	sameBits(t, feed, 0, w, "five steps on")
	// b stops (SIGTERM: it saves) and starts again as c.
	save(fb, tb)
	fc, tc := sb.learner(t, m, dir, "", "c", nil, nil), sb.learner(t, m, "", topic, "c", nil, nil)
	w = feed.Observe(step-1, 0, 2*series, true, fc, tc, fb)
	sameBits(t, feed, 0, w, "restarted as c")
	for s := range w[0] {
		if w[1][s] != w[2][s] {
			t.Fatalf("%s: restarted as c the band is %v wide, b's %v: want the very band", feed.Sensors[s].Name, w[1][s], w[2][s])
		}
	}
}

// TestStateTopicRecords: a record this build cannot read is skipped,
// counted and said once, and its series start afresh; a replica that
// holds a stale copy of a series another replica took on does not
// overwrite its newer state; a save with no new step writes the pooled
// record alone; a series idle for a lookback and a horizon is deleted by a
// tombstone. (Dropping a gone replica's pooled record waits for
// calibration.GoneAfter of wall time, and is the files' rule: see
// TestStaleCalibrationFilesAreRemoved; calibration.TestTopicStoreDropsGoneReplicas
// drops a gone replica's pooled record.)
func TestStateTopicRecords(t *testing.T) {
	const L, H, series = 24, 6, 10
	sb := newStateBroker(t)
	topic := sb.topic(t)
	m := keepModel(t)
	m.Meta.ErrorQuantiles = UnitErrorQuantiles(H)
	feed := NewCalibrationFeed(L, H, series, rand.New(rand.NewPCG(6, 60)))
	a := sb.learner(t, m, "", topic, "a", nil, nil)
	step := 0
	for ; step < 100; step++ {
		feed.Observe(step, 0, series, false, a)
	}
	a.keepCalibration()
	w := sb.states(t, topic)
	if err := w.Put(context.Background(), []string{feed.Sensors[0].Name, "\x00pool\x00x"}, [][]byte{[]byte("FLS\x07garbage"), []byte("nonsense")}); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	var logs strings.Builder
	b := sb.learner(t, m, "", topic, "b", reg, &logs)
	if got := testutil.ToFloat64(b.met.stateSkipped); got != 2 {
		t.Errorf("freqlens_online_state_records_skipped_total = %v, want the 2 records written unreadable", got)
	}
	if n := strings.Count(logs.String(), "skipping state records"); n != 1 {
		t.Errorf("the unreadable records were said %d times, want once: %s", n, logs.String())
	}
	if len(b.tr.restored) != series-1 {
		t.Errorf("b restored %d series, want the %d whose record is readable", len(b.tr.restored), series-1)
	}

	// b takes the series on; a, which still holds them, saves again and
	// must not overwrite b's states.
	for range 3 {
		feed.Observe(step, 0, series, false, b)
		step++
	}
	b.keepCalibration()
	a.adoptCalibrations()
	a.keepCalibration()
	vals, err := sb.states(t, topic).Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range feed.Sensors[1:] {
		replica, s, err := calibration.DecodeSeriesRecord(vals[sn.Name])
		if err != nil || replica != "b" || s.Last != stepOf(feed.t0)+int64(step-1) {
			t.Errorf("%s: the topic holds the state of replica %q last seen at %d (%v), want b's at %d", sn.Name, replica, s.Last, err, stepOf(feed.t0)+int64(step-1))
		}
	}
	before := testutil.ToFloat64(b.met.stateBytes)

	// Only a's series' records changed: a save with nothing new writes
	// its pooled record alone.
	b.keepCalibration()
	if grew := testutil.ToFloat64(b.met.stateBytes) - before; grew > 4096 {
		t.Errorf("a save with no new step wrote %v bytes, want only the pooled record", grew)
	}

	// A lookback and a horizon later, with the series gone quiet but
	// one, b's next save deletes them.
	for range L + H + 1 {
		feed.Observe(step, 0, 1, false, b)
		step++
	}
	b.keepCalibration()
	vals, err = sb.states(t, topic).Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range feed.Sensors[1:] {
		if _, ok := vals[sn.Name]; ok {
			t.Errorf("%s, idle for L+H steps, is still on the topic", sn.Name)
		}
	}
	if _, ok := vals[feed.Sensors[0].Name]; !ok {
		t.Errorf("%s, still served, is gone from the topic", feed.Sensors[0].Name)
	}
}

// BenchmarkStateTopic measures the state topic at 10,000 series (L = 24,
// H = 6, two levels, one channel): the bytes a save writes per series
// when every series moved on a step (at online.calibration_every's
// default of a minute, the bytes per series per minute), and the time a
// starting replica takes to restore them all. Run with
// go test -run '^$' -bench StateTopic -benchtime 3x ./online/.
func BenchmarkStateTopic(b *testing.B) {
	const L, H, series = 24, 6, 10000
	sb := newStateBroker(b)
	m, err := model.New(model.Config{Lookback: L, Horizon: H, Channels: 1, Mode: model.Independent, Frequencies: 4, TopK: 2}, 1)
	if err != nil {
		b.Fatal(err)
	}
	m.Meta.Cadence = time.Hour
	m.Meta.ErrorQuantiles = UnitErrorQuantiles(H)
	var restore time.Duration
	var perSeries float64
	for i := range b.N {
		topic := sb.topic(b)
		feed := NewCalibrationFeed(L, H, series, rand.New(rand.NewPCG(uint64(i), 9)))
		reg := prometheus.NewRegistry()
		a := sb.learner(b, m, "", topic, "a", reg, nil)
		step := 0
		for ; step < 40; step++ {
			feed.Observe(step, 0, series, false, a)
		}
		a.keepCalibration()
		before := testutil.ToFloat64(a.met.stateBytes)
		feed.Observe(step, 0, series, false, a)
		a.keepCalibration()
		perSeries += (testutil.ToFloat64(a.met.stateBytes) - before) / series
		start := time.Now()
		r := sb.learner(b, m, "", topic, "b", nil, nil)
		restore += time.Since(start)
		if len(r.tr.restored) != series {
			b.Fatalf("restored %d series, want %d", len(r.tr.restored), series)
		}
	}
	b.ReportMetric(perSeries/float64(b.N), "bytes/series/save")
	b.ReportMetric(restore.Seconds()/float64(b.N), "restore-s")
	b.ReportMetric(0, "ns/op")
}
