package nodes

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// wireResults are answers as nodes send them: results the executor
// encoded (compact), failures, and the members around them at their
// edges (HTML characters, which encoding/json escapes; control bytes,
// invalid UTF-8, empty and absent notes and timing).
func wireResults() []resultMsg {
	big := (&executor.Outcome{Value: &struct {
		executor.Result
		Content string `json:"content"`
	}{Result: executor.Result{Succeeded: true}, Content: strings.Repeat("line <a> & \"b\" \\ \t é\n", 50000)}}).JSON()
	return []resultMsg{
		{CallID: "t.1#0", Node: "db-1", NodeVersion: "1.2.3", Status: StatusDone, Verb: "fs.exists",
			Result: json.RawMessage(`{"succeeded":true,"exists":true}`), DurationMS: 1, Timing: &wireTiming{LedgerUS: 400, SlotUS: 3, RunUS: 12}},
		{CallID: "t.2#1", Node: "db-1", NodeVersion: "test", Status: StatusDone, Verb: "fs.readFile", Result: big,
			Notes: []string{"<b>note</b> & more", "x\x01y\xffz\u2028"}, Timing: &wireTiming{}},
		{CallID: "t.3#2", Node: "db-1", Status: StatusRejected, Result: failure(executor.CodeInvalidArguments, "node db-1 has no workspace \"nope\" <&>"), Notes: []string{}},
		{CallID: "t.4#3", Node: "db-1", Status: StatusExpired},
	}
}

// The answer a node writes is json.Marshal's (byte for byte but for the
// HTML characters json.Marshal escapes within the result), and the hub
// reads it back as encoding/json does.
func TestResultWire(t *testing.T) {
	for i, res := range wireResults() {
		want, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshalResult(res)
		if err != nil {
			t.Fatal(err)
		}
		var escaped bytes.Buffer
		json.HTMLEscape(&escaped, got)
		if !bytes.Equal(escaped.Bytes(), want) {
			t.Fatalf("answer %d: marshalResult differs from json.Marshal:\n%.300s\n%.300s", i, got, want)
		}
		if i == 0 && !bytes.Equal(got, want) {
			t.Fatalf("answer %d, no HTML characters: marshalResult differs from json.Marshal:\n%s\n%s", i, got, want)
		}
		var ref, refGot resultMsg
		if err := json.Unmarshal(want, &ref); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &refGot); err != nil {
			t.Fatal(err)
		}
		back, err := unmarshalResult(got)
		if err != nil || !reflect.DeepEqual(back, refGot) {
			t.Fatalf("answer %d: unmarshalResult = %+v, %v; encoding/json %+v", i, back, err, refGot)
		}
		// The same value as encoding/json's whole answer, once read.
		var a, b any
		if json.Unmarshal(back.Result, &a) != nil || json.Unmarshal(ref.Result, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("answer %d: the result reads differently from json.Marshal's", i)
		}
	}
}

// An answer that is not one is refused whole, whatever part of it is
// wrong, however deep: the hub drops it (and the call is answered by its
// timeout); nothing of it is kept.
func TestResultWireRefusesMalformed(t *testing.T) {
	ok := `{"call_id":"t.1#0","node":"db-1","status":"done","result":{"succeeded":true},"duration_ms":1}`
	if _, err := unmarshalResult([]byte(ok)); err != nil {
		t.Fatalf("a good answer: %v", err)
	}
	deep := strings.Repeat("[", maxResultDepth) + strings.Repeat("]", maxResultDepth)
	for _, bad := range []string{
		``, `null`, `[]`, `"done"`, `{`, ok + `{}`, ok + ` x`,
		`{"call_id":"a","call_id":"b","result":{}}`,
		`{"call_id":"a","result":{"succeeded":true,"succeeded":false}}`,
		`{"call_id":"a","result":{"content":"` + "\x01" + `"}}`,
		`{"call_id":"a","result":{"content":"\x"}}`,
		`{"call_id":"a","result":{"a":}}`,
		`{"call_id":"a","result":{"a":1,}}`,
		`{"call_id":"a","result":` + deep + `}`,
		`{"call_id":7,"result":{}}`,
		`{"call_id":"a","notes":"one","result":{}}`,
		`{"call_id":"a","duration_ms":"1","result":{}}`,
		`{"call_id":"a","timing":[1],"result":{}}`,
		`{"call_id":"a","result":{}}` + "\x00",
	} {
		if r, err := unmarshalResult([]byte(bad)); err == nil {
			t.Errorf("%.80q read as %+v", bad, r)
		}
	}
	// Unknown members are left; names are exact.
	r, err := unmarshalResult([]byte(`{"CALL_ID":"x","call_id":"a","extra":{"deep":[1,2]},"result":[]}`))
	if err != nil || r.CallID != "a" || string(r.Result) != "[]" {
		t.Errorf("unknown members: %+v %v", r, err)
	}
}

// FuzzResultWire: whatever a node sends, reading it never panics; what is
// read has a result that is valid JSON, and written again reads back the
// same.
func FuzzResultWire(f *testing.F) {
	for _, res := range wireResults()[:1] {
		data, _ := json.Marshal(res)
		f.Add(data)
	}
	f.Add([]byte(`{"call_id":"a","result":{"s":"\ud800"},"notes":["\u00e9"],"timing":null}`))
	f.Add([]byte(`{"result":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := unmarshalResult(data)
		if err != nil {
			return
		}
		if len(r.Result) > 0 && !json.Valid(r.Result) {
			t.Fatalf("kept a result that is not JSON: %q", r.Result)
		}
		compact := new(bytes.Buffer)
		if len(r.Result) > 0 {
			if err := json.Compact(compact, r.Result); err != nil {
				t.Fatal(err)
			}
			r.Result = compact.Bytes()
		}
		again, err := marshalResult(r)
		if err != nil {
			return // a note or a name that is not UTF-8 json.Marshal would refuse too
		}
		back, err := unmarshalResult(again)
		if err != nil {
			t.Fatalf("its own answer refused: %v\n%q", err, again)
		}
		if len(r.Result) == 0 {
			r.Result = json.RawMessage("null")
		}
		if len(r.Notes) == 0 {
			r.Notes = nil // omitted when empty
		}
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("read back %+v, want %+v", back, r)
		}
	})
}

// BenchmarkResultWire: a node's answer written and read, small (an
// fs.exists) and large (a file of about 1 MB read whole), against
// encoding/json's whole-message Marshal and Unmarshal.
func BenchmarkResultWire(b *testing.B) {
	for _, res := range wireResults()[:2] {
		size := "small"
		if len(res.Result) > 1<<20 {
			size = "1MB"
		}
		data, _ := marshalResult(res)
		for _, bc := range []struct {
			name string
			op   func() error
		}{
			{"write", func() error { _, err := marshalResult(res); return err }},
			{"write-encoding-json", func() error { _, err := json.Marshal(res); return err }},
			{"read", func() error { _, err := unmarshalResult(data); return err }},
			{"read-encoding-json", func() error { var r resultMsg; return json.Unmarshal(data, &r) }},
		} {
			b.Run(size+"/"+bc.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if err := bc.op(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
