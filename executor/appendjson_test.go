package executor

import (
	"bytes"
	"testing"
)

// stdJSON encodes v as Outcome.JSON's encoder does (HTML left unescaped, no
// trailing newline).
func stdJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := AppendEncodingJSON(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendJSONStringMatchesEncodingJSON: the executor's string writer is
// internal/jsonstr's without HTML escaping (tested and fuzzed there).
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "<html> & 'amp'", "tab\tnew\nline", "bad \xff utf8 \u2028"} {
		if got, want := AppendJSONString(nil, s), stdJSON(t, s); !bytes.Equal(got, want) {
			t.Errorf("AppendJSONString(%q) = %s, encoding/json: %s", s, got, want)
		}
	}
}

func TestAppendResultJSON(t *testing.T) {
	for _, r := range []Result{
		{Succeeded: true},
		{Succeeded: false, ErrorMessage: "No such file: \"a<b>\"", ErrorCode: CodeNotFound},
		{Succeeded: false, ErrorCode: CodeInternal},
	} {
		got := append(AppendResultJSON(nil, &r), '}')
		if want := stdJSON(t, &r); !bytes.Equal(got, want) {
			t.Errorf("AppendResultJSON(%+v) = %s, encoding/json: %s", r, got, want)
		}
	}
}

// appendingResult encodes itself; Outcome.JSON must use it.
type appendingResult struct {
	Result
	N int `json:"n"`
}

func (r *appendingResult) AppendJSON(dst []byte) []byte {
	return append(AppendResultJSON(dst, &r.Result), `,"n":"self"}`...)
}

func TestOutcomeJSONUsesAppender(t *testing.T) {
	o := &Outcome{Value: &appendingResult{Result: Result{Succeeded: true}}}
	if got := string(o.JSON()); got != `{"succeeded":true,"n":"self"}` {
		t.Fatalf("Outcome.JSON = %s, want the appender's bytes", got)
	}
	o = &Outcome{Err: Errorf(CodeNotFound, "gone")}
	if got := string(o.JSON()); got != `{"succeeded":false,"errorMessage":"gone","errorCode":"not_found"}` {
		t.Fatalf("Outcome.JSON of a failure = %s", got)
	}
}
