package executor

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
)

// Options configure an Executor.
type Options struct {
	// Clock times each call (Outcome.Duration); nil means the real clock.
	Clock  clock.Clock
	Limits Limits
	// Timeout bounds every verb call; zero means no limit beyond the caller's
	// context (proc.run has its own timeout).
	Timeout time.Duration
	// Logger receives panics recovered from verbs; nil means slog.Default().
	Logger *slog.Logger
}

// Executor decodes envelopes, runs verbs from a Registry and encodes results.
// Every failure is a result, never a panic or a Go error.
type Executor struct {
	reg  *Registry
	opts Options
}

// New returns an Executor over reg.
func New(reg *Registry, opts Options) *Executor {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	opts.Limits = opts.Limits.withDefaults()
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Executor{reg: reg, opts: opts}
}

// Registry returns the executor's registry.
func (x *Executor) Registry() *Registry { return x.reg }

// Execute decodes a YAML or JSON envelope, runs the verb and returns the
// result JSON.
func (x *Executor) Execute(ctx context.Context, input []byte) []byte {
	out := x.ExecuteInput(ctx, input)
	return out.JSON()
}

// ExecuteInput is Execute returning the Outcome.
func (x *Executor) ExecuteInput(ctx context.Context, input []byte) *Outcome {
	env, err := x.DecodeEnvelope(input)
	if err != nil {
		return &Outcome{Err: ErrorFrom(err), ID: env.ID}
	}
	return x.Run(ctx, env)
}

// Run executes a decoded envelope.
func (x *Executor) Run(ctx context.Context, env Envelope) (out *Outcome) {
	start := x.opts.Clock.Now()
	// The Outcome and the call's notes context are one allocation.
	rc := &runCall{out: Outcome{ID: env.ID}}
	out = &rc.out
	defer func() { out.Duration = x.opts.Clock.Now().Sub(start) }()
	reg, ok := x.reg.lookup(env.Verb)
	if !ok {
		out.Err = x.reg.unknownVerb(env.Verb)
		return out
	}
	out.Verb = reg.info.Name
	args, err := reg.decodeArgs(env.Arguments)
	if err != nil {
		out.Err = ErrorFrom(err)
		return out
	}
	if a, ok := args.(*aliasArgs); ok {
		a.call.ID, a.call.Workspace = env.ID, env.Workspace
		return x.runAlias(ctx, a)
	}
	out.Args = args
	if env.Workspace != "" {
		// The caller resolves the workspace into the Call; an envelope that
		// names another one never runs somewhere it did not ask for.
		if cw := CallFrom(ctx).Workspace; env.Workspace != cw && !(cw == "" && env.Workspace == DefaultWorkspace) {
			if cw == "" {
				cw = DefaultWorkspace
			}
			out.Err = Errorf(CodeForbidden, "The envelope names workspace %q but this surface runs it in %q; send it where workspaces are resolved (the hub's API, chat, or hub exec --workspace %s)", env.Workspace, cw, env.Workspace)
			return out
		}
	}
	if x.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, x.opts.Timeout)
		defer cancel()
	}
	rc.notes.Context = ctx
	val, err := x.call(&rc.notes, reg, args)
	out.Notes = rc.notes.n.take()
	if err != nil {
		// A file sent by a call that then failed is not delivered; the
		// store's sweep removes its bytes.
		out.Err = ErrorFrom(err)
		return out
	}
	val.(resultHolder).verbResult().Succeeded = true
	val.(resultHolder).verbResult().ErrorMessage = ""
	val.(resultHolder).verbResult().ErrorCode = ""
	fillNilLists(reflect.ValueOf(val))
	out.Value = val
	out.Files = rc.notes.n.takeFiles()
	return out
}

// runCall is what Run allocates for one call: its Outcome and the context
// that collects its notes (see Note).
type runCall struct {
	out   Outcome
	notes notesCtx
}

func (x *Executor) call(ctx context.Context, reg *registration, args any) (val any, err error) {
	defer func() {
		if p := recover(); p != nil {
			x.opts.Logger.Error("verb panicked", "verb", reg.info.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			val, err = nil, Errorf(CodeInternal, "Internal error in %s: %v", reg.info.Name, p)
		}
	}()
	return reg.run(ctx, args)
}
