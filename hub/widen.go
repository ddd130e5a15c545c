package hub

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
)

// AccessWidening lists, for people, what the access section b lets someone
// do that a did not: a default role added (every identity holds it, strangers
// included), a role granted to an identity, and a verb pattern, an admin
// permission or a workspace pattern added to a role (a role without a
// workspaces list may use default). A pattern counts as added when the same
// pattern was not there, even if older ones covered it: the warning says too
// much rather than too little. Sorted as the configuration reads.
func AccessWidening(a, b config.Access) []string {
	var out []string
	for _, r := range added(a.DefaultRoles, b.DefaultRoles) {
		out = append(out, fmt.Sprintf("access.default_roles gained %s: every identity now holds it, strangers included", r))
	}
	for _, id := range sortedKeys(b.Grants) {
		for _, r := range added(a.Grants[id], b.Grants[id]) {
			out = append(out, fmt.Sprintf("access.grants[%q] gained %s", id, r))
		}
	}
	for _, name := range sortedKeys(b.Roles) {
		old, existed := a.Roles[name]
		for _, p := range added(old.Verbs, b.Roles[name].Verbs) {
			what := "verb pattern"
			if strings.HasPrefix(strings.ToLower(p), config.AdminPrefix) {
				what = "admin permission"
			}
			out = append(out, fmt.Sprintf("access.roles.%s gained %s %s", name, what, p))
		}
		for _, w := range added(roleWorkspaces(old, existed || name == ReaderRole), roleWorkspaces(b.Roles[name], true)) {
			out = append(out, fmt.Sprintf("access.roles.%s gained workspace %s", name, w))
		}
	}
	for _, scope := range sortedKeys(b.Chats) {
		old, nw := a.Chats[scope], b.Chats[scope]
		for _, id := range sortedKeys(nw.Grants) {
			for _, r := range added(old.Grants[id], nw.Grants[id]) {
				out = append(out, fmt.Sprintf("access.chats[%q].grants[%q] gained %s", scope, id, r))
			}
		}
		if old.MaxRoles != nil && (nw.MaxRoles == nil || len(added(old.MaxRoles, nw.MaxRoles)) > 0) {
			out = append(out, fmt.Sprintf("access.chats[%q].max_roles was raised or removed", scope))
		}
	}
	for _, scope := range sortedKeys(a.Chats) {
		if _, kept := b.Chats[scope]; !kept && a.Chats[scope].MaxRoles != nil {
			out = append(out, fmt.Sprintf("access.chats[%q] and its max_roles were removed", scope))
		}
	}
	if _, was := a.Roles[ReaderRole]; was {
		if _, is := b.Roles[ReaderRole]; !is {
			out = append(out, "access.roles.reader is no longer configured: the built-in reader role (every read-only verb) applies again")
		}
	}
	return out
}

// CommandsWidening names each named command a new commands section adds,
// or changes (its call, parameters, workspace or timeout): whoever may run
// it may now run something they could not, without a change to access.
func CommandsWidening(a, b config.Commands) []string {
	var out []string
	for _, name := range sortedKeys(b) {
		old, existed := a[name]
		switch nw := b[name]; {
		case !existed:
			out = append(out, fmt.Sprintf("commands.%s was added: it runs %s", name, nw.Run.Verb))
		case !reflect.DeepEqual(old.Run, nw.Run) || !reflect.DeepEqual(old.Params, nw.Params) || old.Workspace != nw.Workspace || old.Timeout != nw.Timeout:
			out = append(out, fmt.Sprintf("commands.%s changed what it runs (%s)", name, nw.Run.Verb))
		}
	}
	return out
}

// roleWorkspaces is the workspace patterns of r: its list, or default when
// it names none; nothing for a role that did not exist.
func roleWorkspaces(r config.Role, exists bool) []string {
	switch {
	case !exists:
		return nil
	case r.Workspaces == nil:
		return []string{config.DefaultWorkspace}
	}
	return r.Workspaces
}

// added lists the entries of b that a lacks, in b's order, once each.
func added(a, b []string) []string {
	var out []string
	for _, x := range b {
		if !slices.Contains(a, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
