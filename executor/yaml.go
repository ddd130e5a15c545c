package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits bound what the decoders accept, so hostile input costs little.
type Limits struct {
	// MaxInputBytes caps the size of an envelope; default 1 MiB.
	MaxInputBytes int
	// MaxDepth caps the nesting of objects and arrays; default 32.
	MaxDepth int
	// MaxNodes caps the number of YAML values after alias expansion; default
	// 100,000. It is what defeats alias bombs ("billion laughs").
	MaxNodes int
}

// DefaultLimits are the limits used when a field of Limits is zero.
var DefaultLimits = Limits{MaxInputBytes: 1 << 20, MaxDepth: 32, MaxNodes: 100_000}

func (l Limits) withDefaults() Limits {
	if l.MaxInputBytes <= 0 {
		l.MaxInputBytes = DefaultLimits.MaxInputBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultLimits.MaxNodes
	}
	return l
}

// YAMLToJSON converts one YAML document to JSON, keeping mapping order. Only
// JSON-compatible YAML is accepted: string keys, no duplicate keys, no
// multiple documents. Aliases are expanded but count against MaxNodes, and
// nesting counts against MaxDepth.
func YAMLToJSON(data []byte, lim Limits) ([]byte, error) {
	lim = lim.withDefaults()
	if len(data) > lim.MaxInputBytes {
		return nil, fmt.Errorf("input is %d bytes, over the %d-byte limit", len(data), lim.MaxInputBytes)
	}
	if j, ok := yamlFast(data, lim); ok {
		return j, nil
	}
	return yamlToJSONSlow(data, lim)
}

// yamlToJSONSlow is YAMLToJSON through yaml.v3's node tree: what yamlFast
// declines, and every error.
func yamlToJSONSlow(data []byte, lim Limits) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("input is empty")
		}
		return nil, fmt.Errorf("not valid YAML or JSON: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("input holds more than one YAML document (line %d); send one envelope at a time", extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	c := yamlConv{lim: lim}
	var buf bytes.Buffer
	if err := c.write(&buf, &doc, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type yamlConv struct {
	lim   Limits
	nodes int
}

func (c *yamlConv) write(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	c.nodes++
	if c.nodes > c.lim.MaxNodes {
		return fmt.Errorf("input expands to more than %d values (too many aliases?); the limit protects the hub", c.lim.MaxNodes)
	}
	if depth > c.lim.MaxDepth {
		return fmt.Errorf("input nests more than %d levels deep (line %d)", c.lim.MaxDepth, n.Line)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return fmt.Errorf("input is empty")
		}
		return c.write(buf, n.Content[0], depth)
	case yaml.AliasNode:
		return c.write(buf, n.Alias, depth)
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return fmt.Errorf("line %d: mapping keys must be plain strings", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("line %d: key %q appears twice", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, k.Value)
			buf.WriteByte(':')
			if err := c.write(buf, v, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, v := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := c.write(buf, v, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(buf, n)
	default:
		return fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
	return nil
}

func writeScalar(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("line %d: %v", n.Line, err)
		}
		buf.WriteString(strconv.FormatBool(b))
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			// Out of int64 range: keep the digits as a number if they are plain decimal.
			var u uint64
			if err2 := n.Decode(&u); err2 != nil {
				return fmt.Errorf("line %d: integer %s out of range", n.Line, n.Value)
			}
			buf.WriteString(strconv.FormatUint(u, 10))
			return nil
		}
		buf.WriteString(strconv.FormatInt(i, 10))
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return fmt.Errorf("line %d: %v", n.Line, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("line %d: %s is not a JSON number", n.Line, n.Value)
		}
		b, _ := json.Marshal(f)
		buf.Write(b)
	case "!!str", "":
		writeJSONString(buf, n.Value)
	case "!!binary", "!!timestamp":
		writeJSONString(buf, n.Value)
	default:
		return fmt.Errorf("line %d: unsupported YAML tag %s", n.Line, n.ShortTag())
	}
	return nil
}

func writeJSONString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	buf.Write(b)
}
