//go:build unix

package verbs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

func asCaller(turn, identity string) context.Context {
	return executor.WithCall(context.Background(), executor.Call{TurnID: turn, Identity: identity, Session: "chat:" + identity})
}

// runAs runs proc.run for turn as identity; it must succeed.
func runAs(t *testing.T, e *verbtest.Env, turn, identity string, a verbs.ProcRunArgs) verbs.ProcRunResult {
	t.Helper()
	out := e.RunCtx(asCaller(turn, identity), "proc.run", a)
	if out.Err != nil {
		t.Fatalf("proc.run %v: %s (%s)", a, out.Err.Message, out.Err.Code)
	}
	return *out.Value.(*verbs.ProcRunResult)
}

// output runs proc.output as identity; it must succeed.
func output(t *testing.T, e *verbtest.Env, identity string, args map[string]any) verbs.ProcOutputResult {
	t.Helper()
	out := e.RunCtx(asCaller("test.read", identity), "proc.output", args)
	if out.Err != nil {
		t.Fatalf("proc.output %v: %s (%s)", args, out.Err.Message, out.Err.Code)
	}
	return *out.Value.(*verbs.ProcOutputResult)
}

// outputFails runs proc.output as identity; it must fail with code and a
// message containing parts and no host path.
func outputFails(t *testing.T, e *verbtest.Env, identity string, args map[string]any, code executor.ErrorCode, parts ...string) {
	t.Helper()
	out := e.RunCtx(asCaller("test.read", identity), "proc.output", args)
	if out.Err == nil {
		t.Fatalf("proc.output %v as %q succeeded: %+v", args, identity, out.Value)
	}
	verbtest.CheckErr(t, out.Err, code, parts...)
	if strings.Contains(out.Err.Message, e.Base) {
		t.Errorf("message shows a host path: %s", out.Err.Message)
	}
}

// pages reads a whole stream page by page, following nextStartLine.
func pages(t *testing.T, e *verbtest.Env, identity, id, stream string) (content []string, got []verbs.ProcOutputResult) {
	t.Helper()
	args := map[string]any{"outputId": id, "stream": stream}
	for range 100 {
		r := output(t, e, identity, args)
		got = append(got, r)
		content = append(content, r.Content)
		if r.NextStartLine == 0 {
			return content, got
		}
		if r.NextStartLine != r.EndLine+1 {
			t.Fatalf("page %d–%d: next page at %d", r.StartLine, r.EndLine, r.NextStartLine)
		}
		args["startLine"] = r.NextStartLine
	}
	t.Fatal("more than 100 pages")
	return nil, nil
}

func TestProcOutputPaging(t *testing.T) {
	e := verbtest.New(t)
	r := runAs(t, e, "telegram.1.1", "telegram:1", verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "seq 1 450; seq 1 3 >&2"}})
	if r.OutputID != "telegram.1.1" || r.StdoutPath != "proc/telegram.1.1/stdout.txt" {
		t.Fatalf("outputId %q stdoutPath %q", r.OutputID, r.StdoutPath)
	}
	var want []string
	for i := 1; i <= 450; i++ {
		want = append(want, fmt.Sprint(i))
	}
	content, got := pages(t, e, "telegram:1", r.OutputID, "stdout")
	if len(got) != 3 || got[0].StartLine != 1 || got[0].EndLine != 200 || got[1].EndLine != 400 || got[2].StartLine != 401 || got[2].EndLine != 450 {
		t.Errorf("pages %+v", got)
	}
	for _, p := range got {
		if p.TotalLines != 450 || p.TotalBytes != int64(len(strings.Join(want, "\n"))+1) || p.Stream != verbs.StreamStdout || p.OutputID != r.OutputID {
			t.Errorf("page %d–%d: total %d lines %d bytes, stream %s, id %s", p.StartLine, p.EndLine, p.TotalLines, p.TotalBytes, p.Stream, p.OutputID)
		}
	}
	if j := strings.Join(content, "\n"); j != strings.Join(want, "\n") {
		t.Errorf("pages joined differ from the output:\n%.200s", j)
	}
	// Any range, near the end too; endLine past the end stops at the end.
	for _, c := range []struct {
		start, end int
		want       string
	}{{440, 442, "440\n441\n442"}, {449, 1000, "449\n450"}, {2, 2, "2"}} {
		p := output(t, e, "telegram:1", map[string]any{"outputId": r.OutputID, "startLine": c.start, "endLine": c.end})
		if p.Content != c.want {
			t.Errorf("lines %d–%d: %q, want %q", c.start, c.end, p.Content, c.want)
		}
	}
	if p := output(t, e, "telegram:1", map[string]any{"outputId": r.OutputID, "stream": "stderr"}); p.Content != "1\n2\n3" || p.NextStartLine != 0 || p.TotalLines != 3 {
		t.Errorf("stderr %+v", p)
	}
	outputFails(t, e, "telegram:1", map[string]any{"outputId": r.OutputID, "startLine": 451}, executor.CodeInvalidArguments, "past the end", "450 lines")
	outputFails(t, e, "telegram:1", map[string]any{"outputId": r.OutputID, "startLine": 0}, executor.CodeInvalidArguments, "count from 1")
	outputFails(t, e, "telegram:1", map[string]any{"outputId": r.OutputID, "startLine": 5, "endLine": 4}, executor.CodeInvalidArguments, "before startLine")

	// An empty stream is one empty page.
	r = runAs(t, e, "telegram.1.2", "telegram:1", verbs.ProcRunArgs{Executable: "true", Arguments: []string{}})
	if p := output(t, e, "telegram:1", map[string]any{"outputId": r.OutputID}); p.Content != "" || p.EndLine != 0 || p.TotalLines != 0 || p.NextStartLine != 0 {
		t.Errorf("empty stdout %+v", p)
	}
}

// TestProcOutputPageBytes: a page ends before the line that would take it
// past OutputPageBytes, and a line longer than a page is cut.
func TestProcOutputPageBytes(t *testing.T) {
	e := verbtest.New(t)
	script := `i=0; while [ $i -lt 40 ]; do printf '%01000d\n' $i; i=$((i+1)); done; head -c 40000 /dev/zero | tr '\0' x; printf '\r\nlast\r\n'`
	r := runAs(t, e, "web.big", "web", verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", script}})
	_, got := pages(t, e, "web", r.OutputID, "stdout")
	type page struct {
		start, end int
		cut        bool
	}
	want := []page{{1, 32, false}, {33, 40, false}, {41, 41, true}, {42, 42, false}}
	if len(got) != len(want) {
		t.Fatalf("%d pages, want %d", len(got), len(want))
	}
	for i, p := range got {
		if (page{p.StartLine, p.EndLine, p.LineCut}) != want[i] || len(p.Content) > verbs.OutputPageBytes {
			t.Errorf("page %d: lines %d–%d cut %v (%d bytes), want %+v", i, p.StartLine, p.EndLine, p.LineCut, len(p.Content), want[i])
		}
	}
	if c := got[2].Content; c != strings.Repeat("x", verbs.OutputPageBytes) {
		t.Errorf("cut line: %d bytes", len(c))
	}
	if got[3].Content != "last" {
		t.Errorf("last line %q (a \\r\\n ending is not part of the text)", got[3].Content)
	}
}

// TestProcOutputOwner: only the caller who ran a call reads its output, and
// another caller cannot take over its directory.
func TestProcOutputOwner(t *testing.T) {
	e := verbtest.New(t)
	r := runAs(t, e, "telegram.7.1", "telegram:7", verbs.ProcRunArgs{Executable: "echo", Arguments: []string{"mine"}})
	args := map[string]any{"outputId": r.OutputID}
	if p := output(t, e, "telegram:7", args); p.Content != "mine" {
		t.Fatalf("owner reads %q", p.Content)
	}
	outputFails(t, e, "telegram:8", args, executor.CodeForbidden, "belongs to another caller", "only to the caller who ran it")
	outputFails(t, e, "", args, executor.CodeForbidden, "no caller identity")
	outputFails(t, e, "discord:7", map[string]any{"outputId": r.OutputID, "stream": "stderr"}, executor.CodeForbidden, "another caller")

	// The same turn id from someone else runs nothing and keeps the output.
	out := e.RunCtx(asCaller("telegram.7.1", "telegram:8"), "proc.run", verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "echo theirs; touch ran"}})
	if out.Err == nil {
		t.Fatal("proc.run in another caller's output directory succeeded")
	}
	verbtest.CheckErr(t, out.Err, executor.CodeForbidden, "belongs to another caller")
	if _, err := os.Stat(filepath.Join(e.Dir, "ran")); err == nil {
		t.Error("the program ran")
	}
	if p := output(t, e, "telegram:7", args); p.Content != "mine" {
		t.Errorf("after the refused run the owner reads %q", p.Content)
	}
	// The owner may run again in its own turn.
	runAs(t, e, "telegram.7.1", "telegram:7", verbs.ProcRunArgs{Executable: "echo", Arguments: []string{"again"}})
	if p := output(t, e, "telegram:7", args); p.Content != "again" {
		t.Errorf("owner's second run reads %q", p.Content)
	}
	// Output written before owners were recorded has no owner: refused.
	verbtest.WriteFile(t, filepath.Join(e.State, "proc", "old.1", "stdout.txt"), "old\n")
	outputFails(t, e, "telegram:7", map[string]any{"outputId": "old.1"}, executor.CodeNotFound, "No output old.1")
}

func TestProcOutputHostileIDs(t *testing.T) {
	e := verbtest.New(t)
	runAs(t, e, "web.1", "web", verbs.ProcRunArgs{Executable: "echo", Arguments: []string{"x"}})
	// A directory in the proc dir that leads outside it, holding what would
	// pass for output: never followed.
	verbtest.WriteFile(t, filepath.Join(e.Outside, "owner.json"), `{"identity":"web"}`)
	verbtest.WriteFile(t, filepath.Join(e.Outside, "stdout.txt"), "outside secret\n")
	if err := os.Symlink(e.Outside, filepath.Join(e.State, "proc", "link.1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.Outside, "stdout.txt"), filepath.Join(e.State, "proc", "web.1", "stderr.txt.tmp")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", ".", "..", "../outside", "web.1/../web.1", "/etc", "web.1/stdout.txt", "a\x00b", "a b", `a\b`, "~root", strings.Repeat("a", 201), "%2e%2e", "web..1"} {
		outputFails(t, e, "web", map[string]any{"outputId": id}, executor.CodeInvalidArguments, "is not an output id", "accepted:")
	}
	for _, s := range []string{"stdin", "../stdout", "stdout.txt", "stderr.txt.tmp"} {
		out := e.RunCtx(asCaller("t", "web"), "proc.output", map[string]any{"outputId": "web.1", "stream": s})
		if out.Err == nil || out.Err.Code != executor.CodeInvalidArguments {
			t.Errorf("stream %q: %+v", s, out.Err)
		}
	}
	out := e.RunCtx(asCaller("t", "web"), "proc.output", map[string]any{"outputId": "link.1"})
	if out.Err == nil || strings.Contains(out.Err.Message, "secret") || strings.Contains(out.Err.Message, e.Base) {
		t.Errorf("output through a symlink out of the proc dir: %+v %+v", out.Err, out.Value)
	}
	outputFails(t, e, "web", map[string]any{"outputId": "never.ran"}, executor.CodeNotFound, "No output never.ran")
}

// TestProcOutputExpiry: the sweeper, driven by the Set's clock, removes
// output older than the time it is kept, and stops with its context.
func TestProcOutputExpiry(t *testing.T) {
	clk := clock.NewFake(t0)
	e := verbtest.New(t, func(o *verbs.Options, _ *verbs.WorkspaceOptions) { o.Clock = clk })
	const keep, every = 168 * time.Hour, 68 * time.Hour
	runAs(t, e, "web.old", "web", verbs.ProcRunArgs{Executable: "echo", Arguments: []string{"old"}})
	clk.Advance(100 * time.Hour)
	runAs(t, e, "web.new", "web", verbs.ProcRunArgs{Executable: "echo", Arguments: []string{"new"}})
	dir := func(id string) string { return filepath.Join(e.State, "proc", id) }
	exists := func(id string) bool { _, err := os.Stat(dir(id)); return err == nil }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Set.RunOutputSweeper(ctx, keep, every)
	}()
	// The first sweep, at once, finds nothing old enough. The sweeper's
	// timer is the one due in 68 hours (a timer the runs above left for a
	// moment must not be mistaken for it). Its round falls exactly when
	// web.old turns 168h: were it due earlier, the fake clock would run it
	// at its own time on the way and the sweeper, reading the clock then,
	// would arm its next round in the time already passed.
	testkit.WaitFor(t, "the sweeper to wait for its next round", func() bool {
		due, ok := clk.NextDue()
		return ok && due.Equal(clk.Now().Add(every))
	})
	if !exists("web.old") || !exists("web.new") {
		t.Fatal("output removed before it expired")
	}
	clk.Advance(every) // web.old is 168h old
	testkit.WaitFor(t, "web.old to be removed", func() bool { return !exists("web.old") })
	outputFails(t, e, "web", map[string]any{"outputId": "web.old"}, executor.CodeNotFound, "keep_output")
	if p := output(t, e, "web", map[string]any{"outputId": "web.new"}); p.Content != "new" {
		t.Errorf("web.new reads %q", p.Content)
	}
	cancel()
	testkit.WaitFor(t, "the sweeper to stop", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	if !exists("web.new") {
		t.Error("web.new removed")
	}
	// Without a sweeper nothing is removed; a direct sweep removes it.
	if n, err := e.Set.SweepOutput(clk.Now().Add(keep), keep); err != nil || n != 1 || exists("web.new") {
		t.Errorf("SweepOutput: %d, %v", n, err)
	}
}

// TestProcOutputChatHint: the command a truncated proc.run result ends
// with parses in chat and reads the output's first page, whose rendering
// offers the next.
func TestProcOutputChatHint(t *testing.T) {
	e := verbtest.New(t, func(o *verbs.Options, _ *verbs.WorkspaceOptions) { o.TailBytes = 16 })
	ctx := asCaller("telegram.3.4", "telegram:3")
	out := e.RunCtx(ctx, "proc.run", verbs.ProcRunArgs{Executable: "seq", Arguments: []string{"1", "250"}})
	if out.Err != nil {
		t.Fatal(out.Err.Message)
	}
	text := executor.RenderText(out, false)
	const hint = "/proc.output outputId=telegram.3.4 stream=stdout startLine=1"
	if !strings.HasSuffix(text, "All of stdout: `"+hint+"`") {
		t.Fatalf("proc.run rendering does not end with the command for the rest:\n%s", text)
	}
	for page, cmd := range []string{hint, "/proc.output outputId=telegram.3.4 stream=stdout startLine=201"} {
		c, err := e.X.ParseCommand(cmd)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		got := e.X.Run(ctx, c.Envelope())
		if got.Err != nil {
			t.Fatalf("%s: %s", cmd, got.Err.Message)
		}
		text = executor.RenderText(got, false)
		switch page {
		case 0:
			if !strings.HasPrefix(text, "stdout of `telegram.3.4`, lines 1–200 of 250\n```\n1\n2\n") ||
				!strings.HasSuffix(text, "200\n```\nNext page: `/proc.output outputId=telegram.3.4 stream=stdout startLine=201`\nThe whole stdout as a file: `/proc.output outputId=telegram.3.4 stream=stdout asFile=true`") {
				t.Errorf("first page:\n%s", text)
			}
		case 1:
			if !strings.HasPrefix(text, "stdout of `telegram.3.4`, lines 201–250 of 250\n") || strings.Contains(text, "Next page") {
				t.Errorf("last page:\n%s", text)
			}
		}
	}
}

// TestProcOutputAsFile: asFile sends the whole stream as a file in a chat
// conversation, to the caller who ran the call only; a page says how.
func TestProcOutputAsFile(t *testing.T) {
	e := verbtest.New(t)
	r := runAs(t, e, "telegram.1.2", "telegram:1", verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "seq 1 450"}})
	page := output(t, e, "telegram:1", map[string]any{"outputId": r.OutputID})
	if text := page.Render(nil); !strings.Contains(text, "/proc.output outputId=telegram.1.2 stream=stdout asFile=true") {
		t.Fatalf("a page does not say how to get the whole stream:\n%s", text)
	}
	s := &sink{}
	ctx := executor.WithFiles(asCaller("test.read", "telegram:1"), executor.FileOffer{Sink: s, Limit: 1 << 20, Where: "Telegram"})
	out := e.RunCtx(ctx, "proc.output", map[string]any{"outputId": r.OutputID, "asFile": true})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	res := out.Value.(*verbs.ProcOutputResult)
	want := e.StateFile("proc/telegram.1.2/stdout.txt")
	if len(out.Files) != 1 || out.Files[0].Name != "telegram.1.2.stdout.txt" || string(s.files[out.Files[0].SHA256]) != want || res.SentAs != out.Files[0].Name || res.Content != "" {
		t.Fatalf("files %+v result %+v", out.Files, res)
	}
	if text := executor.RenderText(out, false); !strings.Contains(text, "450 lines") || !strings.Contains(text, "sent as the file telegram.1.2.stdout.txt") {
		t.Fatalf("reply %q", text)
	}
	ctx = executor.WithFiles(asCaller("test.read", "telegram:2"), executor.FileOffer{Sink: s, Limit: 1 << 20, Where: "Telegram"})
	if out := e.RunCtx(ctx, "proc.output", map[string]any{"outputId": r.OutputID, "asFile": true}); out.Err == nil || out.Err.Code != executor.CodeForbidden || len(out.Files) != 0 {
		t.Fatalf("another caller: %+v %+v", out.Err, out.Files)
	}
	outputFails(t, e, "telegram:1", map[string]any{"outputId": r.OutputID, "asFile": true}, executor.CodeInvalidArguments, "this surface takes no files")
}
