package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

var scanSamples = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"."}}}`,
	` { "jsonrpc" : "2.0" , "id" : "a\"b" , "method" : "tools/call" , "params" : { "arguments" : [1, {"x": "}"}], "name" : "t" } } `,
	`{"params":{"name":"fs_readFile","arguments":null},"method":"tools/call","id":-7,"jsonrpc":"2.0"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"progressToken":1}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"t","arguments":1}}`,
	`{"Jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"t","arguments":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0074","arguments":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t\xff","arguments":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":1},"extra":true}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"t","arguments":"x"}}`,
	`{"jsonrpc":"2.0","id":1.5e3,"method":"tools/call","params":{"name":"t","arguments":true}}`,
	`{}`, `{"jsonrpc":"2.0"}`,
}

// TestScanDirectMatchesTheDecoder: for each sample, a line scanDirect
// reads is read the same by encoding/json (FuzzScanDirect does the same
// for any line), and the usual shapes are read without it.
func TestScanDirectMatchesTheDecoder(t *testing.T) {
	var read []int
	for i, s := range scanSamples {
		if checkScan(t, []byte(s)) {
			read = append(read, i)
		}
	}
	// The first three, and the ids directID then refuses.
	if want := []int{0, 1, 2, 12, 13}; !slices.Equal(read, want) {
		t.Errorf("scanDirect read samples %v, want %v", read, want)
	}
}

func FuzzScanDirect(f *testing.F) {
	for _, s := range scanSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if json.Valid([]byte(s)) {
			checkScan(t, []byte(s))
		}
	})
}

// checkScan compares scanDirect with decodeDirect on line, valid JSON,
// and reports whether scanDirect read it.
func checkScan(t *testing.T, line []byte) bool {
	t.Helper()
	got, ok := scanDirect(line)
	if !ok {
		return false
	}
	want, wok := decodeDirect(line)
	switch {
	case !wok:
		t.Fatalf("%s: scanDirect read it, encoding/json refuses it", line)
	case got.Version != want.Version || got.Method != want.Method || !bytes.Equal(got.ID, want.ID):
		t.Fatalf("%s: scanDirect %q %q %s, encoding/json %q %q %s", line, got.Version, got.Method, got.ID, want.Version, want.Method, want.ID)
	case want.Params == nil || got.Params.Name != want.Params.Name || !bytes.Equal(got.Params.Arguments, want.Params.Arguments) || len(want.Params.Meta) != 0:
		t.Fatalf("%s: scanDirect params %+v, encoding/json %+v", line, got.Params, want.Params)
	}
	return true
}
