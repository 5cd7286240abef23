package sink

import (
	"sync"
	"testing"

	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
	"github.com/segmentio/kafka-go"
)

// TestChunkSize: a Write is cut into chunks of even size, as many as
// writeChunk requires or one an encoder when each then holds at least
// minParallelChunk forecasts; no chunk is a small tail.
func TestChunkSize(t *testing.T) {
	for _, tc := range []struct{ n, encoders, want int }{
		{1, 2, 1},
		{64, 2, 64},   // too few to share out
		{65, 2, 65},   // two would leave a chunk below the floor
		{128, 2, 64},  // one chunk an encoder
		{200, 2, 100}, // one chunk an encoder
		{200, 4, 67},  // three of 64 or more, not four
		{1000, 1, 500},
		{1000, 2, 500},
		{1300, 2, 434}, // writeChunk needs three
		{5000, 4, 500},
	} {
		if got := chunkSize(tc.n, tc.encoders); got != tc.want {
			t.Errorf("chunkSize(%d, %d) = %d, want %d", tc.n, tc.encoders, got, tc.want)
		}
	}
	// Every cut: chunks of at most writeChunk, none below minParallelChunk
	// (but for the rounding of an even share) unless the Write is, at most
	// as many as writeChunk or the encoders require, and sizes that differ
	// by less than the number of chunks.
	for _, encoders := range []int{1, 2, 3, 4} {
		for n := 1; n <= 3000; n++ {
			size := chunkSize(n, encoders)
			chunks := (n + size - 1) / size
			last := n - (chunks-1)*size
			if size > writeChunk || last < min(n, minParallelChunk)-chunks || last <= 0 {
				t.Fatalf("n=%d encoders=%d: chunks of %d, the last %d", n, encoders, size, last)
			}
			if most := max((n+writeChunk-1)/writeChunk, encoders); chunks > most {
				t.Fatalf("n=%d encoders=%d: %d chunks, more than %d", n, encoders, chunks, most)
			}
			if size-last >= chunks {
				t.Fatalf("n=%d encoders=%d: chunks of %d and a last one of %d", n, encoders, size, last)
			}
		}
	}
}

// TestChunkBufferSizedOnce: once a chunk has been encoded, a fresh batch's
// buffer is allocated at the size the next chunk needs before encoding, so
// encoding never grows it by copies (a pool's batch may be new: sync.Pool
// drops them at a collection).
func TestChunkBufferSizedOnce(t *testing.T) {
	for _, attributions := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Attributions = wire.AttributionsSummary
		p := &Producer{cfg: cfg, contentType: []byte(cfg.Format.ContentType())}
		if attributions {
			p.attribution = new(kafka.Writer) // encode only asks whether it is set
		}
		p.pool.New = func() any { return &kafkaBatch{} }
		fs := wiretest.Forecasts(7, 300, []string{"value"}, 96, 8)
		first, err := p.encode(fs[:100], 0, 300)
		if err != nil {
			t.Fatal(err)
		}
		if p.perForecast.Load() <= 0 {
			t.Fatalf("attributions %v: no size learnt from the first chunk", attributions)
		}
		// A new batch, as after a collection.
		p.pool = sync.Pool{New: func() any { return &kafkaBatch{} }}
		b, err := p.encode(fs[100:300], 100, 300)
		if err != nil {
			t.Fatal(err)
		}
		if want := int(int64(200) * int64((len(first.buf)+99)/100) * 9 / 8); cap(b.buf) != want || len(b.buf) > cap(b.buf) {
			t.Errorf("attributions %v: a 200-forecast chunk's buffer has cap %d for %d bytes, want it allocated once at %d",
				attributions, cap(b.buf), len(b.buf), want)
		}
	}
}
