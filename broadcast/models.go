package broadcast

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/wire"
)

// ModelChunkBytes is the largest piece of a model file in one message:
// well under Kafka's default 1 MB message limit, with room for the key and
// headers. A 32-frequency single-channel model (~3.7 MB) is 15 chunks.
const ModelChunkBytes = 256 << 10

// Models publishes promoted model versions to a topic and reads the newest
// one back, so that a service that starts, or another replica, serves what
// the online learner has learned.
//
// A model file is larger than a Kafka message may be, so version v travels
// as chunks keyed "v<v>/chunk/<i>" and then a manifest keyed
// "v<v>/manifest" that names the chunk count, the byte length and the
// SHA-256 of the whole file. A reader assembles a version only once its
// manifest is there and every chunk matches it, so a publisher that died
// halfway never yields half a model. The topic should be compacted
// (cleanup.policy=compact): after publishing, Models writes tombstones for
// the keys of versions older than the newest keep, and compaction then
// removes them, so the topic holds a bounded number of versions.
//
// A Models may be used by several goroutines: calls are serialised.
type Models struct {
	mu     sync.Mutex
	kc     *kafkaconn.Client
	w      *kafka.Writer
	topic  string
	keep   int
	chunks map[int64]int // versions published or seen, and their chunk counts
}

// modelManifest is the value of a version's manifest message.
type modelManifest struct {
	Version int64  `json:"version"`
	Chunks  int    `json:"chunks"`
	Bytes   int    `json:"bytes"`
	SHA256  string `json:"sha256"`
}

// NewModels returns a publisher and reader of model versions on topic
// through kc, keeping the newest keep versions (at least 1).
func NewModels(kc *kafkaconn.Client, topic string, keep int) (*Models, error) {
	if topic == "" {
		return nil, fmt.Errorf("broadcast: models need a topic")
	}
	w := kc.NewWriter(topic)
	w.BatchTimeout = time.Millisecond
	w.BatchBytes = 2 * ModelChunkBytes
	return &Models{kc: kc, w: w, topic: topic, keep: max(keep, 1), chunks: map[int64]int{}}, nil
}

func chunkKey(version int64, i int) string { return fmt.Sprintf("v%d/chunk/%d", version, i) }
func manifestKey(version int64) string     { return fmt.Sprintf("v%d/manifest", version) }

// Publish writes m, whose Meta.Version must be positive, as a new version,
// then tombstones the versions beyond the newest keep.
func (s *Models) Publish(ctx context.Context, m *model.Model) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := m.Meta.Version
	if v <= 0 {
		return fmt.Errorf("broadcast: publish a model: version %d; only promoted versions (≥ 1) are published", v)
	}
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		return fmt.Errorf("broadcast: publish model version %d: %w", v, err)
	}
	file := buf.Bytes()
	n := (len(file) + ModelChunkBytes - 1) / ModelChunkBytes
	for i := range n {
		part := file[i*ModelChunkBytes : min((i+1)*ModelChunkBytes, len(file))]
		if err := s.w.WriteMessages(ctx, kafka.Message{Key: []byte(chunkKey(v, i)), Value: part}); err != nil {
			return fmt.Errorf("broadcast: publish model version %d, chunk %d of %d: %w", v, i+1, n, err)
		}
	}
	man, _ := json.Marshal(modelManifest{Version: v, Chunks: n, Bytes: len(file), SHA256: sha256Hex(file)})
	if err := s.w.WriteMessages(ctx, kafka.Message{Key: []byte(manifestKey(v)), Value: man,
		Headers: []kafka.Header{{Key: wire.HeaderContentType, Value: []byte("application/json")}}}); err != nil {
		return fmt.Errorf("broadcast: publish model version %d, manifest: %w", v, err)
	}
	s.chunks[v] = n
	return s.forgetOld(ctx)
}

// forgetOld writes tombstones for every known version but the newest keep.
func (s *Models) forgetOld(ctx context.Context) error {
	versions := make([]int64, 0, len(s.chunks))
	for v := range s.chunks {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] > versions[j] })
	for _, v := range versions[min(s.keep, len(versions)):] {
		msgs := []kafka.Message{{Key: []byte(manifestKey(v))}} // the manifest first: a half-deleted version is never complete
		for i := range s.chunks[v] {
			msgs = append(msgs, kafka.Message{Key: []byte(chunkKey(v, i))})
		}
		if err := s.w.WriteMessages(ctx, msgs...); err != nil {
			return fmt.Errorf("broadcast: tombstones for model version %d: %w", v, err)
		}
		delete(s.chunks, v)
	}
	return nil
}

// Latest reads the topic from its start to its current end and returns the
// newest complete version, or nil when there is none. Versions whose
// chunks are missing or do not match their manifest are passed to skipped
// (which may be nil) and passed over.
func (s *Models) Latest(ctx context.Context, skipped func(version int64, err error)) (*model.Model, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs, err := s.readAll(ctx)
	if err != nil {
		return nil, err
	}
	manifests := map[int64]modelManifest{}
	parts := map[int64]map[int][]byte{}
	for _, m := range msgs {
		key := string(m.Key)
		v, rest, ok := parseModelKey(key)
		if !ok {
			continue // not ours: ignore
		}
		switch {
		case rest == "manifest" && len(m.Value) == 0:
			delete(manifests, v)
		case rest == "manifest":
			var man modelManifest
			if err := json.Unmarshal(m.Value, &man); err != nil || man.Version != v {
				if skipped != nil {
					skipped(v, fmt.Errorf("unreadable manifest: %q", m.Value))
				}
				continue
			}
			manifests[v] = man
		case strings.HasPrefix(rest, "chunk/"):
			i, err := strconv.Atoi(strings.TrimPrefix(rest, "chunk/"))
			if err != nil {
				continue
			}
			if parts[v] == nil {
				parts[v] = map[int][]byte{}
			}
			if len(m.Value) == 0 {
				delete(parts[v], i)
			} else {
				parts[v][i] = m.Value
			}
		}
	}
	versions := make([]int64, 0, len(manifests))
	for v, man := range manifests {
		versions = append(versions, v)
		s.chunks[v] = man.Chunks
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] > versions[j] })
	for _, v := range versions {
		m, err := assemble(manifests[v], parts[v])
		if err == nil {
			return m, nil
		}
		if skipped != nil {
			skipped(v, err)
		}
	}
	return nil, nil
}

// parseModelKey splits "v<version>/<rest>".
func parseModelKey(key string) (version int64, rest string, ok bool) {
	head, rest, found := strings.Cut(key, "/")
	if !found || !strings.HasPrefix(head, "v") {
		return 0, "", false
	}
	v, err := strconv.ParseInt(head[1:], 10, 64)
	if err != nil || v <= 0 {
		return 0, "", false
	}
	return v, rest, true
}

// assemble joins a version's chunks and checks them against its manifest.
func assemble(man modelManifest, parts map[int][]byte) (*model.Model, error) {
	var file []byte
	for i := range man.Chunks {
		p, ok := parts[i]
		if !ok {
			return nil, fmt.Errorf("chunk %d of %d is missing", i+1, man.Chunks)
		}
		file = append(file, p...)
	}
	if len(file) != man.Bytes {
		return nil, fmt.Errorf("the chunks hold %d bytes, the manifest %d", len(file), man.Bytes)
	}
	if sha256Hex(file) != man.SHA256 {
		return nil, fmt.Errorf("the chunks do not match the manifest's checksum")
	}
	m, err := model.Decode(file)
	if err != nil {
		return nil, err
	}
	m.Meta.Version = man.Version
	return m, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// readAll returns every message of every partition of the topic, from the
// first retained offset to the end as it was when the call began.
func (s *Models) readAll(ctx context.Context) ([]kafka.Message, error) {
	parts, err := s.kc.Partitions(ctx, s.topic)
	if err != nil {
		return nil, fmt.Errorf("broadcast: models topic: %w (create it, compacted, or leave topics.models empty)", err)
	}
	var out []kafka.Message
	for _, p := range parts {
		err := s.kc.ReadPartition(ctx, s.topic, p.Partition, p.First, p.End, 4*ModelChunkBytes, func(m kafka.Message) error {
			out = append(out, m)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("broadcast: models topic: %w", err)
		}
	}
	return out, nil
}

// Close flushes and closes the writer.
func (s *Models) Close() error { return s.w.Close() }
