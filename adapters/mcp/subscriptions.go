package mcp

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Subscriptions to resources (docs/mcp.md): a subscription is an fs.watch
// turn of its subscriber that answers at once (timeoutSeconds 0) with the
// entry's state (a file that is not there yet may be subscribed to), and
// each subscribed URI is watched by one chain of
// fs.watch turns, run as one of its subscribers, each from the state the
// one before returned; a change sends notifications/resources/updated to
// every session subscribed to the URI. The chain ends when its last
// subscriber unsubscribes or its session closes.

// watchRetry is how long a watch waits after a failed fs.watch turn (the
// grant taken away, the file's directory refused) before it tries again.
const watchRetry = 5 * time.Second

// watchSeconds is the timeoutSeconds of each fs.watch turn (its most; the
// verb timeout bounds it too).
const watchSeconds = 600

// watches are the server's watched URIs.
type watches struct {
	// base ends every watch (Server.Close); wg counts the watches running.
	base context.Context
	end  context.CancelFunc
	wg   sync.WaitGroup

	mu       sync.Mutex
	byURI    map[string]*watch
	sessions map[*mcp.ServerSession]bool // sessions whose end is awaited
}

// watch is one watched URI: its subscribers and the end of its chain.
type watch struct {
	subs map[*mcp.ServerSession]string // session -> identity
	stop context.CancelFunc
}

// subscribe answers resources/subscribe.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	p, err := pathOf(uri)
	if err != nil {
		return err
	}
	var now watchResult
	if err := s.turn(ctx, req.Session, req.Extra, "fs.watch", map[string]any{"path": p, "timeoutSeconds": 0}, &now); err != nil {
		return protocolError(err, "")
	}
	s.watch(req.Session, s.caller(ctx, req.Extra), uri, p, now.State)
	return nil
}

// unsubscribe answers resources/unsubscribe.
func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s.unwatch(req.Session, req.Params.URI)
	return nil
}

func (s *Server) watch(ss *mcp.ServerSession, identity, uri, p, since string) {
	w := &s.watches
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byURI == nil {
		w.byURI, w.sessions = map[string]*watch{}, map[*mcp.ServerSession]bool{}
	}
	if !w.sessions[ss] {
		w.sessions[ss] = true
		go func() {
			_ = ss.Wait()
			s.endSession(ss)
		}()
	}
	if wt := w.byURI[uri]; wt != nil {
		wt.subs[ss] = identity
		return
	}
	ctx, stop := context.WithCancel(w.base)
	wt := &watch{subs: map[*mcp.ServerSession]string{ss: identity}, stop: stop}
	w.byURI[uri] = wt
	w.wg.Go(func() { s.watchLoop(ctx, wt, uri, p, since) })
}

func (s *Server) unwatch(ss *mcp.ServerSession, uri string) {
	w := &s.watches
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt := w.byURI[uri]; wt != nil {
		delete(wt.subs, ss)
		if len(wt.subs) == 0 {
			wt.stop()
			delete(w.byURI, uri)
		}
	}
}

// Close ends the watches of subscribed resources and waits until their
// last fs.watch turns are done. The server sends no more updates.
func (s *Server) Close() {
	s.watches.end()
	s.watches.wg.Wait()
}

// endSession drops the subscriptions of a session that closed.
func (s *Server) endSession(ss *mcp.ServerSession) {
	w := &s.watches
	w.mu.Lock()
	delete(w.sessions, ss)
	var uris []string
	for uri, wt := range w.byURI {
		if _, ok := wt.subs[ss]; ok {
			uris = append(uris, uri)
		}
	}
	w.mu.Unlock()
	for _, uri := range uris {
		s.unwatch(ss, uri)
	}
}

// subscriber is one of the URI's subscribers to run the next fs.watch as.
func (s *Server) subscriber(wt *watch) (*mcp.ServerSession, string, bool) {
	s.watches.mu.Lock()
	defer s.watches.mu.Unlock()
	for ss, id := range wt.subs {
		return ss, id, true
	}
	return nil, "", false
}

// watchResult is the part of fs.watch's result the chain uses.
type watchResult struct {
	Changed bool   `json:"changed"`
	State   string `json:"state"`
}

// watchLoop runs the chain of fs.watch turns of one URI until ctx ends.
func (s *Server) watchLoop(ctx context.Context, wt *watch, uri, p, since string) {
	for ctx.Err() == nil {
		ss, identity, ok := s.subscriber(wt)
		if !ok {
			return
		}
		var res watchResult
		args := map[string]any{"path": p, "since": since, "timeoutSeconds": watchSeconds}
		err := s.turnAs(ctx, ss, identity, "fs.watch", args, &res)
		if ctx.Err() != nil {
			// Unsubscribed while the turn ran: a change it saw may be one
			// made after the unsubscribing was answered, which no one asked
			// to hear of (the verb looks at the file before it listens for
			// the end of its context).
			return
		}
		if err != nil {
			s.log.Warn("resource watch", "uri", uri, "identity", identity, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(watchRetry):
			}
			continue
		}
		if res.Changed {
			if err := s.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				s.log.Warn("resource updated notification", "uri", uri, "err", err)
			}
		}
		since = res.State
	}
}
