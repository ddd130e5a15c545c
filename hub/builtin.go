package hub

import (
	"fmt"
	"strings"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/executor"
)

// builtin answers /help [verb], /verbs, /whoami, /start, /use [NAME],
// /where, /nodes and /cancel [turn].
func (h *Hub) builtin(cmd executor.Command, in *chat.Inbound, ids []string, d *decision) string {
	roles := d.roles
	switch cmd.Builtin {
	case "whoami":
		return whoami(in, ids, d)
	case "verbs":
		return verbList(d)
	case "help":
		if cmd.BuiltinArg != "" {
			return h.verbHelp(cmd.BuiltinArg, d)
		}
		return h.help(ids)
	case "use":
		return h.use(cmd.BuiltinArg, in, roles)
	case "where":
		return h.where(in, roles)
	case "nodes":
		return h.nodes(ids, d)
	case "cancel":
		return h.Cancel(CancelRequest{Chat: in.ReplyKey(), TurnID: cmd.BuiltinArg, Identities: ids}).Text
	case "start":
		return fmt.Sprintf("Hermes Hub runs verbs on its machine for you, %s.\n\n%s", in.Identity(), h.help(ids))
	}
	return "Unknown command."
}

func (h *Hub) help(ids []string) string {
	var b strings.Builder
	b.WriteString("Send a verb as a command, for example:\n")
	b.WriteString("/fs.listDir .\n/fs.readRange README.md 1 20\n/proc.run git status --short\n\n")
	b.WriteString("Arguments go by position (the required ones in order), as key=value, or as YAML on the lines after the command. ")
	b.WriteString("Add --json for the raw result.\n\n")
	b.WriteString("/verbs lists what you may run, /help <verb> shows one verb, /whoami shows who you are, ")
	b.WriteString("/where shows the workspace you work in, /use lists or chooses one, /cancel stops your running call.")
	return b.String()
}

// whoami says who the asker is and what holds for them in this chat:
// each role with the configuration that grants it, and the chat's
// ceilings.
func whoami(in *chat.Inbound, ids []string, d *decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s.\nIdentities: %s\nRoles: %s", in.Identity(), strings.Join(ids, ", "), rolesText(d.roles))
	scopes := ChatScopes(in)
	if len(scopes) > 0 {
		fmt.Fprintf(&b, "\nIn this chat (%s):", strings.Join(scopes, ", "))
	}
	for _, r := range d.roles {
		fmt.Fprintf(&b, "\n- %s, from %s", r, strings.Join(d.standing.Why[r], "; "))
	}
	for _, c := range d.standing.Ceilings {
		fmt.Fprintf(&b, "\n- capped here at what %s may do (access.chats[%q].max_roles)", strings.Join(c.Roles, ", "), c.Scope)
	}
	return b.String()
}

func verbList(d *decision) string {
	verbs := d.acc.verbsIn(d.standing)
	if len(verbs) == 0 {
		return "You may not run any verb yet."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You may run %d %s:\n", len(verbs), plural(int64(len(verbs)), "verb", "verbs"))
	for _, v := range verbs {
		fmt.Fprintf(&b, "/%s — %s\n", v.Name, v.Summary)
	}
	return strings.TrimRight(b.String(), "\n")
}

func (h *Hub) verbHelp(name string, d *decision) string {
	name = strings.TrimPrefix(name, "/")
	s, ok := h.x.Registry().Schema(name)
	if !ok {
		msg := fmt.Sprintf("No verb named %q.", name)
		if sug := h.x.Registry().Suggest(name); len(sug) > 0 {
			msg += " Did you mean " + strings.Join(sug, ", ") + "?"
		}
		return msg
	}
	usage, _ := h.x.Usage(s.Name)
	allowed := ""
	if info, _ := h.x.Registry().Lookup(s.Name); !d.acc.permits(d.standing, info) {
		allowed = "\n(You may not run it here.)"
	}
	return fmt.Sprintf("%s — %s%s\nUsage: %s\n%s", s.Name, s.Summary, allowed, usage, executor.Fence(s.IDL, ""))
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
