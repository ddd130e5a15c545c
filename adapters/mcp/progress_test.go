package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// TestProgressCarriesLastLines: a tools/call with a progress token hears,
// every ProgressInterval on the server's clock, how long the call has run
// and the last lines its program wrote; the result follows as usual.
func TestProgressCarriesLastLines(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	var (
		mu    sync.Mutex
		heard []*mcp.ProgressNotificationParams
	)
	env, cs := stdioEnvWith(t, mcpsurface.Options{Identity: "agent:local", Clock: clk, ProgressInterval: time.Second}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			heard = append(heard, r.Params)
			mu.Unlock()
		},
	})
	ws := env.Config.Workspace
	script := "echo alpha; echo beta; touch started; while [ ! -e release ]; do sleep 0.05; done; echo gamma"
	params := &mcp.CallToolParams{Name: "proc_run", Arguments: map[string]any{"executable": "sh", "arguments": []string{"-c", script}}}
	params.SetProgressToken("tok-1")
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), params)
		done <- answer{res, err}
	}()
	testkit.WaitFor(t, "the program to start", func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil
	})
	last := func() *mcp.ProgressNotificationParams {
		mu.Lock()
		defer mu.Unlock()
		if len(heard) == 0 {
			return nil
		}
		return heard[len(heard)-1]
	}
	// The program reports its lines on its own clock: give it a moment
	// between the steps of the server's. Each step waits for the progress
	// round to be armed one interval ahead: the round before has read the
	// clock and notified, so no step is counted twice.
	testkit.WaitFor(t, "a notification with the last lines", func() bool {
		if due, ok := clk.NextDue(); !ok || !due.Equal(clk.Now().Add(time.Second)) {
			return false
		}
		clk.Advance(time.Second)
		if p := last(); p != nil && strings.Contains(p.Message, "last lines of output:\nalpha\nbeta") {
			return true
		}
		time.Sleep(50 * time.Millisecond)
		return false
	})
	mu.Lock()
	first := heard[0]
	for i, p := range heard {
		if p.ProgressToken != "tok-1" || !strings.HasPrefix(p.Message, "proc.run running for ") || (i > 0 && p.Progress <= heard[i-1].Progress) {
			t.Errorf("notification %d: %+v", i, p)
		}
	}
	mu.Unlock()
	if first.Progress != 1 {
		t.Errorf("first progress %v, want 1 (one interval)", first.Progress)
	}
	if err := os.WriteFile(filepath.Join(ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var a answer
	select {
	case a = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the call did not answer within a minute of its program's release")
	}
	if a.err != nil || a.res.IsError {
		t.Fatalf("call: %v %+v", a.err, a.res)
	}
	sc, _ := json.Marshal(a.res.StructuredContent)
	if !strings.Contains(string(sc), "gamma") {
		t.Errorf("result %s", sc)
	}
	// Nothing is left to notify once the call has answered.
	if n := clk.Pending(); n != 0 {
		t.Errorf("%d progress timers left after the call", n)
	}
}
