package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
)

type GreetArgs struct {
	Name  string `json:"name"`
	Times int    `json:"times,omitempty"`
}

// GreetResult renders itself from its typed fields and the typed arguments.
type GreetResult struct {
	executor.Result
	Greeting string `json:"greeting"`
}

func (r *GreetResult) Render(args any) string {
	a, ok := args.(*GreetArgs)
	if !ok {
		return fmt.Sprintf("args are %T", args)
	}
	return strings.Repeat(r.Greeting+", "+a.Name+"! ", max(a.Times, 1))
}

// BagResult has no renderer: it shows every kind of field the generic
// rendering handles.
type BagResult struct {
	executor.Result
	Short string            `json:"short"`
	Long  string            `json:"long,omitempty"`
	Multi string            `json:"multi,omitempty"`
	Count int               `json:"count"`
	Flag  bool              `json:"flag"`
	List  []string          `json:"list,omitempty"`
	Map   map[string]string `json:"map,omitempty"`
	Null  *int              `json:"null"`
}

func renderExec(t *testing.T) *executor.Executor {
	t.Helper()
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "t.greet"},
		executor.VerbFunc[GreetArgs, GreetResult](func(_ context.Context, a GreetArgs) (GreetResult, error) {
			if a.Name == "" {
				return GreetResult{}, executor.Errorf(executor.CodeInvalidArguments, "Whom to greet?\nUsage: /t.greet <name>")
			}
			return GreetResult{Greeting: "Hello"}, nil
		}))
	executor.MustRegister(reg, executor.Info{Name: "t.bag"},
		executor.VerbFunc[NoArgs, BagResult](func(context.Context, NoArgs) (BagResult, error) {
			return BagResult{
				Short: "short text", Long: strings.Repeat("x", 81), Multi: "one\ntwo\n", Count: 3, Flag: true,
				List: []string{"a", "b"}, Map: map[string]string{"k": "v"},
			}, nil
		}))
	executor.MustRegister(reg, executor.Info{Name: "t.empty"},
		executor.VerbFunc[NoArgs, executor.Result](func(context.Context, NoArgs) (executor.Result, error) {
			return executor.Result{}, nil
		}))
	return executor.New(reg, executor.Options{})
}

func TestRenderText(t *testing.T) {
	x := renderExec(t)
	for _, tc := range []struct {
		name, in string
		raw      bool
		want     string
	}{
		{"renderer gets typed args", `{"verb":"t.greet","arguments":{"name":"Ada","times":2}}`, false, "Hello, Ada! Hello, Ada! "},
		{"raw is indented json", `{"verb":"t.greet","arguments":{"name":"Ada"}}`, true, "```json\n{\n  \"succeeded\": true,\n  \"greeting\": \"Hello\"\n}\n```"},
		{"failure", `{"verb":"t.greet","arguments":{"name":""}}`, false, "⚠ Whom to greet? (invalid_arguments)\n```\nUsage: /t.greet <name>\n```"},
		{"raw failure", `{"verb":"t.greet","arguments":{"name":""}}`, true, "```json\n{\n  \"succeeded\": false,\n  \"errorMessage\": \"Whom to greet?\\nUsage: /t.greet <name>\",\n  \"errorCode\": \"invalid_arguments\"\n}\n```"},
		{"unknown verb", `{"verb":"t.nope"}`, false, "⚠ Unknown verb 't.nope'. Send /verbs (or run `hub verbs`) for the list, /help <verb> for one verb. (unknown_verb)"},
		{"generic", `{"verb":"t.bag"}`, false, "✓ t.bag\ncount: 3\nflag: true\nlist:\n```json\n[\n  \"a\",\n  \"b\"\n]\n```\nlong:\n```\n" + strings.Repeat("x", 81) + "\n```\nmap:\n```json\n{\n  \"k\": \"v\"\n}\n```\nmulti:\n```\none\ntwo\n```\nnull: null\nshort: short text"},
		{"generic without fields", `{"verb":"t.empty"}`, false, "✓ t.empty done."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := x.ExecuteInput(context.Background(), []byte(tc.in))
			if got := executor.RenderText(out, tc.raw); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// A renderer is called with whatever Outcome.Args holds, nil included.
func TestRenderTextWithoutArgs(t *testing.T) {
	out := &executor.Outcome{Verb: "t.greet", Value: &GreetResult{Greeting: "Hi"}}
	if got := executor.RenderText(out, false); got != "args are <nil>" {
		t.Errorf("got %q", got)
	}
}

func TestOutcomeArgs(t *testing.T) {
	x := renderExec(t)
	ctx := context.Background()
	out := x.ExecuteInput(ctx, []byte(`{"verb":"t.greet","arguments":{"name":"Ada","times":2}}`))
	if a, ok := out.Args.(*GreetArgs); !ok || *a != (GreetArgs{Name: "Ada", Times: 2}) {
		t.Fatalf("args %#v", out.Args)
	}
	// A verb that fails still had its arguments decoded.
	out = x.ExecuteInput(ctx, []byte(`{"verb":"t.greet","arguments":{"name":""}}`))
	if a, ok := out.Args.(*GreetArgs); out.Succeeded() || !ok || a.Name != "" {
		t.Fatalf("failed call: args %#v, err %v", out.Args, out.Err)
	}
	// Arguments that do not decode are not kept.
	out = x.ExecuteInput(ctx, []byte(`{"verb":"t.greet","arguments":{"name":1}}`))
	if out.Args != nil {
		t.Fatalf("undecodable arguments kept: %#v", out.Args)
	}
}

func TestDecodeOutcome(t *testing.T) {
	x := renderExec(t)
	reg := x.Registry()
	// The inverse of Outcome.JSON: a decoded outcome encodes to the same
	// JSON and renders as the original.
	orig := x.ExecuteInput(context.Background(), []byte(`{"verb":"t.greet","arguments":{"name":"Ada"}}`))
	out, err := reg.DecodeOutcome("T.GREET", json.RawMessage(`{"name":"Ada"}`), orig.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if out.Verb != "t.greet" || string(out.JSON()) != string(orig.JSON()) || executor.RenderText(out, false) != executor.RenderText(orig, false) {
		t.Fatalf("decoded %+v: %s", out, out.JSON())
	}
	out, err = reg.DecodeOutcome("t.greet", json.RawMessage(`{"name":""}`), json.RawMessage(`{"succeeded":false,"errorMessage":"Whom?","errorCode":"invalid_arguments"}`))
	if err != nil || out.Succeeded() || out.Err.Code != executor.CodeInvalidArguments || out.Err.Message != "Whom?" || out.Value != nil {
		t.Fatalf("failure: %+v, %v", out, err)
	}
	for _, tc := range []struct {
		name, verb, args, result string
		code                     executor.ErrorCode
		msg                      string
	}{
		{"unknown verb", "t.nope", `{}`, `{"succeeded":true}`, executor.CodeUnknownVerb, "Unknown verb 't.nope'"},
		{"bad arguments", "t.greet", `{"nom":"Ada"}`, `{"succeeded":true,"greeting":"Hi"}`, executor.CodeInvalidArguments, `unknown argument "nom"`},
		{"renamed result field", "t.greet", `{"name":"Ada"}`, `{"succeeded":true,"salutation":"Hi"}`, executor.CodeInvalidEnvelope, `Invalid result for t.greet: unknown field "salutation"`},
		{"wrong result type", "t.greet", `{"name":"Ada"}`, `{"succeeded":true,"greeting":1}`, executor.CodeInvalidEnvelope, "Invalid result for t.greet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reg.DecodeOutcome(tc.verb, json.RawMessage(tc.args), json.RawMessage(tc.result))
			var e *executor.Error
			if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("got %v, want %s containing %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestFence(t *testing.T) {
	for _, tc := range []struct{ name, text, lang, want string }{
		{"plain", "x := 1", "go", "```go\nx := 1\n```"},
		{"trailing newlines trimmed", "a\nb\n\n", "", "```\na\nb\n```"},
		{"empty", "", "", "```\n\n```"},
		{"short runs keep three", "a `b` ``c``", "", "```\na `b` ``c``\n```"},
		{"longer than any run", "```go\nx\n```", "md", "````md\n```go\nx\n```\n````"},
		{"five backticks", "`````", "", "``````\n`````\n``````"},
		{"runs at both ends", "````a`b``", "", "`````\n````a`b``\n`````"},
		{"the longest run last", "`a``b````", "", "`````\n`a``b````\n`````"},
		{"one backtick alone", "`", "", "```\n`\n```"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := executor.Fence(tc.text, tc.lang); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if got, want := executor.Headed("`f.go` lines 1–2", tc.text, tc.lang), "`f.go` lines 1–2\n"+tc.want; got != want {
				t.Errorf("Headed: got %q, want %q", got, want)
			}
		})
	}
}

func TestRenderError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *executor.Error
		want string
	}{
		{"one line", &executor.Error{Code: executor.CodeNotFound, Message: "File not found: a.txt"}, "⚠ File not found: a.txt (not_found)"},
		{"usage follows in a block", &executor.Error{Code: executor.CodeInvalidArguments, Message: "Missing path\nUsage: /fs.exists <path>\n"}, "⚠ Missing path (invalid_arguments)\n```\nUsage: /fs.exists <path>\n```"},
		{"blank rest dropped", &executor.Error{Code: executor.CodeIOError, Message: "disk on fire\n  \n"}, "⚠ disk on fire (io_error)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := executor.RenderError(tc.err); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
