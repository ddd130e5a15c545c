package main

import (
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

const outboxUsage = `hub outbox list [--target T] [--limit N] | dead | show ID | retry ID | purge [--target T] [--turn T] [--json]

  list    pending chunks, oldest first per target
  dead    dead letters: chunks that could not be delivered, with their last error
  show    one entry in full
  retry   send a dead letter again (it joins the end of its target's queue)
  purge   delete dead letters`

func runOutbox(env *cliEnv, args []string) error {
	var asJSON *bool
	var target, turn *string
	var limit *int
	return withAdmin(env, "outbox", outboxUsage, args, func(f *flagSet) {
		asJSON = f.Bool("json", false, "print JSON")
		target = f.String("target", "", "only this target key")
		turn = f.String("turn", "", "only this turn id")
		limit = f.count("limit", 100, 1, admin.MaxList, "at most N entries")
	}, func(c *adminClient, pos []string) error {
		if len(pos) == 0 {
			pos = []string{"list"}
		}
		switch pos[0] {
		case "list", "ls", "dead":
			state := "pending"
			if pos[0] == "dead" {
				state = "dead"
			}
			q := url.Values{"state": {state}, "limit": {strconv.Itoa(*limit)}}
			if *target != "" {
				q.Set("target", *target)
			}
			if *turn != "" {
				q.Set("turn", *turn)
			}
			var entries []outbox.Entry
			if err := c.do("GET", "/api/outbox", q, nil, &entries); err != nil {
				return err
			}
			if *asJSON {
				printJSON(env.stdout, entries)
				return nil
			}
			if len(entries) == 0 {
				fmt.Fprintf(env.stdout, "No %s entries.\n", map[string]string{"pending": "pending", "dead": "dead-letter"}[state])
				return nil
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			if state == "dead" {
				fmt.Fprintln(tw, "ID\tATTEMPTS\tLAST ERROR")
				for _, e := range entries {
					fmt.Fprintf(tw, "%s\t%d\t%s\n", e.ID, e.Attempts, oneLine(e.LastError, 80))
				}
			} else {
				fmt.Fprintln(tw, "ID\tATTEMPTS\tNEXT ATTEMPT\tTEXT")
				for _, e := range entries {
					next := "now"
					if e.NextAttemptAt.After(clock.Real{}.Now()) {
						next = e.NextAttemptAt.Local().Format("15:04:05")
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", e.ID, e.Attempts, next, oneLine(e.Text, 50))
				}
			}
			return tw.Flush()
		case "show":
			if len(pos) != 2 {
				return usagef("show takes one ID")
			}
			var e outbox.Entry
			if err := c.do("GET", "/api/outbox/entry", url.Values{"id": {pos[1]}}, nil, &e); err != nil {
				return err
			}
			if *asJSON {
				printJSON(env.stdout, e)
				return nil
			}
			fmt.Fprintf(env.stdout, "id:          %s\nstate:       %s\ntarget:      %s\nturn:        %s\nchunk:       %d of %d\nattempts:    %d\n", e.ID, e.State, e.Target, e.TurnID, e.Index+1, e.Total, e.Attempts)
			if e.LastError != "" {
				fmt.Fprintf(env.stdout, "last error:  %s\n", e.LastError)
			}
			if !e.EnqueuedAt.IsZero() {
				fmt.Fprintf(env.stdout, "enqueued:    %s\n", e.EnqueuedAt.Local().Format(time.RFC3339))
			}
			if e.Attachment != nil {
				fmt.Fprintf(env.stdout, "attachment:  %s (%d bytes)\n", e.Attachment.Name, len(e.Attachment.Data))
			}
			fmt.Fprintf(env.stdout, "\n%s\n", e.Text)
			return nil
		case "retry":
			if len(pos) != 2 {
				return usagef("retry takes one ID")
			}
			var res struct {
				Entry outbox.Entry `json:"entry"`
				Note  string       `json:"note"`
			}
			if err := c.do("POST", "/api/outbox/retry", nil, admin.IDRequest{ID: pos[1]}, &res); err != nil {
				return err
			}
			if *asJSON {
				printJSON(env.stdout, res)
				return nil
			}
			fmt.Fprintf(env.stdout, "Requeued %s\n", res.Entry.ID)
			if res.Note != "" {
				fmt.Fprintln(env.stdout, res.Note)
			}
			return nil
		case "purge":
			var res admin.ChangeResult
			if err := c.do("POST", "/api/outbox/purge", nil, admin.PurgeRequest{Target: *target, TurnID: *turn}, &res); err != nil {
				return err
			}
			if *asJSON {
				printJSON(env.stdout, res)
			} else {
				fmt.Fprintf(env.stdout, "Deleted %d dead %s\n", res.Count, plural(res.Count, "letter", "letters"))
			}
			return nil
		}
		return usagef("unknown subcommand %q (accepted: list, dead, show, retry, purge)", pos[0])
	})
}
