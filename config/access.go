package config

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
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
	// Defaulted is set when the configuration has no access section: the
	// grants above are the defaults (applyDefaults).
	Defaulted bool `yaml:"-"`
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
}

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
	if a.Roles != nil || a.Grants != nil || a.DefaultRoles != nil {
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
