package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestExecStdioPipelined writes every request before reading any answer,
// more than the pipes hold both ways (a few MB in, a few MB out): the server
// must keep reading while its output waits, answer every line in order and
// echo every id. A server that stops reading while its output pipe is full
// deadlocks here; the process is killed shortly before the test's deadline
// so that shows as a failure, not a hang.
func TestExecStdioPipelined(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines int
		pad   int // bytes of padding in string ids and malformed lines, to fill the pipes sooner
	}{
		{"small requests", 30_000, 0},
		{"large requests", 2_000, 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if dl, ok := t.Deadline(); ok {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, dl.Add(-10*time.Second))
				defer cancel()
			}
			dir := workspace(t)
			cmd := exec.CommandContext(ctx, hubBin, "exec", "--stdio")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "HUB_CONFIG=")
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pad := strings.Repeat("p", tc.pad)
			w := bufio.NewWriter(stdin)
			for i := range tc.lines {
				switch i % 3 {
				case 0:
					fmt.Fprintf(w, `{"id":%d,"verb":"fs.exists","arguments":{"path":"README.md"}}`+"\n", i)
				case 1:
					fmt.Fprintf(w, `{"id":"s%d%s","verb":"fs.readRange","arguments":{"path":"README.md","startLine":2,"endLine":3}}`+"\n", i, pad)
				default:
					fmt.Fprintf(w, `{"id":%d, not json %s`+"\n", i, pad)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatalf("write requests: %v (the server stopped reading)", err)
			}
			stdin.Close()
			r := bufio.NewReaderSize(stdout, 1<<20)
			for i := range tc.lines {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("answer %d of %d: %v", i, tc.lines, err)
				}
				m := decode(t, line)
				switch i % 3 {
				case 0:
					if m["id"] != float64(i) || m["exists"] != true {
						t.Fatalf("answer %d: %v", i, m)
					}
				case 1:
					if m["id"] != fmt.Sprintf("s%d%s", i, pad) || m["content"] != "2: line two\n3: line three" {
						t.Fatalf("answer %d: %v", i, m)
					}
				default:
					if m["errorCode"] != "invalid_envelope" {
						t.Fatalf("answer %d: %v", i, m)
					}
				}
			}
			if rest, _ := r.ReadString('\n'); rest != "" {
				t.Fatalf("more answers than requests: %q", rest)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("stdio exit: %v", err)
			}
		})
	}
}
