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
	"github.com/freqlens/freqlens/modelfile"
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
	if _, err := modelfile.Write(&buf, m); err != nil {
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
	m, err := modelfile.Decode(file)
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

// followWait bounds how long the follower's fetch waits for new messages:
// a version published is served elsewhere within about this long.
const followWait = 500 * time.Millisecond

// Follow tails the topic and calls serve with every complete version newer
// than after, and than any version it delivered before, as soon as its
// manifest and chunks have all arrived, until ctx ends; it then returns
// ctx.Err(). It reads each partition with an offset-tracking reader (a
// kafka-go Reader on the partition, from its first offset), so it reads
// the topic's history once and then only what is published; only the
// chunks of versions not yet complete are kept. Versions that do not
// assemble are passed to skipped (which may be nil). serve and skipped run
// on Follow's goroutine.
func (s *Models) Follow(ctx context.Context, after int64, serve func(*model.Model), skipped func(version int64, err error)) error {
	var parts []kafkaconn.PartitionRange
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		var err error
		if parts, err = s.kc.Partitions(ctx, s.topic); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	msgs := make(chan kafka.Message, 64)
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, p := range parts {
		r, err := s.kc.NewPartitionReader(s.topic, p.Partition, kafka.FirstOffset, kafkaconn.Fetch{MinBytes: 1, MaxBytes: 4 * ModelChunkBytes, MaxWait: followWait})
		if err != nil {
			return fmt.Errorf("broadcast: follow models topic: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Second):
					}
					continue
				}
				select {
				case msgs <- m:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	a := newAssembler(after)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m := <-msgs:
			if v := a.add(m); v > 0 {
				model, err := a.take(v)
				if err != nil {
					if skipped != nil {
						skipped(v, err)
					}
					continue
				}
				serve(model)
			}
		}
	}
}

// assembler gathers the chunks and manifests of versions newer than done.
type assembler struct {
	done      int64
	manifests map[int64]modelManifest
	parts     map[int64]map[int][]byte
}

func newAssembler(done int64) *assembler {
	return &assembler{done: done, manifests: map[int64]modelManifest{}, parts: map[int64]map[int][]byte{}}
}

// add records m and returns the version it completed, or 0.
func (a *assembler) add(m kafka.Message) int64 {
	v, rest, ok := parseModelKey(string(m.Key))
	if !ok || v <= a.done {
		return 0
	}
	switch {
	case rest == "manifest" && len(m.Value) == 0:
		delete(a.manifests, v)
		delete(a.parts, v)
		return 0
	case rest == "manifest":
		var man modelManifest
		if err := json.Unmarshal(m.Value, &man); err != nil || man.Version != v {
			return 0
		}
		a.manifests[v] = man
	case strings.HasPrefix(rest, "chunk/"):
		i, err := strconv.Atoi(strings.TrimPrefix(rest, "chunk/"))
		if err != nil {
			return 0
		}
		if a.parts[v] == nil {
			a.parts[v] = map[int][]byte{}
		}
		if len(m.Value) == 0 {
			delete(a.parts[v], i)
			return 0
		}
		a.parts[v][i] = m.Value
	default:
		return 0
	}
	if man, ok := a.manifests[v]; ok && len(a.parts[v]) >= man.Chunks {
		return v
	}
	return 0
}

// take assembles version v and forgets it and every older version.
func (a *assembler) take(v int64) (*model.Model, error) {
	m, err := assemble(a.manifests[v], a.parts[v])
	if err != nil {
		delete(a.manifests, v) // a later manifest of v may yet complete it
		return nil, err
	}
	a.done = v
	for old := range a.manifests {
		if old <= v {
			delete(a.manifests, old)
		}
	}
	for old := range a.parts {
		if old <= v {
			delete(a.parts, old)
		}
	}
	return m, nil
}
