package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// withAdmin parses the common flags, connects to the admin API and runs fn.
func withAdmin(env *cliEnv, name, usage string, args []string, setup func(f *flagSet), fn func(c *adminClient, pos []string) error) error {
	f := newFlags(env, name, usage)
	var cf commonFlags
	cf.register(f, false)
	if setup != nil {
		setup(f)
	}
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(cf)
	if err != nil {
		return err
	}
	c, err := openAdmin(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c, pos)
}

func printJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

const targetsUsage = `hub targets list|add TARGET|rm TARGET|clear [--json]

Delivery targets receive hub-level output (hub send, hub exec --deliver,
POST /api/deliver). TARGET is one of:
  web
  local:<path>                       (relative to the state directory)
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
		limit = f.Int("limit", 100, "at most N entries")
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
					if e.NextAttemptAt.After(time.Now()) {
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

func runMirror(env *cliEnv, args []string) error {
	var run, dir *string
	var n *int
	var follow, asJSON *bool
	return withAdmin(env, "mirror", "hub mirror tail [--run ID] [--direction in|out] [-n N] [--follow] [--json]\n\nShows the chat mirror records: every inbound message and every delivered or dead chunk.", args, func(f *flagSet) {
		run = f.String("run", "", "only this run (default: all runs)")
		dir = f.String("direction", "", "in or out (default: both)")
		n = f.Int("n", 20, "the last N records")
		follow = f.Bool("follow", false, "keep printing new records")
		asJSON = f.Bool("json", false, "print the raw JSON lines")
	}, func(c *adminClient, pos []string) error {
		if len(pos) != 1 || pos[0] != "tail" {
			return usagef("usage: hub mirror tail [flags]")
		}
		q := url.Values{"n": {strconv.Itoa(*n)}}
		if *run != "" {
			q.Set("run", *run)
		}
		if *dir != "" {
			q.Set("direction", *dir)
		}
		print := func(r store.MirrorRecord) {
			if *asJSON {
				b, _ := json.Marshal(r)
				fmt.Fprintf(env.stdout, "%s\n", b)
				return
			}
			arrow := "←"
			if r.Direction == store.DirectionOutbound {
				arrow = "→"
			}
			where := r.Platform
			if r.ChatID != "" {
				where += ":" + r.ChatID
			}
			if r.ThreadID != "" {
				where += ":" + r.ThreadID
			}
			fmt.Fprintf(env.stdout, "%s %s %-8s %-22s %-16s %s\n", r.TS.Local().Format("2006-01-02 15:04:05"), arrow, r.Kind, where, r.Actor, r.TextPreview)
		}
		if !*follow {
			var recs []store.MirrorRecord
			if err := c.do("GET", "/api/mirror", q, nil, &recs); err != nil {
				return err
			}
			for _, r := range recs {
				print(r)
			}
			return nil
		}
		q.Set("follow", "1")
		resp, err := c.stream("GET", "/api/mirror", q, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			var r store.MirrorRecord
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				print(r)
			}
		}
		return sc.Err()
	})
}

func runSend(env *cliEnv, args []string) error {
	var turn *string
	return withAdmin(env, "send", "hub send [--turn ID] TEXT...\n\nDelivers TEXT to every delivery target (see hub targets). With --turn, sending the same turn again is a no-op per target.", args, func(f *flagSet) {
		turn = f.String("turn", "", "turn id that makes a resend idempotent")
	}, func(c *adminClient, pos []string) error {
		text := strings.Join(pos, " ")
		if strings.TrimSpace(text) == "" {
			return usagef("give the TEXT to send")
		}
		var res admin.DeliverResult
		if err := c.do("POST", "/api/deliver", nil, admin.DeliverRequest{Text: text, TurnID: *turn}, &res); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "Turn %s: %d %s enqueued\n", res.TurnID, len(res.Outbox), plural(len(res.Outbox), "chunk", "chunks"))
		if res.Note != "" {
			fmt.Fprintln(env.stdout, res.Note)
		}
		return nil
	})
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}
