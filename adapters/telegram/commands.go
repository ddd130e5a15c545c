package telegram

import (
	"strings"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// Telegram's limits on the command menu (setMyCommands).
const (
	maxCommands    = 100
	maxCommandName = 32
	minDescription = 3
	maxDescription = 256
)

// BotCommand is one entry of the command menu.
type BotCommand struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// builtinCommands are always in the menu, after the verbs.
var builtinCommands = []BotCommand{
	{Command: "help", Description: "How to send verbs; /help <verb> shows one verb"},
	{Command: "verbs", Description: "List the verbs you may run"},
	{Command: "whoami", Description: "Show your identity and roles"},
	{Command: "where", Description: "Show the workspace you work in and its destination"},
	{Command: "use", Description: "List workspaces; /use NAME chooses one, /use --default drops the choice"},
	{Command: "nodes", Description: "List the remote nodes: online or offline, version, load (needs admin.read)"},
}

// CommandName derives a menu command from a verb name: lower case, '.' and
// any other character outside [a-z0-9_] become '_' (fs.readFile →
// fs_readfile, which the chat grammar maps back to the verb). ok is false
// when the result is empty or longer than Telegram's 32 characters.
func CommandName(verb string) (string, bool) {
	var b strings.Builder
	for _, r := range strings.ToLower(verb) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if strings.Trim(name, "_") == "" || len(name) > maxCommandName {
		return "", false
	}
	return name, true
}

// commandDescription trims a verb's summary to Telegram's 3 to 256
// characters; a summary too short to show is replaced by "Run <verb>".
func commandDescription(summary, verb string) string {
	d := strings.Join(strings.Fields(summary), " ")
	if utf8.RuneCountInString(d) < minDescription {
		d = "Run " + verb
	}
	if utf8.RuneCountInString(d) > maxDescription {
		r := []rune(d)
		d = strings.TrimRight(string(r[:maxDescription-1]), " ") + "…"
	}
	return d
}

// CommandMenu builds the menu from the verbs a default role may run, then
// the built-ins: names unique, at most 100 entries in all.
func CommandMenu(verbs []executor.Info) []BotCommand {
	out := make([]BotCommand, 0, min(len(verbs), maxCommands)+len(builtinCommands))
	seen := map[string]bool{}
	for _, c := range builtinCommands {
		seen[c.Command] = true
	}
	for _, v := range verbs {
		if len(out) >= maxCommands-len(builtinCommands) {
			break
		}
		name, ok := CommandName(v.Name)
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, BotCommand{Command: name, Description: commandDescription(v.Summary, v.Name)})
	}
	return append(out, builtinCommands...)
}
