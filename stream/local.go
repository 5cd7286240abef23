package stream

import (
	"context"

	"github.com/apache/arrow/go/v17/arrow"
)

// LocalHooks are what a local batch does where a consumer's batch reaches
// Kafka: Commit marks the batch done, Refuse receives the rows the pipeline
// dead-letters (all of them for DeadLetter) with the reason and cause.
// Either may be nil.
type LocalHooks struct {
	Commit func(ctx context.Context) error
	Refuse func(rows []int, reason string, cause error)
}

// Local returns a live batch of rec's rows that no consumer delivered:
// readings of the past replayed through the pipeline (package backtest),
// every row of partition part and offset its row index. The batch owns rec.
// Its Commit and dead-letter methods call hooks instead of committing
// offsets and writing the dead-letter topic.
func Local(rec arrow.Record, part int, hooks LocalHooks) *Batch {
	n := int(rec.NumRows())
	b := &Batch{Record: rec, Messages: n, rowPart: make([]int32, n), rowOff: make([]int64, n), local: &hooks}
	for i := range n {
		b.rowPart[i], b.rowOff[i] = int32(part), int64(i)
	}
	return b
}

// localCommit is Commit of a local batch.
func (b *Batch) localCommit(ctx context.Context) error {
	if b.local.Commit == nil {
		return nil
	}
	return b.local.Commit(ctx)
}

// localRefuse hands rows (every row when rows is nil) to the Refuse hook
// and returns how many it handed.
func (b *Batch) localRefuse(rows []int, reason string, cause error) int {
	if rows == nil {
		rows = make([]int, len(b.rowOff))
		for i := range rows {
			rows[i] = i
		}
	}
	if b.local.Refuse != nil && len(rows) > 0 {
		b.local.Refuse(rows, reason, cause)
	}
	return len(rows)
}
