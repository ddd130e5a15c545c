package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Parse decodes YAML into cfg strictly, expanding ${VAR} in scalar values.
// Its errors name the line and the key path, not a file (LoadWith names
// the file).
func Parse(data []byte, env Getenv, cfg *Config) error {
	return parse(data, "", env, cfg)
}

// parse is Parse for the file named file ("" for none).
func parse(data []byte, file string, env Getenv, cfg *Config) error {
	cfg.src = newSource(file, "config")
	root, err := readDocument(data, cfg.src, "the configuration must be a mapping of keys (workspace, web, telegram, …)")
	if err != nil || root == nil {
		return err
	}
	return decodeInto(root, cfg, cfg.src, env)
}

// readDocument parses data, which must hold one YAML document whose root
// is a mapping (notMapping says what it must be); nil for an empty
// document.
func readDocument(data []byte, src *source, notMapping string) (*yaml.Node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	doc, err := oneDocument(data, src)
	if err != nil || len(doc.Content) == 0 {
		return nil, err
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, src.newError(root.Line, "", notMapping)
	}
	return root, nil
}

// decodeInto expands ${VAR} in root's values, checks every key and value
// against out's type (recording their lines in src), then decodes.
func decodeInto(root *yaml.Node, out any, src *source, env Getenv) error {
	d := &decoder{src: src, expanded: map[*yaml.Node]string{}, aliases: map[aliasVisit]bool{}}
	d.expand(root, env, "")
	if len(d.errs) == 0 {
		d.walk(root, reflect.TypeOf(out), "")
	}
	if len(d.errs) > 0 {
		return joinErrors(d.errs)
	}
	if err := root.Decode(out); err != nil {
		// The walk above accepts only what decodes; this is a last resort.
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return src.newError(0, "", strings.Join(te.Errors, "; "))
		}
		return src.newError(0, "", err.Error())
	}
	return nil
}

// oneDocument parses data, which must hold one YAML document: a second one
// (after a "---" line) would otherwise be silently ignored, and with it
// whatever it was meant to set.
func oneDocument(data []byte, src *source) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc, next yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, syntaxError(src, err)
	}
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return &doc, nil
	case err != nil:
		return nil, syntaxError(src, err)
	}
	return nil, src.newError(next.Line, "", `a second YAML document starts here ("---"); the file must hold one document (accepted: one mapping of keys; remove the "---" line and put its keys in the first document)`)
}

// yamlLine is how yaml.v3 starts a syntax error that has a line.
var yamlLine = regexp.MustCompile(`^yaml: line ([0-9]+): `)

// syntaxError is yaml.v3's syntax error err, at its line.
func syntaxError(src *source, err error) *Error {
	msg, line := err.Error(), 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	return src.newError(line, "", "not valid YAML: "+strings.TrimPrefix(msg, "yaml: "))
}

// decoder checks a YAML tree against the Go type it decodes into, before
// yaml.v3 decodes it, so that every problem names its line and key path:
// an unknown key (with the nearest accepted one), a key written twice, a
// value of the wrong kind (with what is accepted). It records the line of
// every key it meets for the checks that run after decoding.
type decoder struct {
	src  *source
	errs []*Error
	// expanded holds the written value of every scalar ${VAR} changed.
	expanded map[*yaml.Node]string
	// aliases are the anchored nodes checked through an alias.
	aliases map[aliasVisit]bool
}

type aliasVisit struct {
	n *yaml.Node
	t reflect.Type
}

// shapeChecker is a type that decodes a mapping of its own shape (the
// workspaces section, whose keys are names): it checks its node itself.
type shapeChecker interface {
	checkYAML(d *decoder, n *yaml.Node, key string)
}

var (
	unmarshalerType  = reflect.TypeFor[yaml.Unmarshaler]()
	shapeCheckerType = reflect.TypeFor[shapeChecker]()
)

func (d *decoder) bad(line int, key, format string, args ...any) {
	d.errs = append(d.errs, d.src.newError(line, key, fmt.Sprintf(format, args...)))
}

// walk checks n, the value of key, against t.
func (d *decoder) walk(n *yaml.Node, t reflect.Type, key string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		// Each anchored node is checked once per type through its aliases,
		// so an alias to itself or a tree of aliases cannot make the walk
		// long; yaml.v3 bounds what decoding them may expand to.
		v := aliasVisit{n.Alias, t}
		if n.Alias == nil || d.aliases[v] {
			return
		}
		d.aliases[v] = true
		n = n.Alias
	}
	if isNull(n) {
		return // every key may be left empty: its default applies
	}
	switch {
	case reflect.PointerTo(t).Implements(shapeCheckerType):
		reflect.New(t).Interface().(shapeChecker).checkYAML(d, n, key)
	case reflect.PointerTo(t).Implements(unmarshalerType):
		d.scalar(n, t, key)
	case t.Kind() == reflect.Struct:
		d.fields(n, t, key)
	case t.Kind() == reflect.Map:
		d.entries(n, t.Elem(), key)
	case t.Kind() == reflect.Slice:
		d.items(n, t.Elem(), key)
	default:
		d.scalar(n, t, key)
	}
}

// fields checks a mapping of a struct's keys.
func (d *decoder) fields(n *yaml.Node, t reflect.Type, key string) {
	names, types := yamlFields(t)
	if !d.isMapping(n, key, "its keys: "+strings.Join(names, ", ")) {
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ft, ok := types[k.Value]
		if !ok {
			d.unknownKey(k, key, names)
			continue
		}
		if d.twice(k, key, seen) {
			continue
		}
		d.walk(v, ft, d.record(key, k))
	}
}

// entries checks a mapping of names (mcp.agents, access.grants, …).
func (d *decoder) entries(n *yaml.Node, elem reflect.Type, key string) {
	if !d.isMapping(n, key, "name: value entries") {
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if d.twice(k, key, seen) {
			continue
		}
		d.walk(n.Content[i+1], elem, d.record(key, k))
	}
}

// items checks a list.
func (d *decoder) items(n *yaml.Node, elem reflect.Type, key string) {
	if n.Kind != yaml.SequenceNode {
		d.bad(n.Line, key, "%s: %s is not a list (accepted: %s)", key, d.found(n), listAccepted)
		return
	}
	for i, c := range n.Content {
		path := item(key, i)
		d.src.lines[path] = c.Line
		d.walk(c, elem, path)
	}
}

// scalar checks a value by decoding it alone into a t: what yaml.v3
// accepts there is accepted, anything else is refused with what is.
func (d *decoder) scalar(n *yaml.Node, t reflect.Type, key string) {
	what, accepted := describe(t)
	if n.Kind != yaml.ScalarNode {
		d.bad(n.Line, key, "%s: %s is not %s (accepted: %s)", key, d.found(n), what, accepted)
		return
	}
	err := n.Decode(reflect.New(t).Interface())
	if err == nil {
		return
	}
	var ve *valueError
	if errors.As(err, &ve) {
		d.bad(n.Line, key, "%s: %s", key, ve.msg)
		return
	}
	if written, ok := d.expanded[n]; ok {
		d.bad(n.Line, key, "%s: %s gives %q: values from the environment are text, never %s (accepted: %s written in the file itself)", key, written, n.Value, what, what)
		return
	}
	d.bad(n.Line, key, "%s: %s is not %s (accepted: %s)", key, d.found(n), what, accepted)
}

// isMapping reports whether n is a mapping, else records the problem.
func (d *decoder) isMapping(n *yaml.Node, key, accepted string) bool {
	if n.Kind == yaml.MappingNode {
		return true
	}
	d.bad(n.Line, key, "%s must be a mapping, not %s (accepted: %s)", key, d.found(n), accepted)
	return false
}

// record keeps the line of the key k under key and returns its path.
func (d *decoder) record(key string, k *yaml.Node) string {
	path := childKey(key, k.Value)
	d.src.lines[path] = k.Line
	return path
}

// twice reports (and records) a key written a second time in a mapping.
func (d *decoder) twice(k *yaml.Node, key string, seen map[string]int) bool {
	first, dup := seen[k.Value]
	if !dup {
		seen[k.Value] = k.Line
		return false
	}
	path := childKey(key, k.Value)
	d.bad(k.Line, path, "%s is written twice, on lines %d and %d (accepted: once; remove one)", path, first, k.Line)
	return true
}

// unknownKey records a key t has no field for, with the nearest accepted
// one when one is close.
func (d *decoder) unknownKey(k *yaml.Node, key string, accepted []string) {
	hint := ""
	if near := nearestKey(k.Value, accepted); near != "" {
		hint = ": did you mean " + near + "?"
	}
	d.bad(k.Line, childKey(key, k.Value), "unknown key %q in %s%s (accepted: %s)", k.Value, sectionName(key), hint, strings.Join(accepted, ", "))
}

func sectionName(key string) string {
	if key == "" {
		return "the top level"
	}
	return key
}

// found describes a node for an error: a scalar's value quoted, else its
// kind.
func (d *decoder) found(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// yamlFields lists a struct's keys in order, with their types.
func yamlFields(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	types := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		names = append(names, name)
		types[name] = f.Type
	}
	return names, types
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

const listAccepted = `a list, such as [a, b], or one "- item" per line below the key`

// describe names what a value of type t is, and what is accepted, for the
// errors of a value of the wrong kind.
func describe(t reflect.Type) (what, accepted string) {
	switch t {
	case reflect.TypeFor[Duration]():
		return "a duration", durationAccepted
	case reflect.TypeFor[Size]():
		return "a size", sizeAccepted
	case reflect.TypeFor[Secret]():
		return "a token", "the token as text, usually from the environment: ${NAME}"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean", "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number", "a whole number such as 64, without quotes"
	case reflect.Float32, reflect.Float64:
		return "a number", "a number such as 1 or 0.5, without quotes"
	case reflect.Slice:
		return "a list", listAccepted
	case reflect.Map, reflect.Struct:
		return "a mapping", "keys indented below this one"
	}
	return "text", `text, in quotes when it starts with one of [ { & * ! | > ' " % @ or contains ": "`
}

// expand replaces ${VAR} and ${VAR:-default} in every scalar value (not in
// keys), so an environment value can never inject YAML structure. $$ is a
// literal $. It remembers what was written, for the errors.
func (d *decoder) expand(n *yaml.Node, env Getenv, key string) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return
		}
		v, err := Expand(n.Value, env)
		if err != nil {
			d.bad(n.Line, key, "%s: %v", key, err)
			return
		}
		if v != n.Value {
			d.expanded[n] = n.Value
			n.Value = v
			if n.Tag == "!!null" || n.Tag == "" {
				n.Tag = "!!str"
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			d.expand(n.Content[i+1], env, childKey(key, n.Content[i].Value))
		}
	default:
		for i, c := range n.Content {
			d.expand(c, env, item(key, i))
		}
	}
}

// Expand substitutes ${VAR} (empty when unset) and ${VAR:-default} (default
// when unset or empty) in s; $$ is a literal $. A $ followed by anything
// else is kept as it is.
func Expand(s string, env Getenv) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated ${ in %q", s)
			}
			v, err := expandOne(s[i+2:i+end], env)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// expandOne is the value of one ${…} expression: NAME or NAME:-default.
func expandOne(expr string, env Getenv) (string, error) {
	name, def, hasDef := strings.Cut(expr, ":-")
	if !validEnvName(name) {
		return "", fmt.Errorf("bad variable name %q in ${…} (accepted: letters, digits and _, as in ${TELEGRAM_BOT_TOKEN} or ${PORT:-8080})", name)
	}
	v, ok := env(name)
	if hasDef && (!ok || v == "") {
		v = def
	}
	return v, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
