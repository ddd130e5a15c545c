package hub

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// MetaWorkspace is the mirror meta key of the workspace a call acted in.
const MetaWorkspace = "workspace"

// WebConversation is the conversation key of the web panel; API calls
// without a workspace of their own work where it works.
const WebConversation = "web"

// WorkspaceChoices keeps each conversation's choice of workspace (/use),
// by the conversation's reply key; "" is no choice.
type WorkspaceChoices interface {
	Workspace(key string) (string, error)
	SetWorkspace(key, name string) error
}

// Destinations describes where a workspace runs its programs.
type Destinations interface {
	Describe(name string) string
}

// resolveWorkspace picks the workspace of a call in the conversation key
// (see package policy) and refuses one the roles may not use.
func (h *Hub) resolveWorkspace(explicit, key string, roles []string) (policy.Resolution, error) {
	p := h.ws.Load()
	if p == nil {
		if explicit != "" && explicit != policy.Default {
			return policy.Resolution{}, fmt.Errorf("workspace %q is not configured (accepted: %s)", explicit, policy.Default)
		}
		return policy.Resolution{Name: policy.Default, Destination: "local", Reason: policy.ReasonDefault, Rule: policy.RuleDefault, Runs: config.DestinationLocal}, nil
	}
	chosen, err := h.chosenWorkspace(key)
	if err != nil {
		return policy.Resolution{}, err
	}
	r, err := p.Check(policy.Query{Explicit: explicit, Chosen: chosen, ChatKey: key, Roles: roles})
	if err != nil {
		return r, err
	}
	r.Destination = h.describe(r.Name)
	return r, nil
}

// chosenWorkspace reads the conversation's /use choice. A choice that
// cannot be read is an error, not "none": the call must not run somewhere
// the conversation did not choose.
func (h *Hub) chosenWorkspace(key string) (string, error) {
	if h.opts.Choices == nil || key == "" {
		return "", nil
	}
	c, err := h.opts.Choices.Workspace(key)
	if err != nil {
		h.log.Error("read workspace choice", "conversation", key, "err", err)
		return "", fmt.Errorf("this conversation's workspace choice cannot be read (%v)", err)
	}
	return c, nil
}

func (h *Hub) describe(name string) string {
	if h.opts.Destinations != nil {
		return h.opts.Destinations.Describe(name) + h.liveness(name)
	}
	if p := h.ws.Load(); p != nil {
		return p.Destination(name) + h.liveness(name)
	}
	return "local"
}

// SetWorkspacePolicy installs the workspace resolution and access policy
// of a reloaded configuration: it applies from the next turn.
func (h *Hub) SetWorkspacePolicy(p *policy.Policy) { h.ws.Store(p) }

// WorkspacePolicy is the workspace policy in force (nil: every call acts in
// the default workspace).
func (h *Hub) WorkspacePolicy() *policy.Policy { return h.ws.Load() }

// EffectiveWorkspace resolves the workspace of the conversation key for
// the operator: its /use choice, workspaces.by_chat, default. Roles are not
// known (by_role depends on who speaks) and access is not checked.
func (h *Hub) EffectiveWorkspace(key string) (policy.Resolution, error) {
	p := h.ws.Load()
	if p == nil {
		return policy.Resolution{Name: policy.Default, Destination: "local", Reason: policy.ReasonDefault, Rule: policy.RuleDefault, Runs: config.DestinationLocal}, nil
	}
	chosen, err := h.chosenWorkspace(key)
	if err != nil {
		return policy.Resolution{}, err
	}
	r, err := p.Resolve(policy.Query{Chosen: chosen, ChatKey: key})
	if err != nil {
		return r, err
	}
	r.Destination = h.describe(r.Name)
	return r, nil
}

// WhereFor resolves the workspace of a conversation for the roles, without
// a per-call choice: what /where answers and the panel shows.
func (h *Hub) WhereFor(key string, roles []string) (policy.Resolution, error) {
	return h.resolveWorkspace("", key, roles)
}

// use answers /use [NAME | --default].
func (h *Hub) use(arg string, in *chat.Inbound, roles []string) string {
	key := in.ReplyKey().String()
	p := h.ws.Load()
	switch {
	case arg == "":
		return h.useList(key, roles)
	case p == nil:
		if arg == policy.Default || arg == "--default" {
			return "This hub has one workspace, default; every conversation works in it."
		}
		return fmt.Sprintf("No workspace named %q: this hub has only default.", arg)
	case h.opts.Choices == nil:
		return "This hub does not keep workspace choices; the configuration decides (send /where)."
	case arg == "--default" || arg == "—default":
		if err := h.opts.Choices.SetWorkspace(key, ""); err != nil {
			h.log.Error("forget workspace choice", "conversation", key, "err", err)
			return "⚠ The choice could not be forgotten: " + err.Error()
		}
		r, err := h.WhereFor(key, roles)
		if err != nil {
			return "Choice dropped; the configuration decides now, but: " + err.Error() + "."
		}
		return fmt.Sprintf("Choice dropped; the configuration decides now: %s (%s), %s.", r.Name, r.Reason, r.Destination)
	case !p.Known(arg):
		return fmt.Sprintf("No workspace named %q. You may use: %s. Send /use NAME, or /use --default to let the configuration decide.", arg, strings.Join(p.Usable(roles), ", "))
	}
	if err := p.Allow(roles, policy.Resolution{Name: arg, Reason: "asked with /use"}); err != nil {
		return "⚠ " + upperFirst(err.Error()) + ". " + h.opts.Access.WorkspaceHint(in.Identity(), arg)
	}
	if err := h.opts.Choices.SetWorkspace(key, arg); err != nil {
		h.log.Error("record workspace choice", "conversation", key, "err", err)
		return "⚠ The choice could not be recorded: " + err.Error()
	}
	return fmt.Sprintf("This conversation now works in %s: %s.\nSend /use --default to let the configuration decide again.", arg, h.describe(arg))
}

// useList answers /use alone: the workspaces the caller may use, the
// current one marked with why.
func (h *Hub) useList(key string, roles []string) string {
	cur, err := h.WhereFor(key, roles)
	var b strings.Builder
	names := []string{policy.Default}
	if p := h.ws.Load(); p != nil {
		names = p.Usable(roles)
	}
	if len(names) == 0 {
		return "You may not use any workspace."
	}
	b.WriteString("Workspaces you may use:\n")
	for _, n := range names {
		mark := "  "
		why := ""
		if err == nil && n == cur.Name {
			mark, why = "▶ ", " — current: "+cur.Reason
		}
		fmt.Fprintf(&b, "%s%s: %s%s\n", mark, n, h.describe(n), why)
	}
	if err != nil {
		fmt.Fprintf(&b, "⚠ %s.\n", upperFirst(err.Error()))
	}
	b.WriteString("Send /use NAME to choose one for this conversation, /use --default to let the configuration decide, /where for where you are.")
	return b.String()
}

// where answers /where: the workspace, its destination, why, and the
// session in session mode.
func (h *Hub) where(in *chat.Inbound, roles []string) string {
	key := in.ReplyKey().String()
	r, err := h.WhereFor(key, roles)
	if err != nil {
		return "⚠ " + upperFirst(err.Error()) + ". Send /use for the workspaces you may use."
	}
	session := "none (the workspace itself)"
	if h.opts.SessionFor != nil {
		if id := h.opts.SessionFor(in, roles); id != "" {
			session = id + " (session mode: a directory of its own for this conversation)"
		}
	}
	return fmt.Sprintf("Workspace: %s\nDestination: %s\nWhy: %s\nSession: %s", r.Name, r.Destination, r.Reason, session)
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
