package hub

import (
	"fmt"
	"strings"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/executor"
)

// builtin answers /help [verb], /verbs, /whoami, /start, /use [NAME],
// /where, /nodes and /cancel [turn].
func (h *Hub) builtin(cmd executor.Command, in *chat.Inbound, ids, roles []string) string {
	switch cmd.Builtin {
	case "whoami":
		return fmt.Sprintf("You are %s.\nIdentities: %s\nRoles: %s", in.Identity(), strings.Join(ids, ", "), strings.Join(roles, ", "))
	case "verbs":
		return h.verbList(ids)
	case "help":
		if cmd.BuiltinArg != "" {
			return h.verbHelp(cmd.BuiltinArg, ids)
		}
		return h.help(ids)
	case "use":
		return h.use(cmd.BuiltinArg, in, roles)
	case "where":
		return h.where(in, roles)
	case "nodes":
		return h.nodes(ids, roles)
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

func (h *Hub) verbList(ids []string) string {
	verbs := h.opts.Access.VerbsFor(ids)
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

func (h *Hub) verbHelp(name string, ids []string) string {
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
	if !h.opts.Access.Allowed(ids, s.Name) {
		allowed = "\n(You may not run it.)"
	}
	return fmt.Sprintf("%s — %s%s\nUsage: %s\n%s", s.Name, s.Summary, allowed, usage, executor.Fence(s.IDL, ""))
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
