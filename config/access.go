package config

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Access maps identities to roles and roles to verbs. Deny by default.
type Access struct {
	// Roles name the verbs they may run; globs such as "fs.read*" and "*".
	// The role "reader" is built in (read-only fs verbs and sys.machineInfo).
	Roles map[string]Role `yaml:"roles"`
	// Grants maps an identity (telegram:<user_id>, discord:<user_id>,
	// discord-role:<role_id>, agent:<name>, schedule:<name>, web) to role
	// names.
	Grants map[string][]string `yaml:"grants"`
	// DefaultRoles are granted to everyone; empty by default (deny).
	DefaultRoles []string `yaml:"default_roles"`
	// Chats are rules that hold in one chat only (keys: ChatScope forms
	// such as telegram:chat:-100123 or discord:guild:<id>): grants held
	// there and a ceiling on every role there (docs/access.md).
	Chats map[string]ChatRule `yaml:"chats"`
	// ConfirmTTL is how long a call held for confirmation (a role's
	// confirm) waits for its Run before it expires (default 10m).
	ConfirmTTL Duration `yaml:"confirm_ttl"`
	// Defaulted is set when the configuration has no access section: the
	// grants above are the defaults (applyDefaults).
	Defaulted bool `yaml:"-"`
}

// ChatRule is what holds in one chat scope, under access.chats.
type ChatRule struct {
	// Grants maps identities to roles they hold in this scope only.
	Grants map[string][]string `yaml:"grants"`
	// MaxRoles is the ceiling of the scope: there, an identity may do
	// only what one of these roles also grants, whatever its roles
	// (nil: no ceiling).
	MaxRoles []string `yaml:"max_roles"`
}

// The kinds of chat scope under access.chats.
const (
	ScopeTelegramChat   = "telegram:chat:"   // telegram:chat:<chat_id>[:<topic_id>]
	ScopeDiscordChannel = "discord:channel:" // discord:channel:<channel_id>
	ScopeDiscordGuild   = "discord:guild:"   // discord:guild:<guild_id>
)

// chatScopeAccepted says what a key of access.chats may be, for errors.
const chatScopeAccepted = "telegram:chat:<chat_id>, telegram:chat:<chat_id>:<topic_id>, discord:channel:<channel_id> or discord:guild:<guild_id>"

// ValidChatScope checks a key of access.chats.
func ValidChatScope(s string) error {
	switch {
	case strings.HasPrefix(s, ScopeTelegramChat):
		chatID, topic, hasTopic := strings.Cut(strings.TrimPrefix(s, ScopeTelegramChat), ":")
		if isInt(chatID) && (!hasTopic || isSnowflake(topic)) {
			return nil
		}
	case strings.HasPrefix(s, ScopeDiscordChannel):
		if isSnowflake(strings.TrimPrefix(s, ScopeDiscordChannel)) {
			return nil
		}
	case strings.HasPrefix(s, ScopeDiscordGuild):
		if isSnowflake(strings.TrimPrefix(s, ScopeDiscordGuild)) {
			return nil
		}
	}
	return fmt.Errorf("%q is not a chat scope (accepted: %s)", s, chatScopeAccepted)
}

// Role is a named set of verb patterns and admin permissions.
type Role struct {
	// Verbs are verb names or globs ("fs.read*", "*"), and admin
	// permissions (AdminPermissions, or "admin.*" for all of them). A verb
	// glob never grants an admin permission: "*" is every verb, not the
	// admin API.
	Verbs []string `yaml:"verbs"`
	// Workspaces are the workspaces the role may act in: names or globs
	// ("dev-*", "*" for all). Without the key a role may use only the
	// default workspace.
	Workspaces []string `yaml:"workspaces"`
	// Confirm are the verbs (names or globs, as in Verbs) a holder of the
	// role runs only after pressing Run on the exact call.
	Confirm []string `yaml:"confirm"`
	// Approvers are roles one of whose holders, someone other than the
	// caller, must approve a call Confirm holds, after the caller's Run.
	Approvers []string `yaml:"approvers"`
}

// DefaultConfirmTTL is access.confirm_ttl's default.
const DefaultConfirmTTL = Duration(10 * time.Minute)

// The admin permissions: what a role must name for its identity (the web
// token holder) to use the admin API beyond GET /api/status.
const (
	// AdminRead reads other conversations and the hub's delivery state:
	// the mirrors, the outbox entries, the delivery targets and the
	// channel directory.
	AdminRead = "admin.read"
	// AdminTargets adds, removes and clears delivery targets.
	AdminTargets = "admin.targets"
	// AdminDeliver makes the hub post text to the delivery targets.
	AdminDeliver = "admin.deliver"
	// AdminOutbox retries and purges outbox entries.
	AdminOutbox = "admin.outbox"
	// AdminChannels rebuilds the channel directory.
	AdminChannels = "admin.channels"
	// AdminAccess lists, approves (pairing codes, also /approve from chat)
	// and revokes the grants kept in the state. Its holder may grant any
	// role, so it is as strong as the strongest role.
	AdminAccess = "admin.access"
	// AdminWorkspaces resets workspaces' sandboxes (their containers).
	AdminWorkspaces = "admin.workspaces"
	// AdminCancel stops anyone's running call in a conversation (/cancel,
	// the Cancel buttons); without it, only the caller may stop a call.
	AdminCancel = "admin.cancel"
	// AdminSchedules runs a schedule now (hub schedules run, the panel's
	// Run now): its call, as the schedule's identity.
	AdminSchedules = "admin.schedules"
)

// AdminPermissions lists every admin permission.
var AdminPermissions = []string{AdminRead, AdminTargets, AdminDeliver, AdminOutbox, AdminChannels, AdminAccess, AdminWorkspaces, AdminCancel, AdminSchedules}

// AdminPrefix starts every admin permission; only a pattern that starts
// with it grants one.
const AdminPrefix = "admin."

// OperatorRole is the role the configuration gives the web identity when
// it has no access section and the panel's token is generated on a
// loopback listener (applyDefaults).
const OperatorRole = "operator"

// applyDefaults decides the access of a configuration without an access
// section. The token of a loopback listener that configures none is
// generated at each start and printed only on the terminal of whoever
// started the hub, who holds the admin socket (every admin action) and
// the files anyway: that panel is the operator's, granted every verb and
// every admin permission in every workspace (role operator). A configured
// token (which others may hold) or a listener others reach stays deny by
// default: the panel may read (the built-in reader), nothing more. Chat
// identities and agents stay denied until granted.
func (a *Access) applyDefaults(c *Config) {
	setDefault(&a.ConfirmTTL, DefaultConfirmTTL)
	if a.Roles != nil || a.Grants != nil || a.DefaultRoles != nil || a.Chats != nil {
		return
	}
	a.Defaulted = true
	if c.Web.operatorPanel() {
		a.Roles = map[string]Role{OperatorRole: {Verbs: []string{"*", AdminPrefix + "*"}, Workspaces: []string{"*"}}}
		a.Grants = map[string][]string{"web": {OperatorRole}}
		return
	}
	a.Grants = map[string][]string{"web": {"reader"}}
}

// validate checks the roles' patterns, the workspaces they name, and that
// every granted role is defined.
func (a *Access) validate(c *Config, v *validator) {
	for _, name := range sortedKeys(a.Roles) {
		a.validateRole(c, v, name)
	}
	for _, id := range sortedKeys(a.Grants) {
		key := "access.grants." + id
		if err := ValidIdentity(id); err != nil {
			v.badAt(key, "access.grants", ": %v", err)
		}
		for i, r := range a.Grants[id] {
			if !c.roleKnown(r) {
				v.badAt(item(key, i), key, ": role %q is not defined (define it under access.roles, or use the built-in reader)", r)
			}
		}
	}
	for i, r := range a.DefaultRoles {
		if !c.roleKnown(r) {
			v.badAt(item("access.default_roles", i), "access.default_roles", ": role %q is not defined", r)
		}
	}
	for _, scope := range sortedKeys(a.Chats) {
		a.validateChat(c, v, scope)
	}
	if a.ConfirmTTL != 0 && (a.ConfirmTTL < Duration(time.Minute) || a.ConfirmTTL > Duration(7*24*time.Hour)) {
		v.bad("access.confirm_ttl", ": %s is out of range (accepted: from 1m to 168h)", a.ConfirmTTL)
	}
}

// validateChat checks one chat scope: its key, its grants' identities and
// roles, and its ceiling's roles.
func (a *Access) validateChat(c *Config, v *validator, scope string) {
	key, rule := "access.chats."+scope, a.Chats[scope]
	if err := ValidChatScope(scope); err != nil {
		v.badAt(key, "access.chats", ": %v", err)
	}
	for _, id := range sortedKeys(rule.Grants) {
		gk := key + ".grants." + id
		if err := ValidIdentity(id); err != nil {
			v.badAt(gk, key+".grants", ": %v", err)
		}
		for i, r := range rule.Grants[id] {
			if !c.roleKnown(r) {
				v.badAt(item(gk, i), gk, ": role %q is not defined (define it under access.roles, or use the built-in reader)", r)
			}
		}
	}
	if rule.MaxRoles != nil && len(rule.MaxRoles) == 0 {
		v.bad(key+".max_roles", " is empty, which would let no one do anything here (accepted: the roles whose permissions are the most anyone has in this chat, such as [reader])")
	}
	for i, r := range rule.MaxRoles {
		if !c.roleKnown(r) {
			v.badAt(item(key+".max_roles", i), key+".max_roles", ": role %q is not defined (define it under access.roles, or use the built-in reader)", r)
		}
	}
}

// validateRole checks one role: its verb patterns and admin permissions,
// and the workspaces it names.
func (a *Access) validateRole(c *Config, v *validator, name string) {
	key, r := "access.roles."+name, a.Roles[name]
	if name == "" {
		v.badAt(key, "access.roles", ": a role has an empty name")
	}
	for i, p := range r.Verbs {
		at := item(key+".verbs", i)
		if _, err := filepath.Match(strings.ToLower(p), "x"); err != nil || p == "" {
			v.badAt(at, key+".verbs", ": %q is not a valid pattern (accepted: a verb name, or a glob such as fs.read* or *)", p)
			continue
		}
		if strings.HasPrefix(strings.ToLower(p), AdminPrefix) && !matchesAdminPermission(p) {
			v.badAt(at, key+".verbs", ": %q is not an admin permission (accepted: %s, or admin.* for all of them)", p, strings.Join(AdminPermissions, ", "))
		}
	}
	for i, p := range r.Confirm {
		if _, err := filepath.Match(strings.ToLower(p), "x"); err != nil || p == "" || strings.HasPrefix(strings.ToLower(p), AdminPrefix) {
			v.badAt(item(key+".confirm", i), key+".confirm", ": %q is not a verb pattern (accepted: a verb name or a glob such as fs.delete*, proc.run or cmd.deploy)", p)
		}
	}
	for i, ap := range r.Approvers {
		if !c.roleKnown(ap) {
			v.badAt(item(key+".approvers", i), key+".approvers", ": role %q is not defined (accepted: a role under access.roles, or reader)", ap)
		}
	}
	if len(r.Approvers) > 0 && len(r.Confirm) == 0 {
		v.bad(key+".approvers", ": approvers approve the calls confirm holds, and confirm is empty (accepted: confirm: [the verbs to hold] beside approvers)")
	}
	names := strings.Join(c.WorkspaceNames(), ", ")
	for i, p := range r.Workspaces {
		at := item(key+".workspaces", i)
		if _, err := path.Match(p, "x"); err != nil || p == "" {
			v.badAt(at, key+".workspaces", ": %q is not a valid pattern (accepted: a workspace name, a glob such as dev-*, or * for all)", p)
			continue
		}
		if _, ok := c.WorkspaceByName(p); !ok && !strings.ContainsAny(p, "*?[") {
			v.badAt(at, key+".workspaces", ": workspace %q is not configured (accepted: %s, or a glob)", p, names)
		}
	}
}

// roleKnown reports whether r is defined under access.roles or built in.
func (c *Config) roleKnown(r string) bool {
	_, ok := c.Access.Roles[r]
	return ok || r == "reader"
}

// matchesAdminPermission reports whether pattern names at least one admin
// permission.
func matchesAdminPermission(pattern string) bool {
	for _, perm := range AdminPermissions {
		if ok, _ := path.Match(strings.ToLower(pattern), perm); ok {
			return true
		}
	}
	return false
}

// ValidIdentity checks an access-control identity.
func ValidIdentity(id string) error {
	if id == "web" {
		return nil
	}
	kind, rest, ok := strings.Cut(id, ":")
	switch {
	case ok && kind == "telegram" && isInt(rest):
		return nil
	case ok && (kind == "discord" || kind == "discord-role") && isSnowflake(rest):
		return nil
	case ok && kind == "agent" && validAgentName(rest) == nil:
		return nil
	case ok && kind+":" == ScheduleIdentityPrefix && ValidScheduleName(rest) == nil:
		return nil
	}
	return fmt.Errorf("%q is not an identity (accepted: telegram:<user_id>, discord:<user_id>, discord-role:<role_id>, agent:<name>, schedule:<name>, web)", id)
}

func isInt(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return isSnowflake(s)
}
