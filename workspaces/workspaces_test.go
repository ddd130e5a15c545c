package workspaces

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// fakeRunner records proc.run calls instead of starting containers.
type fakeRunner struct {
	mu       sync.Mutex
	name     string
	specs    []verbs.RunSpec
	resets   []string
	checkErr error
	closed   bool
}

func (f *fakeRunner) Run(ctx context.Context, spec verbs.RunSpec) (verbs.RunResult, error) {
	f.mu.Lock()
	f.specs = append(f.specs, spec)
	f.mu.Unlock()
	fmt.Fprintf(spec.Stdout, "ran %s in %s", spec.Executable, f.name)
	return verbs.RunResult{ExitCode: 3}, nil
}
func (f *fakeRunner) Check(context.Context) error { return f.checkErr }
func (f *fakeRunner) Reset(_ context.Context, session string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resets = append(f.resets, session)
	return nil
}
func (f *fakeRunner) Describe() string { return "fake container of " + f.name }
func (f *fakeRunner) Close() error     { f.closed = true; return nil }

type fixture struct {
	cfg     *config.Config
	set     *Set
	x       *executor.Executor
	runners map[string]*fakeRunner
}

func open(t *testing.T, mode string) *fixture {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"main", "a", "sb"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.Workspace = filepath.Join(root, "main")
	cfg.StateDir = filepath.Join(root, "main", ".hub")
	cfg.Sessions.Mode = mode
	cfg.Workspaces.Named = map[string]config.WorkspaceConfig{
		"alpha":   {Path: filepath.Join(root, "a"), Destination: config.Destination{Kind: config.DestinationLocal}},
		"sandbox": {Path: filepath.Join(root, "sb"), Destination: config.Destination{Kind: config.DestinationDocker, Image: "busybox", Network: "none"}},
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := &fixture{cfg: cfg, runners: map[string]*fakeRunner{}}
	set, err := Open(cfg, Options{
		StateDir: cfg.StateDir, Meta: verbs.NewMemoryMeta(),
		Runners: func(name string, d config.Destination) (verbs.Runner, error) {
			if d.Kind != config.DestinationDocker {
				t.Errorf("factory asked for kind %s", d.Kind)
			}
			r := &fakeRunner{name: name}
			f.runners[name] = r
			return r, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	reg := executor.NewRegistry()
	if _, err := set.Register(reg, verbs.DefaultOptions(cfg.StateDir)); err != nil {
		t.Fatal(err)
	}
	f.set, f.x = set, executor.New(reg, executor.Options{})
	return f
}

func (f *fixture) run(t *testing.T, ws, session, verb string, args any) *executor.Outcome {
	t.Helper()
	raw, _ := json.Marshal(args)
	ctx := executor.WithCall(context.Background(), executor.Call{TurnID: "t1", Workspace: ws, Session: session})
	return f.x.Run(ctx, executor.Envelope{Verb: verb, Arguments: raw})
}

func TestWorkspacesSeeTheirOwnFiles(t *testing.T) {
	f := open(t, "host")
	for _, ws := range []string{"", "alpha", "sandbox"} {
		if o := f.run(t, ws, "", "fs.writeFile", map[string]any{"path": "who.txt", "content": "I am " + ws}); !o.Succeeded() {
			t.Fatalf("%s: %v", ws, o.Err)
		}
	}
	for dir, want := range map[string]string{"main": "I am ", "a": "I am alpha", "sb": "I am sandbox"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(f.cfg.Workspace), dir, "who.txt"))
		if err != nil || string(b) != want {
			t.Errorf("%s/who.txt = %q, %v; want %q", dir, b, err, want)
		}
	}
	o := f.run(t, "nope", "", "fs.exists", map[string]any{"path": "x"})
	if o.Succeeded() || !strings.Contains(o.Err.Message, `Workspace "nope" is not configured`) {
		t.Fatalf("unknown workspace: %+v", o.Err)
	}
	// The state directory stays protected in the default workspace.
	if o := f.run(t, "default", "", "fs.listDir", map[string]any{"path": ".hub"}); o.Succeeded() {
		t.Fatal("the state directory is reachable")
	}
}

func TestDockerWorkspaceRunsProcInItsRunner(t *testing.T) {
	f := open(t, "host")
	o := f.run(t, "sandbox", "", "proc.run", map[string]any{"executable": "true", "arguments": []string{}})
	if !o.Succeeded() {
		t.Fatal(o.Err)
	}
	r := f.runners["sandbox"]
	if len(r.specs) != 1 || r.specs[0].Workspace != "sandbox" || r.specs[0].Dir != f.set.ws["sandbox"].host.Dir() {
		t.Fatalf("runner specs %+v", r.specs)
	}
	if got := string(mustJSON(t, o)); !strings.Contains(got, `"exitCode":3`) {
		t.Fatalf("result %s", got)
	}
	if len(f.runners) != 1 {
		t.Fatalf("runners built for %v; only sandbox is docker", f.runners)
	}
	if d := f.set.Describe("sandbox"); d != "fake container of sandbox" {
		t.Errorf("Describe(sandbox) = %q", d)
	}
	if d := f.set.Describe("alpha"); !strings.HasPrefix(d, "local (host processes in ") {
		t.Errorf("Describe(alpha) = %q", d)
	}
}

func mustJSON(t *testing.T, o *executor.Outcome) []byte {
	t.Helper()
	return o.JSON()
}

func TestSessionModePerWorkspace(t *testing.T) {
	f := open(t, "session")
	const sess = "chat:telegram:42"
	for _, ws := range []string{"default", "alpha", "sandbox"} {
		if o := f.run(t, ws, sess, "fs.writeFile", map[string]any{"path": "n.txt", "content": ws}); !o.Succeeded() {
			t.Fatalf("%s: %v", ws, o.Err)
		}
	}
	roots := map[string]bool{}
	for _, ws := range []string{"default", "alpha", "sandbox"} {
		src, _ := f.set.SessionSource(ws)
		roots[src.Root()] = true
		o := f.run(t, ws, sess, "fs.readFile", map[string]any{"path": "n.txt"})
		if !o.Succeeded() || !strings.Contains(string(o.JSON()), `"content":"`+ws+`"`) {
			t.Fatalf("%s session reads %s", ws, o.JSON())
		}
		// vfs verbs act on the call's workspace's sessions.
		if o := f.run(t, ws, sess, "vfs.snapshot", nil); !o.Succeeded() {
			t.Fatalf("%s snapshot: %v", ws, o.Err)
		}
		o = f.run(t, ws, sess, "vfs.list", nil)
		if !o.Succeeded() || strings.Count(string(o.JSON()), `"snapshotId"`) != 1 {
			t.Fatalf("%s list: %s", ws, o.JSON())
		}
	}
	if len(roots) != 3 {
		t.Fatalf("session roots collide: %v", roots)
	}
	if src, _ := f.set.SessionSource("default"); src.Root() != f.cfg.SessionsDir() {
		t.Fatalf("default sessions moved: %s", src.Root())
	}
	// proc.run: refused in a local session workspace, run by the runner in
	// a docker one, with the session's own directory.
	if o := f.run(t, "alpha", sess, "proc.run", map[string]any{"executable": "true", "arguments": []string{}}); o.Succeeded() {
		t.Fatal("proc.run ran in a local session workspace")
	}
	o := f.run(t, "sandbox", sess, "proc.run", map[string]any{"executable": "true", "arguments": []string{}})
	if !o.Succeeded() {
		t.Fatal(o.Err)
	}
	spec := f.runners["sandbox"].specs[0]
	if spec.Session != sess || !strings.HasPrefix(spec.Dir, f.cfg.WorkspaceSessionsDir("sandbox")) {
		t.Fatalf("spec %+v", spec)
	}
}

func TestCheckResetClose(t *testing.T) {
	f := open(t, "host")
	ctx := context.Background()
	if err := f.set.Check(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	f.runners["sandbox"].checkErr = errors.New("daemon unreachable")
	if err := f.set.Check(ctx, "sandbox"); err == nil || err.Error() != "workspace sandbox: daemon unreachable" {
		t.Fatalf("check: %v", err)
	}
	if err := os.Remove(f.set.ws["alpha"].host.Dir()); err != nil {
		t.Fatal(err)
	}
	if err := f.set.Check(ctx, "alpha"); err == nil || !strings.Contains(err.Error(), "workspace alpha:") {
		t.Fatalf("missing directory: %v", err)
	}
	if err := f.set.Reset(ctx, "alpha", ""); !errors.Is(err, ErrLocal) {
		t.Fatalf("reset local: %v", err)
	}
	if err := f.set.Reset(ctx, "sandbox", "s1"); err != nil {
		t.Fatal(err)
	}
	if err := f.set.Reset(ctx, "nope", ""); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("reset unknown: %v", err)
	}
	if r := f.runners["sandbox"].resets; len(r) != 1 || r[0] != "s1" {
		t.Fatalf("resets %v", r)
	}
	f.set.Close()
	if !f.runners["sandbox"].closed {
		t.Fatal("runner not closed")
	}
}

func TestDockerWithoutFactoryIsRefused(t *testing.T) {
	cfg := config.Default()
	root := t.TempDir()
	cfg.Workspace, cfg.StateDir = root, filepath.Join(root, ".hub")
	os.MkdirAll(cfg.StateDir, 0o700)
	cfg.Workspaces.Named = map[string]config.WorkspaceConfig{"sb": {Path: root, Destination: config.Destination{Kind: config.DestinationDocker, Image: "x"}}}
	_, err := Open(cfg, Options{StateDir: cfg.StateDir, Meta: verbs.NewMemoryMeta()})
	if err == nil || err.Error() != "workspace sb: destination kind docker is not available in this build of the hub (accepted here: local)" {
		t.Fatalf("err %v", err)
	}
}
