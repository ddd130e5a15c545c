package main

import (
	"fmt"
	"net/url"
	"text/tabwriter"

	"github.com/a6afc2ce/hermes-hub/admin"
)

const targetsUsage = `hub targets list|add TARGET|rm TARGET|clear [--json]

Delivery targets receive hub-level output (hub send, hub exec --deliver,
POST /api/deliver). TARGET is one of:
  web
  local:<path>                       (a file under pma/ of the state
                                     directory, such as pma/out.jsonl; an
                                     absolute path only there or in
                                     outbox.local_roots)
  telegram:<chat_id>[:<thread_id>]   or chat:telegram:<chat_id>[:<thread_id>]
  discord:<channel_id>               or chat:discord:<channel_id>`

func runTargets(env *cliEnv, args []string) error {
	var asJSON *bool
	return withAdmin(env, "targets", targetsUsage, args, func(f *flagSet) {
		asJSON = f.Bool("json", false, "print JSON")
	}, func(c *adminClient, pos []string) error {
		if len(pos) == 0 {
			return usagef("give a subcommand: list, add, rm or clear")
		}
		switch pos[0] {
		case "list", "ls":
			var v admin.TargetsView
			if err := c.do("GET", "/api/targets", nil, nil, &v); err != nil {
				return err
			}
			if *asJSON {
				printJSON(env.stdout, v)
				return nil
			}
			if len(v.Targets) == 0 {
				fmt.Fprintln(env.stdout, "No delivery targets. Add one with: hub targets add telegram:<chat_id>")
				return nil
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TARGET\tLAST DELIVERY")
			for _, t := range v.Targets {
				last := v.LastDelivery[t]
				if last == "" {
					last = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\n", t, last)
			}
			return tw.Flush()
		case "add", "rm", "remove":
			if len(pos) != 2 {
				return usagef("%s takes one TARGET", pos[0])
			}
			var res admin.ChangeResult
			var err error
			if pos[0] == "add" {
				err = c.do("POST", "/api/targets", nil, admin.TargetRequest{Target: pos[1]}, &res)
			} else {
				err = c.do("DELETE", "/api/targets", url.Values{"target": {pos[1]}}, nil, &res)
			}
			if err != nil {
				return err
			}
			switch {
			case *asJSON:
				printJSON(env.stdout, res)
			case pos[0] == "add" && res.Changed:
				fmt.Fprintf(env.stdout, "Added %s\n", res.Target)
			case pos[0] == "add":
				fmt.Fprintf(env.stdout, "%s is already a target\n", res.Target)
			case res.Changed:
				fmt.Fprintf(env.stdout, "Removed %s\n", res.Target)
			default:
				fmt.Fprintf(env.stdout, "%s was not a target\n", res.Target)
			}
			if res.Note != "" && !*asJSON {
				fmt.Fprintf(env.stdout, "Note: %s\n", res.Note)
			}
			return nil
		case "clear":
			var res admin.ChangeResult
			if err := c.do("POST", "/api/targets/clear", nil, struct{}{}, &res); err != nil {
				return err
			}
			if *asJSON {
				printJSON(env.stdout, res)
			} else {
				fmt.Fprintf(env.stdout, "Removed %d %s\n", res.Count, plural(res.Count, "target", "targets"))
			}
			return nil
		}
		return usagef("unknown subcommand %q (accepted: list, add, rm, clear)", pos[0])
	})
}
