package discord

import (
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/config"
)

// linesCommand counts the lines of one of two files, picked by an enum.
func linesCommand(desc string) config.Command {
	return config.Command{
		Description: desc,
		Params: config.CommandParams{Names: []string{"which"}, ByName: map[string]config.CommandParam{
			"which": {Type: config.ParamEnum, Values: []string{"README.md", "other.md"}},
		}},
		Run: config.CommandRun{Verb: "fs.lineCount", Arguments: config.Arguments{"path": "{which}"}},
	}
}

// TestNamedCommandSlashCommand: a named command is the slash command
// /cmd <name> with an option per parameter (an enum's values as its
// choices); invoking it runs the command; a reload that changes the
// commands registers the slash commands again, without a restart.
func TestNamedCommandSlashCommand(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *config.Config) {
		c.Commands = config.Commands{"lines": linesCommand("Count the lines")}
		c.Access.Roles["ops"] = config.Role{Verbs: []string{"cmd.lines"}}
		c.Access.Grants["discord:"+readerUser] = []string{"ops"}
	}})
	path := "/applications/" + e.fake.AppID + "/guilds/" + e.fake.GuildID + "/commands"
	// The adapter registers its commands once connected, beside the start.
	e.fake.WaitFor(t, "the slash commands registered", func() bool { return len(e.fake.Commands()[path]) > 0 })
	body := string(e.fake.Commands()[path])
	if !strings.Contains(body, `"name":"cmd"`) || !strings.Contains(body, `"name":"lines"`) ||
		!strings.Contains(body, `"choices":[{"name":"README.md","value":"README.md"},{"name":"other.md","value":"other.md"}]`) {
		t.Fatalf("registered commands lack /cmd lines with choices: %s", body)
	}
	i := e.interact(readerUser, "cmd", sub("lines", str("which", "README.md")))
	if got := e.waitOriginal(i); !strings.Contains(got.Content, "2") {
		t.Fatalf("/cmd lines answered %q", got.Content)
	}
	i = e.interact(readerUser, "cmd", sub("lines", str("which", "/etc/passwd")))
	if got := e.waitOriginal(i); !strings.Contains(got.Content, "not one of its values") {
		t.Fatalf("/cmd lines with a value not listed answered %q", got.Content)
	}

	puts := len(e.fake.RequestsTo("PUT", "/applications/"))
	next := *e.cfg
	next.Commands = config.Commands{"lines": linesCommand("Count the lines"), "count": linesCommand("Count again")}
	rl := e.rt.EnableReload(func() (*config.Config, error) { c := next; return &c, nil })
	if _, err := rl.Reload(); err != nil {
		t.Fatal(err)
	}
	e.fake.WaitFor(t, "the slash commands registered again", func() bool {
		return len(e.fake.RequestsTo("PUT", "/applications/")) > puts && strings.Contains(string(e.fake.Commands()[path]), `"name":"count"`)
	})
}

// TestGuildCeiling: a ceiling on the Discord server (access.chats
// "discord:guild:<id>": {max_roles: [reader]}) caps an admin there: a read
// runs, a write is refused naming the ceiling; /whoami says so.
func TestGuildCeiling(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *config.Config) {
		c.Access.Chats = map[string]config.ChatRule{"discord:guild:" + discordtest.DefaultGuildID: {MaxRoles: []string{"reader"}}}
	}})
	if got := e.waitReply(e.say(adminUser, "!fs.listDir .")); !strings.Contains(got.Content, "README.md") {
		t.Fatalf("a read under the ceiling: %q", got.Content)
	}
	if got := e.waitReply(e.say(adminUser, "!fs.writeFile x.txt hi")); !strings.Contains(got.Content, "max_roles caps what any role may do at what reader may do") {
		t.Fatalf("a write under the ceiling: %q", got.Content)
	}
	if got := e.waitReply(e.say(adminUser, "!whoami")); !strings.Contains(got.Content, "capped here at what reader may do") {
		t.Fatalf("/whoami under the ceiling: %q", got.Content)
	}
}
