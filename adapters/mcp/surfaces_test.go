package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// turnLog is an Observer that keeps the status of every turn, by surface.
type turnLog struct {
	mu   sync.Mutex
	last map[string]hub.Status
}

func (l *turnLog) Turn(surface string, st hub.Status) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last[surface] = st
}

func (l *turnLog) Verb(*executor.Outcome) {}

func (l *turnLog) status(surface string) hub.Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[surface]
}

// surfacesEnv is a hub whose web conversation (API and MCP calls) and
// Telegram chat 100 are placed in workspace "secret". Role ro may read,
// in the default workspace only; role sec may read, in secret too. Each
// role has an identity on every surface: telegram:1 and agent:ro,
// telegram:2 and agent:sec.
func surfacesEnv(t *testing.T, obs hub.Observer) *hubtest.Env {
	t.Helper()
	root := t.TempDir()
	cfg := hubtest.Config(t, filepath.Join(root, "main"), filepath.Join(root, "state"))
	for _, d := range []string{"main", "secret"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "where.txt"), []byte("in "+d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Workspaces.Named = map[string]config.WorkspaceConfig{
		"secret": {Path: filepath.Join(root, "secret"), Destination: config.Destination{Kind: config.DestinationLocal}},
	}
	cfg.Workspaces.ByChat = map[string]string{hub.WebConversation: "secret", "chat:telegram:100": "secret"}
	read := []string{"fs.read*", "fs.listDir"}
	cfg.Access = config.Access{
		Roles: map[string]config.Role{
			"ro":  {Verbs: read, Workspaces: []string{"default"}},
			"sec": {Verbs: read, Workspaces: []string{"default", "secret"}},
		},
		Grants: map[string][]string{"telegram:1": {"ro"}, "agent:ro": {"ro"}, "telegram:2": {"sec"}, "agent:sec": {"sec"}},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return hubtest.Open(t, cfg, hubtest.Options{Workspaces: true, Runtime: hub.RuntimeOptions{Observer: obs}})
}

// surfaceResult is what one surface made of a call: the turn's status,
// the error code, what it says (the chat reply, the result as text) and the
// mirror's record of the request.
type surfaceResult struct {
	status hub.Status
	code   string
	says   string
	record store.MirrorRecord
	result *store.MirrorRecord // API and MCP: the outcome's record
}

// TestSurfacesDecideAlike: the same call from chat, the API and MCP is
// decided alike (a verb the roles do not grant, a workspace they may not
// use, a call that runs there, one that fails there): the same status and
// error code, and the API and MCP calls leave the same records, the
// envelope JSON as text. Chat records its message as a command, with the
// workspace when it may use it.
func TestSurfacesDecideAlike(t *testing.T) {
	obs := &turnLog{last: map[string]hub.Status{}}
	env := surfacesEnv(t, obs)
	h := env.Runtime.Hub
	clients := map[string]*mcp.ClientSession{}
	for _, id := range []string{"agent:ro", "agent:sec"} {
		clients[id] = serveStdio(t, mcpsurface.Options{Intake: h, Identity: id}, nil)
	}
	for i, tc := range []struct {
		role, verb, chat string
		args             map[string]any
		status           hub.Status
		code             string
		says             string // in the chat reply and the outcome
		workspace        string // in the chat message's record
	}{
		{"ro", "fs.writeFile", `/fs.writeFile x.txt "<hi & bye>"`, map[string]any{"path": "x.txt", "content": "<hi & bye>"}, hub.StatusForbidden, "forbidden", "may not run fs.writeFile", ""},
		{"ro", "fs.readFile", "/fs.readFile where.txt", map[string]any{"path": "where.txt"}, hub.StatusForbidden, "forbidden", `fs.readFile was not run: workspace "secret"`, ""},
		{"sec", "fs.writeFile", "/fs.writeFile x.txt hi", map[string]any{"path": "x.txt", "content": "hi"}, hub.StatusForbidden, "forbidden", "may not run fs.writeFile", "secret"},
		{"sec", "fs.readFile", "/fs.readFile where.txt", map[string]any{"path": "where.txt"}, hub.StatusExecuted, "", "in secret", "secret"},
		{"sec", "fs.readFile", "/fs.readFile gone.txt", map[string]any{"path": "gone.txt"}, hub.StatusExecuted, "not_found", "gone.txt", "secret"},
	} {
		name := fmt.Sprintf("%s %s %v", tc.role, tc.verb, tc.args)
		user := map[string]int{"ro": 1, "sec": 2}[tc.role]
		viaChat := chatCall(t, env, obs, user, 10+i, tc.chat)
		viaAPI := apiCall(t, env, obs, "agent:"+tc.role, tc.verb, tc.args)
		viaMCP := mcpCall(t, env, obs, clients["agent:"+tc.role], tc.verb, tc.args)
		for surface, got := range map[string]surfaceResult{"chat": viaChat, "api": viaAPI, "mcp": viaMCP} {
			if got.status != tc.status || got.code != tc.code || !strings.Contains(strings.ToLower(got.says), strings.ToLower(tc.says)) {
				t.Errorf("%s via %s: status %s, code %q, %q; want %s, %q, %q", name, surface, got.status, got.code, got.says, tc.status, tc.code, tc.says)
			}
		}
		if strings.Contains(tc.says, "may not run") {
			// Every surface says what configuration allows it, for its own
			// identity.
			for surface, id := range map[string]string{"chat": fmt.Sprintf("telegram:%d", user), "api": "agent:" + tc.role, "mcp": "agent:" + tc.role} {
				says := map[string]string{"chat": viaChat.says, "api": viaAPI.says, "mcp": viaMCP.says}[surface]
				want := fmt.Sprintf("access:\n  roles:\n    fs-writefile: {verbs: [\"fs.writeFile\"]}\n  grants:\n    %q: [%s, fs-writefile]\n", id, tc.role)
				if !strings.Contains(says, want) {
					t.Errorf("%s via %s: the refusal does not give the configuration that allows it (%q): %q", name, surface, want, says)
				}
			}
		}
		if r := viaChat.record; r.Kind != store.KindCommand || r.Meta[hub.MetaWorkspace] != tc.workspace {
			t.Errorf("%s via chat: recorded as %q in workspace %q, want %q in %q", name, r.Kind, r.Meta[hub.MetaWorkspace], store.KindCommand, tc.workspace)
		}
		if viaAPI.says != viaMCP.says || !reflect.DeepEqual(viaAPI.record, viaMCP.record) || !reflect.DeepEqual(viaAPI.result, viaMCP.result) {
			t.Errorf("%s: the MCP call's answer and records\n%s\n%+v\n%+v\ndiffer from the API call's\n%s\n%+v\n%+v", name, viaMCP.says, viaMCP.record, viaMCP.result, viaAPI.says, viaAPI.record, viaAPI.result)
		}
		if r := viaAPI.record; r.Kind != "execute" || !strings.HasPrefix(r.Text, `{"verb":"`+tc.verb+`","arguments":{`) {
			t.Errorf("%s via the API: recorded as %q: %s", name, r.Kind, r.Text)
		}
	}
}

// chatCall sends text from Telegram user to chat 100.
func chatCall(t *testing.T, env *hubtest.Env, obs *turnLog, user, msgID int, text string) surfaceResult {
	t.Helper()
	in := &chat.Inbound{
		TurnID: fmt.Sprintf("telegram.100.%d", msgID), Platform: chat.Telegram, ChatID: "100", MessageID: fmt.Sprint(msgID),
		UserID: fmt.Sprint(user), UserName: "u", ChatType: "private", Text: text, Time: time.Now(),
	}
	res, err := env.Runtime.Hub.Handle(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := env.Runtime.Ledger.Get(in.TurnID)
	if err != nil || rec == nil {
		t.Fatalf("ledger: %v %v", rec, err)
	}
	if st := obs.status(string(chat.Telegram)); st != res.Status {
		t.Errorf("%s: the observer heard %s, Handle said %s", text, st, res.Status)
	}
	reply, err := env.Runtime.Outbox.Store().Get(context.Background(), outbox.ID(outbox.KindReply, in.TurnID, in.ReplyKey(), 0))
	if err != nil {
		t.Fatalf("%s: the reply: %v", text, err)
	}
	in0, _ := records(t, env, in.TurnID)
	return surfaceResult{status: res.Status, code: rec.Code, says: reply.Text, record: in0}
}

// apiCall sends the envelope of verb and args to the API as identity.
func apiCall(t *testing.T, env *hubtest.Env, obs *turnLog, identity, verb string, args map[string]any) surfaceResult {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	input, err := json.Marshal(executor.Envelope{Verb: verb, Arguments: raw})
	if err != nil {
		t.Fatal(err)
	}
	turnID := hub.NewTurnID("api", time.Now())
	out, err := env.Runtime.Hub.Execute(context.Background(), hub.APIRequest{Identity: identity, TurnID: turnID, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	code := ""
	if !out.Succeeded() {
		code = string(out.Err.Code)
	}
	in, res := records(t, env, turnID)
	return surfaceResult{status: obs.status(hub.SurfaceAPI), code: code, says: executor.RenderText(out, false), record: in, result: res}
}

// mcpCall calls verb's tool with args.
func mcpCall(t *testing.T, env *hubtest.Env, obs *turnLog, cs *mcp.ClientSession, verb string, args map[string]any) surfaceResult {
	t.Helper()
	before := map[string]bool{}
	for _, r := range allRecords(t, env) {
		before[r.Meta["turn_id"]] = true
	}
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpsurface.ToolName(verb), Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		ErrorCode string `json:"errorCode"`
	}
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, &sc); err != nil || r.IsError != (sc.ErrorCode != "") {
		t.Fatalf("structured content %s (isError %v): %v", b, r.IsError, err)
	}
	turnID := ""
	for _, rec := range allRecords(t, env) {
		if id := rec.Meta["turn_id"]; !before[id] && strings.HasPrefix(id, "mcp.") {
			turnID = id
		}
	}
	in, res := records(t, env, turnID)
	return surfaceResult{status: obs.status(hub.SurfaceAPI), code: sc.ErrorCode, says: r.Content[0].(*mcp.TextContent).Text, record: in, result: res}
}

// records returns the mirror's records of a turn without the turn id and
// time, which differ between surfaces: the inbound one and, when there is
// one, the outcome's (a chat reply is recorded when delivered).
func records(t *testing.T, env *hubtest.Env, turnID string) (in store.MirrorRecord, out *store.MirrorRecord) {
	t.Helper()
	for _, r := range allRecords(t, env) {
		if r.Meta["turn_id"] != turnID {
			continue
		}
		delete(r.Meta, "turn_id")
		r.TS = time.Time{}
		if r.Direction == store.DirectionInbound {
			in = r
		} else {
			out = &r
		}
	}
	if in.Kind == "" {
		t.Fatalf("turn %s: no inbound record", turnID)
	}
	return in, out
}

func allRecords(t *testing.T, env *hubtest.Env) []store.MirrorRecord {
	t.Helper()
	flows, err := os.OpenRoot(filepath.Join(env.Config.StateDir, "flows"))
	if err != nil {
		t.Fatal(err)
	}
	defer flows.Close()
	var recs []store.MirrorRecord
	if err := store.ReadMirror(flows, store.MirrorFilter{}, func(r store.MirrorRecord) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}
