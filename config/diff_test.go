package config

import "reflect"

// diff names the first field that differs between a and b, "" when none.
func diff(a, b any) string {
	return diffValue("", reflect.ValueOf(a), reflect.ValueOf(b))
}

func diffValue(path string, a, b reflect.Value) string {
	if a.Kind() == reflect.Struct {
		for i := range a.NumField() {
			if d := diffValue(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return path
	}
	return ""
}
