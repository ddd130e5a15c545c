package hub

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
)

// ReaderRole is the built-in role allowed to run every read-only verb.
const ReaderRole = "reader"

// Access decides who may run what. It denies by default: an identity may run
// a verb only when one of its roles names the verb (exactly, or by a glob
// such as fs.read* or *). The admin permissions (config.AdminPermissions)
// are granted the same way, but only by patterns that start with "admin.":
// "*" grants every verb and no admin permission, and the built-in reader
// role grants none.
type Access struct {
	roles    map[string][]string // role → lower-cased verb patterns
	grants   map[string][]string // identity → roles
	defaults []string
	reg      *executor.Registry
}

// NewAccess builds the access policy from configuration. reg supplies the
// read-only flag of each verb for the built-in reader role.
func NewAccess(cfg config.Access, reg *executor.Registry) *Access {
	a := &Access{roles: map[string][]string{}, grants: map[string][]string{}, reg: reg}
	for name, r := range cfg.Roles {
		for _, p := range r.Verbs {
			a.roles[name] = append(a.roles[name], strings.ToLower(p))
		}
	}
	for id, roles := range cfg.Grants {
		a.grants[id] = append([]string(nil), roles...)
	}
	a.defaults = append([]string(nil), cfg.DefaultRoles...)
	return a
}

// RolesOf returns the roles held by any of the identities, sorted.
func (a *Access) RolesOf(ids []string) []string {
	set := map[string]bool{}
	for _, r := range a.defaults {
		set[r] = true
	}
	for _, id := range ids {
		for _, r := range a.grants[id] {
			set[r] = true
		}
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Allowed reports whether any of the identities may run verb.
func (a *Access) Allowed(ids []string, verb string) bool {
	for _, r := range a.RolesOf(ids) {
		if a.roleAllows(r, verb) {
			return true
		}
	}
	return false
}

func (a *Access) roleAllows(role, verb string) bool {
	lv := strings.ToLower(verb)
	admin := strings.HasPrefix(lv, config.AdminPrefix)
	if role == ReaderRole && a.roles[ReaderRole] == nil {
		if admin {
			return false
		}
		info, ok := a.reg.Lookup(verb)
		return ok && info.ReadOnly
	}
	for _, p := range a.roles[role] {
		if admin && !strings.HasPrefix(p, config.AdminPrefix) {
			continue // a verb glob such as * grants no admin permission
		}
		if ok, _ := path.Match(p, lv); ok {
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
	var out []executor.Info
	for _, v := range a.reg.Verbs() {
		if a.Allowed(ids, v.Name) {
			out = append(out, v)
		}
	}
	return out
}

// GrantLine is the configuration line, under access.grants, that would give
// identity a role; strangers are shown it so the operator can copy it.
func GrantLine(identity, role string) string {
	return fmt.Sprintf("%q: [%s]", identity, role)
}
