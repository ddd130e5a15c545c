package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// checkJSON validates that data is exactly one JSON value, nested no deeper
// than lim.MaxDepth, with no duplicate object keys. encoding/json alone would
// silently keep the last of two duplicate keys.
func checkJSON(data []byte, lim Limits) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]struct{}
		want   bool // next string token in an object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return fmt.Errorf("not valid JSON: unexpected end of input (%d unclosed brackets)", len(stack))
			}
			break
		}
		if err != nil {
			return jsonSyntaxError(data, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.want {
			key, ok := tok.(string)
			if ok {
				if _, dup := top.keys[key]; dup {
					return fmt.Errorf("key %q appears twice in one object (offset %d)", key, dec.InputOffset())
				}
				top.keys[key] = struct{}{}
				top.want = false
				continue
			}
		}
		if top != nil && top.object {
			top.want = true
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= lim.MaxDepth {
				return fmt.Errorf("input nests more than %d levels deep", lim.MaxDepth)
			}
			obj := tok == json.Delim('{')
			f := frame{object: obj, want: obj}
			if obj {
				f.keys = map[string]struct{}{}
			}
			stack = append(stack, f)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].want = true
			}
		}
		if len(stack) == 0 && dec.More() {
			return fmt.Errorf("unexpected data after the JSON value at offset %d; send one envelope at a time", dec.InputOffset())
		}
	}
	return nil
}

// jsonSyntaxError turns a decoder error into "line L, column C: …".
func jsonSyntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, se.Offset)
		return fmt.Errorf("not valid JSON at line %d, column %d: %s", line, col, se.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("not valid JSON: unexpected end of input")
	}
	return fmt.Errorf("not valid JSON: %v", err)
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
