package executor

import (
	"reflect"
	"strings"
	"sync"
)

// fillNilLists makes every nil slice or map of a result that its JSON
// always carries (a field without omitempty or omitzero) an empty one, in
// nested structs and lists too: encoding/json would write null, which the
// result's schema does not accept (a list is an array, a map an object;
// see SchemaOptions.Output). v is a pointer to a result struct.
func fillNilLists(v reflect.Value) {
	if !v.IsValid() || !mayHoldLists(v.Type()) {
		return // nothing below can be a nil list: a list of 10,000 plain entries is not walked
	}
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

// listPlans caches mayHoldLists per type.
var listPlans sync.Map // reflect.Type → bool

// mayHoldLists reports whether a value of type t can hold a slice or map
// that fillNilLists fills: a struct field of slice or map kind, or such a
// field further down (through pointers, slices and struct fields). An
// interface may hold anything. A type that refers to itself is taken to
// hold one while it is being decided.
func mayHoldLists(t reflect.Type) bool {
	if v, ok := listPlans.Load(t); ok {
		return v.(bool)
	}
	listPlans.Store(t, true) // a cycle back to t finds "maybe"
	holds := decideHoldsLists(t)
	listPlans.Store(t, holds)
	return holds
}

func decideHoldsLists(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice:
		return mayHoldLists(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() || sf.Tag.Get("json") == "-" {
				continue
			}
			if k := sf.Type.Kind(); k == reflect.Slice || k == reflect.Map || mayHoldLists(sf.Type) {
				return true
			}
		}
	}
	return false
}
