package arrowipc

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// stream encodes an IPC stream of fields with one record of one null row
// (every field nullable).
func stream(t *testing.T, mem memory.Allocator, fields []arrow.Field) []byte {
	t.Helper()
	schema := arrow.NewSchema(fields, nil)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	for i := range fields {
		rb.Field(i).AppendNull()
	}
	rec := rb.NewRecord()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func nullable(name string, typ arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: typ, Nullable: true}
}

func read(b []byte, mem memory.Allocator) (rows int64, err error) {
	err = Read(b, mem, func(*arrow.Schema) error { return nil }, func(r arrow.Record) error {
		rows += r.NumRows()
		return nil
	})
	return rows, err
}

// TestRead: a valid stream is read and released; what Arrow could not read
// safely is refused before Arrow sees it; callback errors come back as they
// are.
func TestRead(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ok := stream(t, mem, []arrow.Field{nullable("a", arrow.PrimitiveTypes.Float64), nullable("b", arrow.ListOf(arrow.BinaryTypes.String))})
	if rows, err := read(ok, mem); err != nil || rows != 1 {
		t.Fatalf("a valid stream: %d rows, %v; want 1 row", rows, err)
	}

	var deep arrow.DataType = arrow.PrimitiveTypes.Int64
	for range maxIPCDepth + 2 {
		deep = arrow.ListOf(deep)
	}
	many := []arrow.Field{}
	for i := 0; len(many) <= maxIPCFields; i++ {
		many = append(many, nullable(fmt.Sprint("x", i), arrow.PrimitiveTypes.Int8))
	}
	stop := errors.New("stop")
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{name: "empty", in: nil, want: "empty"},
		{name: "truncated", in: ok[:len(ok)/2], want: "claims"},
		{name: "garbage after the end", in: append(append([]byte(nil), ok...), 1, 2, 3), want: "after the end"},
		{name: fmt.Sprintf("nesting deeper than %d", maxIPCDepth), in: stream(t, mem, []arrow.Field{nullable("deep", deep)}), want: "corrupt"},
		{name: fmt.Sprintf("more than %d fields", maxIPCFields), in: stream(t, mem, many), want: "corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := read(tc.in, mem); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	err := Read(ok, mem, func(*arrow.Schema) error { return stop }, nil)
	if err != stop {
		t.Errorf("Read with a failing schema callback = %v, want its error", err)
	}
}

func TestBudget(t *testing.T) {
	a := &budgetAllocator{mem: memory.NewGoAllocator(), left: 100}
	b := a.Allocate(60)
	b = a.Reallocate(90, b)
	func() {
		defer func() {
			if recover() != errAllocBudget {
				t.Error("allocating past the budget did not panic with errAllocBudget")
			}
		}()
		a.Allocate(20)
	}()
	a.Free(b)
}
