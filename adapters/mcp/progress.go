package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progress sends a notification every ProgressInterval while a call runs:
// the elapsed seconds as progress, and for proc.run the lines written to
// stdout and stderr so far. stop ends it and waits for the sender.
func (s *Server) progress(ctx context.Context, ss *mcp.ServerSession, token any, verb, turn string) (stop func()) {
	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := s.opts.Clock.Now()
		var out, errs lineCounter
		if verb == "proc.run" && s.opts.ProcDir != "" {
			out.path = filepath.Join(s.opts.ProcDir, turn, "stdout.txt")
			errs.path = filepath.Join(s.opts.ProcDir, turn, "stderr.txt")
		}
		for {
			if !clock.Sleep(pctx, s.opts.Clock, s.opts.ProgressInterval) {
				return
			}
			elapsed := s.opts.Clock.Now().Sub(start)
			msg := fmt.Sprintf("%s running for %s", verb, elapsed.Round(100*time.Millisecond))
			if out.path != "" {
				msg += fmt.Sprintf("; output so far: %d stdout lines, %d stderr lines", out.count(), errs.count())
			}
			err := ss.NotifyProgress(pctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: elapsed.Seconds(), Message: msg,
			})
			if err != nil && pctx.Err() == nil {
				s.log.Debug("progress notification", "turn", turn, "err", err)
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// lineCounter counts the newlines of a growing file, reading only what was
// added since the last count.
type lineCounter struct {
	path  string
	off   int64
	lines int
}

func (c *lineCounter) count() int {
	f, err := os.Open(c.path)
	if err != nil {
		return c.lines
	}
	defer f.Close()
	if _, err := f.Seek(c.off, io.SeekStart); err != nil {
		return c.lines
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		c.lines += bytes.Count(buf[:n], []byte{'\n'})
		c.off += int64(n)
		if err != nil {
			return c.lines
		}
	}
}
