package verbs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// fakeRunner records the specs it is given and answers as told.
type fakeRunner struct {
	mu    sync.Mutex
	specs []verbs.RunSpec
	run   func(ctx context.Context, spec verbs.RunSpec) (verbs.RunResult, error)
}

func (f *fakeRunner) Run(ctx context.Context, spec verbs.RunSpec) (verbs.RunResult, error) {
	f.mu.Lock()
	f.specs = append(f.specs, spec)
	f.mu.Unlock()
	return f.run(ctx, spec)
}

func TestRunnerRunsProcElsewhere(t *testing.T) {
	fr := &fakeRunner{run: func(ctx context.Context, spec verbs.RunSpec) (verbs.RunResult, error) {
		fmt.Fprintf(spec.Stdout, "ran %s in %s\n", spec.Executable, spec.WorkDir)
		fmt.Fprint(spec.Stderr, "warn\n")
		return verbs.RunResult{ExitCode: 3}, nil
	}}
	e := verbtest.New(t, func(o *verbs.Options, wo *verbs.WorkspaceOptions) {
		o.Runners = verbs.Runners{"sandbox": fr}
		wo.Name = "sandbox"
	})
	e.Put("sub/x.txt", "x")
	res := verbtest.OK[verbs.ProcRunResult](e, "proc.run", map[string]any{"executable": "no-such-host-program", "arguments": []string{"a"}, "workingDirectory": "sub"})
	if res.ExitCode != 3 || res.TimedOut || res.StdoutTail != "ran no-such-host-program in sub\n" || res.StderrTail != "warn\n" {
		t.Fatalf("result %+v", res)
	}
	out, err := os.ReadFile(filepath.Join(e.State, filepath.FromSlash(res.StdoutPath)))
	if err != nil || string(out) != res.StdoutTail {
		t.Fatalf("stdout file %q %v", out, err)
	}
	spec := fr.specs[0]
	if spec.Workspace != "sandbox" || spec.Session != "" || spec.Dir != e.Dir || !reflect.DeepEqual(spec.Args, []string{"a"}) {
		t.Fatalf("spec %+v", spec)
	}
	// The state directory inside the workspace is named for hiding.
	if !reflect.DeepEqual(spec.Hide, []string{".hub"}) {
		t.Fatalf("hide %v", spec.Hide)
	}
	// The working directory still goes through the guard.
	e.Fails(executor.CodeForbiddenPath, "proc.run", map[string]any{"executable": "true", "arguments": []string{}, "workingDirectory": ".hub"})
	e.Fails(executor.CodeForbiddenPath, "proc.run", map[string]any{"executable": "true", "arguments": []string{}, "workingDirectory": "../outside"})
	if len(fr.specs) != 1 {
		t.Fatalf("runner called for refused calls: %d", len(fr.specs))
	}
}

func TestRunnerTimeoutAndErrors(t *testing.T) {
	fr := &fakeRunner{run: func(ctx context.Context, spec verbs.RunSpec) (verbs.RunResult, error) {
		if spec.Executable == "fail" {
			return verbs.RunResult{}, executor.Errorf(executor.CodeIOError, "workspace sandbox: the daemon is down")
		}
		fmt.Fprint(spec.Stdout, "partial")
		<-ctx.Done()
		return verbs.RunResult{ExitCode: -1}, nil
	}}
	e := verbtest.New(t, func(o *verbs.Options, _ *verbs.WorkspaceOptions) { o.Runners = verbs.Runners{"": fr} })
	res := verbtest.OK[verbs.ProcRunResult](e, "proc.run", map[string]any{"executable": "sleep", "arguments": []string{}, "timeoutSeconds": 1})
	if !res.TimedOut || res.ExitCode != -1 || res.StdoutTail != "partial" {
		t.Fatalf("timeout result %+v", res)
	}
	e.Fails(executor.CodeIOError, "proc.run", map[string]any{"executable": "fail", "arguments": []string{}}, "daemon is down")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out := e.RunCtx(ctx, "proc.run", map[string]any{"executable": "sleep", "arguments": []string{}}); out.Succeeded() {
		t.Fatalf("a cancelled call succeeded: %+v", out)
	}
}

func TestRunnerAllowsProcInSessions(t *testing.T) {
	fr := &fakeRunner{run: func(ctx context.Context, spec verbs.RunSpec) (verbs.RunResult, error) {
		return verbs.RunResult{ExitCode: 0}, nil
	}}
	e := newSessEnv(t, func(o *verbs.SessionOptions, e *sessEnv) {
		o.Workspace.Name = "sandbox"
		e.verbOpts = func(v *verbs.Options) { v.Runners = verbs.Runners{"sandbox": fr} }
	})
	sok[verbs.ProcRunResult](e, "chat:web", "proc.run", map[string]any{"executable": "true", "arguments": []string{}})
	spec := fr.specs[0]
	if spec.Session != "chat:web" || spec.Dir != e.sessionDir("chat:web") || len(spec.Hide) != 0 {
		t.Fatalf("session spec %+v (dir %s)", spec, e.sessionDir("chat:web"))
	}
}
