package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/bwmarrin/discordgo"
)

func TestCommandsGolden(t *testing.T) {
	got, err := CommandsJSON(testRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "commands.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestCommandsGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("CommandsJSON differs from %s (run with -update if the change is intended)\n%s", path, got)
	}
}

// TestCommandsWithinDiscordLimits checks every rule Discord enforces on a
// bulk overwrite against the commands of the real registry.
func TestCommandsWithinDiscordLimits(t *testing.T) {
	reg := testRegistry(t)
	cmds, err := Commands(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) > maxCommands {
		t.Fatalf("%d commands, over %d", len(cmds), maxCommands)
	}
	var names []string
	for _, c := range cmds {
		names = append(names, c.Name)
		if err := validName(c.Name); err != nil {
			t.Error(err)
		}
		if n := utf8.RuneCountInString(c.Description); n < 1 || n > maxDescLen {
			t.Errorf("/%s description has %d characters", c.Name, n)
		}
		if n := commandChars(c); n > maxCommandChars {
			t.Errorf("/%s has %d characters of names and descriptions, over %d", c.Name, n, maxCommandChars)
		}
		if len(c.Options) > maxOptions {
			t.Errorf("/%s has %d options", c.Name, len(c.Options))
		}
		var walk func(path string, opts []*discordgo.ApplicationCommandOption)
		walk = func(path string, opts []*discordgo.ApplicationCommandOption) {
			optional := false
			for _, o := range opts {
				p := path + " " + o.Name
				if err := validName(o.Name); err != nil {
					t.Errorf("%s: %v", p, err)
				}
				if n := utf8.RuneCountInString(o.Description); n < 1 || n > maxDescLen {
					t.Errorf("%s description has %d characters: %q", p, n, o.Description)
				}
				if len(o.Choices) > maxChoices || len(o.Options) > maxOptions {
					t.Errorf("%s has too many choices or options", p)
				}
				if o.Type != discordgo.ApplicationCommandOptionSubCommand && o.Type != discordgo.ApplicationCommandOptionSubCommandGroup {
					if o.Required && optional {
						t.Errorf("%s is required after an optional option (Discord refuses that)", p)
					}
					optional = optional || !o.Required
				}
				walk(p, o.Options)
			}
		}
		walk("/"+c.Name, c.Options)
	}
	for _, want := range []string{"fs", "hub", "proc", "sys"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("no /%s command among %v", want, names)
		}
	}
	// Every verb has exactly one route.
	cs, _ := buildCommands(reg)
	for _, v := range reg.Verbs() {
		n := 0
		for _, r := range cs.routes {
			if r.verb == v.Name {
				n++
			}
		}
		if n != 1 {
			t.Errorf("verb %s has %d routes", v.Name, n)
		}
	}
}

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{
		"readRange": "read-range", "startLine": "start-line", "includeLineNumbers": "include-line-numbers",
		"machineInfo": "machine-info", "fs": "fs", "readURL": "read-url", "URLPath": "url-path",
		"v2Thing": "v2-thing", "exists": "exists", "timeoutSeconds": "timeout-seconds",
	} {
		if got := kebab(in); got != want {
			t.Errorf("kebab(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDescriptions(t *testing.T) {
	long := strings.Repeat("word ", 40)
	for _, tc := range []struct {
		desc, fallback, suffix string
		budget                 int
		want                   string
	}{
		{"Short one", "x", "", 100, "Short one"},
		{"", "path", "", 100, "path"},
		{"  spaced \n out  ", "x", "", 100, "spaced out"},
		{"Seconds before the kill", "x", " (default 60)", 100, "Seconds before the kill (default 60)"},
		{long, "x", " (default 60)", 100, strings.TrimSpace(strings.Repeat("word ", 17)) + "… (default 60)"},
		{long, "x", "", 30, "word word word word word…"},
	} {
		got := describeWith(tc.desc, tc.fallback, tc.suffix, tc.budget)
		if got != tc.want {
			t.Errorf("describeWith(%q, %q, %d) = %q, want %q", tc.desc, tc.suffix, tc.budget, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > tc.budget || n == 0 {
			t.Errorf("describeWith(%q) has %d characters, budget %d", tc.desc, n, tc.budget)
		}
	}
}

type noArgs struct{}
type noResult struct{ executor.Result }

func register(t *testing.T, reg *executor.Registry, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := executor.Register(reg, executor.Info{Name: n, Summary: "test verb " + n},
			executor.VerbFunc[noArgs, noResult](func(context.Context, noArgs) (noResult, error) { return noResult{}, nil })); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCommandsRejectWhatDiscordCannotTake: names Discord refuses, a full
// namespace, the reserved namespace and two verbs on one subcommand are
// errors that name the verb, never a silently broken registration.
func TestCommandsRejectWhatDiscordCannotTake(t *testing.T) {
	many := make([]string, 26)
	for i := range many {
		many[i] = fmt.Sprintf("big.verb%c", 'a'+i)
	}
	for _, tc := range []struct {
		name  string
		verbs []string
		want  string
	}{
		{"long name", []string{"fs.thisVerbNameIsFarTooLongForDiscordToAccept"}, "1 to 32 characters"},
		{"reserved namespace", []string{"hub.status"}, "reserved"},
		{"collision", []string{"fs.aB", "fs.a.b"}, "both map to /fs a-b"},
		{"namespace and verb", []string{"fs", "fs.read"}, "same name as the namespace"},
		{"too many subcommands", many, "over Discord's limit of 25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := executor.NewRegistry()
			register(t, reg, tc.verbs...)
			_, err := Commands(reg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Commands() error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	// A verb without a namespace is a top-level command of its own.
	reg := executor.NewRegistry()
	register(t, reg, "ping")
	cmds, err := Commands(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 2 || cmds[1].Name != "ping" || len(cmds[1].Options) != 0 {
		t.Fatalf("commands = %+v", cmds)
	}
}

// data builds the interaction data Discord sends for a command path and
// options.
func data(name string, opts ...opt) discordgo.ApplicationCommandInteractionData {
	raw, _ := json.Marshal(map[string]any{"id": "1", "name": name, "type": 1, "options": func() []any {
		var out []any
		for _, o := range opts {
			out = append(out, o.JSON())
		}
		return out
	}()})
	var d discordgo.ApplicationCommandInteractionData
	if err := json.Unmarshal(raw, &d); err != nil {
		panic(err)
	}
	return d
}

func TestInvocation(t *testing.T) {
	cs, err := buildCommands(testRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		data    discordgo.ApplicationCommandInteractionData
		text    string
		display string
		err     string
	}{
		{"read range", data("fs", sub("read-range", str("path", "README.md"), integer("start-line", 1), integer("end-line", 5))),
			`{"verb":"fs.readRange","arguments":{"endLine":5,"path":"README.md","startLine":1}}`,
			"/fs read-range path:README.md start-line:1 end-line:5", ""},
		{"bool option", data("fs", sub("read-range", str("path", "a b.md"), integer("start-line", 1), integer("end-line", 2), opt{Name: "include-line-numbers", Type: 5, Value: false})),
			`{"verb":"fs.readRange","arguments":{"endLine":2,"includeLineNumbers":false,"path":"a b.md","startLine":1}}`, "", ""},
		{"list split shell-style", data("proc", sub("run", str("executable", "git"), str("arguments", `log --format="%h %s" -n 2 'a b'`))),
			`{"verb":"proc.run","arguments":{"arguments":["log","--format=%h %s","-n","2","a b"],"executable":"git"}}`, "", ""},
		{"absent list is empty", data("proc", sub("run", str("executable", "ls"))),
			`{"verb":"proc.run","arguments":{"arguments":[],"executable":"ls"}}`, "", ""},
		{"html characters stay", data("fs", sub("write-file", str("path", "a.html"), str("content", "<b>&</b>"))),
			`{"verb":"fs.writeFile","arguments":{"content":"<b>&</b>","path":"a.html"}}`, "", ""},
		{"no arguments", data("sys", sub("machine-info")), `{"verb":"sys.machineInfo","arguments":{}}`, "/sys machine-info", ""},
		{"help", data("hub", sub("help")), "/help", "", ""},
		{"help verb", data("hub", sub("help", str("verb", "fs.readFile"))), "/help fs.readFile", "/hub help verb:fs.readFile", ""},
		{"verbs", data("hub", sub("verbs")), "/verbs", "", ""},
		{"whoami", data("hub", sub("whoami")), "/whoami", "", ""},
		{"nodes", data("hub", sub("nodes")), "/nodes", "/hub nodes", ""},
		{"cancel", data("hub", sub("cancel")), "/cancel", "/hub cancel", ""},
		{"cancel turn", data("hub", sub("cancel", str("turn", "discord.i.42"))), "/cancel discord.i.42", "/hub cancel turn:discord.i.42", ""},
		{"unknown command", data("vfs", sub("read")), "", "", "unknown command /vfs read"},
		{"unknown option", data("fs", sub("exists", str("paht", "x"))), "", "", `no option "paht"`},
		{"unterminated quote", data("proc", sub("run", str("executable", "echo"), str("arguments", `"oops`))), "", "", "unterminated \" quote"},
		{"wrong type", data("fs", sub("read-range", str("path", "x"), str("start-line", "one"), integer("end-line", 2))), "", "", "expected an integer"},
		{"edit, the simple form", data("fs", sub("edit", str("path", "a.go"), str("old-text", "x := 1"), str("new-text", "x := 2"))),
			`{"verb":"fs.edit","arguments":{"edits":[],"newText":"x := 2","oldText":"x := 1","path":"a.go"}}`, "", ""},
		{"edits as a YAML list", data("fs", sub("edit", str("path", "a.go"), str("edits", "[{oldText: 'a b', newText: c}, {oldText: d, newText: '', replaceAll: true}]"))),
			`{"verb":"fs.edit","arguments":{"edits":[{"oldText":"a b","newText":"c"},{"oldText":"d","newText":"","replaceAll":true}],"path":"a.go"}}`, "", ""},
		{"one edit as an object", data("fs", sub("edit", str("path", "a.go"), str("edits", `{"oldText": "a", "newText": "b"}`))),
			`{"verb":"fs.edit","arguments":{"edits":[{"oldText":"a","newText":"b"}],"path":"a.go"}}`, "", ""},
		{"edits not a list", data("fs", sub("edit", str("path", "a.go"), str("edits", "just words"))), "", "", "expected a list like [{key: value}, …]"},
		{"read many", data("fs", sub("read-many", str("paths", "a.go 'b c.md'"))),
			`{"verb":"fs.readMany","arguments":{"paths":["a.go","b c.md"]}}`, "", ""},
		{"tail", data("fs", sub("read-range", str("path", "app.log"), integer("last-lines", 50))),
			`{"verb":"fs.readRange","arguments":{"lastLines":50,"path":"app.log"}}`, "", ""},
		{"fraction for an integer", data("fs", sub("read-range", str("path", "x"), opt{Name: "start-line", Type: 4, Value: 1.5}, integer("end-line", 2))), "", "", "expected an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := cs.invocation(tc.data)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if inv.Text != tc.text {
				t.Errorf("text = %s\nwant   %s", inv.Text, tc.text)
			}
			if tc.display != "" && inv.Display != tc.display {
				t.Errorf("display = %q, want %q", inv.Display, tc.display)
			}
		})
	}
}

// TestEveryCommandReachesItsVerb fills every option of every derived
// subcommand with a value of its type and checks that the hub's own parser
// takes the resulting text as a call of the right verb with those
// arguments: the commands and the grammar cannot drift apart.
func TestEveryCommandReachesItsVerb(t *testing.T) {
	reg := testRegistry(t)
	x := executor.New(reg, executor.Options{})
	cmds, err := Commands(reg)
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := buildCommands(reg)
	sample := func(o *discordgo.ApplicationCommandOption, f executor.Field) opt {
		if structuredElem(f) {
			return str(o.Name, "[]")
		}
		switch o.Type {
		case discordgo.ApplicationCommandOptionInteger:
			return integer(o.Name, 3)
		case discordgo.ApplicationCommandOptionNumber:
			return opt{Name: o.Name, Type: 10, Value: 2.5}
		case discordgo.ApplicationCommandOptionBoolean:
			return opt{Name: o.Name, Type: 5, Value: true}
		case discordgo.ApplicationCommandOptionAttachment:
			return opt{Name: o.Name, Type: 11, Value: "930000000000000001"}
		}
		if len(o.Choices) > 0 {
			return str(o.Name, fmt.Sprint(o.Choices[0].Value))
		}
		return str(o.Name, "some value")
	}
	checked := 0
	for _, c := range cmds {
		for _, s := range c.Options {
			if s.Type != discordgo.ApplicationCommandOptionSubCommand {
				continue
			}
			var opts []opt
			for _, o := range s.Options {
				opts = append(opts, sample(o, cs.routes[c.Name+" "+s.Name].fields[o.Name]))
			}
			d := data(c.Name, sub(s.Name, opts...))
			d.Resolved = &discordgo.ApplicationCommandInteractionDataResolved{Attachments: map[string]*discordgo.MessageAttachment{
				"930000000000000001": {ID: "930000000000000001", Filename: "a.txt", URL: "https://cdn.discordapp.com/attachments/1/2/a.txt", Size: 1},
			}}
			inv, err := cs.invocation(d)
			if err != nil {
				t.Errorf("/%s %s: %v", c.Name, s.Name, err)
				continue
			}
			cmd, err := x.ParseCommand(inv.Text)
			if err != nil {
				t.Errorf("/%s %s → %s: %v", c.Name, s.Name, inv.Text, err)
				continue
			}
			r := cs.routes[c.Name+" "+s.Name]
			if c.Name == HubCommand {
				if cmd.Builtin != r.builtin {
					t.Errorf("/%s %s → builtin %q, want %q", c.Name, s.Name, cmd.Builtin, r.builtin)
				}
				checked++
				continue
			}
			if cmd.Verb != r.verb {
				t.Errorf("/%s %s → verb %q, want %q", c.Name, s.Name, cmd.Verb, r.verb)
			}
			var args map[string]any
			_ = json.Unmarshal(cmd.Arguments, &args)
			if r.file && (inv.Upload == nil || inv.Upload.Name != "a.txt") {
				t.Errorf("/%s %s: the attachment option gave no upload", c.Name, s.Name)
			}
			for _, o := range s.Options {
				if o.Type == discordgo.ApplicationCommandOptionAttachment {
					continue
				}
				f := r.fields[o.Name]
				if _, ok := args[f.Name]; !ok {
					t.Errorf("/%s %s: option %s did not reach argument %s: %s", c.Name, s.Name, o.Name, f.Name, cmd.Arguments)
				}
			}
			checked++
		}
	}
	if checked != len(reg.Verbs())+7 {
		t.Errorf("checked %d subcommands, want %d verbs + 7 built-ins", checked, len(reg.Verbs()))
	}
}

// quoteWord quotes w so that executor.SplitWords gives it back.
func quoteWord(w string) string {
	return "'" + strings.ReplaceAll(w, "'", `'"'"'`) + "'"
}

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		"":                     {},
		"  a  b ":              {"a", "b"},
		`"a b" c`:              {"a b", "c"},
		`'it''s'`:              {"its"},
		`"say \"hi\""`:         {`say "hi"`},
		`a\ b`:                 {"a b"},
		`''`:                   {""},
		"--format=%h\t-n\n2":   {"--format=%h", "-n", "2"},
		`x"y z"w`:              {"xy zw"},
		`'a'"'"'b'`:            {"a'b"},
		`trailing\`:            {`trailing\`},
		`"back\\slash"`:        {`back\slash`},
		"ünïcode 'wörds here'": {"ünïcode", "wörds here"},
	} {
		got, err := executor.SplitWords(in)
		if err != nil {
			t.Errorf("executor.SplitWords(%q): %v", in, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("executor.SplitWords(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{`"open`, `'open`, `a "b`} {
		if _, err := executor.SplitWords(bad); err == nil {
			t.Errorf("executor.SplitWords(%q) succeeded, want an unterminated-quote error", bad)
		}
	}
}

func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{"", "a b", `"a b" 'c d'`, `a\ b`, `'it'"'"'s'`, `"unterminated`, "tab\tnew\nline"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := executor.SplitWords(s)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = quoteWord(w)
		}
		again, err := executor.SplitWords(strings.Join(quoted, " "))
		if err != nil {
			t.Fatalf("re-split of %q: %v", quoted, err)
		}
		if !reflect.DeepEqual(again, words) {
			t.Fatalf("round trip of %q: %q != %q", s, again, words)
		}
	})
}
