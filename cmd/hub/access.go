package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/store"
)

const accessUsage = `hub access approve CODE --role ROLE | list [--json] | revoke IDENTITY

Grants kept in the state, over the configuration's access.grants:
  approve CODE --role ROLE   grant ROLE to the stranger a pairing code was
                             given to (a stranger gets one by writing to the
                             bot on Telegram or Discord; it works once and
                             expires after an hour)
  list                       the grants of the configuration and of the
                             state (source, role, approved by, when), and
                             the pairing codes outstanding
  revoke IDENTITY            remove the grants of the state of IDENTITY
                             (telegram:<user_id>, discord:<user_id>, …); a
                             grant of the configuration is removed in the
                             file, then ` + "`hub reload`" + `
Through the admin socket while the hub runs, else on the state directly.`

func runAccess(env *cliEnv, args []string) error {
	var asJSON *bool
	var role *string
	return withAdmin(env, "access", accessUsage, args, func(f *flagSet) {
		asJSON = f.Bool("json", false, "print JSON")
		role = f.String("role", "", "the role to grant (approve)")
	}, func(c *adminClient, pos []string) error {
		if len(pos) == 0 {
			return usagef("give a subcommand: approve, list or revoke")
		}
		switch pos[0] {
		case "approve":
			if len(pos) != 2 {
				return usagef("approve takes one CODE, and --role ROLE")
			}
			if *role == "" {
				return usagef("give the role to grant with --role (for example --role reader)")
			}
			var res admin.ApproveResult
			if err := c.do("POST", "/api/access/approve", nil, admin.ApproveRequest{Code: pos[1], Role: *role}, &res); err != nil {
				return err
			}
			offlineMirror(env, c, "approve", fmt.Sprintf("approved %s as %s", res.Grant.Identity, res.Grant.Role), map[string]string{"identity": res.Grant.Identity, "role": res.Grant.Role})
			fmt.Fprintf(env.stdout, "Approved: %s now holds the role %s.\n", res.Grant.Identity, res.Grant.Role)
			if res.Note != "" {
				fmt.Fprintln(env.stdout, res.Note)
			}
			return nil
		case "list", "ls":
			if len(pos) != 1 {
				return usagef("list takes no argument")
			}
			var l hub.AccessList
			if err := c.do("GET", "/api/access", nil, nil, &l); err != nil {
				return err
			}
			if *asJSON {
				printJSON(env.stdout, l)
				return nil
			}
			if len(l.Grants) == 0 {
				fmt.Fprintln(env.stdout, "No grants: strangers get a pairing code; approve it with `hub access approve CODE --role ROLE`.")
			} else {
				tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "IDENTITY\tROLE\tSOURCE\tAPPROVED BY\tWHEN")
				for _, g := range l.Grants {
					by, when := "-", "-"
					if g.Source == "state" {
						by, when = g.ApprovedBy, g.At.UTC().Format(time.RFC3339)
					}
					src := g.Source
					if g.Inactive != "" {
						src += " (inactive: " + g.Inactive + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.Identity, g.Role, src, by, when)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if len(l.Codes) > 0 {
				fmt.Fprintf(env.stdout, "\n%d pairing %s outstanding:\n", len(l.Codes), plural(len(l.Codes), "code", "codes"))
				for _, pc := range l.Codes {
					fmt.Fprintf(env.stdout, "  for %s, expires %s\n", pc.Identity, pc.Expires.UTC().Format(time.RFC3339))
				}
			}
			return nil
		case "revoke", "rm":
			if len(pos) != 2 {
				return usagef("revoke takes one IDENTITY")
			}
			var res admin.RevokeResult
			if err := c.do("POST", "/api/access/revoke", nil, admin.RevokeRequest{Identity: pos[1]}, &res); err != nil {
				return err
			}
			if len(res.Removed) == 0 {
				fmt.Fprintf(env.stdout, "%s holds no grant of the state; nothing revoked.\n", res.Identity)
				return nil
			}
			roles := make([]string, len(res.Removed))
			for i, g := range res.Removed {
				roles[i] = g.Role
			}
			offlineMirror(env, c, "revoke", fmt.Sprintf("revoked %s (%s)", res.Identity, strings.Join(roles, ", ")), map[string]string{"identity": res.Identity, "role": strings.Join(roles, ",")})
			fmt.Fprintf(env.stdout, "Revoked: %s no longer holds %s (from its next message).\n", res.Identity, strings.Join(roles, ", "))
			return nil
		}
		return usagef("unknown subcommand %q (accepted: approve, list, revoke)", pos[0])
	})
}

// offlineMirror records an approval or a revocation made on the state while
// no hub runs (a running hub mirrors its own).
func offlineMirror(env *cliEnv, c *adminClient, action, text string, meta map[string]string) {
	if c.running || c.cfg == nil {
		return
	}
	mir := newCLIMirror(c.cfg)
	defer mir.Close()
	m := map[string]string{"action": action}
	for k, v := range meta {
		m[k] = v
	}
	if err := mir.record(context.Background(), store.DirectionInbound, hub.NewTurnID("access", clock.Real{}.Now()), text, m); err != nil {
		fmt.Fprintf(env.stderr, "hub access: %v\n", err)
	}
}
