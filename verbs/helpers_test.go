package verbs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// testEnv is a workspace in a temp directory with the hub's state inside it
// (".hub", protected, as in the default layout), a sentinel directory
// "outside" next to it, and the verbs registered in a real executor.
type testEnv struct {
	t       testing.TB
	base    string // parent of the workspace and of outside
	dir     string // the workspace
	outside string
	state   string
	ws      *verbs.Workspace
	set     *verbs.Set
	x       *executor.Executor
}

type envOption func(*verbs.Options, *verbs.WorkspaceOptions)

func newEnv(t testing.TB, opts ...envOption) *testEnv {
	t.Helper()
	base := t.TempDir()
	e := &testEnv{t: t, base: base, dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	e.state = filepath.Join(e.dir, ".hub")
	for _, d := range []string{e.dir, e.outside, filepath.Join(e.outside, "sub"), e.state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(e.outside, "secret.txt"), "outside secret\n")
	writeFile(t, filepath.Join(e.outside, "sub", "deep.txt"), "deep\n")
	writeFile(t, filepath.Join(e.state, "hub.db"), "state\n")
	o := verbs.DefaultOptions(e.state)
	wo := verbs.WorkspaceOptions{Protect: []string{e.state}, Deny: []string{".hub"}}
	for _, f := range opts {
		f(&o, &wo)
	}
	ws, err := verbs.OpenWorkspace(e.dir, wo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	e.ws = ws
	e.set, err = verbs.NewSet(ws, o)
	if err != nil {
		t.Fatal(err)
	}
	reg := executor.NewRegistry()
	if err := e.set.Register(reg); err != nil {
		t.Fatal(err)
	}
	e.x = executor.New(reg, executor.Options{})
	return e
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// put writes a file inside the workspace.
func (e *testEnv) put(rel, content string) {
	e.t.Helper()
	writeFile(e.t, filepath.Join(e.dir, filepath.FromSlash(rel)), content)
}

// get reads a file inside the workspace.
func (e *testEnv) get(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, filepath.FromSlash(rel)))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *testEnv) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(e.dir, filepath.FromSlash(rel)))
	return err == nil
}

// run executes one verb through the executor's JSON envelope path.
func (e *testEnv) run(verb string, args any) *executor.Outcome {
	e.t.Helper()
	return e.runCtx(context.Background(), verb, args)
}

func (e *testEnv) runCtx(ctx context.Context, verb string, args any) *executor.Outcome {
	e.t.Helper()
	in, err := json.Marshal(map[string]any{"verb": verb, "arguments": args})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.x.ExecuteInput(ctx, in)
}

// ok runs a verb that must succeed and returns its typed result.
func ok[R any](e *testEnv, verb string, args any) R {
	e.t.Helper()
	out := e.run(verb, args)
	if out.Err != nil {
		e.t.Fatalf("%s %v: failed: %s (%s)", verb, args, out.Err.Message, out.Err.Code)
	}
	r, isR := out.Value.(*R)
	if !isR {
		e.t.Fatalf("%s: result is %T", verb, out.Value)
	}
	var res executor.Result
	if err := json.Unmarshal(out.JSON(), &res); err != nil || !res.Succeeded {
		e.t.Fatalf("%s: result JSON %s does not report success", verb, out.JSON())
	}
	return *r
}

// fails runs a verb that must fail with code, with a message containing
// every one of parts.
func (e *testEnv) fails(code executor.ErrorCode, verb string, args any, parts ...string) *executor.Error {
	e.t.Helper()
	out := e.run(verb, args)
	if out.Err == nil {
		e.t.Fatalf("%s %v: succeeded, want %s", verb, args, code)
	}
	checkErr(e.t, out.Err, code, parts...)
	if strings.Contains(out.Err.Message, e.base) {
		e.t.Errorf("%s: message shows a host path: %s", verb, out.Err.Message)
	}
	var res executor.Result
	if err := json.Unmarshal(out.JSON(), &res); err != nil || res.Succeeded || res.ErrorCode != code {
		e.t.Errorf("%s: result JSON %s does not report %s", verb, out.JSON(), code)
	}
	return out.Err
}

func checkErr(t testing.TB, err error, code executor.ErrorCode, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	e := executor.ErrorFrom(err)
	if e.Code != code {
		t.Fatalf("error code %s (%s), want %s", e.Code, e.Message, code)
	}
	for _, p := range parts {
		if !strings.Contains(e.Message, p) {
			t.Errorf("message %q does not contain %q", e.Message, p)
		}
	}
}

func ptr[T any](v T) *T { return &v }
