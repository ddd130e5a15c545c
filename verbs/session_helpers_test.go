package verbs_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// fakeNow is a settable clock for session tests.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeNow) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeNow) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// t0 has sub-millisecond digits, so tests see the truncation.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, time.UTC)

// sessEnv is a hub with session workspaces: a host workspace, a mount root
// "hostdata" with a few files, a sessions root, in-memory file metadata and
// every verb (fs.*, proc.run, sys.machineInfo, vfs.*) in an executor.
type sessEnv struct {
	t        testing.TB
	base     string
	hostDir  string // the host workspace
	mountDir string // the mount root
	root     string // the sessions root
	clock    *fakeNow
	meta     *verbs.MemoryMeta
	opts     verbs.SessionOptions
	host     *verbs.Workspace
	src      *verbs.SessionSource
	x        *executor.Executor
	verbOpts func(*verbs.Options) // adjusts the verbs' options; nil: the defaults
}

type sessOption func(*verbs.SessionOptions, *sessEnv)

func newSessEnv(t testing.TB, opts ...sessOption) *sessEnv {
	t.Helper()
	base := t.TempDir()
	e := &sessEnv{
		t: t, base: base, hostDir: filepath.Join(base, "host"), mountDir: filepath.Join(base, "hostdata"),
		root: filepath.Join(base, "state", "sessions"), clock: &fakeNow{t: t0}, meta: verbs.NewMemoryMeta(),
	}
	verbtest.WriteFile(t, filepath.Join(e.hostDir, "host-only.txt"), "host\n")
	verbtest.WriteFile(t, filepath.Join(e.mountDir, "docs", "guide.md"), "# Guide\n")
	verbtest.WriteFile(t, filepath.Join(e.mountDir, "docs", "notes.txt"), "notes\n")
	verbtest.WriteFile(t, filepath.Join(e.mountDir, "docs", "sub", "deep.md"), "deep\n")
	e.opts = verbs.SessionOptions{
		Root:       e.root,
		Meta:       e.meta,
		MountRoots: []string{e.mountDir},
		Mounts:     []verbs.Mount{{HostPath: "docs", Include: []string{"*.md"}}},
		Now:        e.clock.Now,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, o := range opts {
		o(&e.opts, e)
	}
	host, err := verbs.OpenWorkspace(e.hostDir, verbs.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	e.host = host
	e.open()
	return e
}

// open (re)opens the SessionSource and the executor over it.
func (e *sessEnv) open() {
	e.t.Helper()
	src, err := verbs.OpenSessions(e.host, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { src.Close() })
	e.src = src
	reg := executor.NewRegistry()
	vo := verbs.DefaultOptions(filepath.Join(e.base, "state"))
	if e.verbOpts != nil {
		e.verbOpts(&vo)
	}
	if err := verbs.Register(reg, src, vo); err != nil {
		e.t.Fatal(err)
	}
	if err := src.Register(reg); err != nil {
		e.t.Fatal(err)
	}
	e.x = executor.New(reg, executor.Options{})
}

// reopen closes the SessionSource and opens a new one on the same root and
// metadata, as a restarted hub would.
func (e *sessEnv) reopen() {
	e.t.Helper()
	if err := e.src.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

// run executes one verb for session (empty: the host workspace).
func (e *sessEnv) run(session, verb string, args any) *executor.Outcome {
	e.t.Helper()
	return e.runCtx(context.Background(), session, verb, args)
}

// runCtx is run within ctx.
func (e *sessEnv) runCtx(ctx context.Context, session, verb string, args any) *executor.Outcome {
	e.t.Helper()
	in, err := json.Marshal(map[string]any{"verb": verb, "arguments": args})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx = executor.WithCall(ctx, executor.Call{TurnID: "test.1", Session: session, Identity: "test:1"})
	return e.x.ExecuteInput(ctx, in)
}

// sok runs a verb that must succeed and returns its typed result.
func sok[R any](e *sessEnv, session, verb string, args any) R {
	e.t.Helper()
	out := e.run(session, verb, args)
	if out.Err != nil {
		e.t.Fatalf("%s %s %v: failed: %s (%s)", session, verb, args, out.Err.Message, out.Err.Code)
	}
	r, isR := out.Value.(*R)
	if !isR {
		e.t.Fatalf("%s: result is %T", verb, out.Value)
	}
	return *r
}

// sfails runs a verb that must fail with code and a message containing parts.
func (e *sessEnv) sfails(session string, code executor.ErrorCode, verb string, args any, parts ...string) *executor.Error {
	e.t.Helper()
	out := e.run(session, verb, args)
	if out.Err == nil {
		e.t.Fatalf("%s %s %v: succeeded, want %s", session, verb, args, code)
	}
	verbtest.CheckErr(e.t, out.Err, code, parts...)
	return out.Err
}

// sessionDir is the on-disk workspace of a session.
func (e *sessEnv) sessionDir(session string) string {
	return filepath.Join(e.root, verbs.SessionDirName(session), "live")
}

// ms formats t as results show it.
func ms(t time.Time) string { return t.UTC().Truncate(time.Millisecond).Format(verbs.TimeFormat) }
