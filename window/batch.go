package window

import (
	"fmt"
	"time"
)

// Batch holds ready windows, one entry per window in each slice. It is
// filled by Set.Append and reused across calls: Reset empties it and keeps
// its storage, so a warm Batch costs no allocation.
type Batch struct {
	// Series is the series id of each window. The strings are the Set's own
	// keys; they stay valid after the series expires.
	Series []string
	// End is the time of the last step of each window, aligned to the
	// cadence, in UTC.
	End []time.Time
	// Values holds n·L·C numbers, window after window; each window is
	// row-major (step, then channel), oldest step first: the model's input
	// layout.
	Values []float64
	// Ingest is the ingest_ts of the reading that completed each window (for
	// end-to-end latency), in UTC.
	Ingest []time.Time
	// Rows is the record row of the reading that completed each window, so
	// that the caller can trace a window back to its message.
	Rows []int
	// OutOfRange lists the record rows Append refused as out of range (see
	// Config.MaxJump), in the order it met them; they are not windows.
	OutOfRange []int
	// TooLate lists the record rows too late to update their step (see
	// Config.AllowedLateness), in the order Append met them, when
	// Config.Late is LateDeadLetter; they are not windows.
	TooLate []int
	// TooLateBy is, for each row of TooLate, how many steps its reading's
	// step lies behind its series' newest step, for the dead letter to say.
	TooLateBy []int64
}

// Len returns the number of windows in b.
func (b *Batch) Len() int { return len(b.Series) }

// Reset empties b and keeps its storage.
func (b *Batch) Reset() {
	b.Series = b.Series[:0]
	b.End = b.End[:0]
	b.Values = b.Values[:0]
	b.Ingest = b.Ingest[:0]
	b.Rows = b.Rows[:0]
	b.OutOfRange = b.OutOfRange[:0]
	b.TooLate = b.TooLate[:0]
	b.TooLateBy = b.TooLateBy[:0]
}

// Window returns the L·C values of window i, a view into b.Values that is
// valid until b is reset or appended to. It panics if i is out of range.
func (b *Batch) Window(i int) []float64 {
	if i < 0 || i >= len(b.Series) {
		panic(fmt.Sprintf("window: Batch.Window(%d) out of range [0, %d)", i, len(b.Series)))
	}
	n := len(b.Values) / len(b.Series)
	return b.Values[i*n : (i+1)*n : (i+1)*n]
}
