package mcp

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progress listens to the call's own progress reports (executor.WithProgress
// on the returned context, which the hub hands to the verb) and sends a
// notification every ProgressInterval: the elapsed seconds as progress, and
// a message with the last lines of output the verb reported so far. stop
// ends it and waits for the sender; cancelling ctx still cancels the call.
func (s *Server) progress(ctx context.Context, ss *mcp.ServerSession, token any, verb, turn string) (callCtx context.Context, stop func()) {
	var (
		mu   sync.Mutex
		tail string
	)
	callCtx = executor.WithProgress(ctx, func(p executor.Progress) {
		mu.Lock()
		tail = p.Tail
		mu.Unlock()
	})
	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := s.opts.Clock.Now()
		for {
			if !clock.Sleep(pctx, s.opts.Clock, s.opts.ProgressInterval) {
				return
			}
			elapsed := s.opts.Clock.Now().Sub(start)
			mu.Lock()
			last := tail
			mu.Unlock()
			err := ss.NotifyProgress(pctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: elapsed.Seconds(), Message: progressMessage(verb, elapsed, last),
			})
			if err != nil && pctx.Err() == nil {
				s.log.Debug("progress notification", "turn", turn, "err", err)
			}
		}
	}()
	return callCtx, func() {
		cancel()
		wg.Wait()
	}
}

// progressMessage is a progress notification's message: how long the call
// has run and, once it wrote any, the last lines of its output.
func progressMessage(verb string, elapsed time.Duration, tail string) string {
	msg := fmt.Sprintf("%s running for %s", verb, elapsed.Round(100*time.Millisecond))
	if tail == "" {
		return msg + "; no output yet"
	}
	return msg + "; last lines of output:\n" + tail
}
