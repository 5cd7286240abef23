package sink

import "testing"

// TestChunkSize: a Write is cut so that every encoder gets a chunk, with
// chunks of at most writeChunk and at least minParallelChunk forecasts (or
// all of them), and the chunks cover the Write.
func TestChunkSize(t *testing.T) {
	for _, tc := range []struct{ n, encoders, want int }{
		{1, 2, 1},
		{64, 2, 64},    // too few to share out
		{65, 2, 64},    // two chunks: 64 and 1
		{100, 2, 64},   // half would be 50, below the floor
		{200, 2, 100},  // one chunk an encoder
		{200, 4, 64},   // four would be 50 each
		{1000, 1, 512}, // one encoder: writeChunk at a time
		{1000, 2, 500},
		{1300, 2, 512},
		{5000, 4, 512},
	} {
		got := chunkSize(tc.n, tc.encoders)
		if got != tc.want {
			t.Errorf("chunkSize(%d, %d) = %d, want %d", tc.n, tc.encoders, got, tc.want)
		}
		if got < 1 || got > writeChunk || (got < minParallelChunk && got != tc.n) {
			t.Errorf("chunkSize(%d, %d) = %d: outside [%d, %d]", tc.n, tc.encoders, got, minParallelChunk, writeChunk)
		}
	}
}
