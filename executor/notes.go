package executor

import (
	"context"
	"sync"
)

// notesKey carries the notes of the call being run.
type notesKey struct{}

// notes collects what a verb wants people to know besides its result.
type notes struct {
	mu    sync.Mutex
	list  []string
	files []SentFile // SendFile's
}

// Note attaches a remark for people to the call running in ctx, such as
// "the session workspace had disappeared and was recreated". The executor
// puts it in Outcome.Notes and RenderText shows it under the reply; the
// result JSON is unchanged. Outside a call it does nothing.
func Note(ctx context.Context, text string) {
	n, ok := ctx.Value(notesKey{}).(*notes)
	if !ok || text == "" {
		return
	}
	n.mu.Lock()
	n.list = append(n.list, text)
	n.mu.Unlock()
}

// notesCtx carries a call's notes: context.WithValue and the notes in one
// value, itself part of Run's one allocation per call (runCall).
type notesCtx struct {
	context.Context
	n notes
}

func (c *notesCtx) Value(key any) any {
	if key == (notesKey{}) {
		return &c.n
	}
	return c.Context.Value(key)
}

func (n *notes) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.list
}

func (n *notes) takeFiles() []SentFile {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.files
}
