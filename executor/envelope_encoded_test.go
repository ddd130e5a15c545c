package executor

import "testing"

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
