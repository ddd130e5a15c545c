package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// result is the part of a verb result JSON these tests look at.
type result struct {
	Succeeded    bool   `json:"succeeded"`
	ErrorMessage string `json:"errorMessage"`
	ErrorCode    string `json:"errorCode"`
	Content      string `json:"content"`
	Exists       *bool  `json:"exists"`
}

func TestExecute(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.writeFile("hello.txt", "hello\nworld\n")
	cases := []struct {
		name     string
		ctype    string
		body     string
		query    string
		wantCode int
		wantOK   bool
		errCode  string
		content  string
	}{
		{name: "json", ctype: "application/json", body: `{"verb":"fs.readFile","arguments":{"path":"hello.txt"}}`, wantCode: 200, wantOK: true, content: "hello\nworld\n"},
		{name: "json with charset", ctype: "application/json; charset=utf-8", body: `{"verb":"fs.readFile","arguments":{"path":"hello.txt"}}`, wantCode: 200, wantOK: true, content: "hello\nworld\n"},
		{name: "yaml", ctype: "application/yaml", body: "verb: fs.readRange\narguments:\n  path: hello.txt\n  startLine: 2\n  endLine: 2\n", wantCode: 200, wantOK: true, content: "2: world"},
		{name: "yaml as text/plain", ctype: "text/plain", body: "verb: fs.readRange\narguments: {path: hello.txt, startLine: 1, endLine: 1, includeLineNumbers: false}\n", wantCode: 200, wantOK: true, content: "hello"},
		{name: "tail", ctype: "application/yaml", body: "verb: fs.readRange\narguments: {path: hello.txt, lastLines: 1, includeLineNumbers: false}\n", wantCode: 200, wantOK: true, content: "world"},
		{name: "several files", ctype: "application/json", body: `{"verb":"fs.readMany","arguments":{"paths":["hello.txt","../hub.db"]}}`, wantCode: 200, wantOK: true},
		{name: "edit dry run", ctype: "application/json", body: `{"verb":"fs.edit","arguments":{"path":"hello.txt","oldText":"world","newText":"there","dryRun":true}}`, wantCode: 200, wantOK: true},
		{name: "edit not unique", ctype: "application/json", body: `{"verb":"fs.edit","arguments":{"path":"hello.txt","oldText":"l","newText":"L"}}`, wantCode: 200, errCode: "invalid_arguments"},
		{name: "stat outside", ctype: "application/json", body: `{"verb":"fs.stat","arguments":{"path":"a/../../x"}}`, wantCode: 200, errCode: "forbidden_path"},
		{name: "no content type", body: `{"verb":"fs.readFile","arguments":{"path":"hello.txt"}}`, wantCode: 200, wantOK: true, content: "hello\nworld\n"},
		{name: "session", ctype: "application/json", query: "?session=agent-7", body: `{"verb":"fs.readFile","arguments":{"path":"hello.txt"}}`, wantCode: 200, wantOK: true, content: "hello\nworld\n"},
		{name: "traversal", ctype: "application/json", body: `{"verb":"fs.readFile","arguments":{"path":"../etc/passwd"}}`, wantCode: 200, errCode: "forbidden_path"},
		{name: "absolute path", ctype: "application/yaml", body: "verb: fs.readFile\narguments: {path: /etc/passwd}\n", wantCode: 200, errCode: "forbidden_path"},
		{name: "missing file", ctype: "application/json", body: `{"verb":"fs.readFile","arguments":{"path":"nope.txt"}}`, wantCode: 200, errCode: "not_found"},
		{name: "unknown verb", ctype: "application/json", body: `{"verb":"fs.nope"}`, wantCode: 200, errCode: "unknown_verb"},
		{name: "bad arguments", ctype: "application/json", body: `{"verb":"fs.readFile","arguments":{"path":1}}`, wantCode: 200, errCode: "invalid_arguments"},
		{name: "not an envelope", ctype: "application/yaml", body: "verb: [", wantCode: 200, errCode: "invalid_envelope"},
		{name: "empty body", ctype: "application/json", body: "", wantCode: 200, errCode: "invalid_envelope"},
		{name: "unsupported type", ctype: "image/png", body: `{"verb":"fs.exists"}`, wantCode: 415},
		{name: "bad session", ctype: "application/json", query: "?session=" + url.QueryEscape("a/b"), body: `{"verb":"fs.exists","arguments":{"path":"."}}`, wantCode: 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(req{method: "POST", path: "/api/execute" + tc.query, body: tc.body, ctype: tc.ctype, bearer: e.token})
			if r.status != tc.wantCode {
				t.Fatalf("status %d, want %d: %s", r.status, tc.wantCode, r.body)
			}
			if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				t.Errorf("Content-Type = %q", r.header.Get("Content-Type"))
			}
			if tc.wantCode != 200 {
				r.errorText(t)
				return
			}
			var res result
			r.json(t, &res)
			if res.Succeeded != tc.wantOK || res.ErrorCode != tc.errCode {
				t.Fatalf("succeeded=%v errorCode=%q, want %v %q: %s", res.Succeeded, res.ErrorCode, tc.wantOK, tc.errCode, r.body)
			}
			if tc.content != "" && res.Content != tc.content {
				t.Errorf("content = %q, want %q", res.Content, tc.content)
			}
			if !tc.wantOK && res.ErrorMessage == "" {
				t.Error("a failed result has no errorMessage")
			}
		})
	}
	if r := e.do(req{method: "GET", path: "/api/execute", bearer: e.token}); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Errorf("GET /api/execute: %d Allow=%q, want 405 POST", r.status, r.header.Get("Allow"))
	}
}

func TestExecuteForbiddenVerb(t *testing.T) {
	e := newEnv(t, envConfig{mod: func(c *config.Config) {
		c.Access.Grants = map[string][]string{"web": {"reader"}}
	}})
	r := e.authed("POST", "/api/execute", `{"verb":"fs.writeFile","arguments":{"path":"x.txt","content":"x"}}`)
	var res result
	r.json(t, &res)
	if r.status != 200 || res.ErrorCode != string(executor.CodeForbidden) {
		t.Fatalf("writeFile as reader: %d %s", r.status, r.body)
	}
	r = e.authed("POST", "/api/execute", `{"verb":"fs.exists","arguments":{"path":"."}}`)
	r.json(t, &res)
	if !res.Succeeded {
		t.Fatalf("exists as reader: %s", r.body)
	}
}

// writeRangeInsert is a chat message that inserts one line at the top of
// log.txt: running it twice would leave two lines.
func writeRangeInsert(line string) string {
	return "/fs.writeRange\n" + fmt.Sprintf(`{"path": "log.txt", "startLine": 1, "content": %q}`, line)
}

func TestMessagesIdempotent(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.writeFile("log.txt", "end\n")

	first := e.message(writeRangeInsert("once"), "turn-1")
	if first.TurnID != "web.turn-1" || first.Status != "executed" {
		t.Fatalf("first submission: %+v", first)
	}
	if want := []string{outbox.ID(outbox.KindReply, "web.turn-1", chat.WebKey, 0)}; fmt.Sprint(first.Outbox) != fmt.Sprint(want) {
		t.Errorf("outbox ids = %v, want %v", first.Outbox, want)
	}
	again := e.message(writeRangeInsert("once"), "turn-1")
	if again.Status != "duplicate" || len(again.Outbox) != 0 {
		t.Fatalf("resubmission: %+v, want duplicate with no outbox ids", again)
	}
	if got := e.readFile("log.txt"); got != "once\nend\n" {
		t.Fatalf("log.txt = %q: the verb ran more than once", got)
	}

	// Concurrent resubmissions of one id: the verb runs once.
	var wg sync.WaitGroup
	statuses := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := json.Marshal(MessageRequest{Text: writeRangeInsert("twice"), ClientTurnID: "turn-2"})
			r := doHTTP(t, e.ts.Client(), e.ts.URL, req{method: "POST", path: "/api/messages", body: string(b), ctype: "application/json", bearer: e.token})
			var m MessageResponse
			if err := json.Unmarshal(r.body, &m); err != nil || r.status != http.StatusAccepted {
				t.Errorf("concurrent submission: %d %s", r.status, r.body)
				return
			}
			statuses <- m.Status
		}()
	}
	wg.Wait()
	close(statuses)
	executed := 0
	for s := range statuses {
		if s == "executed" {
			executed++
		} else if s != "duplicate" {
			t.Errorf("status %q", s)
		}
	}
	if executed != 1 {
		t.Errorf("%d submissions executed, want 1", executed)
	}
	if got := e.readFile("log.txt"); got != "twice\nonce\nend\n" {
		t.Fatalf("log.txt = %q after 8 concurrent submissions of one turn", got)
	}

	// The conversation shows each turn's message once.
	r := e.authed("GET", "/api/history", "")
	var h HistoryResponse
	r.json(t, &h)
	inbound := map[string]int{}
	for _, ev := range h.Events {
		if ev.Type == EventInbound {
			inbound[ev.TurnID]++
		}
	}
	if inbound["web.turn-1"] != 1 || inbound["web.turn-2"] != 1 {
		t.Errorf("inbound events per turn = %v, want one each", inbound)
	}
}

func TestMessagesRejectBadInput(t *testing.T) {
	e := newEnv(t, envConfig{})
	cases := []struct{ name, body, want string }{
		{"not json", `/fs.exists .`, "JSON"},
		{"unknown field", `{"text":"/fs.exists .","turn":"x"}`, "unknown field"},
		{"empty text", `{"text":"   ","client_turn_id":"a"}`, "empty"},
		{"colon in id", `{"text":"/fs.exists .","client_turn_id":"a:b"}`, "A-Z a-z 0-9 _ -"},
		{"slash in id", `{"text":"/fs.exists .","client_turn_id":"a/b"}`, "A-Z a-z 0-9 _ -"},
		{"long id", `{"text":"/fs.exists .","client_turn_id":"` + strings.Repeat("a", 65) + `"}`, "1 to 64"},
		{"two objects", `{"text":"/fs.exists ."} {"text":"x"}`, "after the JSON object"},
	}
	for _, tc := range cases {
		r := e.authed("POST", "/api/messages", tc.body)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", tc.name, r.status, r.body)
			continue
		}
		if msg := r.errorText(t); !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.name, msg, tc.want)
		}
	}
	// Without a client id, each submission is a new turn.
	a, b := e.message("/fs.exists .", ""), e.message("/fs.exists .", "")
	if a.TurnID == b.TurnID || !strings.HasPrefix(a.TurnID, "web.") || a.Status != "executed" || b.Status != "executed" {
		t.Errorf("generated turns: %+v %+v", a, b)
	}
	// Plain text and bad commands are answered, not refused.
	for _, text := range []string{"hello", "/fs.nope", "/fs.readFile"} {
		m := e.message(text, "")
		if m.Status != "rejected" || len(m.Outbox) != 1 {
			t.Errorf("%q: %+v, want rejected with a reply", text, m)
		}
	}
	if m := e.message("/whoami", ""); m.Status != "builtin" {
		t.Errorf("/whoami: %+v", m)
	}
}

func TestVerbs(t *testing.T) {
	e := newEnv(t, envConfig{})
	r := e.authed("GET", "/api/verbs", "")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var v VerbsResponse
	r.json(t, &v)
	byName := map[string]VerbView{}
	for _, vb := range v.Verbs {
		byName[vb.Name] = vb
	}
	if len(byName) != len(e.rt.Hub.Registry().Verbs()) {
		t.Errorf("%d verbs listed for an admin, want every verb (%d)", len(byName), len(e.rt.Hub.Registry().Verbs()))
	}
	rr, ok := byName["fs.readRange"]
	if !ok {
		t.Fatal("fs.readRange is not listed")
	}
	if !strings.HasPrefix(rr.Usage, "/fs.readRange <path> <startLine> <endLine>") || !strings.Contains(rr.IDL, "type FsReadRangeArgs") || !rr.ReadOnly {
		t.Errorf("fs.readRange: usage %q readOnly %v idl %q", rr.Usage, rr.ReadOnly, rr.IDL)
	}
	fields := map[string]executor.Field{}
	for _, f := range rr.Arguments.Fields {
		fields[f.Name] = f
	}
	checks := []struct {
		name     string
		kind     executor.Kind
		required bool
		def      string
	}{
		{"path", executor.KindString, true, ""},
		{"startLine", executor.KindInt, false, "none"},
		{"endLine", executor.KindInt, false, "none"},
		{"lastLines", executor.KindInt, false, "none"},
		{"includeLineNumbers", executor.KindBool, false, "true"},
	}
	for _, c := range checks {
		f, ok := fields[c.name]
		if !ok || f.Kind != c.kind || f.Required != c.required || f.Default != c.def || f.Description == "" {
			t.Errorf("field %s = %+v, want kind %s required %v default %q with a description", c.name, f, c.kind, c.required, c.def)
		}
	}
	if !fields["startLine"].Positional || !fields["endLine"].Positional || fields["lastLines"].Positional {
		t.Errorf("positional fields of fs.readRange: %+v", rr.Arguments.Fields)
	}
	if pr := byName["proc.run"]; len(pr.Arguments.Fields) == 0 || pr.Arguments.Fields[1].Kind != executor.KindList {
		t.Errorf("proc.run arguments: %+v", pr.Arguments.Fields)
	}
	if !strings.Contains(strings.Join(v.Builtins, ","), "help") {
		t.Errorf("builtins = %v", v.Builtins)
	}

	// A reader sees only the read-only verbs.
	e2 := newEnv(t, envConfig{mod: func(c *config.Config) { c.Access.Grants = map[string][]string{"web": {"reader"}} }})
	r = e2.authed("GET", "/api/verbs", "")
	var v2 VerbsResponse
	r.json(t, &v2)
	if len(v2.Verbs) == 0 {
		t.Fatal("a reader sees no verbs")
	}
	for _, vb := range v2.Verbs {
		if !vb.ReadOnly {
			t.Errorf("a reader is offered %s, which is not read-only", vb.Name)
		}
	}
}

func TestAdminEndpoints(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.message("/fs.exists .", "admin-1")

	steps := []struct {
		method, path, body string
		want               int
		contains           string
	}{
		{"GET", "/api/targets", "", 200, `"targets":[]`},
		{"POST", "/api/targets", `{"target":"local:pma/deliveries/out.jsonl"}`, 200, `"changed":true`},
		{"POST", "/api/targets", `{"target":"nonsense:1"}`, 400, "accepted"},
		{"GET", "/api/targets", "", 200, "local:pma/deliveries/out.jsonl"},
		{"POST", "/api/deliver", `{"text":"hello targets","turn_id":"send-1"}`, 200, "pma:send-1:local:pma/deliveries/out.jsonl:0"},
		{"DELETE", "/api/targets?target=local:pma/deliveries/out.jsonl", "", 200, `"changed":true`},
		{"POST", "/api/targets", `{"target":"web"}`, 200, `"changed":true`},
		{"POST", "/api/targets/clear", "", 200, `"count":1`},
		{"GET", "/api/channels", "", 200, "["},
		{"POST", "/api/channels/rebuild", "", 200, `"changed":true`},
		{"GET", "/api/outbox?state=delivered", "", 200, "reply:web.admin-1:web:0"},
		{"GET", "/api/outbox?state=bogus", "", 400, "accepted"},
		{"GET", "/api/outbox/entry?id=" + url.QueryEscape("reply:web.admin-1:web:0"), "", 200, `"state":"delivered"`},
		{"GET", "/api/outbox/entry?id=nope", "", 404, "no outbox entry"},
		{"POST", "/api/outbox/retry", `{"id":"reply:web.nope:web:0"}`, 404, "no outbox entry"},
		{"POST", "/api/outbox/purge", `{}`, 200, `"changed":false`},
		{"GET", "/api/mirror?n=50", "", 200, "fs.exists"},
		{"GET", "/api/status", "", 200, `"web":{"clients":0`},
		{"GET", "/api/nope", "", 404, "no API endpoint"},
		{"PUT", "/api/messages", "", 405, "accepted: POST"},
	}
	for _, s := range steps {
		if s.path == "/api/outbox?state=delivered" || strings.HasPrefix(s.path, "/api/outbox/entry?id=reply") {
			// The reply is delivered by the dispatcher in the background.
			waitUntil(t, "the reply to be delivered", func() bool {
				return strings.Contains(string(e.authed("GET", "/api/outbox?state=delivered", "").body), "reply:web.admin-1:web:0")
			})
		}
		r := e.authed(s.method, s.path, s.body)
		if r.status != s.want {
			t.Errorf("%s %s: status %d, want %d: %s", s.method, s.path, r.status, s.want, r.body)
			continue
		}
		if !strings.Contains(string(r.body), s.contains) {
			t.Errorf("%s %s: body lacks %q: %s", s.method, s.path, s.contains, r.body)
		}
		if s.want >= 400 {
			r.errorText(t)
		}
	}
}
