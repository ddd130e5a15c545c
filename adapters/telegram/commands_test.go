package telegram

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/executor"
)

func TestCommandName(t *testing.T) {
	tests := []struct {
		verb string
		want string
		ok   bool
	}{
		{"fs.readFile", "fs_readfile", true},
		{"sys.machineInfo", "sys_machineinfo", true},
		{"proc.run", "proc_run", true},
		{"a.b2.c3", "a_b2_c3", true},
		{"x." + strings.Repeat("y", 30), "x_" + strings.Repeat("y", 30), true},
		{"x." + strings.Repeat("y", 31), "", false}, // 33 characters
		{"", "", false},
		{"...", "", false},
	}
	for _, tt := range tests {
		got, ok := CommandName(tt.verb)
		if got != tt.want || ok != tt.ok {
			t.Errorf("CommandName(%q) = %q, %v; want %q, %v", tt.verb, got, ok, tt.want, tt.ok)
		}
	}
}

var commandRE = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

func TestCommandMenu(t *testing.T) {
	infos := []executor.Info{
		{Name: "fs.readFile", Summary: "  Read a   text file\n"},
		{Name: "fs.listDir", Summary: "ok"},                          // too short: replaced
		{Name: "sys.machineInfo", Summary: strings.Repeat("é", 300)}, // too long: cut
		{Name: "fs.ReadFile", Summary: "duplicate name after lower-casing"},
		{Name: "help", Summary: "a verb shadowing a built-in"},
	}
	menu := CommandMenu(infos)
	want := []string{"fs_readfile", "fs_listdir", "sys_machineinfo", "help", "verbs", "whoami", "where", "use", "nodes"}
	var got []string
	for _, c := range menu {
		got = append(got, c.Command)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("menu %v, want %v", got, want)
	}
	if menu[0].Description != "Read a text file" || menu[1].Description != "Run fs.listDir" {
		t.Fatalf("descriptions %q, %q", menu[0].Description, menu[1].Description)
	}
	if n := utf8.RuneCountInString(menu[2].Description); n != maxDescription || !strings.HasSuffix(menu[2].Description, "…") {
		t.Fatalf("long description: %d characters", n)
	}
}

func TestCommandMenuLimits(t *testing.T) {
	var infos []executor.Info
	for i := range 150 {
		infos = append(infos, executor.Info{Name: fmt.Sprintf("v.verb%03d", i), Summary: "Do thing " + fmt.Sprint(i)})
	}
	menu := CommandMenu(infos)
	if len(menu) != maxCommands {
		t.Fatalf("%d commands, want %d", len(menu), maxCommands)
	}
	seen := map[string]bool{}
	for _, c := range menu {
		if !commandRE.MatchString(c.Command) || seen[c.Command] {
			t.Fatalf("bad or repeated command %q", c.Command)
		}
		seen[c.Command] = true
		if n := utf8.RuneCountInString(c.Description); n < minDescription || n > maxDescription {
			t.Fatalf("description of %s has %d characters", c.Command, n)
		}
	}
	if !seen["help"] || !seen["whoami"] {
		t.Fatal("built-ins must stay in a full menu")
	}
}
