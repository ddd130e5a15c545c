// Package hubtest is the one test harness of a hub runtime on temporary
// directories: a real state root (bbolt file, mirrors), the real verbs over a
// real workspace, and a recording sender for fake platforms. Every package
// whose tests need a runtime uses it.
package hubtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/boltmeta"
	"github.com/a6afc2ce/hermes-hub/workspaces"
)

// Config is config.Default() on a workspace and a state directory (temporary
// ones when empty; the state defaults to <workspace>/.hub), with fast outbox
// retries.
func Config(t testing.TB, workspace, state string) *config.Config {
	t.Helper()
	cfg := config.Default()
	if workspace == "" {
		workspace = t.TempDir()
	}
	if state == "" {
		state = filepath.Join(workspace, ".hub")
	}
	cfg.Workspace, cfg.StateDir = workspace, state
	cfg.Outbox.BackoffBase = config.Duration(10 * time.Millisecond)
	cfg.Outbox.BackoffMax = config.Duration(50 * time.Millisecond)
	return cfg
}

// Options adjust an Env.
type Options struct {
	// Register adds verbs to the registry, after the state root is open (so
	// verbs may keep metadata in it); nil registers the real verbs over the
	// configured workspace (with the state directory denied).
	Register func(reg *executor.Registry, cfg *config.Config, st *store.State) error
	// Runtime is passed to hub.Open (a discarding Logger is filled in).
	Runtime hub.RuntimeOptions
	// Workspaces opens every configured named workspace as `hub serve`
	// does (package workspaces, session metadata in the state) instead of
	// the default one alone, with Runners building the runners of kind
	// docker.
	Workspaces bool
	Runners    workspaces.RunnerFactory
}

// Env is a runtime on a real state root. Close (also run at cleanup) closes
// the runtime, then the state and the workspace.
type Env struct {
	Config    *config.Config
	State     *store.State
	Runtime   *hub.Runtime
	Workspace *verbs.Workspace // nil with Options.Register
	// Workspaces is the open named workspaces with Options.Workspaces.
	Workspaces *workspaces.Set
	once       sync.Once
	closeErr   error
}

// Open opens the state root of cfg, builds the executor and opens a runtime;
// it does not start it (register senders, then Start).
func Open(t testing.TB, cfg *config.Config, o Options) *Env {
	t.Helper()
	e, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil && !errors.Is(err, outbox.ErrClosed) {
			t.Errorf("close the hub runtime: %v", err)
		}
	})
	return e
}

// New is Open for code that has no testing.TB (a child process of a test):
// the caller closes the Env.
func New(cfg *config.Config, o Options) (e *Env, err error) {
	if o.Runtime.Logger == nil {
		o.Runtime.Logger = testkit.Discard()
	}
	e = &Env{Config: cfg}
	e.State, err = store.Open(cfg.StateDir, store.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.State.Close()
			if e.Workspaces != nil {
				e.Workspaces.Close()
			} else if e.Workspace != nil {
				e.Workspace.Close()
			}
		}
	}()
	reg := executor.NewRegistry()
	switch {
	case o.Register != nil:
		err = o.Register(reg, cfg, e.State)
	case o.Workspaces:
		var set *workspaces.Set
		if set, err = OpenWorkspaces(reg, cfg, e.State, o.Runners); err == nil {
			e.Workspaces = set // never a typed nil: the cleanup above tests it
			e.Workspace = e.Workspaces.Default()
			o.Runtime.Destinations = e.Workspaces
		}
	default:
		e.Workspace, err = realVerbs(reg, cfg, e.State.Root())
	}
	if err != nil {
		return nil, err
	}
	e.Runtime, err = hub.Open(cfg, e.State, executor.New(reg, executor.Options{Logger: o.Runtime.Logger}), o.Runtime)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// RealVerbs registers the hub's verbs over cfg's workspace, with the state
// directory and the configuration's files protected as `hub serve`
// protects them (the state created first, so that its identity is known),
// and returns the workspace.
func RealVerbs(reg *executor.Registry, cfg *config.Config) (*verbs.Workspace, error) {
	return realVerbs(reg, cfg, nil)
}

// realVerbs is RealVerbs with the verbs writing through the opened state
// directory state (nil: they open it themselves).
func realVerbs(reg *executor.Registry, cfg *config.Config, root *os.Root) (*verbs.Workspace, error) {
	state, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	ws, err := verbs.OpenWorkspace(cfg.Workspace, verbs.WorkspaceOptions{
		Protect: []string{state}, ProtectFiles: workspaces.ProtectedFiles(cfg.ProtectedFiles()),
	})
	if err != nil {
		return nil, err
	}
	vopts := verbs.DefaultOptions(cfg.StateDir)
	vopts.State = root
	vopts.UploadDir, vopts.MaxUploadBytes, vopts.UploadTimeout = cfg.Uploads.Dir, int64(cfg.Uploads.MaxBytes), cfg.Uploads.Timeout.D()
	if err := verbs.Register(reg, ws, vopts); err != nil {
		ws.Close()
		return nil, err
	}
	return ws, nil
}

// OpenWorkspaces opens cfg's named workspaces with their session metadata
// in st and registers every verb (the vfs ones too) over them, as `hub
// serve` does.
func OpenWorkspaces(reg *executor.Registry, cfg *config.Config, st *store.State, runners workspaces.RunnerFactory) (*workspaces.Set, error) {
	state, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	meta, err := boltmeta.Open(st.DB())
	if err != nil {
		return nil, err
	}
	set, err := workspaces.Open(cfg, workspaces.Options{StateDir: state, Meta: meta, Runners: runners, Logger: testkit.Discard()})
	if err != nil {
		return nil, err
	}
	vopts := verbs.DefaultOptions(cfg.StateDir)
	vopts.State = st.Root()
	vopts.UploadDir, vopts.MaxUploadBytes, vopts.UploadTimeout = cfg.Uploads.Dir, int64(cfg.Uploads.MaxBytes), cfg.Uploads.Timeout.D()
	if _, err := set.Register(reg, vopts); err != nil {
		set.Close()
		return nil, err
	}
	return set, nil
}

// Start starts the runtime (register every sender first).
func (e *Env) Start(t testing.TB) {
	t.Helper()
	if err := e.Runtime.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Close closes the runtime, the state and the workspace, once; it may be
// called early (to reopen the same directories) and again at cleanup.
func (e *Env) Close() error {
	e.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
		defer cancel()
		errs := []error{e.Runtime.Close(ctx), e.State.Close()}
		if e.Workspaces != nil {
			errs = append(errs, e.Workspaces.Close())
		} else if e.Workspace != nil {
			errs = append(errs, e.Workspace.Close())
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}

// WriteFile writes a file in the workspace for a test.
func (e *Env) WriteFile(t testing.TB, name, content string) {
	t.Helper()
	p := filepath.Join(e.Config.Workspace, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Recorder is a fake platform: an outbox.Sender that records every chunk
// sent, per target, and answers with a message id counting from 1.
type Recorder struct {
	mu    sync.Mutex
	sent  map[string][]*outbox.Entry
	files map[string][]byte // outbox id → the stored file's bytes, as read
	count int
}

var _ outbox.Sender = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{sent: map[string][]*outbox.Entry{}, files: map[string][]byte{}}
}

// Send records a copy of e, and reads the stored file it carries as a
// platform would.
func (r *Recorder) Send(ctx context.Context, e *outbox.Entry) (outbox.Receipt, error) {
	var data []byte
	if a := e.Attachment; a != nil && a.Stored() {
		f, err := a.Reader()
		if err == nil {
			data, err = io.ReadAll(f)
			f.Close()
		}
		if err != nil {
			return outbox.Receipt{}, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cp := *e
	r.sent[e.Target.String()] = append(r.sent[e.Target.String()], &cp)
	if data != nil {
		r.files[e.ID] = data
	}
	r.count++
	return outbox.Receipt{MessageID: fmt.Sprint(r.count)}, nil
}

// File returns the bytes of the stored file the chunk id carried, as sent.
func (r *Recorder) File(id string) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.files[id]
	return b, ok
}

// Sent returns the chunks sent to target so far.
func (r *Recorder) Sent(target string) []*outbox.Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*outbox.Entry(nil), r.sent[target]...)
}

// Wait waits until target has at least n chunks and returns them.
func (r *Recorder) Wait(t testing.TB, target string, n int) []*outbox.Entry {
	t.Helper()
	var got []*outbox.Entry
	testkit.WaitFor(t, fmt.Sprintf("%d chunks for %s", n, target), func() bool {
		got = r.Sent(target)
		return len(got) >= n
	})
	return got
}

// HandleAll registers r as the sender of every chat platform and the web.
func (r *Recorder) HandleAll(t testing.TB, rt *hub.Runtime) {
	t.Helper()
	keys := []chat.Key{chat.WebKey}
	for _, s := range chat.Specs() {
		keys = append(keys, chat.ChatKey(s.Name, "", ""))
	}
	for _, k := range keys {
		if err := rt.Mux.Handle(outbox.PatternOf(k), r); err != nil {
			t.Fatal(err)
		}
	}
}

// Texts returns the texts of the chunks sent to target so far.
func (r *Recorder) Texts(target string) []string {
	var out []string
	for _, e := range r.Sent(target) {
		out = append(out, e.Text)
	}
	return out
}
