package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
)

type Mode string

func (Mode) Values() []string { return []string{"create", "overwrite", "append"} }

type ReadArgs struct {
	Path               string `json:"path" desc:"File to read"`
	StartLine          int    `json:"startLine"`
	EndLine            int    `json:"endLine"`
	IncludeLineNumbers *bool  `json:"includeLineNumbers,omitempty" default:"true" desc:"Prefix lines"`
}

type ReadResult struct {
	executor.Result
	Content string `json:"content"`
}

type RunArgs struct {
	Executable     string   `json:"executable"`
	Arguments      []string `json:"arguments"`
	TimeoutSeconds *int     `json:"timeoutSeconds,omitempty" default:"60"`
}

type RunResult struct {
	executor.Result
	Argv []string `json:"argv"`
}

type WriteArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Mode    Mode   `json:"mode,omitempty" default:"create"`
}

type Entry struct {
	Name  string `json:"name"`
	IsDir bool   `json:"isDirectory"`
}

type ListResult struct {
	executor.Result
	Entries []Entry           `json:"entries"`
	Index   map[string]Entry  `json:"index,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
}

type NoArgs struct{}

type EchoResult struct {
	executor.Result
	Args json.RawMessage `json:"args"`
}

func newExec(t testing.TB) *executor.Executor {
	t.Helper()
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "fs.readRange", Summary: "Read lines", ReadOnly: true},
		executor.VerbFunc[ReadArgs, ReadResult](func(ctx context.Context, a ReadArgs) (ReadResult, error) {
			if a.Path == "missing" {
				return ReadResult{}, executor.Errorf(executor.CodeNotFound, "File not found: %s", a.Path)
			}
			if a.Path == "boom" {
				panic("kaboom")
			}
			if a.Path == "oserr" {
				return ReadResult{}, errors.New("disk on fire")
			}
			b, _ := json.Marshal(a)
			return ReadResult{Content: string(b)}, nil
		}))
	executor.MustRegister(reg, executor.Info{Name: "proc.run", Summary: "Run a process"},
		executor.VerbFunc[RunArgs, RunResult](func(ctx context.Context, a RunArgs) (RunResult, error) {
			return RunResult{Argv: append([]string{a.Executable}, a.Arguments...)}, nil
		}))
	executor.MustRegister(reg, executor.Info{Name: "fs.writeFile", Summary: "Write a file"},
		executor.VerbFunc[WriteArgs, EchoResult](func(ctx context.Context, a WriteArgs) (EchoResult, error) {
			b, _ := json.Marshal(a)
			return EchoResult{Args: b}, nil
		}))
	executor.MustRegister(reg, executor.Info{Name: "fs.exists", Summary: "Check a path", ReadOnly: true},
		executor.VerbFunc[struct {
			Path string `json:"path"`
		}, EchoResult](func(ctx context.Context, a struct {
			Path string `json:"path"`
		}) (EchoResult, error) {
			return EchoResult{Args: json.RawMessage(`{}`)}, nil
		}))
	executor.MustRegister(reg, executor.Info{Name: "sys.machineInfo", Summary: "Machine", ReadOnly: true},
		executor.VerbFunc[NoArgs, ListResult](func(ctx context.Context, a NoArgs) (ListResult, error) {
			return ListResult{Entries: []Entry{{Name: "a"}}}, nil
		}))
	return executor.New(reg, executor.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func TestRegistry(t *testing.T) {
	reg := executor.NewRegistry()
	v := executor.VerbFunc[NoArgs, ListResult](func(ctx context.Context, a NoArgs) (ListResult, error) { return ListResult{}, nil })
	if err := executor.Register(reg, executor.Info{Name: "fs.listDir"}, v); err != nil {
		t.Fatal(err)
	}
	if err := executor.Register(reg, executor.Info{Name: "FS.LISTDIR"}, v); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("duplicate registration: got %v", err)
	}
	for _, bad := range []string{"", "fs.", ".x", "fs..x", "fs/x", "1fs", "fs x"} {
		if err := executor.Register(reg, executor.Info{Name: bad}, v); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	type plain struct{ X int }
	if err := executor.Register(reg, executor.Info{Name: "bad.result"}, executor.VerbFunc[NoArgs, plain](func(context.Context, NoArgs) (plain, error) { return plain{}, nil })); err == nil || !strings.Contains(err.Error(), "embed executor.Result") {
		t.Fatalf("result without Result: %v", err)
	}
	for _, n := range []string{"fs.listDir", "fs.listdir", "FS.LISTDIR", "fs_listdir"} {
		if info, ok := reg.Lookup(n); !ok || info.Name != "fs.listDir" {
			t.Errorf("lookup %q = %v %v", n, info, ok)
		}
	}
}

func run(t *testing.T, x *executor.Executor, in string) map[string]any {
	t.Helper()
	out := x.Execute(context.Background(), []byte(in))
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("result is not JSON: %s", out)
	}
	return m
}

func TestExecute(t *testing.T) {
	x := newExec(t)
	tests := []struct {
		name, in string
		code     string // "" = success
		msg      []string
	}{
		{"json", `{"verb":"fs.readRange","arguments":{"path":"a","startLine":1,"endLine":2}}`, "", nil},
		{"yaml", "verb: fs.readRange\narguments:\n  path: a\n  startLine: 1\n  endLine: 2\n", "", nil},
		{"case-insensitive verb", `{"verb":"FS.READRANGE","arguments":{"path":"a","startLine":1,"endLine":2}}`, "", nil},
		{"no args verb", `{"verb":"sys.machineInfo"}`, "", nil},
		{"null args", `{"verb":"sys.machineInfo","arguments":null}`, "", nil},
		{"id echoed ok", `{"verb":"sys.machineInfo","id":7}`, "", nil},
		{"unknown verb suggests", `{"verb":"fs.readRnge","arguments":{}}`, "unknown_verb", []string{"Unknown verb 'fs.readRnge'", "fs.readRange"}},
		{"unknown verb suffix", `{"verb":"readRange"}`, "unknown_verb", []string{"fs.readRange"}},
		{"unknown argument", `{"verb":"fs.readRange","arguments":{"path":"a","startLine":1,"endLine":2,"colour":1}}`, "invalid_arguments", []string{`unknown argument "colour"`, "accepted: path, startLine, endLine, includeLineNumbers?"}},
		{"wrong case argument", `{"verb":"fs.readRange","arguments":{"Path":"a","startLine":1,"endLine":2}}`, "invalid_arguments", []string{`did you mean "path"`}},
		{"missing required", `{"verb":"fs.readRange","arguments":{"path":"a","startLine":1}}`, "invalid_arguments", []string{`missing required argument "endLine" (int)`}},
		{"null required", `{"verb":"fs.readRange","arguments":{"path":null,"startLine":1,"endLine":2}}`, "invalid_arguments", []string{`missing required argument "path"`}},
		{"wrong type", `{"verb":"fs.readRange","arguments":{"path":"a","startLine":"one","endLine":2}}`, "invalid_arguments", []string{`argument "startLine": expected int, got string`}},
		{"float for int", `{"verb":"fs.readRange","arguments":{"path":"a","startLine":1.5,"endLine":2}}`, "invalid_arguments", []string{`"startLine"`}},
		{"list elem type", `{"verb":"proc.run","arguments":{"executable":"a","arguments":[1]}}`, "invalid_arguments", []string{`argument "arguments`}},
		{"args not object", `{"verb":"fs.readRange","arguments":[1]}`, "invalid_arguments", []string{"arguments must be an object, got an array"}},
		{"not an object", `[1,2]`, "invalid_envelope", []string{"expected an object"}},
		{"missing verb", `{"arguments":{}}`, "invalid_envelope", []string{`missing "verb"`}},
		{"verb not string", `{"verb":3}`, "invalid_envelope", []string{`"verb" must be a non-empty string`}},
		{"unknown envelope key", `{"verb":"fs.exists","args":{}}`, "invalid_envelope", []string{`unknown key "args"`, "accepted: verb, arguments, id, workspace"}},
		{"empty workspace", `{"verb":"fs.exists","workspace":""}`, "invalid_envelope", []string{`"workspace" must be the name of a configured workspace`}},
		{"workspace not a string", `{"verb":"fs.exists","workspace":3}`, "invalid_envelope", []string{`"workspace" must be`, "got a number"}},
		{"duplicate json key", `{"verb":"fs.exists","arguments":{"path":"a","path":"b"}}`, "invalid_envelope", []string{`"path" appears twice`}},
		{"duplicate yaml key", "verb: fs.exists\narguments:\n  path: a\n  path: b\n", "invalid_envelope", []string{"path"}},
		{"broken json", `{"verb":"fs.exists",`, "invalid_envelope", []string{"not valid JSON"}},
		{"broken yaml", "verb: [\n", "invalid_envelope", []string{"not valid YAML"}},
		{"trailing json", `{"verb":"fs.exists"} {"verb":"x"}`, "invalid_envelope", []string{"one envelope at a time"}},
		{"two yaml docs", "verb: fs.exists\n---\nverb: x\n", "invalid_envelope", []string{"more than one YAML document"}},
		{"empty", "  \n", "invalid_envelope", []string{"input is empty"}},
		{"invalid utf8", "{\"verb\":\"fs.exists\",\"arguments\":{\"path\":\"a\xff\"}}", "invalid_envelope", []string{"not valid UTF-8 (at byte 42)"}},
		{"verb error", `{"verb":"fs.readRange","arguments":{"path":"missing","startLine":1,"endLine":2}}`, "not_found", []string{"File not found: missing"}},
		{"plain error is io_error", `{"verb":"fs.readRange","arguments":{"path":"oserr","startLine":1,"endLine":2}}`, "io_error", []string{"disk on fire"}},
		{"panic is a result", `{"verb":"fs.readRange","arguments":{"path":"boom","startLine":1,"endLine":2}}`, "internal", []string{"kaboom"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := run(t, x, tc.in)
			if tc.code == "" {
				if m["succeeded"] != true {
					t.Fatalf("want success, got %v", m)
				}
				if _, ok := m["errorCode"]; ok {
					t.Fatalf("success carries errorCode: %v", m)
				}
				return
			}
			if m["succeeded"] != false || m["errorCode"] != tc.code {
				t.Fatalf("want %s, got %v", tc.code, m)
			}
			msg, _ := m["errorMessage"].(string)
			for _, want := range tc.msg {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
		})
	}
}

func TestExecuteDefaultsAndValues(t *testing.T) {
	x := newExec(t)
	m := run(t, x, "verb: fs.readRange\narguments: {path: a, startLine: 3, endLine: 4, includeLineNumbers: false}")
	var got ReadArgs
	if err := json.Unmarshal([]byte(m["content"].(string)), &got); err != nil {
		t.Fatal(err)
	}
	if got.Path != "a" || got.StartLine != 3 || got.EndLine != 4 || got.IncludeLineNumbers == nil || *got.IncludeLineNumbers {
		t.Fatalf("decoded %+v", got)
	}
	// YAML values stay strings when quoted and numbers when not.
	m = run(t, x, "verb: fs.writeFile\narguments:\n  path: '007'\n  content: |\n    line one\n    line: two\n")
	b, _ := json.Marshal(m["args"])
	var w WriteArgs
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if w.Path != "007" || w.Content != "line one\nline: two\n" {
		t.Fatalf("decoded %+v", w)
	}
}

func TestLimits(t *testing.T) {
	reg := executor.NewRegistry()
	x := executor.New(reg, executor.Options{Limits: executor.Limits{MaxInputBytes: 4096, MaxDepth: 8, MaxNodes: 1000}})
	ctx := context.Background()
	check := func(name, in, code, want string) {
		t.Helper()
		var m map[string]any
		_ = json.Unmarshal(x.Execute(ctx, []byte(in)), &m)
		if m["errorCode"] != code || !strings.Contains(m["errorMessage"].(string), want) {
			t.Errorf("%s: got %v, want %s containing %q", name, m, code, want)
		}
	}
	check("too large", `{"verb":"x","arguments":{"c":"`+strings.Repeat("a", 5000)+`"}}`, "too_large", "over the 4096-byte limit")
	check("deep json", `{"verb":"x","arguments":`+strings.Repeat("[", 20)+strings.Repeat("]", 20)+`}`, "invalid_envelope", "nests more than 8 levels")
	check("deep yaml", "verb: x\narguments: "+strings.Repeat("[", 20)+strings.Repeat("]", 20), "invalid_envelope", "nests more than 8 levels")
	bomb := "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
	check("alias bomb", bomb, "invalid_envelope", "more than 1000 values")
	// Brackets inside strings do not count as nesting.
	var m map[string]any
	_ = json.Unmarshal(x.Execute(ctx, []byte(`{"verb":"x","arguments":{"c":"`+strings.Repeat("[", 50)+`"}}`)), &m)
	if m["errorCode"] != "unknown_verb" {
		t.Errorf("brackets in a string rejected: %v", m)
	}
}

func TestOutcome(t *testing.T) {
	x := newExec(t)
	out := x.ExecuteInput(context.Background(), []byte(`{"verb":"proc.run","arguments":{"executable":"git","arguments":["status"]},"id":"abc"}`))
	if !out.Succeeded() || out.Verb != "proc.run" || string(out.ID) != `"abc"` {
		t.Fatalf("outcome %+v", out)
	}
	r, ok := out.Value.(*RunResult)
	if !ok || strings.Join(r.Argv, " ") != "git status" || !r.Succeeded {
		t.Fatalf("value %#v", out.Value)
	}
	if got := string(out.JSON()); got != `{"succeeded":true,"argv":["git","status"]}` {
		t.Fatalf("json %s", got)
	}
}

func TestTimeoutOption(t *testing.T) {
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "slow.wait"}, executor.VerbFunc[NoArgs, ListResult](func(ctx context.Context, _ NoArgs) (ListResult, error) {
		<-ctx.Done()
		return ListResult{}, ctx.Err()
	}))
	x := executor.New(reg, executor.Options{Timeout: 1})
	var m map[string]any
	_ = json.Unmarshal(x.Execute(context.Background(), []byte(`{"verb":"slow.wait"}`)), &m)
	if m["errorCode"] != "timeout" {
		t.Fatalf("got %v", m)
	}
}

// TestMissingArguments: an envelope without "arguments" (or with null) is
// accepted for a verb that requires none and refused, listing every
// required field, for one that does.
func TestMissingArguments(t *testing.T) {
	x := newExec(t)
	for _, tc := range []struct {
		in   string
		code string // "" = success
		msg  []string
	}{
		{`{"verb":"sys.machineInfo"}`, "", nil},
		{"verb: sys.machineInfo\n", "", nil},
		{`{"verb":"sys.machineInfo","arguments":null}`, "", nil},
		{`{"verb":"fs.readRange"}`, "invalid_arguments", []string{`"arguments" is missing`, "path (string)", "startLine (int)", "endLine (int)"}},
		{`{"verb":"fs.readRange","arguments":null}`, "invalid_arguments", []string{`"arguments" is missing`, "path (string), startLine (int), endLine (int)"}},
		{`{"verb":"proc.run"}`, "invalid_arguments", []string{"executable (string)", "arguments (string[])"}},
	} {
		m := run(t, x, tc.in)
		if tc.code == "" {
			if m["succeeded"] != true {
				t.Errorf("%s: %v", tc.in, m)
			}
			continue
		}
		msg, _ := m["errorMessage"].(string)
		if m["errorCode"] != tc.code {
			t.Errorf("%s: code %v, want %s (%s)", tc.in, m["errorCode"], tc.code, msg)
		}
		for _, want := range tc.msg {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q lacks %q", tc.in, msg, want)
			}
		}
		if strings.Contains(msg, "includeLineNumbers") || strings.Contains(msg, "timeoutSeconds") {
			t.Errorf("%s: optional fields listed as required: %q", tc.in, msg)
		}
	}
}
