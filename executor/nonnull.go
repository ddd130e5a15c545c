package executor

import (
	"reflect"
	"strings"
)

// fillNilLists makes every nil slice or map of a result that its JSON
// always carries (a field without omitempty or omitzero) an empty one, in
// nested structs and lists too: encoding/json would write null, which the
// result's schema does not accept (a list is an array, a map an object;
// see SchemaOptions.Output). v is a pointer to a result struct.
func fillNilLists(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			fillNilLists(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			fillNilLists(v.Index(i))
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf, f := t.Field(i), v.Field(i)
			if !sf.IsExported() || !f.CanSet() {
				continue
			}
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			_, opts, _ := strings.Cut(tag, ",")
			always := !strings.Contains(","+opts+",", ",omitempty,") && !strings.Contains(","+opts+",", ",omitzero,")
			switch {
			case always && f.Kind() == reflect.Slice && f.IsNil():
				f.Set(reflect.MakeSlice(f.Type(), 0, 0))
			case always && f.Kind() == reflect.Map && f.IsNil():
				f.Set(reflect.MakeMap(f.Type()))
			default:
				fillNilLists(f)
			}
		}
	}
}
