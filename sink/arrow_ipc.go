package sink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// The Arrow IPC reader trusts the lengths in its input: it sizes buffers
// from vector lengths and buffer descriptors before checking them against
// the bytes it has, so a few hostile bytes can make it allocate terabytes.
// The decoders therefore read the untrusted stream with the bounds-checked
// flatbuffers reading below: they parse the schema message themselves
// (accepting only the column types of the layouts), check that the record
// batch's nodes and buffers are exactly what that schema needs and lie
// inside its body, and hand the Arrow reader a stream made of a schema they
// encoded themselves and the checked record batch.

// ipcMessage is one encapsulated message of an IPC stream.
type ipcMessage struct {
	meta, body []byte
	raw        []byte // the whole framed message: prefix, metadata, body
}

// The MessageHeader union of Message.fbs.
const (
	headerSchema      = 1
	headerRecordBatch = 3
)

// The Type union of Schema.fbs, the members the layouts use.
const (
	fbTypeInt           = 2
	fbTypeFloatingPoint = 3
	fbTypeUtf8          = 5
	fbTypeTimestamp     = 10
	fbTypeList          = 12
	fbTypeDuration      = 18
)

// readArrow reads the one record batch of an IPC stream and hands it to fn.
func readArrow(data []byte, mem memory.Allocator, fn func(arrow.Record) error) (err error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed arrow ipc stream: %v", p)
		}
	}()
	msgs, err := splitIPC(data)
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return errors.New("the stream has no schema")
	}
	schema, err := parseSchemaMessage(msgs[0].meta)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	switch {
	case len(msgs) == 1:
		return errors.New("the stream holds no record batch")
	case len(msgs) > 2:
		return errors.New("the stream holds more than one record batch")
	}
	if err := checkRecordBatch(msgs[1], schema); err != nil {
		return fmt.Errorf("record batch: %w", err)
	}

	// A stream of a schema encoded here and the checked record batch.
	var stream appendWriter
	w := ipc.NewWriter(&stream, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Close(); err != nil { // the schema and an end-of-stream marker
		return err
	}
	stream.b = append(stream.b[:len(stream.b)-8], msgs[1].raw...)
	stream.b = append(stream.b, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0)

	r, err := ipc.NewReader(bytes.NewReader(stream.b), ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	defer r.Release()
	if !r.Next() {
		if r.Err() != nil {
			return r.Err()
		}
		return errors.New("the stream holds no record batch")
	}
	return fn(r.Record())
}

// splitIPC splits an IPC stream into its messages, checking every length
// against the input. An end-of-stream marker must end the input; a stream
// that just stops after a message is accepted.
func splitIPC(data []byte) ([]ipcMessage, error) {
	var msgs []ipcMessage
	for off := 0; ; {
		if off == len(data) {
			return msgs, nil
		}
		if len(data)-off < 4 {
			return nil, errors.New("truncated message header")
		}
		start := off
		n := binary.LittleEndian.Uint32(data[off:])
		off += 4
		if n == 0xFFFFFFFF {
			if len(data)-off < 4 {
				return nil, errors.New("truncated message length")
			}
			n = binary.LittleEndian.Uint32(data[off:])
			off += 4
		}
		if n == 0 { // end of stream
			if off != len(data) {
				return nil, fmt.Errorf("%d bytes after the end of the stream", len(data)-off)
			}
			return msgs, nil
		}
		if uint64(n) > uint64(len(data)-off) {
			return nil, fmt.Errorf("message metadata of %d bytes, %d left", n, len(data)-off)
		}
		meta := data[off : off+int(n)]
		off += int(n)
		root, ok := fbRoot(meta)
		if !ok {
			return nil, errors.New("malformed message metadata")
		}
		body, _ := fbInt64(meta, root, 3, 0)
		if body < 0 || body > int64(len(data)-off) {
			return nil, fmt.Errorf("message body of %d bytes, %d left", body, len(data)-off)
		}
		msgs = append(msgs, ipcMessage{meta: meta, body: data[off : off+int(body)], raw: data[start : off+int(body)]})
		off += int(body)
	}
}

// parseSchemaMessage reads a Schema message and returns its schema, which
// may only use the column types of the layouts.
func parseSchemaMessage(meta []byte) (*arrow.Schema, error) {
	msg, _ := fbRoot(meta)
	if typ, _ := fbUint8(meta, msg, 1, 0); typ != headerSchema {
		return nil, fmt.Errorf("the first message is of type %d, not a schema", typ)
	}
	s, ok := fbTable(meta, msg, 2)
	if !ok {
		return nil, errors.New("the schema message has no schema")
	}
	if e, _ := fbInt16(meta, s, 0, 0); e != 0 {
		return nil, errors.New("the schema is big-endian")
	}
	start, n, err := fbVector(meta, s, 1, 4)
	if err != nil {
		return nil, fmt.Errorf("fields: %w", err)
	}
	fields := make([]arrow.Field, n)
	for i := range fields {
		t, ok := fbIndirect(meta, start+4*i)
		if !ok {
			return nil, fmt.Errorf("field %d is out of bounds", i)
		}
		if fields[i], err = parseField(meta, t, true); err != nil {
			return nil, fmt.Errorf("field %d: %w", i, err)
		}
	}
	var keys, vals []string
	if _, ok := fbField(meta, s, 2); ok {
		start, n, err := fbVector(meta, s, 2, 4)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		for i := 0; i < n; i++ {
			kv, ok := fbIndirect(meta, start+4*i)
			if !ok {
				return nil, fmt.Errorf("metadata %d is out of bounds", i)
			}
			k, err1 := fbString(meta, kv, 0)
			v, err2 := fbString(meta, kv, 1)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("metadata %d: %w", i, err)
			}
			keys, vals = append(keys, k), append(vals, v)
		}
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md), nil
}

// parseField reads a Field table of one of the layouts' types: utf8, int32,
// int64, float64, timestamp, duration, and (when top) list<float64>.
func parseField(b []byte, t int, top bool) (arrow.Field, error) {
	var f arrow.Field
	var err error
	if f.Name, err = fbString(b, t, 0); err != nil {
		return f, fmt.Errorf("name: %w", err)
	}
	nullable, _ := fbUint8(b, t, 1, 0)
	f.Nullable = nullable != 0
	if _, ok := fbField(b, t, 4); ok {
		return f, errors.New("dictionary-encoded columns are not part of the layouts")
	}
	typ, _ := fbUint8(b, t, 2, 0)
	tt, ok := fbTable(b, t, 3)
	if !ok && typ != fbTypeUtf8 && typ != fbTypeList {
		return f, errors.New("missing type")
	}
	children := 0
	if _, ok := fbField(b, t, 5); ok {
		if _, children, err = fbVector(b, t, 5, 4); err != nil {
			return f, fmt.Errorf("children: %w", err)
		}
	}
	if typ != fbTypeList && children != 0 {
		return f, fmt.Errorf("a column of type %d has children", typ)
	}
	switch typ {
	case fbTypeUtf8:
		f.Type = arrow.BinaryTypes.String
	case fbTypeInt:
		width, _ := fbInt32(b, tt, 0, 0)
		signed, _ := fbUint8(b, tt, 1, 0)
		switch {
		case width == 64 && signed != 0:
			f.Type = arrow.PrimitiveTypes.Int64
		case width == 32 && signed != 0:
			f.Type = arrow.PrimitiveTypes.Int32
		default:
			return f, fmt.Errorf("int of %d bits (signed %v) is not part of the layouts", width, signed != 0)
		}
	case fbTypeFloatingPoint:
		if p, _ := fbInt16(b, tt, 0, 0); p != 2 {
			return f, fmt.Errorf("floating point of precision %d is not part of the layouts", p)
		}
		f.Type = arrow.PrimitiveTypes.Float64
	case fbTypeTimestamp:
		unit, _ := fbInt16(b, tt, 0, 0)
		tz := ""
		if _, ok := fbField(b, tt, 1); ok {
			if tz, err = fbString(b, tt, 1); err != nil {
				return f, fmt.Errorf("timezone: %w", err)
			}
		}
		if unit < 0 || unit > 3 {
			return f, fmt.Errorf("timestamp unit %d", unit)
		}
		f.Type = &arrow.TimestampType{Unit: arrow.TimeUnit(unit), TimeZone: tz}
	case fbTypeDuration:
		unit, _ := fbInt16(b, tt, 0, 1)
		if unit < 0 || unit > 3 {
			return f, fmt.Errorf("duration unit %d", unit)
		}
		f.Type = &arrow.DurationType{Unit: arrow.TimeUnit(unit)}
	case fbTypeList:
		if !top || children != 1 {
			return f, errors.New("only top-level lists of one child are part of the layouts")
		}
		start, _, _ := fbVector(b, t, 5, 4)
		ct, ok := fbIndirect(b, start)
		if !ok {
			return f, errors.New("list child out of bounds")
		}
		elem, err := parseField(b, ct, false)
		if err != nil {
			return f, fmt.Errorf("list child: %w", err)
		}
		if elem.Type.ID() != arrow.FLOAT64 {
			return f, fmt.Errorf("list of %s is not part of the layouts", elem.Type)
		}
		f.Type = arrow.ListOfField(elem)
	default:
		return f, fmt.Errorf("column type %d is not part of the layouts", typ)
	}
	return f, nil
}

// layout counts the field nodes and buffers a record batch of schema has.
func layout(schema *arrow.Schema) (nodes, buffers int) {
	for _, f := range schema.Fields() {
		switch f.Type.ID() {
		case arrow.STRING:
			nodes, buffers = nodes+1, buffers+3 // validity, offsets, data
		case arrow.LIST:
			nodes, buffers = nodes+2, buffers+4 // validity, offsets; child validity, values
		default:
			nodes, buffers = nodes+1, buffers+2 // validity, values
		}
	}
	return nodes, buffers
}

// checkRecordBatch checks that m is an uncompressed record batch with
// exactly the field nodes and buffers of schema, every buffer inside m's
// body and every length and count sane.
func checkRecordBatch(m ipcMessage, schema *arrow.Schema) error {
	msg, _ := fbRoot(m.meta)
	if typ, _ := fbUint8(m.meta, msg, 1, 0); typ != headerRecordBatch {
		return fmt.Errorf("message of type %d after the schema, want a record batch", typ)
	}
	rb, ok := fbTable(m.meta, msg, 2)
	if !ok {
		return errors.New("missing")
	}
	if _, ok := fbField(m.meta, rb, 3); ok {
		return errors.New("compressed record batches are not part of the layouts")
	}
	rows, _ := fbInt64(m.meta, rb, 0, 0)
	if rows < 0 || rows > int64(len(m.body))*8+1 {
		return fmt.Errorf("%d rows in a body of %d bytes", rows, len(m.body))
	}
	wantNodes, wantBuffers := layout(schema)
	start, n, err := fbVector(m.meta, rb, 1, 16)
	if err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	if n != wantNodes {
		return fmt.Errorf("%d field nodes, the schema has %d", n, wantNodes)
	}
	for i := 0; i < n; i++ {
		length := int64(binary.LittleEndian.Uint64(m.meta[start+16*i:]))
		nulls := int64(binary.LittleEndian.Uint64(m.meta[start+16*i+8:]))
		if length < 0 || length > int64(len(m.body))*8+1 || nulls < 0 || nulls > length {
			return fmt.Errorf("field node %d: length %d, null count %d", i, length, nulls)
		}
	}
	start, n, err = fbVector(m.meta, rb, 2, 16)
	if err != nil {
		return fmt.Errorf("buffers: %w", err)
	}
	if n != wantBuffers {
		return fmt.Errorf("%d buffers, the schema has %d", n, wantBuffers)
	}
	for i := 0; i < n; i++ {
		off := int64(binary.LittleEndian.Uint64(m.meta[start+16*i:]))
		length := int64(binary.LittleEndian.Uint64(m.meta[start+16*i+8:]))
		if off < 0 || length < 0 || off > int64(len(m.body)) || length > int64(len(m.body))-off {
			return fmt.Errorf("buffer %d (offset %d, length %d) is outside the body of %d bytes", i, off, length, len(m.body))
		}
	}
	return nil
}

// Bounds-checked flatbuffers reading. A table position is valid once
// fbTable, fbIndirect or fbRoot has returned it.

// fbRoot returns the root table of a flatbuffer.
func fbRoot(b []byte) (int, bool) {
	return fbIndirect(b, 0)
}

// fbIndirect follows the offset stored at pos to a table and checks the
// table's vtable.
func fbIndirect(b []byte, pos int) (int, bool) {
	if pos < 0 || pos > len(b)-4 {
		return 0, false
	}
	t := pos + int(binary.LittleEndian.Uint32(b[pos:]))
	if t < 0 || t > len(b)-4 {
		return 0, false
	}
	vt := t - int(int32(binary.LittleEndian.Uint32(b[t:])))
	if vt < 0 || vt > len(b)-4 {
		return 0, false
	}
	size := int(binary.LittleEndian.Uint16(b[vt:]))
	if size < 4 || size%2 != 0 || vt+size > len(b) {
		return 0, false
	}
	return t, true
}

// fbField returns the position of field id of table t, when present.
func fbField(b []byte, t, id int) (int, bool) {
	vt := t - int(int32(binary.LittleEndian.Uint32(b[t:])))
	size := int(binary.LittleEndian.Uint16(b[vt:]))
	slot := 4 + 2*id
	if slot+2 > size {
		return 0, false
	}
	off := int(binary.LittleEndian.Uint16(b[vt+slot:]))
	if off == 0 {
		return 0, false
	}
	return t + off, true
}

// fbScalar returns the n bytes of field id of table t, or nil when the
// field is absent (its default applies) or out of bounds.
func fbScalar(b []byte, t, id, n int) ([]byte, bool) {
	pos, ok := fbField(b, t, id)
	if !ok {
		return nil, true
	}
	if pos > len(b)-n {
		return nil, false
	}
	return b[pos : pos+n], true
}

func fbUint8(b []byte, t, id int, def uint8) (uint8, bool) {
	v, ok := fbScalar(b, t, id, 1)
	if v == nil {
		return def, ok
	}
	return v[0], true
}

func fbInt16(b []byte, t, id int, def int16) (int16, bool) {
	v, ok := fbScalar(b, t, id, 2)
	if v == nil {
		return def, ok
	}
	return int16(binary.LittleEndian.Uint16(v)), true
}

func fbInt32(b []byte, t, id int, def int32) (int32, bool) {
	v, ok := fbScalar(b, t, id, 4)
	if v == nil {
		return def, ok
	}
	return int32(binary.LittleEndian.Uint32(v)), true
}

func fbInt64(b []byte, t, id int, def int64) (int64, bool) {
	v, ok := fbScalar(b, t, id, 8)
	if v == nil {
		return def, ok
	}
	return int64(binary.LittleEndian.Uint64(v)), true
}

// fbTable returns the table that field id of table t points to.
func fbTable(b []byte, t, id int) (int, bool) {
	pos, ok := fbField(b, t, id)
	if !ok {
		return 0, false
	}
	return fbIndirect(b, pos)
}

// fbVector returns the position of the first element and the length of the
// vector that field id of table t points to, checking that its elements of
// elemSize bytes lie inside b.
func fbVector(b []byte, t, id, elemSize int) (int, int, error) {
	pos, ok := fbField(b, t, id)
	if !ok {
		return 0, 0, nil
	}
	if pos > len(b)-4 {
		return 0, 0, errors.New("vector offset out of bounds")
	}
	v := pos + int(binary.LittleEndian.Uint32(b[pos:]))
	if v < 0 || v > len(b)-4 {
		return 0, 0, errors.New("vector out of bounds")
	}
	n := int(binary.LittleEndian.Uint32(b[v:]))
	if n > (len(b)-v-4)/elemSize {
		return 0, 0, fmt.Errorf("vector of %d elements does not fit", n)
	}
	return v + 4, n, nil
}

// fbString returns the string that field id of table t points to.
func fbString(b []byte, t, id int) (string, error) {
	start, n, err := fbVector(b, t, id, 1)
	if err != nil {
		return "", err
	}
	return string(b[start : start+n]), nil
}
