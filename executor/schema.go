package executor

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Kind is the structural kind of a schema field, for building forms and
// platform command options.
type Kind string

// Field kinds.
const (
	KindString Kind = "string"
	KindInt    Kind = "int"
	KindNumber Kind = "number"
	KindBool   Kind = "bool"
	KindEnum   Kind = "enum"
	KindList   Kind = "list"
	KindMap    Kind = "map"
	KindObject Kind = "object"
	KindAny    Kind = "any"
)

// Enum is implemented by named string types whose values form a closed set;
// the schema shows them as a union of string literals.
type Enum interface{ Values() []string }

// Field is one property of an argument or result type.
type Field struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"` // IDL type spec, such as "string", "DirEntry[]"
	Kind        Kind     `json:"kind"`
	Elem        Kind     `json:"elem,omitempty"` // element kind of a list or map
	Required    bool     `json:"required"`
	Description string   `json:"description,omitempty"`
	Default     string   `json:"default,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	// Positional marks an optional field the chat grammar fills by
	// position after the required ones (tag `positional:"true"`): one of
	// two ways to call a verb, such as fs.readRange's startLine and
	// endLine beside lastLines.
	Positional bool `json:"positional,omitempty"`
}

// TypeSchema is a struct type: its name and fields in declaration order.
type TypeSchema struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Fields      []Field `json:"fields"`
}

// VerbSchema describes a verb: its structured argument and result types and
// their IDL, derived from the Go types by reflection.
type VerbSchema struct {
	Name     string `json:"name"`
	Summary  string `json:"summary"`
	ReadOnly bool   `json:"readOnly"`
	// TakesFile and ChatOnly are the verb's Info.
	TakesFile bool       `json:"takesFile,omitempty"`
	ChatOnly  bool       `json:"chatOnly,omitempty"`
	Arguments TypeSchema `json:"arguments"`
	Result    TypeSchema `json:"result"`
	IDL       string     `json:"idl"` // arguments then result, each type once
}

// Describer is implemented by argument or result types that want a
// description line above their IDL type.
type Describer interface{ Description() string }

// Schema returns the schema of the named verb.
func (r *Registry) Schema(name string) (VerbSchema, bool) {
	reg, ok := r.lookup(name)
	if !ok {
		return VerbSchema{}, false
	}
	return reg.schema(), true
}

// Schemas returns the schema of every verb, sorted by name.
func (r *Registry) Schemas() []VerbSchema {
	var out []VerbSchema
	for _, info := range r.Verbs() {
		s, _ := r.Schema(info.Name)
		out = append(out, s)
	}
	return out
}

func (reg *registration) schema() VerbSchema {
	reg.schemaOnce.Do(func() {
		b := newIDLBuilder()
		b.add(reg.argsType)
		b.add(reg.resultType)
		reg.cached = VerbSchema{
			Name:      reg.info.Name,
			Summary:   reg.info.Summary,
			ReadOnly:  reg.info.ReadOnly,
			TakesFile: reg.info.TakesFile,
			ChatOnly:  reg.info.ChatOnly,
			Arguments: b.types[reg.argsType],
			Result:    b.types[reg.resultType],
			IDL:       b.String(),
		}
		if reg.alias != nil {
			reg.cached.Arguments = reg.aliasSchema()
			reg.cached.IDL = typeIDL(reg.cached.Arguments) + reg.cached.IDL
		}
	})
	return reg.cached
}

// IDL renders the types reachable from t in the schema IDL (`hub schema`,
// docs/mcp.md), each type once.
func IDL(types ...reflect.Type) string {
	b := newIDLBuilder()
	for _, t := range types {
		b.add(t)
	}
	return b.String()
}

type idlBuilder struct {
	order []reflect.Type
	types map[reflect.Type]TypeSchema
	specs map[reflect.Type]string
}

func newIDLBuilder() *idlBuilder {
	return &idlBuilder{types: map[reflect.Type]TypeSchema{}, specs: map[reflect.Type]string{}}
}

var (
	enumType    = reflect.TypeFor[Enum]()
	timeType    = reflect.TypeFor[time.Time]()
	rawType     = reflect.TypeFor[json.RawMessage]()
	durType     = reflect.TypeFor[time.Duration]()
	describType = reflect.TypeFor[Describer]()
)

// spec returns the IDL type spec of t and its kind, registering struct types.
func (b *idlBuilder) spec(t reflect.Type) (string, Kind) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(enumType) && t.Kind() == reflect.String {
		vals := reflect.Zero(t).Interface().(Enum).Values()
		q := make([]string, len(vals))
		for i, v := range vals {
			q[i] = fmt.Sprintf("%q", v)
		}
		return strings.Join(q, " | "), KindEnum
	}
	switch t {
	case timeType:
		return "datetime", KindString
	case rawType:
		return "any", KindAny
	case durType:
		return "duration", KindString
	}
	switch t.Kind() {
	case reflect.String:
		return "string", KindString
	case reflect.Bool:
		return "bool", KindBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return "int", KindInt
	case reflect.Int64, reflect.Uint, reflect.Uint64:
		return "long", KindInt
	case reflect.Float32, reflect.Float64:
		return "number", KindNumber
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string", KindString // base64, as encoding/json does
		}
		es, _ := b.spec(t.Elem())
		if strings.Contains(es, " | ") {
			es = "(" + es + ")"
		}
		return es + "[]", KindList
	case reflect.Map:
		ks, _ := b.spec(t.Key())
		vs, _ := b.spec(t.Elem())
		return fmt.Sprintf("{ [key: %s]: %s }", ks, vs), KindMap
	case reflect.Struct:
		b.add(t)
		return t.Name(), KindObject
	case reflect.Interface:
		return "any", KindAny
	}
	return t.String(), KindAny
}

func elemKind(b *idlBuilder, t reflect.Type) Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		_, k := b.spec(t.Elem())
		return k
	}
	return ""
}

// add registers struct type t (once) and the structs it references.
func (b *idlBuilder) add(t reflect.Type) {
	if t == nil {
		return // an alias's arguments have no Go type
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	if _, ok := b.specs[t]; ok {
		return
	}
	b.specs[t] = t.Name()
	b.order = append(b.order, t)
	ts := TypeSchema{Name: t.Name()}
	if t.Implements(describType) {
		ts.Description = reflect.Zero(t).Interface().(Describer).Description()
	}
	b.types[t] = ts // placeholder so recursive references terminate
	ts.Fields = b.fields(t)
	b.types[t] = ts
}

func (b *idlBuilder) fields(t reflect.Type) []Field {
	var out []Field
	for _, sf := range jsonFields(t) {
		spec, kind := b.spec(sf.Type)
		f := Field{
			Name:        sf.name,
			Type:        spec,
			Kind:        kind,
			Elem:        elemKind(b, sf.Type),
			Required:    sf.required,
			Description: sf.Tag.Get("desc"),
			Default:     sf.Tag.Get("default"),
			Positional:  !sf.required && sf.Tag.Get("positional") == "true",
		}
		if kind == KindEnum {
			ft := sf.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			f.Enum = reflect.Zero(ft).Interface().(Enum).Values()
		}
		out = append(out, f)
	}
	return out
}

// String renders every registered type in the schema IDL:
//
//	// description
//	type Name
//	{
//	  // field description
//	  field?: type
//	}
func (b *idlBuilder) String() string {
	var sb strings.Builder
	for _, t := range b.order {
		writeType(&sb, b.types[t])
	}
	return sb.String()
}

// typeIDL is one type in the schema IDL.
func typeIDL(ts TypeSchema) string {
	var sb strings.Builder
	writeType(&sb, ts)
	return sb.String()
}

func writeType(sb *strings.Builder, ts TypeSchema) {
	if ts.Description != "" {
		sb.WriteString("// " + ts.Description + "\n")
	}
	sb.WriteString("type " + ts.Name + "\n{\n")
	for _, f := range ts.Fields {
		if f.Description != "" || f.Default != "" {
			d := f.Description
			if f.Default != "" {
				if d != "" {
					d += " "
				}
				d += "(default: " + f.Default + ")"
			}
			sb.WriteString("  // " + d + "\n")
		}
		name := f.Name
		if !f.Required {
			name += "?"
		}
		sb.WriteString("  " + name + ": " + f.Type + "\n")
	}
	sb.WriteString("}\n")
}

// structField is a JSON-visible field with its resolved name and requiredness.
type structField struct {
	reflect.StructField
	name     string
	required bool
}

// jsonFields lists the fields encoding/json would see on struct t, in order,
// flattening untagged embedded structs. A field is required when it is not a
// pointer and has no omitempty/omitzero option.
func jsonFields(t reflect.Type) []structField {
	var out []structField
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			optional := sf.Type.Kind() == reflect.Pointer || strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
			out = append(out, structField{StructField: sf, name: name, required: !optional})
		}
	}
	walk(t)
	return out
}
