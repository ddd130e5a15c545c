package admin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/store"
)

// TestMirrorSearchEndpoint: GET /api/mirror/search streams the turns its
// filters select as NDJSON, one turn a line, and refuses filters it does
// not accept, saying what is.
func TestMirrorSearchEndpoint(t *testing.T) {
	rt := openWithAccess(t, nil)
	now := rt.Clock().Now()
	rec := func(dir, turn, actor, kind, text string, meta ...string) store.MirrorRecord {
		m := map[string]string{"turn_id": turn}
		for i := 0; i+1 < len(meta); i += 2 {
			m[meta[i]] = meta[i+1]
		}
		return store.MirrorRecord{TS: now.Add(-time.Hour), Direction: dir, Platform: "telegram", ChatID: "-100123", Actor: actor, Kind: kind, Text: text, Meta: m}
	}
	for _, r := range []store.MirrorRecord{
		rec(store.DirectionInbound, "tg.1", "telegram:42", store.KindCommand, "/fs.listDir .", "verb", "fs.listDir"),
		rec(store.DirectionOutbound, "tg.1", "hub", store.KindReply, "README.md"),
		rec(store.DirectionInbound, "tg.2", "telegram:42", store.KindCommand, "/proc.run ls", "verb", "proc.run"),
		rec(store.DirectionOutbound, "tg.2", "hub", store.KindReply, "⚠ You may not run proc.run", "error_code", "forbidden"),
	} {
		if err := rt.Mirror.Append(context.Background(), r, true); err != nil {
			t.Fatal(err)
		}
	}
	h := admin.ForRuntime(rt).HandlerAs(admin.Operator)
	lines := func(path string) []store.AuditTurn {
		t.Helper()
		w := serve(h, "GET", path, "")
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("GET %s: %d %s %s", path, w.Code, w.Header().Get("Content-Type"), w.Body)
		}
		var out []store.AuditTurn
		sc := bufio.NewScanner(w.Body)
		for sc.Scan() {
			var a store.AuditTurn
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			out = append(out, a)
		}
		return out
	}
	if got := lines("/api/mirror/search?identity=telegram:42&outcome=forbidden&since=24h"); len(got) != 1 || got[0].TurnID != "tg.2" || got[0].Verb != "proc.run" {
		t.Fatalf("forbidden turns: %+v", got)
	}
	if got := lines("/api/mirror/search?chat=telegram:-100123&limit=1"); len(got) != 1 || got[0].TurnID != "tg.1" || got[0].Outcome != "succeeded" {
		t.Fatalf("limit 1: %+v", got)
	}
	if got := lines("/api/mirror/search?since=30m"); len(got) != 0 {
		t.Fatalf("since 30 minutes ago: %+v", got)
	}
	for path, want := range map[string]string{
		"/api/mirror/search?outcome=ok":        `outcome \"ok\" is not accepted (accepted: succeeded, failed, forbidden, denied, interrupted)`,
		"/api/mirror/search?since=yesterday":   `since \"yesterday\" is not a time (accepted: a time such as 2026-11-24T06:00:00Z`,
		"/api/mirror/search?until=2026-13-01":  `until \"2026-13-01\" is not a time`,
		"/api/mirror/search?limit=-1":          "limit must be a whole number, 0 for all",
		"/api/mirror/search?verb=%5B":          `verb \"[\" is not a name or a glob`,
		"/api/mirror/search?since=1h&until=2h": "is not after since",
	} {
		w := serve(h, "GET", path, "")
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), want) {
			t.Errorf("GET %s: %d %s, want %q", path, w.Code, w.Body, want)
		}
	}
}
