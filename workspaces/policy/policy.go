// Package policy decides which named workspace a call acts in and who may
// use it, from the configuration alone: the pure half of the workspaces
// (docs/workspaces.md). It imports no verbs, so the hub can use it.
//
// The order, most specific first: the call's own choice (an envelope's
// "workspace", POST /api/execute?workspace=, hub exec --workspace), the
// conversation's choice (/use NAME, kept in the state), workspaces.by_chat,
// workspaces.by_role, then default. Every answer says why.
package policy

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
)

// Default is the workspace every hub has.
const Default = config.DefaultWorkspace

// Query is what a call brings to resolution.
type Query struct {
	// Explicit is the call's own choice ("" for none).
	Explicit string
	// Chosen is the conversation's persisted choice (/use), "" for none.
	Chosen string
	// ChatKey is the conversation's reply key (web, chat:telegram:…), for
	// workspaces.by_chat; "" for none.
	ChatKey string
	// Roles are the caller's roles, for workspaces.by_role and access.
	Roles []string
}

// Resolution is the workspace a call acts in and why.
type Resolution struct {
	Name string `json:"name"`
	// Destination describes where its programs run.
	Destination string `json:"destination"`
	// Reason says which rule chose it, such as "chosen with /use" or
	// workspaces.by_chat["web"].
	Reason string `json:"reason"`
	// Rule is that rule as one word, for a view to word for people:
	// RuleCall, RuleUse, RuleChat, RuleRole or RuleDefault.
	Rule string `json:"rule"`
	// Runs is the kind of its destination: config.DestinationLocal,
	// DestinationDocker or DestinationRemote.
	Runs string `json:"runs"`
}

// The rules that choose a workspace (Resolution.Rule).
const (
	RuleCall    = "call"    // the call names it
	RuleUse     = "use"     // the conversation chose it with /use
	RuleChat    = "chat"    // workspaces.by_chat
	RuleRole    = "role"    // workspaces.by_role
	RuleDefault = "default" // none of them: the default workspace
)

// Reasons of a Resolution that are not configuration keys.
const (
	ReasonExplicit = "chosen for this call"
	ReasonUse      = "chosen with /use"
	ReasonDefault  = "default"
)

// Policy is the workspaces part of a configuration.
type Policy struct {
	cfg      *config.Config
	names    []string
	patterns map[string][]string // role → workspace patterns; absent: only default
}

// New returns the policy of cfg (which has been validated).
func New(cfg *config.Config) *Policy {
	p := &Policy{cfg: cfg, names: cfg.WorkspaceNames(), patterns: map[string][]string{}}
	for role, r := range cfg.Access.Roles {
		if r.Workspaces != nil {
			p.patterns[role] = append([]string(nil), r.Workspaces...)
		}
	}
	return p
}

// Names lists the workspaces, default first.
func (p *Policy) Names() []string { return append([]string(nil), p.names...) }

// Known reports whether name is a configured workspace.
func (p *Policy) Known(name string) bool {
	_, ok := p.cfg.WorkspaceByName(name)
	return ok
}

// Workspace returns a workspace's configuration.
func (p *Policy) Workspace(name string) (config.WorkspaceConfig, bool) {
	return p.cfg.WorkspaceByName(name)
}

// UnknownError says a name is not a configured workspace and which are.
func (p *Policy) UnknownError(name string) error {
	return fmt.Errorf("workspace %q is not configured (accepted: %s)", name, strings.Join(p.names, ", "))
}

// Resolve picks the workspace of q by the order of the package comment.
// Only an explicit choice of an unknown workspace is an error; a persisted
// choice whose workspace was removed from the configuration is passed over
// (the reason says so). Access is not checked: see Check.
func (p *Policy) Resolve(q Query) (Resolution, error) {
	r, err := p.resolve(q)
	if err != nil {
		return r, err
	}
	r.Destination = p.Destination(r.Name)
	if wc, ok := p.cfg.WorkspaceByName(r.Name); ok {
		r.Runs = wc.Destination.Kind
	}
	return r, nil
}

func (p *Policy) resolve(q Query) (Resolution, error) {
	if q.Explicit != "" {
		if !p.Known(q.Explicit) {
			return Resolution{}, p.UnknownError(q.Explicit)
		}
		return Resolution{Name: q.Explicit, Reason: ReasonExplicit, Rule: RuleCall}, nil
	}
	stale := ""
	if q.Chosen != "" {
		if p.Known(q.Chosen) {
			return Resolution{Name: q.Chosen, Reason: ReasonUse, Rule: RuleUse}, nil
		}
		stale = fmt.Sprintf(" (the /use choice %q is no longer configured)", q.Chosen)
	}
	if q.ChatKey != "" {
		byChat := p.cfg.Workspaces.ByChat
		if n, ok := byChat[q.ChatKey]; ok {
			return Resolution{Name: n, Reason: fmt.Sprintf("workspaces.by_chat[%q]", q.ChatKey) + stale, Rule: RuleChat}, nil
		}
		// A thread falls back to its chat, as sessions.by_chat does.
		if k, err := chat.ParseKey(q.ChatKey); err == nil && k.Kind == chat.KindChat && k.ThreadID != "" {
			parent := chat.ChatKey(k.Platform, k.ChatID, "").String()
			if n, ok := byChat[parent]; ok {
				return Resolution{Name: n, Reason: fmt.Sprintf("workspaces.by_chat[%q]", parent) + stale, Rule: RuleChat}, nil
			}
		}
	}
	// by_role: of the workspaces the caller's roles name, the first by
	// name wins, whatever the order of the roles.
	best, bestRole := "", ""
	for _, role := range q.Roles {
		n, ok := p.cfg.Workspaces.ByRole[role]
		if ok && (best == "" || n < best || n == best && role < bestRole) {
			best, bestRole = n, role
		}
	}
	if best != "" {
		return Resolution{Name: best, Reason: fmt.Sprintf("workspaces.by_role[%q]", bestRole) + stale, Rule: RuleRole}, nil
	}
	if _, configured := p.cfg.Workspaces.Named[Default]; configured {
		return Resolution{Name: Default, Reason: ReasonDefault + stale, Rule: RuleDefault}, nil
	}
	return Resolution{Name: Default, Reason: "default (not configured: the top-level workspace, run locally)" + stale, Rule: RuleDefault}, nil
}

// MayUse reports whether any of roles may act in the workspace name. A
// role without a workspaces list may use only default; "*" is every one.
func (p *Policy) MayUse(roles []string, name string) bool {
	for _, r := range roles {
		if p.roleMayUse(r, name) {
			return true
		}
	}
	return false
}

func (p *Policy) roleMayUse(role, name string) bool {
	pats, ok := p.patterns[role]
	if !ok {
		return name == Default
	}
	for _, pat := range pats {
		if m, _ := path.Match(pat, name); m {
			return true
		}
	}
	return false
}

// RolesFor lists the configured roles that may use name, sorted (the
// built-in reader included when it may).
func (p *Policy) RolesFor(name string) []string {
	set := map[string]bool{}
	for role := range p.cfg.Access.Roles {
		if p.roleMayUse(role, name) {
			set[role] = true
		}
	}
	if _, ok := p.cfg.Access.Roles["reader"]; !ok && name == Default {
		set["reader"] = true
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Usable lists the workspaces roles may use, default first.
func (p *Policy) Usable(roles []string) []string {
	var out []string
	for _, n := range p.names {
		if p.MayUse(roles, n) {
			out = append(out, n)
		}
	}
	return out
}

// Check resolves q and refuses a workspace the caller's roles may not use,
// with a message saying which roles may; it never picks another one.
func (p *Policy) Check(q Query) (Resolution, error) {
	r, err := p.Resolve(q)
	if err != nil {
		return r, err
	}
	if err := p.Allow(q.Roles, r); err != nil {
		return r, err
	}
	return r, nil
}

// NotOpenError is Allow's refusal: the workspace exists, and no role of
// the caller may use it.
type NotOpenError struct {
	Workspace string
	msg       string
}

func (e *NotOpenError) Error() string { return e.msg }

// Allow returns nil when roles may use r's workspace, else a
// *NotOpenError that names the workspace, why it was chosen and the roles
// that may use it.
func (p *Policy) Allow(roles []string, r Resolution) error {
	if p.MayUse(roles, r.Name) {
		return nil
	}
	who := "no role may use it (name it under access.roles.<role>.workspaces)"
	if rs := p.RolesFor(r.Name); len(rs) > 0 {
		who = "roles that may use it: " + strings.Join(rs, ", ")
	}
	mine := "none"
	if len(roles) > 0 {
		mine = strings.Join(roles, ", ")
	}
	return &NotOpenError{Workspace: r.Name, msg: fmt.Sprintf("workspace %q (%s) is not open to your roles (%s); %s", r.Name, r.Reason, mine, who)}
}

// Destination describes where the workspace name runs its programs, from
// the configuration.
func (p *Policy) Destination(name string) string {
	wc, ok := p.cfg.WorkspaceByName(name)
	if !ok {
		return "unknown"
	}
	return Describe(wc)
}

// Describe says in one line where a workspace runs its programs.
func Describe(wc config.WorkspaceConfig) string {
	d := wc.Destination
	switch d.Kind {
	case config.DestinationDocker:
		parts := []string{"image " + d.Image, "network " + d.Network}
		if d.Memory > 0 {
			parts = append(parts, "memory "+d.Memory.String())
		}
		if d.CPUs > 0 {
			parts = append(parts, "cpus "+strconv.FormatFloat(d.CPUs, 'g', -1, 64))
		}
		if d.Pids > 0 {
			parts = append(parts, "pids "+strconv.FormatInt(d.Pids, 10))
		}
		return "docker (" + strings.Join(parts, ", ") + "), " + absPath(wc.Path) + " at /workspace"
	case config.DestinationRemote:
		ws := d.Workspace
		if ws == "" {
			ws = "its default workspace"
		}
		return "remote (node " + d.Node + ", " + ws + ")"
	default:
		return "local (host processes in " + absPath(wc.Path) + ")"
	}
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
