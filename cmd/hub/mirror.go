package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/store"
)

func runMirror(env *cliEnv, args []string) error {
	if len(args) > 0 && args[0] == "prune" {
		return runMirrorPrune(env, args[1:])
	}
	if len(args) > 0 && args[0] == "search" {
		return runMirrorSearch(env, args[1:])
	}
	var run, dir *string
	var n *int
	var follow, asJSON *bool
	return withAdmin(env, "mirror", "hub mirror tail [--run ID] [--direction in|out] [-n N] [--follow] [--json]\n       hub mirror search [--identity ID] [--chat CHAT] [--verb VERB] [--outcome O] [--since T] [--until T] …\n       hub mirror prune [--dry-run] [--json]\n\nShows the chat mirror records: every inbound message and every delivered or dead chunk.\nsearch finds turns in every retained run by who, where, what and how it ended (see `hub mirror search --help`).\nprune removes old runs by mirror.retention (see `hub mirror prune --help`).", args, func(f *flagSet) {
		run = f.String("run", "", "only this run (default: all runs)")
		dir = f.String("direction", "", "in or out (default: both)")
		n = f.count("n", 20, 0, admin.MaxTail, "the last N records")
		follow = f.Bool("follow", false, "keep printing new records")
		asJSON = f.Bool("json", false, "print the raw JSON lines")
	}, func(c *adminClient, pos []string) error {
		if len(pos) != 1 || pos[0] != "tail" {
			return usagef("usage: hub mirror tail [flags], hub mirror search [filters], or hub mirror prune [--dry-run]")
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
