package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/store"
)

const mirrorSearchUsage = `hub mirror search [--identity ID] [--chat CHAT] [--verb VERB] [--workspace NAME]
                         [--outcome succeeded|failed|forbidden|denied|interrupted]
                         [--since TIME] [--until TIME] [--limit N] [--json]

Searches every retained mirror run for turns: who asked what, where, and how
it ended (each request joined with its answer by turn id). Filters combine;
none lists every turn. --chat takes a platform (telegram, api, schedule, cli),
a chat (telegram:-1001234567890, schedule:nightly) or a topic; --verb a name
or a glob (fs.*); --since and --until a time (2026-11-24T06:00:00Z), a local
date or date and time (2026-11-24, "2026-11-24 06:00"), or a duration ago
(90m, 24h, 7d). --json prints one JSON object per turn (NDJSON). Through the
running hub's socket, or on the state directory when no hub runs.
See docs/chatops.md.`

func runMirrorSearch(env *cliEnv, args []string) error {
	f := newFlags(env, "mirror search", mirrorSearchUsage)
	var cf commonFlags
	cf.register(f, false)
	q := url.Values{}
	for _, name := range []string{"identity", "chat", "verb", "workspace", "outcome", "since", "until"} {
		f.Func(name, "only turns with this "+name, func(s string) error { q.Set(name, s); return nil })
	}
	limit := f.count("limit", 0, 0, 1<<30, "stop after N turns (0: all)")
	asJSON := f.Bool("json", false, "print one JSON object per turn")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q (filters are flags: see `hub mirror search --help`)", pos[0])
	}
	if err := checkSearchFlags(q); err != nil {
		return err
	}
	if *limit > 0 {
		q.Set("limit", strconv.Itoa(*limit))
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
	resp, err := c.stream("GET", "/api/mirror/search", q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return printSearch(env.stdout, resp.Body, *asJSON)
}

// checkSearchFlags refuses what the hub would refuse, as a usage error.
func checkSearchFlags(q url.Values) error {
	now := clock.Real{}.Now()
	for _, name := range []string{"since", "until"} {
		if _, err := admin.ParseSearchTime(name, q.Get(name), now); err != nil {
			return usagef("--%v", err)
		}
	}
	if o := q.Get("outcome"); o != "" && !slices.Contains(store.AuditOutcomes, o) {
		return usagef("--outcome %q is not accepted (accepted: %s)", o, strings.Join(store.AuditOutcomes, ", "))
	}
	return nil
}

// printSearch prints the stream of GET /api/mirror/search as it comes.
func printSearch(w io.Writer, body io.Reader, asJSON bool) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	n := 0
	for sc.Scan() {
		var e admin.APIError
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		n++
		if asJSON {
			fmt.Fprintf(w, "%s\n", sc.Bytes())
			continue
		}
		var t store.AuditTurn
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return fmt.Errorf("read the search's answer: %w", err)
		}
		printTurn(w, t)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !asJSON {
		fmt.Fprintf(w, "%d %s\n", n, plural(n, "turn", "turns"))
	}
	return nil
}

// printTurn prints one turn on one line.
func printTurn(w io.Writer, t store.AuditTurn) {
	outcome := t.Outcome
	if outcome == "" {
		outcome = "-"
	}
	if t.ErrorCode != "" && t.ErrorCode != t.Outcome {
		outcome += " (" + t.ErrorCode + ")"
	}
	fmt.Fprintf(w, "%s  %-26s %-22s %-16s %-10s %-12s %s\n", t.TS.Local().Format("2006-01-02 15:04:05"), oneLine(t.Chat, 26), oneLine(t.Identity, 22),
		orDash(t.Verb), orDash(t.Workspace), outcome, oneLine(t.Request, 80))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
