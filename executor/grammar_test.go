package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
)

func TestParseCommand(t *testing.T) {
	x := newExec(t)
	tests := []struct {
		name, in string
		verb     string
		args     string // expected arguments JSON
		json     bool
		mention  string
		builtin  string
		barg     string
	}{
		{"positional", "/fs.readRange README.md 1 5", "fs.readRange", `{"path":"README.md","startLine":1,"endLine":5}`, false, "", "", ""},
		{"underscore lowercase", "/fs_readrange path=README.md startLine=2 endLine=3", "fs.readRange", `{"path":"README.md","startLine":2,"endLine":3}`, false, "", "", ""},
		{"snake key", "/fs.readRange README.md 1 2 include_line_numbers=no", "fs.readRange", `{"path":"README.md","startLine":1,"endLine":2,"includeLineNumbers":false}`, false, "", "", ""},
		{"mention", "/fs_readrange@MyBot a 1 2", "fs.readRange", `{"path":"a","startLine":1,"endLine":2}`, false, "MyBot", "", ""},
		{"trailing list", "/proc.run git status --short", "proc.run", `{"executable":"git","arguments":["status","--short"]}`, false, "", "", ""},
		{"list keeps key=value", "/proc.run env FOO=bar timeoutSeconds=3", "proc.run", `{"executable":"env","arguments":["FOO=bar","timeoutSeconds=3"]}`, false, "", "", ""},
		{"options before list", "/proc.run timeoutSeconds=5 sleep 3", "proc.run", `{"executable":"sleep","arguments":["3"],"timeoutSeconds":5}`, false, "", "", ""},
		{"empty list", "/proc.run ls", "proc.run", `{"executable":"ls","arguments":[]}`, false, "", "", ""},
		{"quoted", `/proc.run sh -c "echo 'hi there'; exit 3"`, "proc.run", `{"executable":"sh","arguments":["-c","echo 'hi there'; exit 3"]}`, false, "", "", ""},
		{"json flag", "/fs.readRange a 1 2 --json", "fs.readRange", `{"path":"a","startLine":1,"endLine":2}`, true, "", "", ""},
		{"dash json flag", "/proc.run ls —json", "proc.run", `{"executable":"ls","arguments":[]}`, true, "", "", ""},
		{"quoted --json is literal", `/proc.run echo "--json"`, "proc.run", `{"executable":"echo","arguments":["--json"]}`, false, "", "", ""},
		{"yaml body", "/fs.writeFile\npath: notes.txt\ncontent: |\n  hello\n  world\n", "fs.writeFile", `{"path":"notes.txt","content":"hello\nworld\n"}`, false, "", "", ""},
		{"json body", "/fs.writeFile\n{\"path\": \"a\", \"content\": \"x\", \"mode\": \"append\"}", "fs.writeFile", `{"path":"a","content":"x","mode":"append"}`, false, "", "", ""},
		{"text body", "/fs.writeFile notes.txt\nbuy milk: now\nand bread", "fs.writeFile", `{"path":"notes.txt","content":"buy milk: now\nand bread"}`, false, "", "", ""},
		{"enum inline", "/fs.writeFile a x mode=overwrite", "fs.writeFile", `{"path":"a","content":"x","mode":"overwrite"}`, false, "", "", ""},
		{"list flow", "/proc.run executable=echo arguments=[a,b] arguments=c", "proc.run", `{"executable":"echo","arguments":["a","b","c"]}`, false, "", "", ""},
		{"envelope json", `{"verb":"fs.exists","arguments":{"path":"x"}}`, "fs.exists", `{"path":"x"}`, false, "", "", ""},
		{"envelope yaml", "verb: fs.exists\narguments:\n  path: x", "fs.exists", "{\"path\":\"x\"}", false, "", "", ""},
		{"no-arg verb", "/sys.machineInfo", "sys.machineInfo", `{}`, false, "", "", ""},
		{"help", "/help fs.readRange", "", "", false, "", "help", "fs.readRange"},
		{"verbs", "/verbs@Bot", "", "", false, "Bot", "verbs", ""},
		{"start", "/START", "", "", false, "", "start", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd, err := x.ParseCommand(tc.in)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if cmd.Builtin != tc.builtin || cmd.BuiltinArg != tc.barg || cmd.Verb != tc.verb || cmd.JSON != tc.json || cmd.Mention != tc.mention {
				t.Fatalf("got %+v", cmd)
			}
			if tc.args != "" {
				var got, want any
				_ = json.Unmarshal(cmd.Arguments, &got)
				_ = json.Unmarshal([]byte(tc.args), &want)
				gb, _ := json.Marshal(got)
				wb, _ := json.Marshal(want)
				if string(gb) != string(wb) {
					t.Fatalf("arguments %s, want %s", gb, wb)
				}
			}
		})
	}
}

func TestParseCommandErrors(t *testing.T) {
	x := newExec(t)
	tests := []struct {
		name, in, code string
		want           []string
	}{
		{"unknown verb", "/fs.redRange a", "unknown_verb", []string{"Unknown verb 'fs.redRange'", "Did you mean: fs.readRange", "/verbs"}},
		{"bad int", "/fs.readRange a one 2", "invalid_arguments", []string{`"startLine": expected an integer, got "one"`, "Usage: /fs.readRange <path> <startLine> <endLine> [includeLineNumbers=bool]", "type ReadArgs"}},
		{"missing", "/fs.readRange a 1", "invalid_arguments", []string{`missing required argument "endLine"`, "Usage:"}},
		{"too many", "/fs.readRange a 1 2 3", "invalid_arguments", []string{`too many arguments: "3"`}},
		{"bad bool", "/fs.readRange a 1 2 includeLineNumbers=maybe", "invalid_arguments", []string{"expected true or false"}},
		{"bad enum", "/fs.writeFile a b mode=delete", "invalid_arguments", []string{`"delete" is not one of "create" | "overwrite" | "append"`}},
		{"twice", "/fs.readRange path=a path=b 1 2", "invalid_arguments", []string{`"path" given twice`}},
		{"unterminated", `/proc.run echo "oops`, "invalid_arguments", []string{"unterminated"}},
		{"unknown body key", "/fs.writeFile\npath: a\ncontent: b\nextra: 1", "invalid_arguments", []string{"Usage:"}},
		{"envelope unknown arg", `{"verb":"fs.exists","arguments":{"p":"x"}}`, "invalid_arguments", []string{`unknown argument "p"`, "Usage: /fs.exists <path>"}},
		{"envelope unknown verb", `{"verb":"nope"}`, "unknown_verb", []string{"nope"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := x.ParseCommand(tc.in)
			var e *executor.Error
			if !errors.As(err, &e) {
				t.Fatalf("want *executor.Error, got %v", err)
			}
			if string(e.Code) != tc.code {
				t.Fatalf("code %s, want %s: %s", e.Code, tc.code, e.Message)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q lacks %q", e.Message, w)
				}
			}
		})
	}
	for _, s := range []string{"", "hello there", "   ", "/"} {
		if _, err := x.ParseCommand(s); !errors.Is(err, executor.ErrNotCommand) {
			t.Errorf("%q: want ErrNotCommand, got %v", s, err)
		}
	}
}

func TestSchemaIDL(t *testing.T) {
	x := newExec(t)
	s, ok := x.Registry().Schema("FS.READRANGE")
	if !ok {
		t.Fatal("no schema")
	}
	want := `type ReadArgs
{
  // File to read
  path: string
  startLine: int
  endLine: int
  // Prefix lines (default: true)
  includeLineNumbers?: bool
}
type ReadResult
{
  // Whether the verb ran and did what was asked
  succeeded: bool
  // What went wrong, for people; empty on success
  errorMessage?: string
  // What went wrong, for programs: unknown_verb, invalid_arguments, not_found, forbidden_path, too_large, timeout, io_error, …; empty on success
  errorCode?: string
  content: string
}
`
	if s.IDL != want {
		t.Fatalf("IDL:\n%s\nwant:\n%s", s.IDL, want)
	}
	if !s.ReadOnly || s.Summary != "Read lines" {
		t.Fatalf("schema %+v", s)
	}
	f := s.Arguments.Fields[3]
	if f.Name != "includeLineNumbers" || f.Required || f.Kind != executor.KindBool || f.Default != "true" {
		t.Fatalf("field %+v", f)
	}
	l, _ := x.Registry().Schema("sys.machineInfo")
	if !strings.Contains(l.IDL, "entries: Entry[]") || !strings.Contains(l.IDL, "index?: { [key: string]: Entry }") || strings.Count(l.IDL, "type Entry\n") != 1 {
		t.Fatalf("list/map IDL:\n%s", l.IDL)
	}
	w, _ := x.Registry().Schema("fs.writeFile")
	if !strings.Contains(w.IDL, `mode?: "create" | "overwrite" | "append"`) || w.Arguments.Fields[2].Kind != executor.KindEnum || len(w.Arguments.Fields[2].Enum) != 3 {
		t.Fatalf("enum IDL:\n%s", w.IDL)
	}
	r, _ := x.Registry().Schema("proc.run")
	if a := r.Arguments.Fields[1]; a.Kind != executor.KindList || a.Elem != executor.KindString || !a.Required {
		t.Fatalf("list field %+v", a)
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"/fs.readRange a 1 2", "/proc.run git status --short", "/fs.writeFile a\nb: c", `{"verb":"fs.exists","arguments":{"path":"x"}}`, "/help", `/proc.run "a\`, "/x@y z=1 'q'", "verb: fs.exists\narguments: {path: [1, {a: *b}]}"} {
		f.Add(s)
	}
	x := newExec(f)
	f.Fuzz(func(t *testing.T, s string) {
		cmd, err := x.ParseCommand(s)
		if err != nil {
			return
		}
		if cmd.Verb != "" && !json.Valid(cmd.Arguments) {
			t.Fatalf("parsed %q into invalid arguments %s", s, cmd.Arguments)
		}
	})
}

func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{`{"verb":"fs.exists","arguments":{"path":"x"}}`, "verb: a\narguments:\n  b: &x [1]\n  c: *x", `{"verb":1}`, "[", "{}", "verb: x\n---\n", "\xff"} {
		f.Add([]byte(s))
	}
	x := newExec(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		out := x.ExecuteInput(t.Context(), b)
		var m map[string]any
		if err := json.Unmarshal(out.JSON(), &m); err != nil {
			t.Fatalf("result not JSON for %q: %s", b, out.JSON())
		}
		if _, ok := m["succeeded"].(bool); !ok {
			t.Fatalf("no succeeded in %s", out.JSON())
		}
	})
}

// TailArgs has two ways to call it: a range by position, or lastLines.
type TailArgs struct {
	Path      string `json:"path" desc:"File"`
	StartLine int    `json:"startLine,omitempty" positional:"true" default:"none" desc:"First line"`
	EndLine   int    `json:"endLine,omitempty" positional:"true" default:"none" desc:"Last line"`
	LastLines *int   `json:"lastLines,omitempty" default:"none" desc:"The last lines"`
	Numbers   *bool  `json:"numbers,omitempty" default:"true" desc:"Numbered"`
}

// Optional fields marked positional are filled by position after the
// required ones; the usage line shows them as positionals.
func TestParsePositionalOptional(t *testing.T) {
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "fs.tail", Summary: "Tail"},
		executor.VerbFunc[TailArgs, EchoResult](func(ctx context.Context, a TailArgs) (EchoResult, error) {
			return EchoResult{}, nil
		}))
	x := executor.New(reg, executor.Options{})
	for _, tc := range []struct{ in, want string }{
		{"/fs.tail a.log 3 9", `{"path":"a.log","startLine":3,"endLine":9}`},
		{"/fs.tail a.log lastLines=5", `{"path":"a.log","lastLines":5}`},
		{"/fs.tail a.log 3 endLine=9", `{"path":"a.log","startLine":3,"endLine":9}`},
		{"/fs.tail path=a.log 4", `{"path":"a.log","startLine":4}`},
	} {
		cmd, err := x.ParseCommand(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if string(cmd.Arguments) != tc.want {
			t.Errorf("%s: arguments %s, want %s", tc.in, cmd.Arguments, tc.want)
		}
	}
	_, err := x.ParseCommand("/fs.tail a.log 1 2 3")
	var e *executor.Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, `too many arguments: "3"`) {
		t.Fatalf("a positional beyond the last: %v", err)
	}
	if u, _ := x.Usage("fs.tail"); u != "/fs.tail <path> <startLine> <endLine> [lastLines=int] [numbers=bool]" {
		t.Errorf("usage %q", u)
	}
	s, _ := reg.Schema("fs.tail")
	for _, f := range s.Arguments.Fields {
		if want := f.Name == "startLine" || f.Name == "endLine"; f.Positional != want || want && f.Required {
			t.Errorf("field %s: positional %v required %v", f.Name, f.Positional, f.Required)
		}
	}
}
