// Package defaults fills the zero fields of a configuration from its
// defaults, so that each package writes its defaults once, in its
// DefaultConfig, and its withDefaults is that plus the package's exceptions
// (fields whose zero value means something).
//
// It uses reflection and is meant for construction time, not hot paths. It
// imports the standard library only.
package defaults

import "reflect"

// Fill sets every zero field of *cfg to the same field of def, descending
// into nested structs; slices are copied, so *cfg never shares storage with
// def. Fields of *cfg that are not zero are kept.
func Fill[T any](cfg *T, def T) {
	fill(reflect.ValueOf(cfg).Elem(), reflect.ValueOf(def))
}

func fill(dst, def reflect.Value) {
	if dst.Kind() == reflect.Struct {
		for i := range dst.NumField() {
			if dst.Type().Field(i).IsExported() {
				fill(dst.Field(i), def.Field(i))
			}
		}
		return
	}
	if !dst.IsZero() {
		return
	}
	if def.Kind() == reflect.Slice && !def.IsNil() {
		dst.Set(reflect.AppendSlice(reflect.MakeSlice(def.Type(), 0, def.Len()), def))
		return
	}
	dst.Set(def)
}
