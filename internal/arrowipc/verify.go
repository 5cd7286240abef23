package arrowipc

import "encoding/binary"

// Arrow's Go IPC reader trusts the flatbuffer metadata of a message: it
// makes slices as long as the vectors claim (schema fields, children,
// custom metadata, union type ids) and recurses into children, so a few
// hostile bytes could ask for gigabytes or recurse forever (shared or
// cyclic children), which no recover can stop. verifyMetadata checks a
// message's metadata before Arrow reads it: every table, vector and
// string it reaches lies inside the metadata, nesting is at most
// maxIPCDepth deep and a schema visits at most maxIPCFields fields.
// Record and dictionary batch metadata is read by Arrow through
// bounds-checked accesses (a panic, which Read recovers), so only the
// message table itself is checked for them.

const (
	maxIPCDepth  = 32
	maxIPCFields = 4096
)

// Flatbuffer union tags used below (Message.header, Field.type).
const (
	fbHeaderSchema = 1
	fbTypeTS       = 10 // Timestamp
	fbTypeUnion    = 14 // Union
)

type fbuf []byte

type fbTable struct{ pos, vt, vtLen, size int }

func (b fbuf) u16(p int) (int, bool) {
	if p < 0 || p+2 > len(b) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint16(b[p:])), true
}

func (b fbuf) u32(p int) (uint32, bool) {
	if p < 0 || p+4 > len(b) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[p:]), true
}

// table checks the table at pos and its vtable.
func (b fbuf) table(pos int) (fbTable, bool) {
	so, ok := b.u32(pos)
	if !ok {
		return fbTable{}, false
	}
	vt := pos - int(int32(so))
	vl, ok1 := b.u16(vt)
	size, ok2 := b.u16(vt + 2)
	if !ok1 || !ok2 || vl < 4 || vl%2 != 0 || vt+vl > len(b) || size < 4 || pos+size > len(b) {
		return fbTable{}, false
	}
	return fbTable{pos: pos, vt: vt, vtLen: vl, size: size}, true
}

// field returns the offset of slot's field inside the table, 0 if absent.
func (b fbuf) field(t fbTable, slot int) int {
	o := 4 + 2*slot
	if o+2 > t.vtLen {
		return 0
	}
	off, _ := b.u16(t.vt + o)
	return off
}

// scalar returns the value of a one-byte scalar field (0 if absent).
func (b fbuf) scalar8(t fbTable, slot int) (int, bool) {
	off := b.field(t, slot)
	if off == 0 {
		return 0, true
	}
	if off+1 > t.size {
		return 0, false
	}
	return int(b[t.pos+off]), true
}

// ref follows the offset field in slot.
func (b fbuf) ref(t fbTable, slot int) (target int, present, ok bool) {
	off := b.field(t, slot)
	if off == 0 {
		return 0, false, true
	}
	if off+4 > t.size {
		return 0, true, false
	}
	u, ok := b.u32(t.pos + off)
	if !ok {
		return 0, true, false
	}
	target = t.pos + off + int(u)
	return target, true, target < len(b)
}

// subtable follows the table field in slot.
func (b fbuf) subtable(t fbTable, slot int) (fbTable, bool, bool) {
	target, present, ok := b.ref(t, slot)
	if !present || !ok {
		return fbTable{}, present, ok
	}
	st, ok := b.table(target)
	return st, true, ok
}

// vector follows the vector (or string) field in slot and checks that its
// n elements of elem bytes fit.
func (b fbuf) vector(t fbTable, slot, elem int) (start, n int, ok bool) {
	target, present, ok := b.ref(t, slot)
	if !present || !ok {
		return 0, 0, ok
	}
	l, ok := b.u32(target)
	if !ok {
		return 0, 0, false
	}
	start, n = target+4, int(l)
	if n > (len(b)-start)/elem {
		return 0, 0, false
	}
	return start, n, true
}

// element returns table i of a vector of tables starting at start.
func (b fbuf) element(start, i int) (fbTable, bool) {
	p := start + 4*i
	u, ok := b.u32(p)
	if !ok {
		return fbTable{}, false
	}
	return b.table(p + int(u))
}

// verifyMetadata checks one message's flatbuffer metadata.
func verifyMetadata(meta []byte) bool {
	b := fbuf(meta)
	root, ok := b.u32(0)
	if !ok {
		return false
	}
	msg, ok := b.table(int(root))
	if !ok {
		return false
	}
	if !b.keyValues(msg, 4) { // Message.custom_metadata
		return false
	}
	kind, ok := b.scalar8(msg, 1) // Message.header_type
	if !ok {
		return false
	}
	header, present, ok := b.subtable(msg, 2) // Message.header
	if !ok || kind != fbHeaderSchema {
		return ok
	}
	if !present {
		return false
	}
	budget := maxIPCFields
	return b.fields(header, 1, 0, &budget) && // Schema.fields
		b.keyValues(header, 2) && // Schema.custom_metadata
		b.vectorFits(header, 3, 8) // Schema.features
}

func (b fbuf) vectorFits(t fbTable, slot, elem int) bool {
	_, _, ok := b.vector(t, slot, elem)
	return ok
}

// fields checks the vector of Field tables in slot of t, recursively.
func (b fbuf) fields(t fbTable, slot, depth int, budget *int) bool {
	start, n, ok := b.vector(t, slot, 4)
	if !ok {
		return false
	}
	if n > 0 && depth >= maxIPCDepth {
		return false
	}
	for i := 0; i < n; i++ {
		if *budget--; *budget < 0 {
			return false
		}
		f, ok := b.element(start, i)
		if !ok || !b.field1(f, depth, budget) {
			return false
		}
	}
	return true
}

// field1 checks one Field table.
func (b fbuf) field1(f fbTable, depth int, budget *int) bool {
	if !b.vectorFits(f, 0, 1) { // name
		return false
	}
	kind, ok := b.scalar8(f, 2) // type_type
	if !ok {
		return false
	}
	typ, present, ok := b.subtable(f, 3) // type
	if !ok {
		return false
	}
	if present {
		switch kind {
		case fbTypeTS:
			if !b.vectorFits(typ, 1, 1) { // Timestamp.timezone
				return false
			}
		case fbTypeUnion:
			if !b.vectorFits(typ, 1, 4) { // Union.typeIds
				return false
			}
		}
	}
	dict, present, ok := b.subtable(f, 4) // dictionary
	if !ok {
		return false
	}
	if present {
		if _, _, ok := b.subtable(dict, 1); !ok { // DictionaryEncoding.indexType
			return false
		}
	}
	return b.fields(f, 5, depth+1, budget) && b.keyValues(f, 6) // children, custom_metadata
}

// keyValues checks a vector of KeyValue tables in slot of t.
func (b fbuf) keyValues(t fbTable, slot int) bool {
	start, n, ok := b.vector(t, slot, 4)
	if !ok {
		return false
	}
	for i := 0; i < n; i++ {
		kv, ok := b.element(start, i)
		if !ok || !b.vectorFits(kv, 0, 1) || !b.vectorFits(kv, 1, 1) {
			return false
		}
	}
	return true
}
