package executor

import "context"

// Call carries who asked for a verb and on whose behalf, for verbs that need
// it: proc.run names its output directory after TurnID, session workspaces
// are chosen by Session.
type Call struct {
	// TurnID identifies the turn (see DESIGN §4); it contains no ':' or '/'.
	TurnID string
	// Session names the conversation for session workspaces (a chat key or an
	// API caller's explicit session); empty means the host workspace.
	Session string
	// Identity is the caller, such as "telegram:123" or "web".
	Identity string
}

type callKey struct{}

// WithCall returns a context carrying c.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the Call stored in ctx, or the zero Call.
func CallFrom(ctx context.Context) Call {
	c, _ := ctx.Value(callKey{}).(Call)
	return c
}
