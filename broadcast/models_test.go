package broadcast_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/broadcast"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
)

func modelVersion(t *testing.T, seed uint64, version int64) *model.Model {
	t.Helper()
	// Large enough to need several chunks: ~1.6 MB.
	m, err := model.New(model.Config{Lookback: 96, Horizon: 96, Channels: 1, Mode: model.Independent, Frequencies: 16, TopK: 4}, seed)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Version = version
	return m
}

// newModels returns a Models on the "models" topic, closed when the test ends.
func newModels(t *testing.T, kc *kafkaconn.Client, keep int) *broadcast.Models {
	t.Helper()
	m, err := broadcast.NewModels(kc, "models", keep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestModelsRoundTrip: published versions come back bit for bit, the newest
// complete one wins, and versions beyond keep are tombstoned.
func TestModelsRoundTrip(t *testing.T) {
	kc := kafkatest.Client(t, kafkatest.NewCluster(t, []string{"models"}).ListenAddrs())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pub := newModels(t, kc, 2)
	if m, err := pub.Latest(ctx, nil); err != nil || m != nil {
		t.Fatalf("empty topic: Latest = %v, %v; want nil, nil", m, err)
	}
	var want *model.Model
	for v := int64(1); v <= 3; v++ {
		want = modelVersion(t, uint64(v), v)
		if err := pub.Publish(ctx, want); err != nil {
			t.Fatal(err)
		}
	}
	// A fresh reader, as a restarted service or another replica would be.
	rd := newModels(t, kc, 2)
	got, err := rd.Latest(ctx, func(v int64, err error) { t.Errorf("version %d skipped: %v", v, err) })
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Meta.Version != 3 {
		t.Fatalf("Latest = %v, want version 3", got)
	}
	if !slices.Equal(got.Params().Data, want.Params().Data) {
		t.Error("version 3 read back differs from the published model")
	}

	// Version 1 was tombstoned (keep 2): its manifest's last record is empty.
	last := map[string]int{}
	for _, m := range kafkatest.ReadAll(t, kc, "models") {
		last[string(m.Key)] = len(m.Value)
	}
	if n, ok := last["v1/manifest"]; !ok || n != 0 {
		t.Errorf("v1/manifest: last value %d bytes (present %v), want a tombstone", n, ok)
	}
	if last["v2/manifest"] == 0 || last["v3/manifest"] == 0 {
		t.Error("versions 2 and 3 should keep their manifests")
	}
}

// TestModelsSkipsIncompleteVersion: a version whose publisher died before
// all chunks (or with a manifest that does not match) is passed over for
// the newest complete one.
func TestModelsSkipsIncompleteVersion(t *testing.T) {
	kc := kafkatest.Client(t, kafkatest.NewCluster(t, []string{"models"}).ListenAddrs())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pub := newModels(t, kc, 5)
	good := modelVersion(t, 1, 4)
	if err := pub.Publish(ctx, good); err != nil {
		t.Fatal(err)
	}
	// Version 5: a manifest promising chunks that were never written.
	kafkatest.Produce(t, kc, "models",
		kafka.Message{Key: []byte("v5/chunk/0"), Value: []byte("half a model")},
		kafka.Message{Key: []byte("v5/manifest"), Value: []byte(`{"version":5,"chunks":3,"bytes":900000,"sha256":"00"}`)},
	)
	var skipped []int64
	got, err := pub.Latest(ctx, func(v int64, err error) { skipped = append(skipped, v) })
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Meta.Version != 4 || !slices.Equal(got.Params().Data, good.Params().Data) {
		t.Fatalf("Latest = %v, want the complete version 4", got)
	}
	if len(skipped) != 1 || skipped[0] != 5 {
		t.Errorf("skipped versions %v, want [5]", skipped)
	}
}

func TestModelsRejectsUnpromotedModel(t *testing.T) {
	kc := kafkatest.Client(t, kafkatest.NewCluster(t, []string{"models"}).ListenAddrs())
	pub := newModels(t, kc, 1)
	if err := pub.Publish(context.Background(), modelVersion(t, 1, 0)); err == nil {
		t.Error("Publish accepted a model with version 0")
	}
}

// TestFollowServesNewVersionsLive: a follower started on a topic that holds
// versions 1 and 2, told it serves version 1, gets version 2 from the
// history and then each version published while it runs within seconds,
// bit for bit; a version whose manifest never came is not served.
func TestFollowServesNewVersionsLive(t *testing.T) {
	kc := kafkatest.Client(t, kafkatest.NewCluster(t, []string{"models"}).ListenAddrs())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pub := newModels(t, kc, 5)
	for v := int64(1); v <= 2; v++ {
		if err := pub.Publish(ctx, modelVersion(t, uint64(v), v)); err != nil {
			t.Fatal(err)
		}
	}
	served := make(chan *model.Model, 10)
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- newModels(t, kc, 5).Follow(fctx, 1, func(m *model.Model) { served <- m }, func(v int64, err error) { t.Errorf("version %d skipped: %v", v, err) })
	}()
	next := func(want int64, within time.Duration) {
		t.Helper()
		select {
		case m := <-served:
			if m.Meta.Version != want {
				t.Fatalf("served version %d, want %d", m.Meta.Version, want)
			}
		case <-time.After(within):
			t.Fatalf("version %d not served within %v", want, within)
		}
	}
	next(2, 30*time.Second)

	// A publisher that died after the chunks of version 3: never served.
	m3 := modelVersion(t, 3, 3)
	var buf bytes.Buffer
	if _, err := modelfile.Write(&buf, m3); err != nil {
		t.Fatal(err)
	}
	kafkatest.Produce(t, kc, "models", kafka.Message{Key: []byte("v3/chunk/0"), Value: buf.Bytes()[:broadcast.ModelChunkBytes]})

	want := modelVersion(t, 4, 4)
	published := time.Now()
	if err := pub.Publish(ctx, want); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-served:
		if m.Meta.Version != 4 || !slices.Equal(m.Params().Data, want.Params().Data) {
			t.Fatalf("served version %d, want version 4 bit for bit", m.Meta.Version)
		}
		t.Logf("version 4 served %v after it was published", time.Since(published).Round(time.Millisecond))
		if d := time.Since(published); d > 5*time.Second {
			t.Errorf("version 4 served %v after it was published, want within 5s", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("version 4 not served within 30s of its publication")
	}
	stop()
	if err := <-done; err != context.Canceled {
		t.Errorf("Follow after cancel = %v, want context.Canceled", err)
	}
}
