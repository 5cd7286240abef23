package arrowipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// MaxAlloc bounds what reading one IPC stream of n bytes may allocate,
// decompressed buffers included.
func MaxAlloc(n int) int { return 16<<20 + 64*n }

// Read reads the Arrow IPC stream in b (a schema message, then record
// batches, optionally an end-of-stream marker, nothing after it). It first
// checks the framing and the flatbuffer metadata (Check), then reads with
// Arrow's reader, allocating from mem (memory.DefaultAllocator when nil) at
// most MaxAlloc(len(b)) bytes and releasing everything before it returns. schema is called once with the stream's schema before any record;
// record is called with every record batch in order, valid only during the
// call (Retain it to keep it). Read stops at the first error of a callback
// and returns it as it is; its own errors describe the corrupt input. A
// panic inside Arrow's reader or a callback (for example an offset that
// points outside its buffer) is recovered and returned as an error, so bytes
// from Kafka never crash the process.
func Read(b []byte, mem memory.Allocator, schema func(*arrow.Schema) error, record func(arrow.Record) error) (err error) {
	if err := Check(b); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid Arrow IPC stream: %v", r)
		}
	}()
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	budget := &budgetAllocator{mem: mem, left: MaxAlloc(len(b))}
	rdr, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(budget))
	if err != nil {
		return fmt.Errorf("invalid Arrow IPC stream: %w", err)
	}
	defer rdr.Release()
	if err := schema(rdr.Schema()); err != nil {
		return err
	}
	for rdr.Next() {
		if err := record(rdr.Record()); err != nil {
			return err
		}
	}
	if err := rdr.Err(); err != nil {
		return fmt.Errorf("invalid Arrow IPC stream: %w", err)
	}
	return nil
}

// Check walks the messages of an IPC stream (continuation marker, metadata
// length, metadata, body) and checks that every length fits in b, that the
// metadata is safe for Arrow to read (see verifyMetadata) and that nothing
// follows the end-of-stream marker.
func Check(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty message, want an Arrow IPC stream")
	}
	p := 0
	for p < len(b) {
		if len(b)-p < 4 {
			return fmt.Errorf("the Arrow IPC stream is truncated at byte %d", p)
		}
		cid := binary.LittleEndian.Uint32(b[p:])
		p += 4
		var n int
		switch cid {
		case 0:
			return trailing(b, p)
		case 0xFFFFFFFF:
			if len(b)-p < 4 {
				return fmt.Errorf("the Arrow IPC stream is truncated at byte %d", p)
			}
			n = int(int32(binary.LittleEndian.Uint32(b[p:])))
			p += 4
			if n == 0 {
				return trailing(b, p)
			}
		default:
			n = int(int32(cid)) // pre-0.15 framing without the marker
		}
		if n < 0 || n > len(b)-p {
			return fmt.Errorf("the Arrow IPC message metadata at byte %d claims %d bytes, %d remain", p, n, len(b)-p)
		}
		body, ok := messageBodyLength(b[p : p+n])
		if !ok || !verifyMetadata(b[p:p+n]) {
			return fmt.Errorf("the Arrow IPC message metadata at byte %d is corrupt", p)
		}
		p += n
		if body < 0 || body > int64(len(b)-p) {
			return fmt.Errorf("the Arrow IPC message body at byte %d claims %d bytes, %d remain", p, body, len(b)-p)
		}
		p += int(body)
	}
	return nil
}

func trailing(b []byte, p int) error {
	if p != len(b) {
		return fmt.Errorf("%d bytes after the end of the Arrow IPC stream", len(b)-p)
	}
	return nil
}

// messageBodyLength reads Message.bodyLength (field 3, vtable slot 10) of
// an IPC message's flatbuffer without trusting any offset.
func messageBodyLength(m []byte) (int64, bool) {
	if len(m) < 4 {
		return 0, false
	}
	table := int64(binary.LittleEndian.Uint32(m))
	if table+4 > int64(len(m)) {
		return 0, false
	}
	vtable := table - int64(int32(binary.LittleEndian.Uint32(m[table:])))
	if vtable < 0 || vtable+4 > int64(len(m)) {
		return 0, false
	}
	vlen := int64(binary.LittleEndian.Uint16(m[vtable:]))
	if vlen < 4 || vtable+vlen > int64(len(m)) {
		return 0, false
	}
	if vlen < 12 {
		return 0, true
	}
	off := int64(binary.LittleEndian.Uint16(m[vtable+10:]))
	if off == 0 {
		return 0, true
	}
	if table+off+8 > int64(len(m)) {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(m[table+off:])), true
}

// errAllocBudget is the panic of a budgetAllocator over its budget.
var errAllocBudget = errors.New("an Arrow message needs more memory than its size allows")

// budgetAllocator fails (by panicking, which Arrow's reader or Read
// recovers) once more than left bytes have been asked for.
type budgetAllocator struct {
	mem  memory.Allocator
	left int
}

func (a *budgetAllocator) Allocate(n int) []byte {
	if n < 0 || n > a.left {
		panic(errAllocBudget)
	}
	a.left -= n
	return a.mem.Allocate(n)
}

func (a *budgetAllocator) Reallocate(n int, b []byte) []byte {
	if grow := n - len(b); n < 0 || grow > a.left {
		panic(errAllocBudget)
	} else if grow > 0 {
		a.left -= grow
	}
	return a.mem.Reallocate(n, b)
}

func (a *budgetAllocator) Free(b []byte) { a.mem.Free(b) }
