package executor

import (
	"slices"
	"strconv"
	"strings"
)

// JSONSchema is a JSON Schema (draft 2020-12) as a JSON object, ready to
// marshal.
type JSONSchema = map[string]any

// SchemaOptions tune the conversion from a TypeSchema to JSON Schema.
type SchemaOptions struct {
	// Output describes values the hub produces. Like input schemas, they
	// accept no null (a type of [X, "null"] is not portable: strict
	// validators refuse it): a list or map a result always carries is
	// empty rather than null (the executor fills nil ones in), and an
	// optional field is left out rather than null (omitempty).
	Output bool
}

// JSONSchemaOf converts ts to JSON Schema: an object with one property per
// field (its JSON type, description, enum values and typed default) and the
// required fields. types resolves the struct types that fields name (the
// IDL's type specs, such as "DirEntry[]"); they are inlined, not referenced,
// because many clients do not follow $ref. A type that refers to itself is
// cut short as a plain object.
func JSONSchemaOf(ts TypeSchema, types map[string]TypeSchema, opts SchemaOptions) JSONSchema {
	c := schemaConv{types: types, opts: opts, open: map[string]bool{}}
	return c.object(ts)
}

// JSONSchemas returns the JSON Schemas of the named verb's arguments and
// result. The result schema requires only "succeeded" of a failed result
// (which carries errorCode and errorMessage and nothing else) and every
// required field of a succeeded one.
func (r *Registry) JSONSchemas(name string) (args, result JSONSchema, ok bool) {
	reg, ok := r.lookup(name)
	if !ok {
		return nil, nil, false
	}
	b := newIDLBuilder()
	b.add(reg.argsType)
	b.add(reg.resultType)
	types := make(map[string]TypeSchema, len(b.types))
	for _, ts := range b.types {
		types[ts.Name] = ts
	}
	args = JSONSchemaOf(b.types[reg.argsType], types, SchemaOptions{})
	if reg.alias != nil {
		args = JSONSchemaOf(reg.aliasSchema(), types, SchemaOptions{})
	}
	result = JSONSchemaOf(b.types[reg.resultType], types, SchemaOptions{Output: true})
	if req, _ := result["required"].([]string); len(req) > 0 {
		result["required"] = []string{"succeeded"}
		result["if"] = JSONSchema{"properties": JSONSchema{"succeeded": JSONSchema{"const": true}}}
		result["then"] = JSONSchema{"required": req}
	}
	return args, result, true
}

type schemaConv struct {
	types map[string]TypeSchema
	opts  SchemaOptions
	open  map[string]bool // struct types being converted, against cycles
}

func (c *schemaConv) object(ts TypeSchema) JSONSchema {
	s := JSONSchema{"type": "object"}
	if ts.Description != "" {
		s["description"] = ts.Description
	}
	if ts.Name != "" {
		if c.open[ts.Name] {
			return s
		}
		c.open[ts.Name] = true
		defer delete(c.open, ts.Name)
	}
	props := JSONSchema{}
	var required []string
	for _, f := range ts.Fields {
		props[f.Name] = c.field(f)
		if f.Required {
			required = append(required, f.Name)
		}
	}
	s["properties"] = props
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func (c *schemaConv) field(f Field) JSONSchema {
	s := c.spec(f.Type)
	if f.Kind == KindEnum && len(f.Enum) > 0 {
		s = JSONSchema{"type": "string", "enum": slices.Clone(f.Enum)}
	}
	desc := f.Description
	if f.Default != "" {
		if v, ok := typedDefault(f); ok {
			s["default"] = v
		} else {
			// A default that is a behaviour, not a value ("create or overwrite").
			if desc != "" {
				desc += " "
			}
			desc += "(default: " + f.Default + ")"
		}
	}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

// typedDefault parses a field's default tag as a value of the field's type.
func typedDefault(f Field) (any, bool) {
	switch f.Kind {
	case KindBool:
		b, err := strconv.ParseBool(f.Default)
		return b, err == nil
	case KindInt:
		n, err := strconv.ParseInt(f.Default, 10, 64)
		return n, err == nil
	case KindNumber:
		n, err := strconv.ParseFloat(f.Default, 64)
		return n, err == nil
	case KindEnum:
		return f.Default, slices.Contains(f.Enum, f.Default)
	case KindString:
		return f.Default, true
	}
	return nil, false
}

// spec converts an IDL type spec ("string", "long", "DirEntry[]",
// `"a" | "b"`, "{ [key: string]: int }", a struct name) to JSON Schema.
func (c *schemaConv) spec(spec string) JSONSchema {
	spec = strings.TrimSpace(spec)
	switch {
	case strings.HasSuffix(spec, "[]"):
		elem := strings.TrimSuffix(spec, "[]")
		if strings.HasPrefix(elem, "(") && strings.HasSuffix(elem, ")") {
			elem = elem[1 : len(elem)-1]
		}
		return JSONSchema{"type": "array", "items": c.spec(elem)}
	case strings.HasPrefix(spec, "{ [key: ") && strings.HasSuffix(spec, " }"):
		inner := strings.TrimSuffix(strings.TrimPrefix(spec, "{ [key: "), " }")
		_, val, ok := strings.Cut(inner, "]: ")
		s := JSONSchema{"type": "object"}
		if ok {
			s["additionalProperties"] = c.spec(val)
		}
		return s
	case strings.HasPrefix(spec, `"`):
		var vals []string
		for _, part := range strings.Split(spec, " | ") {
			if v, err := strconv.Unquote(strings.TrimSpace(part)); err == nil {
				vals = append(vals, v)
			}
		}
		return JSONSchema{"type": "string", "enum": vals}
	}
	switch spec {
	case "string":
		return JSONSchema{"type": "string"}
	case "datetime":
		return JSONSchema{"type": "string", "format": "date-time"}
	case "duration":
		return JSONSchema{"type": "string", "description": "a Go duration such as 90s or 1m30s"}
	case "int", "long":
		return JSONSchema{"type": "integer"}
	case "number":
		return JSONSchema{"type": "number"}
	case "bool":
		return JSONSchema{"type": "boolean"}
	case "any":
		return JSONSchema{}
	}
	if ts, ok := c.types[spec]; ok {
		return c.object(ts)
	}
	return JSONSchema{}
}
