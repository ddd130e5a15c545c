package hub

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/store"
)

// ReaderRole is the built-in role allowed to run every read-only verb.
const ReaderRole = "reader"

// Access decides who may run what. It denies by default: an identity may run
// a verb only when one of its roles names the verb (exactly, or by a glob
// such as fs.read* or *). The admin permissions (config.AdminPermissions)
// are granted the same way, but only by patterns that start with "admin.":
// "*" grants every verb and no admin permission, and the built-in reader
// role grants none.
//
// An identity's roles come from the configuration (access.grants and
// access.default_roles) and from the grants an operator approved, kept in
// the state (SetApproved). A reload replaces the configuration's part
// (Replace); Current freezes both for one turn.
type Access struct {
	p        atomic.Pointer[accessPolicy]
	approved atomic.Pointer[map[string][]string] // identity → roles, from the state
	reg      *executor.Registry
}

// accessPolicy is the configuration's part of Access, replaced whole on reload.
type accessPolicy struct {
	roles    map[string][]string // role → lower-cased verb patterns
	defined  map[string]bool     // every configured role, even one without verbs
	grants   map[string][]string // identity → roles
	defaults []string
	chats    map[string]config.ChatRule // access.chats: scope → grants and ceiling
	confirm  map[string]confirmRole     // role → its confirm patterns (lower case) and approvers
	// confirmTTL is how long a held call waits (access.confirm_ttl).
	confirmTTL time.Duration
}

// NewAccess builds the access policy from configuration. reg supplies the
// read-only flag of each verb for the built-in reader role.
func NewAccess(cfg config.Access, reg *executor.Registry) *Access {
	a := &Access{reg: reg}
	a.Replace(cfg)
	return a
}

// Replace installs the roles, grants and default roles of cfg, as a reload
// does; approved grants stay. Turns that took a Current view keep theirs.
func (a *Access) Replace(cfg config.Access) {
	p := &accessPolicy{roles: map[string][]string{}, defined: map[string]bool{}, grants: map[string][]string{}}
	for name, r := range cfg.Roles {
		p.defined[name] = true
		for _, pat := range r.Verbs {
			p.roles[name] = append(p.roles[name], strings.ToLower(pat))
		}
	}
	for id, roles := range cfg.Grants {
		p.grants[id] = append([]string(nil), roles...)
	}
	p.defaults = append([]string(nil), cfg.DefaultRoles...)
	p.confirm = map[string]confirmRole{}
	for name, r := range cfg.Roles {
		c := confirmRole{approvers: append([]string(nil), r.Approvers...)}
		for _, pat := range r.Confirm {
			c.verbs = append(c.verbs, strings.ToLower(pat))
		}
		p.confirm[name] = c
	}
	p.confirmTTL = confirmTTL(cfg)
	p.chats = map[string]config.ChatRule{}
	for scope, rule := range cfg.Chats {
		p.chats[scope] = rule
	}
	a.p.Store(p)
}

// SetApproved installs the grants approved through pairing (from the
// state), replacing the previous set.
func (a *Access) SetApproved(grants []store.Grant) {
	m := map[string][]string{}
	for _, g := range grants {
		m[g.Identity] = append(m[g.Identity], g.Role)
	}
	a.approved.Store(&m)
}

// Current is a view of the access policy as it is now, which later
// Replace and SetApproved calls do not change: a turn decides with one
// view from start to end.
func (a *Access) Current() *Access {
	c := &Access{reg: a.reg}
	c.p.Store(a.p.Load())
	if m := a.approved.Load(); m != nil {
		c.approved.Store(m)
	}
	return c
}

// RoleDefined reports whether role may be granted: a configured role or
// the built-in reader.
func (a *Access) RoleDefined(role string) bool {
	return role == ReaderRole || a.p.Load().defined[role]
}

// Roles lists the roles that may be granted, sorted.
func (a *Access) Roles() []string {
	p := a.p.Load()
	out := []string{}
	if !p.defined[ReaderRole] {
		out = append(out, ReaderRole)
	}
	for r := range p.defined {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// ConfigGrants returns the configuration's grants, identity → roles.
func (a *Access) ConfigGrants() map[string][]string {
	out := map[string][]string{}
	for id, roles := range a.p.Load().grants {
		out[id] = append([]string(nil), roles...)
	}
	return out
}

// RolesOf returns the roles held by any of the identities, sorted. An
// approved grant whose role the configuration no longer defines counts for
// nothing. Roles granted in a chat only (access.chats) are not among them:
// see StandingIn.
func (a *Access) RolesOf(ids []string) []string { return a.StandingIn(ids, nil).Roles }

// Standing is what access holds for identities in one place: their roles,
// why each holds, and the ceilings of the place (access.chats.<scope>.
// max_roles), each of which caps what the roles grant there.
type Standing struct {
	Roles []string
	// Why names, for each role, the configuration that grants it.
	Why      map[string][]string
	Ceilings []Ceiling
}

// Ceiling is one chat scope's max_roles.
type Ceiling struct {
	Scope string
	Roles []string
}

// ChatScopes lists the keys of access.chats that apply to a message of in,
// most general first: a Discord server, then its channel; a Telegram chat,
// then its topic. None for a message from no chat (nil: the API, MCP, a
// schedule).
func ChatScopes(in *chat.Inbound) []string {
	if in == nil {
		return nil
	}
	switch in.Platform {
	case chat.Telegram:
		out := []string{config.ScopeTelegramChat + in.ChatID}
		if in.ThreadID != "" {
			out = append(out, config.ScopeTelegramChat+in.ChatID+":"+in.ThreadID)
		}
		return out
	case chat.Discord:
		var out []string
		if in.GuildID != "" {
			out = append(out, config.ScopeDiscordGuild+in.GuildID)
		}
		return append(out, config.ScopeDiscordChannel+in.ChatID)
	}
	return nil
}

// StandingIn is the standing of the identities in the chat of in (nil:
// in no chat): the roles the configuration, the approved grants and the
// grants of the chat's scopes give them, and the chat's ceilings.
func (a *Access) StandingIn(ids []string, in *chat.Inbound) Standing {
	p := a.p.Load()
	why := map[string][]string{}
	add := func(r, reason string) { why[r] = append(why[r], reason) }
	for _, r := range p.defaults {
		add(r, "access.default_roles")
	}
	var approved map[string][]string
	if m := a.approved.Load(); m != nil {
		approved = *m
	}
	scopes := ChatScopes(in)
	for _, id := range ids {
		for _, r := range p.grants[id] {
			add(r, fmt.Sprintf("access.grants[%q]", id))
		}
		for _, r := range approved[id] {
			if r == ReaderRole || p.defined[r] {
				add(r, fmt.Sprintf("approved for %s (hub access)", id))
			}
		}
		for _, sc := range scopes {
			for _, r := range p.chats[sc].Grants[id] {
				add(r, fmt.Sprintf("access.chats[%q].grants[%q]", sc, id))
			}
		}
	}
	st := Standing{Roles: make([]string, 0, len(why)), Why: why}
	for r := range why {
		st.Roles = append(st.Roles, r)
	}
	sort.Strings(st.Roles)
	for _, sc := range scopes {
		if max := p.chats[sc].MaxRoles; max != nil {
			st.Ceilings = append(st.Ceilings, Ceiling{Scope: sc, Roles: append([]string(nil), max...)})
		}
	}
	return st
}

// permits reports whether the standing grants verb: one of its roles
// grants it, and one role of each ceiling grants it too.
func (a *Access) permits(st Standing, verb executor.Info) bool {
	if !a.grants(st.Roles, verb) {
		return false
	}
	return a.capping(st, verb) == nil
}

// capping is the first ceiling of st that does not grant verb, or nil.
func (a *Access) capping(st Standing, verb executor.Info) *Ceiling {
	for i, c := range st.Ceilings {
		if !a.grants(c.Roles, verb) {
			return &st.Ceilings[i]
		}
	}
	return nil
}

// verbsIn lists the verbs the standing permits, sorted by name.
func (a *Access) verbsIn(st Standing) []executor.Info {
	var out []executor.Info
	for _, v := range a.reg.Verbs() {
		if a.permits(st, v) {
			out = append(out, v)
		}
	}
	return out
}

// Allowed reports whether any of the identities may run verb, a verb's
// name or an admin permission.
func (a *Access) Allowed(ids []string, verb string) bool {
	info, ok := a.reg.Lookup(verb)
	return a.grants(a.RolesOf(ids), executor.Info{Name: verb, ReadOnly: ok && info.ReadOnly})
}

// grants reports whether one of roles (as RolesOf returns them) grants the
// verb: a turn decides with the roles it found once and the verb as the
// registry describes it (its read-only flag for the reader role).
func (a *Access) grants(roles []string, verb executor.Info) bool {
	p := a.p.Load()
	for _, r := range roles {
		if a.roleAllows(p, r, verb) {
			return true
		}
	}
	return false
}

func (a *Access) roleAllows(p *accessPolicy, role string, verb executor.Info) bool {
	if verb.Permission != "" {
		// The verb needs another's grant (fs.upload: fs.writeFile's).
		perm := executor.Info{Name: verb.Permission}
		if a.reg != nil {
			if info, ok := a.reg.Lookup(verb.Permission); ok {
				perm = info
			}
		}
		verb = perm
	}
	lv := strings.ToLower(verb.Name)
	admin := strings.HasPrefix(lv, config.AdminPrefix)
	if role == ReaderRole && p.roles[ReaderRole] == nil {
		return !admin && verb.ReadOnly
	}
	for _, pat := range p.roles[role] {
		if admin && !strings.HasPrefix(pat, config.AdminPrefix) {
			continue // a verb glob such as * grants no admin permission
		}
		if ok, _ := path.Match(pat, lv); ok {
			return true
		}
	}
	return false
}

// matchAny reports whether verb matches one of the lower-cased patterns.
func matchAny(patterns []string, verb string) bool {
	lv := strings.ToLower(verb)
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, lv); ok {
			return true
		}
	}
	return false
}

// Permitted reports whether identity holds the admin permission perm
// (config.AdminRead, …) through its roles.
func (a *Access) Permitted(identity, perm string) bool {
	if !strings.HasPrefix(perm, config.AdminPrefix) {
		return false
	}
	return a.Allowed([]string{identity}, perm)
}

// VerbsFor lists the verbs the identities may run, sorted by name.
func (a *Access) VerbsFor(ids []string) []executor.Info {
	a = a.Current()
	roles := a.RolesOf(ids)
	var out []executor.Info
	for _, v := range a.reg.Verbs() {
		if a.grants(roles, v) {
			out = append(out, v)
		}
	}
	return out
}

// AllowConfig is the configuration that would let identity run verb (a
// verb's name or an admin permission): a role that names the verb, granted
// to identity beside the roles the configuration grants it now. It is YAML
// to merge into the configuration's access section (or to paste as it is
// where there is none), applied by `hub reload`. Forbidden replies show
// it on every surface, so whoever is refused can tell the operator what
// to write.
func (a *Access) AllowConfig(identity, verb string) string {
	role := strings.NewReplacer(".", "-", "*", "all").Replace(strings.ToLower(verb))
	return a.grantBlock(identity, role, fmt.Sprintf("{verbs: [%q]}", verb))
}

// WorkspaceConfig is AllowConfig for a workspace the roles may not use: a
// role that names the workspace (roles add up: the verbs of one, the
// workspaces of another), granted to identity.
func (a *Access) WorkspaceConfig(identity, workspace string) string {
	return a.grantBlock(identity, "use-"+strings.ToLower(workspace), fmt.Sprintf("{workspaces: [%q]}", workspace))
}

// grantBlock is the access section that defines role (renamed when the
// name is taken) as spec and grants it to identity beside the roles the
// configuration grants it.
func (a *Access) grantBlock(identity, role, spec string) string {
	p := a.p.Load()
	for base, n := role, 2; p.defined[role] || role == ReaderRole; n++ {
		role = fmt.Sprintf("%s-%d", base, n)
	}
	roles := append(append([]string(nil), p.grants[identity]...), role)
	return fmt.Sprintf("access:\n  roles:\n    %s: %s\n  grants:\n    %s\n", role, spec, GrantLine(identity, strings.Join(roles, ", ")))
}

// ForbiddenHint is what a refusal adds so the refused can have it allowed:
// the configuration of AllowConfig, fenced, with where it goes.
func (a *Access) ForbiddenHint(identity, verb string) string {
	return allowHint(a.AllowConfig(identity, verb))
}

// WorkspaceHint is ForbiddenHint for a workspace (WorkspaceConfig).
func (a *Access) WorkspaceHint(identity, workspace string) string {
	return allowHint(a.WorkspaceConfig(identity, workspace))
}

func allowHint(block string) string {
	return "To allow it, the operator adds this to the configuration (merged into its access section, if it has one) and runs hub reload:\n" +
		executor.Fence(block, "yaml")
}

// grantText names a verb for a refusal, with the verb whose grant it needs
// when that is another's: "fs.upload (it needs fs.writeFile)".
func grantText(info executor.Info) string {
	if info.Permission == "" {
		return info.Name
	}
	return fmt.Sprintf("%s (it needs %s)", info.Name, info.Permission)
}

// rolesText lists roles for a refusal: "none" when there are none.
func rolesText(roles []string) string {
	if len(roles) == 0 {
		return "none"
	}
	return strings.Join(roles, ", ")
}

// GrantLine is the configuration line, under access.grants, that would give
// identity a role; strangers are shown it so the operator can copy it.
func GrantLine(identity, role string) string {
	return fmt.Sprintf("%q: [%s]", identity, role)
}
