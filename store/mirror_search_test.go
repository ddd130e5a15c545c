package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// auditRun writes one run, started at start, with recs in order.
func auditRun(t *testing.T, flows string, start time.Time, recs ...MirrorRecord) string {
	t.Helper()
	run := NewRunID(start)
	m := openMirror(t, flows, run, keepAll)
	for _, r := range recs {
		if err := m.Append(context.Background(), r, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return run
}

// ask is the request record of a turn; answer the first record that
// answers it.
func ask(at time.Time, turn, platform, chatID, thread, actor, kind, text string, meta ...string) MirrorRecord {
	m := map[string]string{"turn_id": turn}
	for i := 0; i+1 < len(meta); i += 2 {
		m[meta[i]] = meta[i+1]
	}
	return MirrorRecord{TS: at, Direction: DirectionInbound, Platform: platform, ChatID: chatID, ThreadID: thread, Actor: actor, Kind: kind, Text: text, Meta: m}
}

func answer(at time.Time, turn, kind, text string, meta ...string) MirrorRecord {
	m := map[string]string{"turn_id": turn}
	for i := 0; i+1 < len(meta); i += 2 {
		m[meta[i]] = meta[i+1]
	}
	return MirrorRecord{TS: at, Direction: DirectionOutbound, Platform: "x", Actor: "hub", Kind: kind, Text: text, Meta: m}
}

// search runs q and returns the turn ids found, in order, with the turns.
func search(t *testing.T, flows string, q AuditQuery) ([]string, map[string]AuditTurn) {
	t.Helper()
	var ids []string
	turns := map[string]AuditTurn{}
	err := SearchMirrors(context.Background(), openRoot(t, flows), q, func(a AuditTurn) error {
		ids = append(ids, a.TurnID)
		turns[a.TurnID] = a
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, turns
}

// auditFixture writes two runs with a turn of every kind of surface and
// outcome; one turn's answer is in the second run (delivered after a
// restart).
func auditFixture(t *testing.T) (flows string, t0 time.Time) {
	t.Helper()
	flows = t.TempDir()
	t0 = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	auditRun(t, flows, t0,
		ask(at(1), "tg.1", "telegram", "-100123", "7", "telegram:42", KindCommand, "/fs.readFile README.md", "verb", "fs.readFile", "workspace", "default"),
		answer(at(1), "tg.1", KindReply, "# hello"),
		answer(at(1), "tg.1", KindReply, "chunk 2"),
		ask(at(2), "tg.2", "telegram", "-100123", "", "telegram:42", KindCommand, "/proc.run rm -rf /", "verb", "proc.run", "workspace", "default"),
		answer(at(2), "tg.2", KindReply, "⚠ You may not run proc.run", "error_code", "forbidden"),
		// Someone else quotes telegram:42's actor field in a message.
		ask(at(3), "tg.3", "telegram", "-100999", "", "telegram:7", KindMessage, `"actor":"telegram:42"`),
		answer(at(3), "tg.3", KindReply, "Send a command"),
		ask(at(4), "tg.4", "telegram", "555", "", "telegram:555", KindDenied, "/fs.listDir ."),
		ask(at(5), "api.5", "api", "", "", "web", "execute", `{"verb":"fs.readFile","arguments":{"path":"gone"}}`, "verb", "fs.readFile", "workspace", "sandbox"),
		answer(at(5), "api.5", "result", `{"succeeded":false}`, "verb", "fs.readFile", "error_code", "not_found"),
		ask(at(6), "schedule.nightly.1", "schedule", "nightly", "", "schedule:nightly", KindSchedule, `{"verb":"sys.machineInfo","arguments":{}}`, "verb", "sys.machineInfo", "workspace", "default"),
		answer(at(6), "schedule.nightly.1", "result", `{"succeeded":true}`, "verb", "sys.machineInfo"),
		ask(at(7), "cli.7", "cli", "root", "", "cli:root", "cli", `{"path":"x"}`, "verb", "fs.deleteFile", "workspace", "default"),
		answer(at(7), "cli.7", "cli", `{"succeeded":false}`, "verb", "fs.deleteFile", "succeeded", "false"),
		// Written before a change of grammar records the verb: read from
		// the text, mention and all.
		ask(at(8), "tg.8", "discord", "1200", "", "discord:9", KindCommand, "/FS.listDir@hubbot ."),
		// The same message delivered again is not another turn.
		ask(at(8), "tg.1", "telegram", "-100123", "7", "telegram:42", KindCommand, "/fs.readFile README.md", "duplicate", "done"),
		ask(at(9), "tg.9", "telegram", "-100123", "", "telegram:42", KindCommand, "/proc.run sleep 60", "verb", "proc.run", "workspace", "default"),
	)
	auditRun(t, flows, t0.Add(time.Hour),
		answer(at(61), "tg.8", KindReply, "README.md"),
		answer(at(62), "tg.9", KindNotice, "⚠ The hub restarted"),
	)
	return flows, t0
}

// TestSearchMirrorsOutcomesAndFilters: a search joins each request with
// its first answer by turn id, across runs, and reads its outcome from
// what the records hold; every filter selects by its field, and they
// combine.
func TestSearchMirrorsOutcomesAndFilters(t *testing.T) {
	flows, t0 := auditFixture(t)
	ids, turns := search(t, flows, AuditQuery{})
	if want := []string{"tg.1", "tg.2", "tg.3", "tg.4", "api.5", "schedule.nightly.1", "cli.7", "tg.8", "tg.9"}; !slices.Equal(ids, want) {
		t.Fatalf("every turn: %v, want %v", ids, want)
	}
	for id, want := range map[string]string{"tg.1": "succeeded", "tg.2": "forbidden", "tg.3": "succeeded", "tg.4": "denied", "api.5": "failed",
		"schedule.nightly.1": "succeeded", "cli.7": "failed", "tg.8": "succeeded", "tg.9": "interrupted"} {
		if got := turns[id].Outcome; got != want {
			t.Errorf("%s: outcome %q, want %q", id, got, want)
		}
	}
	one := turns["tg.1"]
	if one.Chat != "telegram:-100123:7" || one.Identity != "telegram:42" || one.Verb != "fs.readFile" || one.Workspace != "default" ||
		one.Answer != "# hello" || one.Request != "/fs.readFile README.md" || !one.TS.Equal(t0.Add(time.Minute)) {
		t.Errorf("tg.1: %+v", one)
	}
	if got := turns["tg.8"].Verb; got != "FS.listDir" {
		t.Errorf("a verb read from the text: %q", got)
	}
	for _, tc := range []struct {
		name string
		q    AuditQuery
		want []string
	}{
		{"identity", AuditQuery{Identity: "telegram:42"}, []string{"tg.1", "tg.2", "tg.9"}},
		{"chat and its topics", AuditQuery{Chat: "telegram:-100123"}, []string{"tg.1", "tg.2", "tg.9"}},
		{"a topic", AuditQuery{Chat: "chat:telegram:-100123:7"}, []string{"tg.1"}},
		{"a platform", AuditQuery{Chat: "schedule"}, []string{"schedule.nightly.1"}},
		{"verb", AuditQuery{Verb: "proc.run"}, []string{"tg.2", "tg.9"}},
		{"verb glob, any case, a stranger's too", AuditQuery{Verb: "fs.*"}, []string{"tg.1", "tg.4", "api.5", "cli.7", "tg.8"}},
		{"workspace", AuditQuery{Workspace: "sandbox"}, []string{"api.5"}},
		{"forbidden", AuditQuery{Outcome: OutcomeForbidden}, []string{"tg.2"}},
		{"denied", AuditQuery{Outcome: OutcomeDenied}, []string{"tg.4"}},
		{"failed", AuditQuery{Outcome: OutcomeFailed}, []string{"api.5", "cli.7"}},
		{"interrupted", AuditQuery{Outcome: OutcomeInterrupted}, []string{"tg.9"}},
		{"since and until", AuditQuery{Since: t0.Add(2 * time.Minute), Until: t0.Add(5 * time.Minute)}, []string{"tg.2", "tg.3", "tg.4"}},
		{"combined", AuditQuery{Identity: "telegram:42", Verb: "proc.*", Outcome: OutcomeForbidden}, []string{"tg.2"}},
		{"limit", AuditQuery{Verb: "fs.*", Limit: 2}, []string{"tg.1", "tg.4"}},
		{"nothing", AuditQuery{Identity: "telegram:1"}, nil},
	} {
		if got, _ := search(t, flows, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSearchMirrorsRefusesBadQueries: an outcome not accepted, a broken
// glob and an empty time range are refused, saying what is accepted.
func TestSearchMirrorsRefusesBadQueries(t *testing.T) {
	flows := t.TempDir()
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		q    AuditQuery
		want string
	}{
		{AuditQuery{Outcome: "ok"}, `outcome "ok" is not accepted (accepted: succeeded, failed, forbidden, denied, interrupted)`},
		{AuditQuery{Verb: "fs.["}, `verb "fs.[" is not a name or a glob such as fs.*`},
		{AuditQuery{Since: t0, Until: t0}, "until (2026-11-24T09:00:00Z) is not after since (2026-11-24T09:00:00Z)"},
	} {
		err := SearchMirrors(context.Background(), openRoot(t, flows), tc.q, func(AuditTurn) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.q, err, tc.want)
		}
	}
}

// TestSearchMirrorsSkipsByTime: a run that started after until and a file
// whose records all came before since are not read (their damaged lines
// go unreported), while a search that needs them reads them.
func TestSearchMirrorsSkipsByTime(t *testing.T) {
	flows := t.TempDir()
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	old := auditRun(t, flows, t0, ask(t0, "old.1", "web", "web", "", "web", KindCommand, "/fs.listDir ."))
	auditRun(t, flows, t0.Add(24*time.Hour), ask(t0.Add(24*time.Hour), "mid.1", "web", "web", "", "web", KindCommand, "/fs.listDir ."))
	late := auditRun(t, flows, t0.Add(48*time.Hour), ask(t0.Add(48*time.Hour), "late.1", "web", "web", "", "web", KindCommand, "/fs.listDir ."))
	for _, run := range []string{old, late} {
		// A damaged line before the last, so that it is not a torn write.
		p := filepath.Join(flows, run, "chat", "inbound.jsonl")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append([]byte("{damaged\n"), b...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var bad []string
	q := AuditQuery{Since: t0.Add(12 * time.Hour), Until: t0.Add(36 * time.Hour), OnBadLine: func(p string, n int, err error) { bad = append(bad, fmt.Sprintf("%s:%d", p, n)) }}
	var ids []string
	err := SearchMirrors(context.Background(), openRoot(t, flows), q, func(a AuditTurn) error { ids = append(ids, a.TurnID); return nil })
	if err != nil || !slices.Equal(ids, []string{"mid.1"}) || len(bad) != 0 {
		t.Fatalf("bounded search: %v %v, damaged lines read: %v", ids, err, bad)
	}
	q.Since, q.Until = time.Time{}, time.Time{}
	ids = nil
	if err := SearchMirrors(context.Background(), openRoot(t, flows), q, func(a AuditTurn) error { ids = append(ids, a.TurnID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || len(bad) != 2 {
		t.Fatalf("unbounded search: %v, damaged lines read: %v", ids, bad)
	}
}

// TestSearchMirrorsBoundsItsJoin: however many requests wait for an answer
// that comes late or never, the search holds at most its bound of them and
// hands them over in order, without an outcome.
func TestSearchMirrorsBoundsItsJoin(t *testing.T) {
	flows := t.TempDir()
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	var recs []MirrorRecord
	const n = 3000
	for i := range n {
		recs = append(recs, ask(t0.Add(time.Duration(i)*time.Millisecond), fmt.Sprintf("web.%d", i), "web", "web", "", "web", KindCommand, "/fs.listDir ."))
	}
	recs = append(recs, answer(t0.Add(time.Minute), "web.0", KindReply, "late, after 2999 other requests"))
	auditRun(t, flows, t0, recs...)
	m, err := AuditQuery{}.compile()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	s := &searcher{m: m, waiting: map[string]*AuditTurn{}, maxPending: 100, fn: func(a AuditTurn) error {
		if a.Outcome != "" {
			t.Errorf("%s has an outcome: %q", a.TurnID, a.Outcome)
		}
		ids = append(ids, a.TurnID)
		return nil
	}}
	for _, run := range ListRuns(openRoot(t, flows)) {
		if err := s.run(context.Background(), openRoot(t, flows), run); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flush(time.Time{}, true); err != nil {
		t.Fatal(err)
	}
	if len(ids) != n || ids[0] != "web.0" || ids[n-1] != fmt.Sprintf("web.%d", n-1) {
		t.Fatalf("%d turns handed over, first %v", len(ids), ids[:3])
	}
	if s.peak > 101 {
		t.Fatalf("the search held %d requests at once, bound 100", s.peak)
	}
}

// TestSearchMirrorsJoinWindow: an answer written longer than the join
// window after its request joins nothing; one within it does.
func TestSearchMirrorsJoinWindow(t *testing.T) {
	flows := t.TempDir()
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	auditRun(t, flows, t0,
		ask(t0, "web.1", "web", "web", "", "web", KindCommand, "/fs.listDir ."),
		ask(t0.Add(time.Second), "web.2", "web", "web", "", "web", KindCommand, "/fs.listDir ."),
		answer(t0.Add(59*time.Minute), "web.2", KindReply, "within the hour"),
		answer(t0.Add(61*time.Minute), "web.1", KindReply, "past the hour"),
	)
	_, turns := search(t, flows, AuditQuery{})
	if turns["web.1"].Outcome != "" || turns["web.2"].Outcome != OutcomeSucceeded || turns["web.2"].Answer != "within the hour" {
		t.Fatalf("turns %+v", turns)
	}
}
