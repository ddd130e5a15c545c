package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

func int64p(n int64) *int64 { return &n }

// deployCommand is a command with a parameter of each kind, run as
// proc.run of show.sh, which prints each argument between < and >.
// tagPattern is the pattern of its string parameter.
func deployCommand(tagPattern string) config.Command {
	return config.Command{
		Description: "Deploy a tag to an environment",
		Params: config.CommandParams{Names: []string{"env", "tag", "file", "secs"}, ByName: map[string]config.CommandParam{
			"env":  {Type: config.ParamEnum, Values: []string{"staging", "production"}},
			"tag":  {Type: config.ParamString, Pattern: tagPattern},
			"file": {Type: config.ParamPath},
			"secs": {Type: config.ParamInteger, Min: int64p(1), Max: int64p(60)},
		}},
		Run: config.CommandRun{Verb: "proc.run", Arguments: config.Arguments{
			"executable": "./show.sh", "arguments": []any{"--env", "{env}", "{tag}", "{file}"}, "timeoutSeconds": "{secs}",
		}},
	}
}

// commandEnv is a hub with the command deploy (tag pattern tagPattern):
// telegram:5 holds ops (cmd.deploy only), telegram:6 runner (proc.run
// only), telegram:2 reader.
func commandEnv(t *testing.T, tagPattern string) *env {
	t.Helper()
	if runtime.GOOS == "windows" {
		testkit.Unavailable(t, "no POSIX sh on Windows: the command's program, show.sh, is a shell script")
	}
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	if err := os.WriteFile(filepath.Join(ws, "show.sh"), []byte("#!/bin/sh\nfor a in \"$@\"; do printf '<%s>\\n' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, ws, state)
	cfg.Commands = config.Commands{"deploy": deployCommand(tagPattern)}
	cfg.Access.Roles["ops"] = config.Role{Verbs: []string{"cmd.deploy"}}
	cfg.Access.Roles["runner"] = config.Role{Verbs: []string{"proc.run"}}
	cfg.Access.Grants["telegram:5"] = []string{"ops"}
	cfg.Access.Grants["telegram:6"] = []string{"runner"}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	he := hubtest.Open(t, cfg, hubtest.Options{})
	e := &env{he: he, rt: he.Runtime, rec: hubtest.NewRecorder(), ws: ws, state: state}
	e.rec.HandleAll(t, e.rt)
	he.Start(t)
	return e
}

// deploy runs cmd.deploy through the API as identity with params.
func deploy(t *testing.T, e *env, identity string, params map[string]any) map[string]any {
	t.Helper()
	args, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.rt.Hub.Execute(context.Background(), hub.APIRequest{Identity: identity, Input: []byte(`{"verb":"cmd.deploy","arguments":` + string(args) + `}`)})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.JSON(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func shown(args ...string) string {
	var b strings.Builder
	for _, a := range args {
		fmt.Fprintf(&b, "<%s>\n", a)
	}
	return b.String()
}

// TestNamedCommandRunsItsFixedCall: cmd.deploy runs proc.run with exactly
// the fixed arguments and each value in its place, for a role that holds
// cmd.deploy and not proc.run; a role that holds proc.run but not
// cmd.deploy, and the reader, are refused.
func TestNamedCommandRunsItsFixedCall(t *testing.T) {
	e := commandEnv(t, `[a-z0-9.-]{1,20}`)
	ok := map[string]any{"env": "staging", "tag": "v1.2", "file": "data/in.txt", "secs": 5}
	m := deploy(t, e, "telegram:5", ok)
	if m["succeeded"] != true || m["stdoutTail"] != shown("--env", "staging", "v1.2", "data/in.txt") {
		t.Fatalf("ops ran %v", m)
	}
	for _, id := range []string{"telegram:6", "telegram:2"} {
		if m := deploy(t, e, id, ok); m["errorCode"] != "forbidden" || !strings.Contains(fmt.Sprint(m["errorMessage"]), "cmd.deploy") {
			t.Fatalf("%s: %v", id, m)
		}
	}
	// The mirror records the command as asked and the call as it ran.
	waitMirror(t, e, func(recs []store.MirrorRecord) bool {
		for _, r := range recs {
			if r.Kind == "execute" && strings.Contains(r.Text, `"verb":"cmd.deploy"`) && r.Meta[hub.MetaCall] == `{"verb":"proc.run","arguments":{"arguments":["--env","staging","v1.2","data/in.txt"],"executable":"./show.sh","timeoutSeconds":5}}` {
				return true
			}
		}
		return false
	})
}

// TestNamedCommandFromChat: /deploy and /cmd_deploy fill the parameters
// by position, in the order they are written.
func TestNamedCommandFromChat(t *testing.T) {
	e := commandEnv(t, `[a-z0-9.-]{1,20}`)
	for i, text := range []string{"/deploy staging v1.2 data/in.txt 5", "/cmd_deploy production v2 x 3", "/cmd.deploy env=staging tag=v3 file=y secs=9"} {
		res, err := e.rt.Hub.Handle(context.Background(), tgMsg(5, 40+i, text))
		if err != nil || res.Status != hub.StatusExecuted || res.Verb != "cmd.deploy" {
			t.Fatalf("%s: %+v %v", text, res, err)
		}
	}
	got := e.rec.Wait(t, "chat:telegram:100", 3)
	for i, want := range []string{"<staging>", "<production>", "<v3>"} {
		if !strings.Contains(got[i].Text, want) {
			t.Fatalf("reply %d: %q, want %s", i, got[i].Text, want)
		}
	}
	// /help shows its usage and parameters; /verbs lists it for ops, who
	// may run nothing else.
	for i, c := range []struct{ text, want string }{
		{"/help cmd.deploy", "Usage: /cmd.deploy <env> <tag> <file> <secs>"},
		{"/help deploy", `env: "staging" | "production"`},
		{"/verbs", "/cmd.deploy — Deploy a tag to an environment"},
	} {
		if _, err := e.rt.Hub.Handle(context.Background(), tgMsg(5, 60+i, c.text)); err != nil {
			t.Fatal(err)
		}
		waitText(t, e, "chat:telegram:100", c.want)
	}
	// A value chat cannot fit is refused with the command's usage.
	res, err := e.rt.Hub.Handle(context.Background(), tgMsg(5, 50, "/deploy staging v1 x 99"))
	if err != nil || res.Status != hub.StatusRejected {
		t.Fatalf("out of range from chat: %+v %v", res, err)
	}
}

// TestNamedCommandInjection: a value of every parameter kind that tries
// to reach past its place is refused with what the parameter accepts,
// and nothing runs; one a permissive pattern accepts is passed as one
// inert argument, never read for placeholders nor given to a shell.
func TestNamedCommandInjection(t *testing.T) {
	e := commandEnv(t, `[a-z0-9.-]{1,20}`)
	base := map[string]any{"env": "staging", "tag": "v1", "file": "f", "secs": 5}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}
	for _, tc := range []struct {
		param string
		value any
		want  string
	}{
		{"env", "staging; rm -rf /", "not one of its values"},
		{"env", "Staging", "not one of its values"},
		{"env", "st\u0430ging", "not one of its values"}, // a Cyrillic a
		{"env", "{tag}", "not one of its values"},
		{"env", "staging\n", "control or format"},
		{"env", 1, "not text"},
		{"tag", "v1;id", "does not match its pattern"},
		{"tag", "$(id)", "does not match its pattern"},
		{"tag", "`id`", "does not match its pattern"},
		{"tag", "v1\nrm", "control or format"},
		{"tag", "v1\x00", "control or format"},
		{"tag", "v1\u202e", "control or format"},
		{"tag", "v\u200b1", "control or format"},
		{"tag", "{env}", "does not match its pattern"},
		{"tag", strings.Repeat("a", 2000), "longer than 1024"},
		{"file", "../secret", "leaves the workspace"},
		{"file", "a/../../secret", "leaves the workspace"},
		{"file", "/etc/passwd", "not a relative path"},
		{"file", `..\secret`, "not a relative path"},
		{"file", "-rf", "starts with '-'"},
		{"file", "a\x00b", "control or format"},
		{"file", "a\nb", "control or format"},
		{"file", "", "is empty"},
		{"secs", 0, "out of range"},
		{"secs", 61, "out of range"},
		{"secs", json.Number("9223372036854775808"), "not an integer"},
		{"secs", json.Number("-9223372036854775809"), "not an integer"},
		{"secs", 1.5, "not an integer"},
		{"secs", json.Number("1e1"), "not an integer"},
		{"secs", "5", "not an integer"},
		{"secs", "5; id", "not an integer"},
	} {
		m := deploy(t, e, "telegram:5", with(tc.param, tc.value))
		if m["errorCode"] != "invalid_arguments" || !strings.Contains(fmt.Sprint(m["errorMessage"]), tc.want) || !strings.Contains(fmt.Sprint(m["errorMessage"]), tc.param) {
			t.Errorf("%s=%q: %v, want invalid_arguments saying %q", tc.param, tc.value, m, tc.want)
		}
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"unknown parameter", with("extra", "x"), "unknown parameter"},
		{"missing parameter", map[string]any{"env": "staging", "tag": "v1", "file": "f"}, "missing parameter"},
	} {
		if m := deploy(t, e, "telegram:5", tc.params); m["errorCode"] != "invalid_arguments" || !strings.Contains(fmt.Sprint(m["errorMessage"]), tc.want) {
			t.Errorf("%s: %v", tc.name, m)
		}
	}
	// Nothing ran: proc.run never wrote an output directory.
	if entries, _ := os.ReadDir(filepath.Join(e.state, "proc")); len(entries) != 0 {
		t.Fatalf("refused calls ran: %d proc outputs", len(entries))
	}

	// A permissive pattern passes shell text, quotes and placeholders as
	// one argument each, as written.
	e = commandEnv(t, `.{1,64}`)
	for _, v := range []string{"$(id);`id`|x&&y>z", `"{env}" '{file}'`, "{env}", "*"} {
		m := deploy(t, e, "telegram:5", with("tag", v))
		if m["succeeded"] != true || m["stdoutTail"] != shown("--env", "staging", v, "f") {
			t.Errorf("tag %q: %v", v, m)
		}
	}
}

// TestNamedCommandsReload: a reload adds, changes and removes commands,
// replacing the registry's cmd.* verbs at once; one whose verb would not
// take its arguments refuses the reload and keeps the running set.
func TestNamedCommandsReload(t *testing.T) {
	e := commandEnv(t, `[a-z0-9.-]{1,20}`)
	reg := e.he.Runtime.Hub.Registry()
	next := *e.he.Config
	load := func() (*config.Config, error) { c := next; return &c, nil }
	r := e.rt.EnableReload(load)

	count := lineCountCommand()
	next.Commands = config.Commands{"count": count}
	if _, err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Lookup("cmd.deploy"); ok {
		t.Fatal("cmd.deploy still registered after its removal")
	}
	if _, ok := reg.Lookup("cmd.count"); !ok {
		t.Fatal("cmd.count not registered")
	}
	// count's description changes; a broken command refuses the reload.
	count.Description = "How many lines"
	next.Commands = config.Commands{"count": count}
	if _, err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if info, _ := reg.Lookup("cmd.count"); info.Summary != "How many lines" {
		t.Fatalf("summary %q", info.Summary)
	}
	bad := lineCountCommand()
	bad.Run.Arguments = config.Arguments{"path": "{file}", "lines": "{file}"}
	next.Commands = config.Commands{"count": count, "bad": bad}
	if _, err := r.Reload(); err == nil || !strings.Contains(err.Error(), "commands.bad.run") || !strings.Contains(err.Error(), "lines") {
		t.Fatalf("reload of a command fs.lineCount refuses: %v", err)
	}
	if _, ok := reg.Lookup("cmd.bad"); ok {
		t.Fatal("a refused reload registered cmd.bad")
	}
	if _, ok := reg.Lookup("cmd.count"); !ok {
		t.Fatal("a refused reload removed cmd.count")
	}
}
