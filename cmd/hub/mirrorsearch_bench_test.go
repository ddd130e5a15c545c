package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/store"
)

// The audit search's benchmark searches a generated set of mirrors
// (HUB_BENCH_MIRROR_BYTES, default 32MiB; 1GiB for the recorded figure)
// with `hub mirror search`, as an operator runs it with no hub running,
// and reports its time, throughput and peak memory (the process's maximum
// resident set). The set is written once into HUB_BENCH_MIRROR_DIR (default
// a directory under the system's temporary one, named by its size) and
// reused; delete it to write it again.

// auditGen writes realistic mirror runs: a serve run every quarter of the
// size (its files rotated at 64 MiB), CLI runs between them, over the last
// 25 days; turns from Telegram groups and private chats, Discord, the
// panel, API agents, schedules and the CLI, by a few dozen identities,
// with replies of one to three chunks, and the outcomes a hub sees: most
// succeed, some fail, some are refused, strangers are denied.
type auditGen struct {
	rnd *rand.Rand
	at  time.Time
	n   int
	// The set's turns spread over span from start as its bytes are
	// written: written of size.
	start         time.Time
	span          time.Duration
	written, size int64
}

// auditVerbs are the verbs of the generated calls, with how often.
var auditVerbs = []struct {
	verb, args string
	weight     int
}{
	{"fs.readFile", `{"path":"docs/notes-%d.md"}`, 30},
	{"fs.listDir", `{"path":"src/pkg%d"}`, 20},
	{"fs.readRange", `{"path":"logs/app-%d.log","startLine":1,"endLine":40}`, 15},
	{"fs.writeRange", `{"path":"TODO-%d.md","startLine":1,"content":"- follow up"}`, 10},
	{"proc.run", `{"executable":"make","arguments":["test-%d"]}`, 12},
	{"sys.machineInfo", `{}`, 8},
	{"fs.lineCount", `{"path":"data/%d.csv"}`, 5},
}

// filler is text to cut answers from.
var filler = strings.Repeat("The quick brown fox jumps over the lazy dog; 0123456789 ∑ αβγ.\n", 64)

func (g *auditGen) pick() (verb, args string) {
	total := 0
	for _, v := range auditVerbs {
		total += v.weight
	}
	r := g.rnd.IntN(total)
	for _, v := range auditVerbs {
		if r < v.weight {
			return v.verb, fmt.Sprintf(v.args, g.rnd.IntN(500))
		}
		r -= v.weight
	}
	return "fs.exists", `{}`
}

// outcome picks how a call ends: "" (it succeeded) or an error code.
func (g *auditGen) outcome(verb string) string {
	switch r := g.rnd.IntN(100); {
	case r < 4:
		return "forbidden"
	case r < 6:
		return "forbidden_path"
	case r < 12 && strings.HasPrefix(verb, "fs."):
		return "not_found"
	case r < 14:
		return "timeout"
	}
	return ""
}

// turn returns the records of one turn.
func (g *auditGen) turn() []store.MirrorRecord {
	g.n++
	if due := g.start.Add(time.Duration(float64(g.span) * float64(g.written) / float64(g.size))); due.After(g.at) {
		g.at = due
	}
	g.at = g.at.Add(time.Duration(g.rnd.Int64N(int64(time.Second))))
	verb, args := g.pick()
	code := g.outcome(verb)
	switch r := g.rnd.IntN(100); {
	case r < 30:
		return g.chat("telegram", fmt.Sprintf("-100%010d", 1000+g.rnd.IntN(6)), fmt.Sprint(g.rnd.IntN(4)), fmt.Sprintf("telegram:%d", 100000+g.rnd.IntN(40)), verb, args, code)
	case r < 45:
		return g.chat("discord", fmt.Sprintf("12000000000000%05d", g.rnd.IntN(8)), "", fmt.Sprintf("discord:3000000000000%05d", g.rnd.IntN(15)), verb, args, code)
	case r < 55:
		return g.chat("web", "web", "", "web", verb, args, code)
	case r < 60:
		return g.denied()
	case r < 80:
		return g.api(fmt.Sprintf("agent:bot%d", g.rnd.IntN(5)), verb, args, code)
	case r < 85:
		return g.schedule(verb, args, code)
	}
	return g.api("cli:root", verb, args, code)
}

func (g *auditGen) text(n int) string {
	start := g.rnd.IntN(len(filler) - 3200)
	return strings.ToValidUTF8(filler[start:start+n], "")
}

func (g *auditGen) meta(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			m[kv[i]] = kv[i+1]
		}
	}
	return m
}

// chat is a command in a chat and its reply's chunks.
func (g *auditGen) chat(platform, chatID, thread, actor, verb, args, code string) []store.MirrorRecord {
	id := fmt.Sprintf("%s.%s.%d", platform, chatID, g.n)
	recs := []store.MirrorRecord{{TS: g.at, Direction: store.DirectionInbound, Platform: platform, ChatID: chatID, ThreadID: thread,
		MessageID: fmt.Sprint(g.n), Actor: actor, Kind: store.KindCommand, Text: "/" + verb + "\n" + args,
		Meta: g.meta("turn_id", id, "verb", verb, "workspace", "default", "chat_type", "supergroup", "chat_title", "Ops", "user_name", "someone")}}
	chunks := 1 + g.rnd.IntN(3)
	for i := range chunks {
		recs = append(recs, store.MirrorRecord{TS: g.at.Add(time.Duration(300+i*50) * time.Millisecond), Direction: store.DirectionOutbound,
			Platform: platform, ChatID: chatID, ThreadID: thread, MessageID: fmt.Sprint(g.n*10 + i), Actor: "hub", Kind: store.KindReply,
			Text: g.text(200 + g.rnd.IntN(3000)),
			Meta: g.meta(store.MetaOutboxID, fmt.Sprintf("reply:%s:chat:%s:%s:%d", id, platform, chatID, i), "turn_id", id,
				"chunk", fmt.Sprintf("%d/%d", i+1, chunks), store.MetaPlatformMessageID, fmt.Sprint(g.n*10+i), store.MetaErrorCode, code)})
	}
	return recs
}

// denied is a stranger's message.
func (g *auditGen) denied() []store.MirrorRecord {
	user := fmt.Sprint(900000 + g.rnd.IntN(300))
	return []store.MirrorRecord{{TS: g.at, Direction: store.DirectionInbound, Platform: "telegram", ChatID: user, MessageID: fmt.Sprint(g.n),
		Actor: "telegram:" + user, Kind: store.KindDenied, Text: "/fs.listDir /", Meta: g.meta("turn_id", fmt.Sprintf("telegram.%s.%d", user, g.n), "chat_type", "private")}}
}

// api is an API, MCP or CLI call and its result.
func (g *auditGen) api(actor, verb, args, code string) []store.MirrorRecord {
	platform, kind, chatID := "api", "execute", ""
	if strings.HasPrefix(actor, "cli:") {
		platform, kind, chatID = "cli", "cli", "root"
	}
	id := fmt.Sprintf("%s.%d", platform, g.n)
	result := `{"succeeded":true,"content":"` + strings.ReplaceAll(g.text(100+g.rnd.IntN(1500)), "\n", `\n`) + `"}`
	if code != "" {
		result = `{"succeeded":false,"errorCode":"` + code + `"}`
	}
	return []store.MirrorRecord{
		{TS: g.at, Direction: store.DirectionInbound, Platform: platform, ChatID: chatID, Actor: actor, Kind: kind,
			Text: `{"verb":"` + verb + `","arguments":` + args + `}`, Meta: g.meta("turn_id", id, "verb", verb, "workspace", "default")},
		{TS: g.at.Add(40 * time.Millisecond), Direction: store.DirectionOutbound, Platform: platform, ChatID: chatID, Actor: "hub", Kind: "result",
			Text: result, Meta: g.meta("turn_id", id, "verb", verb, store.MetaErrorCode, code)},
	}
}

// schedule is a schedule's run: its call, its result and its delivery.
func (g *auditGen) schedule(verb, args, code string) []store.MirrorRecord {
	name := fmt.Sprintf("report-%d", g.rnd.IntN(6))
	recs := g.api("schedule:"+name, verb, args, code)
	id := fmt.Sprintf("schedule.%s.%d", name, g.at.Unix())
	for i := range recs {
		recs[i].Platform, recs[i].ChatID, recs[i].Meta["turn_id"] = "schedule", name, id
	}
	recs[0].Kind = store.KindSchedule
	return append(recs, store.MirrorRecord{TS: g.at.Add(time.Second), Direction: store.DirectionOutbound, Platform: "local", ChatID: "pma/reports.jsonl",
		Actor: "hub", Kind: store.KindPMA, Text: "⏰ Schedule " + name + "\n" + g.text(400), Meta: g.meta("turn_id", id, store.MetaOutboxID, "pma:"+id+":local:pma/reports.jsonl:0")})
}

// genAuditMirrors writes the set into state (a state directory) until its
// runs hold size bytes, and returns the time of its last record.
func genAuditMirrors(tb testing.TB, state string, size int64) time.Time {
	tb.Helper()
	sd, err := store.OpenStateDir(state)
	if err != nil {
		tb.Fatal(err)
	}
	defer sd.Close()
	span := 25 * 24 * time.Hour
	start := time.Now().UTC().Add(-span)
	g := &auditGen{rnd: rand.New(rand.NewPCG(1, 2)), at: start, start: start, span: span, size: size}
	for g.written < size {
		writeAuditRun(tb, sd.Flows(), g, store.RunServe, min(size-g.written, max(size/4, 1<<20)))
		if g.written < size {
			writeAuditRun(tb, sd.Flows(), g, store.RunCLI, 64<<10)
		}
	}
	return g.at
}

// writeAuditRun writes one run of kind from g's next turns until it holds
// about size bytes.
func writeAuditRun(tb testing.TB, flows *os.Root, g *auditGen, kind store.RunKind, size int64) {
	tb.Helper()
	m, err := store.OpenMirror(flows, store.NewRunID(g.at.Add(time.Second)), store.MirrorOptions{Kind: kind})
	if err != nil {
		tb.Fatal(err)
	}
	defer m.Close()
	for end := g.written + size; g.written < end; {
		for _, r := range g.turn() {
			if err := m.Append(context.Background(), r, false); err != nil {
				tb.Fatal(err)
			}
			// About what a record takes beyond its text (fields, meta,
			// the preview).
			g.written += int64(len(r.Text)+len(store.TextPreview(r.Text))) + 330
		}
	}
}

// mirrorBytes sums the sizes of the mirror files under state.
func mirrorBytes(tb testing.TB, state string) int64 {
	var n int64
	err := filepath.Walk(filepath.Join(state, store.FlowsDir), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(fi.Name(), ".jsonl") {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// BenchmarkMirrorSearch runs `hub mirror search --json` over the generated
// set, one query per sub-benchmark, and reports the time of one search,
// MB/s of mirrors searched, the turns found and the process's peak RSS.
func BenchmarkMirrorSearch(b *testing.B) {
	size := int64(32 << 20)
	if s := os.Getenv("HUB_BENCH_MIRROR_BYTES"); s != "" {
		v, err := config.ParseSize(s)
		if err != nil {
			b.Fatal(err)
		}
		size = v
	}
	dir := os.Getenv("HUB_BENCH_MIRROR_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("hermes-bench-audit-v2-%d", size))
	}
	state := filepath.Join(dir, ".hub")
	if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil {
		os.RemoveAll(dir)
		t0 := time.Now()
		genAuditMirrors(b, state, size)
		if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600); err != nil {
			b.Fatal(err)
		}
		b.Logf("wrote %d bytes of mirrors in %v", mirrorBytes(b, state), time.Since(t0).Round(time.Millisecond))
	}
	total := mirrorBytes(b, state)
	for _, q := range []struct{ name, args string }{
		{"all", ""},
		{"identity", "--identity telegram:100007"},
		{"forbidden", "--outcome forbidden"},
		{"proc.run-last-week", "--verb proc.run --since 7d"},
		{"chat-failed", "--chat discord:1200000000000000003 --outcome failed"},
		{"last-day", "--since 24h"},
	} {
		b.Run(q.name, func(b *testing.B) {
			var found int
			var rss int64
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				f, r, d := searchProcess(b, dir, strings.Fields(q.args))
				found, rss, elapsed = f, max(rss, r), elapsed+d
			}
			b.ReportMetric(float64(found), "turns")
			b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
			b.ReportMetric(float64(total)/(1<<20)/(elapsed.Seconds()/float64(b.N)), "MiB/s")
		})
	}
}

// searchProcess runs one search as its own process and returns the turns
// it printed, its peak RSS in bytes (Linux) and how long it took.
func searchProcess(b *testing.B, dir string, args []string) (int, int64, time.Duration) {
	cmd := exec.Command(hubBin, append([]string{"mirror", "search", "--json"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	rss := watchRSS(cmd.Process.Pid)
	n := 0
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		n++
	}
	// The output is read to its end: the process is exiting, still there
	// until waited for.
	peak := rss()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("hub mirror search %v: %v\n%s", args, err, stderr.String())
	}
	return n, peak, time.Since(t0)
}
