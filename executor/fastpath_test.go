package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// TestOutcomeAppendJSON: AppendJSON appends exactly JSON's bytes after what
// dst holds, for results encoded by encoding/json, results that encode
// themselves and failures.
func TestOutcomeAppendJSON(t *testing.T) {
	x := newExec(t)
	ctx := context.Background()
	for _, in := range []string{
		`{"verb":"fs.readRange","arguments":{"path":"<a & b>","startLine":1,"endLine":2}}`,
		`{"verb":"fs.readRange","arguments":{"path":"missing","startLine":1,"endLine":2}}`,
		`{"verb":"no.such"}`,
		`{"verb":"sys.machineInfo"}`,
		`not json`,
	} {
		o := x.ExecuteInput(ctx, []byte(in))
		want := o.JSON()
		for _, prefix := range []string{"", `{"id":1,"succeeded":true}` + "\n"} {
			if got := o.AppendJSON([]byte(prefix)); !bytes.Equal(got, append([]byte(prefix), want...)) {
				t.Errorf("%s: AppendJSON after %q = %s, JSON = %s", in, prefix, got, want)
			}
		}
	}
	fail := &executor.Outcome{Err: executor.Errorf(executor.CodeNotFound, "No such file: %q", "<a>\n")}
	if got, want := string(fail.JSON()), `{"succeeded":false,"errorMessage":"No such file: \"<a>\\n\"","errorCode":"not_found"}`; got != want {
		t.Errorf("failure JSON = %s, want %s", got, want)
	}
}

// TestDecodeEnvelopeVerb: the verb decodes to the same string however it
// is spelled in JSON (a registered name spelled exactly is the registry's
// own string, any other a copy), and the input buffer may be reused after.
func TestDecodeEnvelopeVerb(t *testing.T) {
	x := newExec(t)
	for _, tc := range []struct{ in, verb string }{
		{`{"verb":"fs.readRange"}`, "fs.readRange"},
		{`{"verb":"FS.READRANGE"}`, "FS.READRANGE"},
		{`{"verb":"fs.readrange"}`, "fs.readrange"},
		{`{"verb":"fs\u002ereadRange"}`, "fs.readRange"},
		{`{"verb":"no.such"}`, "no.such"},
		{`{"verb":"fs_readRange"}`, "fs_readRange"},
	} {
		in := []byte(tc.in)
		env, err := x.DecodeEnvelope(in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		for i := range in {
			in[i] = 'z'
		}
		if env.Verb != tc.verb {
			t.Errorf("%s: verb %q, want %q", tc.in, env.Verb, tc.verb)
		}
	}
	for _, in := range []string{`{"verb":""}`, `{"verb":1}`, `{"verb":"x","workspace":""}`, `{"verb":"x","workspace":2}`} {
		if _, err := x.DecodeEnvelope([]byte(in)); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
	env, err := x.DecodeEnvelope([]byte(`{"verb":"fs.exists","workspace":"w\u0031"}`))
	if err != nil || env.Workspace != "w1" {
		t.Fatalf("workspace: %q %v", env.Workspace, err)
	}
}

type otherKey struct{}

// TestWithCall: CallFrom returns the innermost Call, a copy the caller may
// change, and other values pass through the call's context.
func TestWithCall(t *testing.T) {
	if c := executor.CallFrom(context.Background()); c != (executor.Call{}) {
		t.Fatalf("CallFrom of a bare context = %+v", c)
	}
	outer := executor.Call{TurnID: "t1", Identity: "cli", Workspace: "w", Session: "s"}
	ctx := context.WithValue(context.Background(), otherKey{}, "v")
	ctx = executor.WithCall(ctx, outer)
	inner := executor.WithCall(context.WithValue(ctx, otherKey{}, "v2"), executor.Call{TurnID: "t2"})
	if c := executor.CallFrom(ctx); c != outer {
		t.Fatalf("CallFrom = %+v, want %+v", c, outer)
	}
	c := executor.CallFrom(ctx)
	c.TurnID = "changed"
	if executor.CallFrom(ctx).TurnID != "t1" {
		t.Fatal("changing CallFrom's result changed the context's Call")
	}
	if c := executor.CallFrom(inner); c.TurnID != "t2" || c.Identity != "" {
		t.Fatalf("inner CallFrom = %+v", c)
	}
	if ctx.Value(otherKey{}) != "v" || inner.Value(otherKey{}) != "v2" {
		t.Fatal("other values do not pass through WithCall")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if cctx.Err() == nil || executor.CallFrom(cctx) != outer {
		t.Fatal("a context derived from WithCall's lost its cancellation or its Call")
	}
}

// TestRunNotes: notes made during a call reach its Outcome, and only its.
func TestRunNotes(t *testing.T) {
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "x.note", Summary: "Note"},
		executor.VerbFunc[struct {
			Text string `json:"text"`
		}, EchoResult](func(ctx context.Context, a struct {
			Text string `json:"text"`
		}) (EchoResult, error) {
			executor.Note(ctx, a.Text)
			executor.Note(ctx, a.Text+" again")
			if executor.CallFrom(ctx).TurnID != "t" {
				return EchoResult{}, executor.Errorf(executor.CodeInternal, "the call's context lost its Call")
			}
			return EchoResult{Args: []byte(`{}`)}, nil
		}))
	x := executor.New(reg, executor.Options{})
	ctx := executor.WithCall(context.Background(), executor.Call{TurnID: "t"})
	a := x.ExecuteInput(ctx, []byte(`{"verb":"x.note","arguments":{"text":"one"}}`))
	b := x.ExecuteInput(ctx, []byte(`{"verb":"x.note","arguments":{"text":"two"}}`))
	if a.Err != nil || b.Err != nil {
		t.Fatal(a.Err, b.Err)
	}
	if len(a.Notes) != 2 || a.Notes[0] != "one" || a.Notes[1] != "one again" || len(b.Notes) != 2 || b.Notes[0] != "two" {
		t.Fatalf("notes: %q %q", a.Notes, b.Notes)
	}
}

// TestEncodeEnvelope: a call decoded by its surface (the verb and its raw
// arguments) is encoded as json.Marshal writes the envelope {verb,
// arguments}, and checked as DecodeEnvelope checks that text: the same
// envelope, or the same error, whatever the arguments hold.
func TestEncodeEnvelope(t *testing.T) {
	x := newExec(t)
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	for _, args := range []string{
		`{"path":"a.txt","startLine":1,"endLine":2}`,
		"{ \"path\" : \"<a & b>\u2028\",\n \"startLine\": 1 }",
		`{}`,
		`null`,
		`{"path":` + deep + `}`,
		`{"path":"a","path":"b"}`,
		`{"path":"` + strings.Repeat("x", 1<<20) + `"}`,
		"{\"path\":\"\xff\"}",
		`[1,2]`,
	} {
		want, wantErr := x.DecodeEnvelope(mustMarshal(t, "fs.readRange", args))
		env, text, err := x.EncodeEnvelope("fs.readRange", json.RawMessage(args))
		if !bytes.Equal(text, mustMarshal(t, "fs.readRange", args)) {
			t.Errorf("%.60s: text %.80s, want json.Marshal's", args, text)
		}
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || err != nil && executor.ErrorFrom(err).Code != executor.ErrorFrom(wantErr).Code {
			t.Errorf("%.60s: error %v, want %v", args, err, wantErr)
		}
		if err == nil && (env.Verb != want.Verb || !bytes.Equal(env.Arguments, want.Arguments) || env.ID != nil || env.Workspace != "") {
			t.Errorf("%.60s: envelope %+v, want %+v", args, env, want)
		}
	}
	if _, text, err := x.EncodeEnvelope("fs.readRange", json.RawMessage(`{"path":`)); err == nil || text != nil {
		t.Errorf("arguments that are not JSON: %q %v, want an error and no text", text, err)
	}
	if _, _, err := x.EncodeEnvelope("", json.RawMessage(`{}`)); err == nil || executor.ErrorFrom(err).Code != executor.CodeInvalidEnvelope {
		t.Errorf("no verb: %v, want invalid_envelope", err)
	}
}

func mustMarshal(t *testing.T, verb, args string) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		Verb      string          `json:"verb"`
		Arguments json.RawMessage `json:"arguments"`
	}{verb, json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
