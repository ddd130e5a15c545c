package main

import (
	"fmt"
	"strings"

	"github.com/a6afc2ce/hermes-hub/adapters/web"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// panelAccess says, at start, what whoever holds the panel's token may
// do: which verbs and admin permissions the web identity's roles grant,
// and why (docs/access.md).
func panelAccess(cfg *config.Config, acc *hub.Access, reg *executor.Registry) string {
	ids := []string{web.Identity}
	roles := strings.Join(acc.RolesOf(ids), ", ")
	if roles == "" {
		roles = "none"
	}
	verbs, all := len(acc.VerbsFor(ids)), len(reg.Verbs())
	var perms []string
	for _, p := range config.AdminPermissions {
		if acc.Permitted(web.Identity, p) {
			perms = append(perms, p)
		}
	}
	what := fmt.Sprintf("%d of the %d verbs", verbs, all)
	if verbs == all {
		what = "every verb"
	}
	admin := "no admin view"
	switch len(perms) {
	case len(config.AdminPermissions):
		admin = "every admin view"
	case 0:
	default:
		admin = "the admin permissions " + strings.Join(perms, ", ")
	}
	why := "as access.grants in the configuration decides"
	switch {
	case cfg.Access.Defaulted && cfg.Access.Roles[config.OperatorRole].Verbs != nil:
		why = "with no access section, whoever holds this generated token on a loopback listener is the operator"
	case cfg.Access.Defaulted:
		why = "with no access section, a configured token or a listener others reach may only read; grant web a role under access.grants for more"
	}
	return fmt.Sprintf("The panel (identity %s, roles: %s) may run %s and use %s: %s (docs/access.md).", web.Identity, roles, what, admin, why)
}
