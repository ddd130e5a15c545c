package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// TestStdioRefusesAnIDInUse: a request whose id is that of a request still
// in progress is answered with an invalid-request error for that id (not
// run, and not confused with the first); once the first is answered, the id
// may be used again.
func TestStdioRefusesAnIDInUse(t *testing.T) {
	c := openLines(t, nil)
	send, read, env := c.send, c.answer, c.env
	c.initialize(`{}`)
	ws := env.Config.Workspace
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"proc_run","arguments":{"executable":"sh","arguments":["-c","touch started; while [ ! -e release ]; do sleep 0.05; done; echo done"]}}}`)
	testkit.WaitFor(t, "the first call to run", func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil
	})
	send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if a := read(); a.ID != float64(7) || a.Error == nil || a.Error.Code != -32600 || a.Error.Message != "invalid request: id 7 is already in use by a request in progress" {
		t.Fatalf("the second request with id 7: %+v %+v", a, a.Error)
	}
	env.WriteFile(t, "release", "")
	if a := read(); a.ID != float64(7) || a.Error != nil || !json.Valid(a.Result) || string(a.Result) == "{}" {
		t.Fatalf("the first call's answer: %+v %s", a, a.Result)
	}
	send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if a := read(); a.ID != float64(7) || a.Error != nil || string(a.Result) != "{}" {
		t.Fatalf("id 7 once free: %+v %s", a, a.Result)
	}
}

// TestStdioClientHangsUp: a client that closes its end while an answer is
// still due (a subscriptions/listen stream, or any request) ends `hub mcp`
// normally; the answer that finds the pipe closed is no error of the hub.
func TestStdioClientHangsUp(t *testing.T) {
	cfg := hubtest.Config(t, "", "")
	env := hubtest.Open(t, cfg, hubtest.Options{})
	srv, err := mcpsurface.New(mcpsurface.Options{Intake: env.Runtime.Hub, Logger: testkit.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.RunStdio(context.Background(), sr, sw) }()
	out := bufio.NewReader(cr)
	if _, err := io.WriteString(cw, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := out.ReadBytes('\n'); err != nil {
		t.Fatal(err)
	}
	cr.Close() // the client stops reading, then asks once more and leaves
	if _, err := io.WriteString(cw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("RunStdio after the client hung up: %v", err)
	}
	cw.Close()
}
