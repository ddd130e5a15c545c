package mcp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestEncodeLine: a message encodes to the bytes jsonrpc.EncodeMessage
// gives, and a newline, whether its result is copied (answers) or not
// (requests, notifications, errors).
func TestEncodeLine(t *testing.T) {
	id := func(v any) jsonrpc.ID {
		i, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	// A result as the SDK encodes one: compact, HTML characters unescaped.
	result := func(v any) json.RawMessage {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	big := map[string]any{"content": []any{map[string]any{"type": "text", "text": "a <b> & \"c\"\n\u2028é\x01"}}, "structuredContent": map[string]any{"succeeded": true, "n": 1.5e300}}
	for _, msg := range []jsonrpc.Message{
		&jsonrpc.Response{ID: id(float64(7)), Result: result(big)},
		&jsonrpc.Response{ID: id("a<&>\"b"), Result: result(map[string]any{})},
		&jsonrpc.Response{ID: id(float64(-1)), Result: result([]int{1, 2})},
		&jsonrpc.Response{ID: id(float64(3)), Error: &jsonrpc.Error{Code: -32602, Message: "bad <x>"}},
		&jsonrpc.Request{ID: id(float64(4)), Method: "ping", Params: result(map[string]any{"x": "<y>"})},
		&jsonrpc.Request{Method: "notifications/resources/updated", Params: result(map[string]any{"uri": "hub:///a&b.txt"})},
	} {
		want, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeLine(msg)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("encodeLine\n%s\nwant\n%s", got, want)
		}
	}
}
