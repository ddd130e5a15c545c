package main

import (
	"fmt"
	"net/url"
	"text/tabwriter"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/store"
)

func runChannels(env *cliEnv, args []string) error {
	var asJSON *bool
	var query *string
	return withAdmin(env, "channels", "hub channels list [--query Q] [--json] | hub channels rebuild\n\nThe channel directory: every chat the hub has seen.", args, func(f *flagSet) {
		asJSON = f.Bool("json", false, "print JSON")
		query = f.String("query", "", "only entries whose key, name or details contain Q")
	}, func(c *adminClient, pos []string) error {
		sub := "list"
		if len(pos) > 0 {
			sub = pos[0]
		}
		switch sub {
		case "list", "ls":
			var entries []store.DirectoryEntry
			if err := c.do("GET", "/api/channels", url.Values{"query": {*query}}, nil, &entries); err != nil {
				return err
			}
			if *asJSON {
				printJSON(env.stdout, entries)
				return nil
			}
			if len(entries) == 0 {
				fmt.Fprintln(env.stdout, "No channels seen yet.")
				return nil
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tNAME\tSEEN\tTYPE")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Key(), e.Display, e.SeenAt.Local().Format("2006-01-02 15:04"), e.Meta[store.MetaChatType])
			}
			return tw.Flush()
		case "rebuild":
			var res admin.ChangeResult
			if err := c.do("POST", "/api/channels/rebuild", nil, struct{}{}, &res); err != nil {
				return err
			}
			if *asJSON {
				printJSON(env.stdout, res)
			} else {
				fmt.Fprintf(env.stdout, "Channel directory rebuilt from the mirrors: %d %s\n", res.Count, plural(res.Count, "entry", "entries"))
			}
			return nil
		}
		return usagef("unknown subcommand %q (accepted: list, rebuild)", sub)
	})
}
