package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// greet is an alias cmd.greet of proc.run: echo with its one enum
// argument, who.
func greet(name string) executor.Alias {
	return executor.Alias{
		Info:      executor.Info{Name: "cmd." + name, Summary: "Greet someone"},
		Arguments: []executor.Field{{Name: "who", Type: `"world" | "moon"`, Kind: executor.KindEnum, Enum: []string{"world", "moon"}}},
		Target:    "proc.run",
		Expand: func(args json.RawMessage) (executor.Envelope, error) {
			var a struct{ Who string }
			if err := json.Unmarshal(args, &a); err != nil || a.Who != "world" && a.Who != "moon" {
				return executor.Envelope{}, fmt.Errorf("who must be world or moon")
			}
			return executor.Envelope{Verb: "proc.run", Arguments: json.RawMessage(`{"executable":"echo","arguments":["hello",` + fmt.Sprintf("%q", a.Who) + `]}`)}, nil
		},
	}
}

// TestAliases: an alias is listed, described (its arguments' schema, the
// target's result), parsed from chat (also by its name without the
// prefix) and run as the call it expands to; a set that cannot be
// installed changes nothing; a new set replaces the old whole.
func TestAliases(t *testing.T) {
	x := newExec(t)
	reg := x.Registry()
	changed := make(chan struct{}, 4)
	stop := reg.Watch(func() { changed <- struct{}{} })
	defer stop()
	if err := reg.ReplaceAliases("cmd.", []executor.Alias{greet("greet")}); err != nil {
		t.Fatal(err)
	}
	<-changed
	s, ok := reg.Schema("cmd.greet")
	if !ok || s.Arguments.Name != "CmdGreetArguments" || len(s.Arguments.Fields) != 1 || !s.Arguments.Fields[0].Required || s.Result.Name != "RunResult" {
		t.Fatalf("schema %+v", s)
	}
	in, _, _ := reg.JSONSchemas("cmd.greet")
	if b, _ := json.Marshal(in); !strings.Contains(string(b), `"enum":["world","moon"]`) {
		t.Fatalf("json schema %s", b)
	}
	for _, text := range []string{"/cmd.greet moon", "/greet moon", "/cmd_greet who=moon"} {
		cmd, err := x.ParseCommand(text)
		if err != nil || cmd.Verb != "cmd.greet" || string(cmd.Arguments) != `{"who":"moon"}` {
			t.Fatalf("%s: %+v %v", text, cmd, err)
		}
		out := x.Run(context.Background(), cmd.Envelope())
		if got := string(out.JSON()); out.Verb != "proc.run" || !strings.Contains(got, `"argv":["echo","hello","moon"]`) {
			t.Fatalf("%s ran %s %s", text, out.Verb, got)
		}
	}
	if _, err := x.ParseCommand("/greet mars"); err == nil || !strings.Contains(err.Error(), "Usage: /cmd.greet <who>") {
		t.Fatalf("a value the alias refuses: %v", err)
	}
	env, err := reg.Expand(executor.Envelope{Verb: "cmd.greet", Arguments: json.RawMessage(`{"who":"world"}`), Workspace: "w"})
	if err != nil || env.Verb != "proc.run" || env.Workspace != "w" {
		t.Fatalf("expand %+v %v", env, err)
	}

	for _, tc := range []struct {
		name  string
		alias executor.Alias
		want  string
	}{
		{"target unknown", func() executor.Alias { a := greet("x"); a.Target = "proc.nope"; return a }(), "not a verb of this hub"},
		{"target an alias", func() executor.Alias { a := greet("x"); a.Target = "cmd.greet"; return a }(), "itself an alias"},
		{"outside the prefix", greet("x"), "does not start with"},
	} {
		prefix := "cmd."
		if tc.name == "outside the prefix" {
			prefix = "ops."
		}
		err := reg.ReplaceAliases(prefix, []executor.Alias{greet("greet"), tc.alias})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if _, ok := reg.Lookup("cmd.greet"); !ok {
			t.Fatalf("%s: the refused set removed cmd.greet", tc.name)
		}
	}
	if err := reg.ReplaceAliases("proc.", []executor.Alias{{Info: executor.Info{Name: "proc.run"}, Target: "fs.exists"}}); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("an alias replaced a verb: %v", err)
	}
	if err := reg.ReplaceAliases("cmd.", []executor.Alias{greet("hello")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Lookup("cmd.greet"); ok {
		t.Fatal("cmd.greet outlived its replacement")
	}
	if _, ok := reg.Lookup("hello"); !ok {
		t.Fatal("cmd.hello not found as hello")
	}
}
