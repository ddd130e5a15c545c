package web

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// startSlow posts /test.slow from the panel in the background and waits for
// the verb to run; the channel gets the POST's status.
func startSlow(t *testing.T, e *testEnv, v *hubtest.SlowVerb, clientTurn string) <-chan int {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		b, _ := json.Marshal(MessageRequest{Text: "/test.slow", ClientTurnID: clientTurn})
		done <- e.authed("POST", "/api/messages", string(b)).status
	}()
	select {
	case <-v.Started:
	case <-time.After(testkit.Wait):
		t.Fatal("the verb did not start")
	}
	return done
}

func cancelTurn(e *testEnv, turn string) response {
	b, _ := json.Marshal(CancelRequest{Turn: turn})
	return e.authed("POST", "/api/cancel", string(b))
}

// TestProgressEventsAndCancel: a call from the panel shows progress events
// in place (running updates without ids, outside the history), a client
// connecting while it runs gets its latest state and the list of running
// calls, POST /api/cancel stops it, and the final event (kept in the
// history) comes before the reply, after which no client sees it running.
func TestProgressEventsAndCancel(t *testing.T) {
	clk := fakeClock()
	v := hubtest.NewSlowVerb()
	e := newEnv(t, envConfig{hub: hubtest.Options{Register: v.Register, Runtime: hub.RuntimeOptions{Clock: clk}}})
	t.Cleanup(v.Finish)
	live := e.openSSE("")
	done := startSlow(t, e, v, "slow1")
	turn := "web.slow1"
	inbound := live.until(func(ev Event) bool { return ev.Type == EventInbound })
	if ev := inbound[len(inbound)-1]; ev.TurnID != turn {
		t.Fatalf("inbound event %+v", ev)
	}

	v.Step(t, "compiling a")
	clk.Advance(2 * time.Second) // below progress_after: nothing shows
	clk.Advance(time.Second)
	ev := live.next()
	if ev.Type != EventProgress || ev.ID != "" || ev.TurnID != turn || ev.Progress == nil ||
		ev.Progress.State != "running" || ev.Progress.Verb != "test.slow" || ev.Progress.ElapsedMS != 3000 || ev.Progress.Tail != "compiling a" {
		t.Fatalf("first progress event %+v (progress %+v)", ev, ev.Progress)
	}
	v.Step(t, "compiling b")
	clk.Advance(3 * time.Second)
	ev = live.next()
	if ev.Type != EventProgress || ev.Progress.ElapsedMS != 6000 || ev.Progress.Tail != "compiling a\ncompiling b" || !strings.Contains(ev.Text, "running for 6s") {
		t.Fatalf("second progress event %+v (progress %+v)", ev, ev.Progress)
	}
	// Running updates stay out of the history.
	var hist HistoryResponse
	e.authed("GET", "/api/history", "").json(t, &hist)
	for _, h := range hist.Events {
		if h.Type == EventProgress {
			t.Fatalf("a running update is in the history: %+v", h)
		}
	}

	// A page loaded now sees the call running, with its latest state, then
	// the list of running calls.
	late := e.openSSE("")
	got := late.until(func(ev Event) bool { return ev.Type == EventRunning })
	if len(got) < 3 {
		t.Fatalf("late client got %+v", got)
	}
	if p := got[len(got)-2]; p.Type != EventProgress || p.Progress.ElapsedMS != 6000 || p.TurnID != turn {
		t.Fatalf("late client's progress %+v", p)
	}
	if r := got[len(got)-1]; len(r.Running) != 1 || r.Running[0] != turn {
		t.Fatalf("running event %+v", r)
	}
	late.close()

	// Cancel from the panel: the call ends as cancelled, with its output.
	r := cancelTurn(e, turn)
	if r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	var cr CancelResponse
	r.json(t, &cr)
	if len(cr.Canceled) != 1 || cr.Canceled[0] != turn || !strings.Contains(cr.Text, "Cancelling test.slow") {
		t.Fatalf("cancel answer %+v", cr)
	}
	if st := <-done; st != http.StatusAccepted {
		t.Fatalf("the turn's POST ended with %d", st)
	}
	final := live.next()
	if final.Type != EventProgress || final.ID == "" || final.Progress.State != "cancelled" || !strings.Contains(final.Text, "cancelled by web") || final.Progress.Tail != "" {
		t.Fatalf("final progress event %+v (progress %+v)", final, final.Progress)
	}
	reply := live.until(func(ev Event) bool { return ev.Type == EventReply })
	if last := reply[len(reply)-1]; last.TurnID != turn || !strings.Contains(last.Text, "Cancelled by web") || !strings.Contains(last.Text, "compiling b") {
		t.Fatalf("reply %+v", last)
	}
	for _, ev := range reply {
		if ev.Type == EventProgress {
			t.Fatalf("progress after the final event: %+v", ev)
		}
	}

	// Nothing more to cancel; a bad turn id is refused.
	if r := cancelTurn(e, turn); r.status != http.StatusConflict || !strings.Contains(r.errorText(t), "already finished") {
		t.Fatalf("second cancel: %d %s", r.status, r.body)
	}
	if r := cancelTurn(e, "web/../x"); r.status != http.StatusBadRequest {
		t.Fatalf("bad turn: %d %s", r.status, r.body)
	}

	// A page loaded after the call sees how it ended, never running; a
	// client resuming from before the end gets the final event and an
	// empty running list.
	after := e.openSSE("")
	got = after.until(func(ev Event) bool { return ev.Type == EventRunning })
	var finals int
	for _, ev := range got {
		if ev.Type == EventProgress {
			if ev.Progress.State == "running" {
				t.Fatalf("a finished call shows as running: %+v", ev)
			}
			finals++
		}
	}
	if finals != 1 || len(got[len(got)-1].Running) != 0 {
		t.Fatalf("after the call: %+v", got)
	}
	resumed := e.openSSE(inbound[len(inbound)-1].ID)
	got = resumed.until(func(ev Event) bool { return ev.Type == EventRunning })
	if got[0].Type != EventProgress || got[0].Progress.State != "cancelled" {
		t.Fatalf("resumed client: %+v", got)
	}
	// The web progress message was forgotten: nothing to finalise at a restart.
	if n, err := e.rt.Hub.FinishStaleProgress(context.Background()); err != nil || n != 0 {
		t.Fatalf("stale progress after a finished call: %d %v", n, err)
	}
}

// TestProgressViewStates: the view publishes every update of a web call and
// refuses one for another surface; a final state ends the running entry.
func TestProgressViewStates(t *testing.T) {
	e := newEnv(t, envConfig{})
	view := e.srv.ProgressView()
	ctx := context.Background()
	if _, err := view.ShowProgress(ctx, hub.ProgressUpdate{TurnID: "telegram.1.2", Target: chat.ChatKey(chat.Telegram, "1", ""), State: hub.ProgressRunning}); err == nil {
		t.Fatal("a Telegram update was accepted")
	}
	for _, st := range []hub.ProgressState{hub.ProgressDone, hub.ProgressFailed, hub.ProgressCanceled, hub.ProgressInterrupted} {
		t.Run(string(st), func(t *testing.T) {
			turn := "web.t-" + string(st)
			id, err := view.ShowProgress(ctx, hub.ProgressUpdate{TurnID: turn, Target: chat.WebKey, Verb: "proc.run", State: hub.ProgressRunning, Elapsed: 3 * time.Second})
			if err != nil || id != turn {
				t.Fatalf("running: %q %v", id, err)
			}
			c := e.openSSE("")
			got := c.until(func(ev Event) bool { return ev.Type == EventRunning })
			if r := got[len(got)-1]; len(r.Running) != 1 || r.Running[0] != turn {
				t.Fatalf("running list %+v", r)
			}
			if _, err := view.ShowProgress(ctx, hub.ProgressUpdate{TurnID: turn, Target: chat.WebKey, Verb: "proc.run", State: st, MessageID: id, Text: "ended"}); err != nil {
				t.Fatal(err)
			}
			ev := c.next()
			if ev.Type != EventProgress || ev.ID == "" || ev.Progress.State != string(st) || ev.Text != "ended" {
				t.Fatalf("final event %+v", ev)
			}
			c2 := e.openSSE(ev.ID)
			if r := c2.next(); r.Type != EventRunning || len(r.Running) != 0 {
				t.Fatalf("after the final state: %+v", r)
			}
		})
	}
}

// TestCancelAuth: POST /api/cancel needs authentication like every route.
func TestCancelAuth(t *testing.T) {
	e := newEnv(t, envConfig{})
	r := e.do(req{method: "POST", path: "/api/cancel", body: `{"turn":"web.x"}`, ctype: "application/json"})
	if r.status != http.StatusUnauthorized {
		t.Fatalf("cancel without a token: %d %s", r.status, r.body)
	}
	if r := e.authed("GET", "/api/cancel", ""); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET /api/cancel: %d", r.status)
	}
	if r := cancelTurn(e, "web.none"); r.status != http.StatusConflict {
		t.Fatalf("cancel of nothing: %d %s", r.status, r.body)
	}
}

// TestWorkspaceEndpoint: GET /api/workspace shows where the web conversation
// works and what it may use, and follows /use from the panel.
func TestWorkspaceEndpoint(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"main", "a"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, envConfig{workspace: filepath.Join(root, "main"), hub: hubtest.Options{Workspaces: true}, mod: func(c *config.Config) {
		c.Workspaces.Named = map[string]config.WorkspaceConfig{"alpha": {Path: filepath.Join(root, "a"), Destination: config.Destination{Kind: config.DestinationLocal}}}
		c.Access.Roles = map[string]config.Role{"admin": {Verbs: []string{"*", "admin.*"}, Workspaces: []string{"*"}}}
	}})
	get := func() hub.WorkspaceView {
		t.Helper()
		r := e.authed("GET", "/api/workspace", "")
		if r.status != http.StatusOK {
			t.Fatalf("GET /api/workspace: %d %s", r.status, r.body)
		}
		var v hub.WorkspaceView
		r.json(t, &v)
		return v
	}
	v := get()
	if v.Current.Name != "default" || v.Current.Destination == "" || v.Chosen != "" || len(v.Usable) != 2 {
		t.Fatalf("before /use: %+v", v)
	}
	e.message("/use alpha", "use1")
	if v = get(); v.Current.Name != "alpha" || v.Chosen != "alpha" || !strings.Contains(v.Current.Reason, "/use") {
		t.Fatalf("after /use alpha: %+v", v)
	}
	e.message("/use --default", "use2")
	if v = get(); v.Current.Name != "default" || v.Chosen != "" {
		t.Fatalf("after /use --default: %+v", v)
	}

	// An identity without roles is told so.
	bare := newEnv(t, envConfig{mod: func(c *config.Config) { c.Access = config.Access{} }})
	var bv hub.WorkspaceView
	bare.authed("GET", "/api/workspace", "").json(t, &bv)
	if bv.Error == "" || len(bv.Usable) != 0 {
		t.Fatalf("without roles: %+v", bv)
	}
	if r := bare.do(req{method: "GET", path: "/api/workspace"}); r.status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", r.status)
	}
}
