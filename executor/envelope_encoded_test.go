package executor

import (
	"fmt"
	"strings"
	"testing"
)

// TestOutcomeEncodedIsKept: an outcome whose JSON was kept in Encoded
// appends those bytes, not a new encoding.
func TestOutcomeEncodedIsKept(t *testing.T) {
	o := &Outcome{Verb: "fs.exists", Value: map[string]any{"succeeded": true, "n": 1}}
	first := o.JSON()
	if string(first) != `{"n":1,"succeeded":true}` {
		t.Fatalf("JSON = %s", first)
	}
	o.Encoded = []byte(`{"kept":true}`)
	if got := string(o.AppendJSON([]byte("x"))); got != `x{"kept":true}` {
		t.Fatalf("AppendJSON with Encoded = %s", got)
	}
	o.Encoded = nil
	if got := string(o.JSON()); got != string(first) {
		t.Fatalf("JSON once Encoded is cleared = %s", got)
	}
}

// TestOutcomeEncodedJSONOnce: EncodedJSON encodes the result the first
// time and keeps it; later calls give the same bytes.
func TestOutcomeEncodedJSONOnce(t *testing.T) {
	o := &Outcome{Verb: "fs.exists", Value: map[string]any{"succeeded": true, "n": 1}}
	first := o.EncodedJSON()
	if string(first) != `{"n":1,"succeeded":true}` || string(o.Encoded) != string(first) {
		t.Fatalf("EncodedJSON = %s, Encoded = %s", first, o.Encoded)
	}
	o.Value = map[string]any{"changed": true} // not seen: the encoding is kept
	if again := o.EncodedJSON(); &again[0] != &first[0] {
		t.Fatalf("EncodedJSON encoded again: %s", again)
	}
}

// releasing records whether Release was called.
type releasing struct {
	N        int `json:"n"`
	released bool
}

func (r *releasing) Release() { r.released = true }

// TestOutcomeRelease: Release clears the encoding and the result, has the
// result give back what it holds, and the next encodings, which may take
// the buffer given back, are each their own result's.
func TestOutcomeRelease(t *testing.T) {
	v := &releasing{N: 1}
	o := &Outcome{Verb: "x.y", Value: v}
	if got := string(o.EncodedJSON()); got != `{"n":1}` {
		t.Fatalf("EncodedJSON = %s", got)
	}
	o.Release()
	if o.Encoded != nil || o.Value != nil || !v.released {
		t.Fatalf("after Release: Encoded %q, Value %v, result released %v", o.Encoded, o.Value, v.released)
	}
	for i := range 20 {
		o := &Outcome{Verb: "x.y", Value: map[string]any{"i": i, "pad": strings.Repeat("p", i*100)}}
		want := fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("p", i*100))
		if got := string(o.EncodedJSON()); got != want {
			t.Fatalf("encoding %d = %.80s…", i, got)
		}
		o.Release()
	}
	(&Outcome{}).Release() // nothing held: nothing to give back
}
