package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// stdioInput is the input of TestServeStdioLines: every kind of line the
// loop reads differently, and the lines run should see for it (blank lines
// are not run).
var stdioInput = []struct{ in, run string }{
	{`{"id":1,"verb":"fs.exists","arguments":{"path":"README.md"}}` + "\n", `{"id":1,"verb":"fs.exists","arguments":{"path":"README.md"}}`},
	{"\n", ""},
	{"   \n", ""},
	{`{"id":"two words","verb":"fs.readRange","arguments":{"path":"README.md","startLine":2,"endLine":3}}` + "\r\n", `{"id":"two words","verb":"fs.readRange","arguments":{"path":"README.md","startLine":2,"endLine":3}}`},
	{`{"verb":"fs.exists","arguments":{"path":"nope"}}` + "\n", `{"verb":"fs.exists","arguments":{"path":"nope"}}`},
	{`{"id": [1, {"a": "b"}] , "verb":"no.such","arguments":{}}` + "\n", `{"id": [1, {"a": "b"}] , "verb":"no.such","arguments":{}}`},
	{`{"id":5, not json` + "\n", `{"id":5, not json`},
	// Longer than the reader's 64 KiB buffer: read in pieces.
	{`{"id":6,"verb":"fs.exists","arguments":{"path":"` + strings.Repeat("d/", 40<<10) + `x"}}` + "\n", `{"id":6,"verb":"fs.exists","arguments":{"path":"` + strings.Repeat("d/", 40<<10) + `x"}}`},
	{`{"id":7,"verb":"fs.exists","arguments":{"path":"docs"}}` + "\n", `{"id":7,"verb":"fs.exists","arguments":{"path":"docs"}}`},
	// Over the line limit: never run, answered too_large.
	{`{"id":8,"pad":"` + strings.Repeat("p", executor.DefaultLimits.MaxInputBytes) + `"}` + "\n", "\x00too long"},
	// The last line has no newline.
	{`{"id":9,"verb":"fs.exists","arguments":{"path":"README.md"}}`, `{"id":9,"verb":"fs.exists","arguments":{"path":"README.md"}}`},
}

// TestServeStdioLines runs serveStdio in-process over the input above, read
// whole, in one-byte reads and in halves, writing to a regular file (every
// write fits: lines are read on the loop's goroutine, from the reader's own
// buffer) and to a buffer (room unknown: every write is made while a
// goroutine reads ahead). Each line must reach run intact, and each answer
// must be the result JSON with the id first, as encoded on its own.
func TestServeStdioLines(t *testing.T) {
	runLine := cliRunner(t)

	var input strings.Builder
	var wantRun []string
	var want bytes.Buffer
	limit := executor.DefaultLimits.MaxInputBytes
	for _, l := range stdioInput {
		input.WriteString(l.in)
		switch {
		case l.run == "":
		case l.run == "\x00too long":
			wantRun = append(wantRun, l.run)
			o := executor.Outcome{Err: executor.Errorf(executor.CodeTooLarge, "Line is over the %d-byte limit; it was discarded", limit)}
			want.Write(referenceResultLine(o.ID, o.JSON()))
		default:
			wantRun = append(wantRun, l.run)
			o := runLine(context.Background(), []byte(l.run))
			want.Write(referenceResultLine(o.ID, o.JSON()))
		}
	}
	if !strings.Contains(want.String(), `"id":"two words","succeeded":true`) || !strings.Contains(want.String(), `"id":[1, {"a": "b"}],"succeeded":false`) {
		t.Fatalf("the reference answers are not what this test expects:\n%s", want.String())
	}

	for _, rd := range []struct {
		name string
		r    func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte", iotest.OneByteReader},
		{"halves", iotest.HalfReader},
	} {
		for _, out := range []string{"file", "buffer"} {
			t.Run(rd.name+"/"+out, func(t *testing.T) {
				if rd.name == "one byte" && testing.Short() {
					t.Skip("-short: a megabyte read a byte at a time")
				}
				var got []string
				run := func(ctx context.Context, line []byte) *executor.Outcome {
					got = append(got, string(line))
					return runLine(ctx, line)
				}
				var w io.Writer
				var buf bytes.Buffer
				var f *os.File
				if out == "file" {
					var err error
					f, err = os.Create(filepath.Join(t.TempDir(), "out"))
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					w = f
				} else {
					w = &buf
				}
				if err := serveStdio(context.Background(), run, rd.r(strings.NewReader(input.String())), w); err != nil {
					t.Fatal(err)
				}
				if f != nil {
					b, err := os.ReadFile(f.Name())
					if err != nil {
						t.Fatal(err)
					}
					buf.Write(b)
				}
				if len(got) != len(wantRun)-1 { // the line over the limit is not run
					t.Fatalf("run saw %d lines, want %d", len(got), len(wantRun)-1)
				}
				k := 0
				for _, w := range wantRun {
					if w == "\x00too long" {
						continue
					}
					if got[k] != w {
						t.Fatalf("line %d reached run as %.80q…, want %.80q…", k, got[k], w)
					}
					k++
				}
				if g, w := buf.String(), want.String(); g != w {
					gl, wl := strings.Split(g, "\n"), strings.Split(w, "\n")
					for i := range min(len(gl), len(wl)) {
						if gl[i] != wl[i] {
							t.Fatalf("answer %d:\n got %.300s\nwant %.300s", i, gl[i], wl[i])
						}
					}
					t.Fatalf("%d answer lines, want %d", len(gl), len(wl))
				}
			})
		}
	}
}

// referenceResultLine is the answer line as the loop wrote it before it
// encoded results in place: the id, then the result JSON without its
// opening brace.
func referenceResultLine(id, res []byte) []byte {
	if len(id) > 0 {
		return fmt.Appendf(nil, `{"id":%s,%s`+"\n", bytes.TrimSpace(id), res[1:])
	}
	return append(append([]byte(nil), res...), '\n')
}

// TestAppendStdioResult compares the in-place encoding of answer lines
// with encoding each result on its own, for results that encode
// themselves, results encoded by encoding/json and failures, with and
// without an id, after output already pending.
func TestAppendStdioResult(t *testing.T) {
	type plain struct {
		executor.Result
		Text string `json:"text"`
	}
	values := []*executor.Outcome{
		{Value: &plain{Result: executor.Result{Succeeded: true}, Text: "<b> & \"q\""}},
		{Err: executor.Errorf(executor.CodeNotFound, "No such file: %q", "a\nb")},
		{Value: &plain{}},
	}
	ids := [][]byte{nil, []byte(`1`), []byte(` "x y" `), []byte(`{"k":[1,2]}`)}
	for _, o := range values {
		for _, id := range ids {
			o.ID = id
			for _, pending := range []string{"", "{\"id\":0,\"succeeded\":true}\n"} {
				got := appendStdioResult([]byte(pending), o)
				want := append([]byte(pending), referenceResultLine(id, o.JSON())...)
				if !bytes.Equal(got, want) {
					t.Errorf("id %q, pending %q:\n got %s\nwant %s", id, pending, got, want)
				}
			}
		}
	}
}

// TestStdioLineAllocs holds one line's work on the CLI path (decoding, turn
// id, call context, mirror decision, running fs.exists, the answer line
// appended to pending output) to its allocation budget; counts do not
// depend on the machine's load, unlike times.
func TestStdioLineAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are measured without the race detector")
	}
	run := cliRunner(t)
	line := stdioLine{line: []byte(`{"id":7,"verb":"fs.exists","arguments":{"path":"README.md"}}`)}
	out := make([]byte, 0, 4096)
	ctx := context.Background()
	serveLine(ctx, run, line, executor.DefaultLimits.MaxInputBytes, &out)
	if !strings.HasPrefix(string(out), `{"id":7,"succeeded":true,"exists":true}`) {
		t.Fatalf("answer: %s", out)
	}
	const budget = 12
	if n := testing.AllocsPerRun(200, func() {
		out = out[:0]
		serveLine(ctx, run, line, executor.DefaultLimits.MaxInputBytes, &out)
	}); n > budget {
		t.Errorf("one fs.exists line allocates %v times, over the budget of %d", n, budget)
	}
}

// cliRunner returns runCLI over the default configuration with a workspace
// of the test's, as `hub exec --stdio` runs each line; everything it opens
// is closed when the test ends.
func cliRunner(t *testing.T) func(context.Context, []byte) *executor.Outcome {
	t.Helper()
	cfg := config.Default()
	cfg.Workspace, cfg.StateDir = workspace(t), filepath.Join(t.TempDir(), "state")
	tc, err := buildExecutor(cfg, testkit.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	mir := newCLIMirror(cfg)
	t.Cleanup(func() { mir.Close() })
	ids := newTurnIDs("cli")
	return func(ctx context.Context, input []byte) *executor.Outcome {
		return runCLI(ctx, tc.exec, mir, ids, input, "", io.Discard)
	}
}
