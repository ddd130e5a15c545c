// Package verbtest is the harness the verbs' tests share (those of package
// verbs and of its confinement and process packages, which test what every
// verb does): a workspace in a temporary directory with the hub's state
// inside it, the verbs registered in a real executor, and assertions on
// their outcomes and on the filesystem.
package verbtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// Env is a workspace in a temp directory with the hub's state inside it
// (".hub", protected, as in the default layout), a sentinel directory
// Outside next to it, and the verbs registered in a real executor.
type Env struct {
	T       testing.TB
	Base    string // parent of the workspace and of Outside
	Dir     string // the workspace
	Outside string
	State   string
	WS      *verbs.Workspace
	Set     *verbs.Set
	X       *executor.Executor
}

// Option adjusts the verbs' and the workspace's options of a new Env.
type Option func(*verbs.Options, *verbs.WorkspaceOptions)

// New makes an Env: files outside/secret.txt, outside/sub/deep.txt and
// .hub/hub.db exist; .hub is protected and denied.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	base := t.TempDir()
	e := &Env{T: t, Base: base, Dir: filepath.Join(base, "ws"), Outside: filepath.Join(base, "outside")}
	e.State = filepath.Join(e.Dir, ".hub")
	for _, d := range []string{e.Dir, e.Outside, filepath.Join(e.Outside, "sub"), e.State} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	WriteFile(t, filepath.Join(e.Outside, "secret.txt"), "outside secret\n")
	WriteFile(t, filepath.Join(e.Outside, "sub", "deep.txt"), "deep\n")
	WriteFile(t, filepath.Join(e.State, "hub.db"), "state\n")
	o := verbs.DefaultOptions(e.State)
	wo := verbs.WorkspaceOptions{Protect: []string{e.State}, Deny: []string{".hub"}}
	for _, f := range opts {
		f(&o, &wo)
	}
	ws, err := verbs.OpenWorkspace(e.Dir, wo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	e.WS = ws
	set, err := verbs.NewSet(ws, o)
	if err != nil {
		t.Fatal(err)
	}
	e.Use(set)
	return e
}

// Use makes set the Env's verbs, registered in a new executor.
func (e *Env) Use(set *verbs.Set) {
	e.T.Helper()
	reg := executor.NewRegistry()
	if err := set.Register(reg); err != nil {
		e.T.Fatal(err)
	}
	e.Set, e.X = set, executor.New(reg, executor.Options{})
}

// WriteFile writes the file p, making its directories.
func WriteFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Put writes a file inside the workspace.
func (e *Env) Put(rel, content string) {
	e.T.Helper()
	WriteFile(e.T, filepath.Join(e.Dir, filepath.FromSlash(rel)), content)
}

// Get reads a file inside the workspace.
func (e *Env) Get(rel string) string {
	e.T.Helper()
	b, err := os.ReadFile(filepath.Join(e.Dir, filepath.FromSlash(rel)))
	if err != nil {
		e.T.Fatal(err)
	}
	return string(b)
}

// Exists reports whether something is at rel in the workspace.
func (e *Env) Exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(e.Dir, filepath.FromSlash(rel)))
	return err == nil
}

// StateFile reads a file of the state directory.
func (e *Env) StateFile(rel string) string {
	e.T.Helper()
	b, err := os.ReadFile(filepath.Join(e.State, filepath.FromSlash(rel)))
	if err != nil {
		e.T.Fatal(err)
	}
	return string(b)
}

// Run executes one verb through the executor's JSON envelope path.
func (e *Env) Run(verb string, args any) *executor.Outcome {
	e.T.Helper()
	return e.RunCtx(context.Background(), verb, args)
}

// RunCtx is Run with the call's context.
func (e *Env) RunCtx(ctx context.Context, verb string, args any) *executor.Outcome {
	e.T.Helper()
	in, err := json.Marshal(map[string]any{"verb": verb, "arguments": args})
	if err != nil {
		e.T.Fatal(err)
	}
	return e.X.ExecuteInput(ctx, in)
}

// OK runs a verb that must succeed and returns its typed result.
func OK[R any](e *Env, verb string, args any) R {
	e.T.Helper()
	out := e.Run(verb, args)
	if out.Err != nil {
		e.T.Fatalf("%s %v: failed: %s (%s)", verb, args, out.Err.Message, out.Err.Code)
	}
	r, isR := out.Value.(*R)
	if !isR {
		e.T.Fatalf("%s: result is %T", verb, out.Value)
	}
	var res executor.Result
	if err := json.Unmarshal(out.JSON(), &res); err != nil || !res.Succeeded {
		e.T.Fatalf("%s: result JSON %s does not report success", verb, out.JSON())
	}
	return *r
}

// Fails runs a verb that must fail with code, with a message containing
// every one of parts and no host path.
func (e *Env) Fails(code executor.ErrorCode, verb string, args any, parts ...string) *executor.Error {
	e.T.Helper()
	out := e.Run(verb, args)
	if out.Err == nil {
		e.T.Fatalf("%s %v: succeeded, want %s", verb, args, code)
	}
	CheckErr(e.T, out.Err, code, parts...)
	if strings.Contains(out.Err.Message, e.Base) {
		e.T.Errorf("%s: message shows a host path: %s", verb, out.Err.Message)
	}
	var res executor.Result
	if err := json.Unmarshal(out.JSON(), &res); err != nil || res.Succeeded || res.ErrorCode != code {
		e.T.Errorf("%s: result JSON %s does not report %s", verb, out.JSON(), code)
	}
	return out.Err
}

// CheckErr fails t unless err has code and a message containing every one
// of parts.
func CheckErr(t testing.TB, err error, code executor.ErrorCode, parts ...string) {
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

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }

// WithTurn is a context carrying a call of turn id.
func WithTurn(id string) context.Context {
	return executor.WithCall(context.Background(), executor.Call{TurnID: id})
}

// RunProc runs proc.run through the executor for turn id; it must succeed.
func RunProc(t *testing.T, e *Env, id string, a verbs.ProcRunArgs) verbs.ProcRunResult {
	t.Helper()
	out := e.RunCtx(WithTurn(id), "proc.run", a)
	if out.Err != nil {
		t.Fatalf("proc.run %v: %s (%s)", a, out.Err.Message, out.Err.Code)
	}
	return *out.Value.(*verbs.ProcRunResult)
}

// EntryStrings renders listing entries as "dir/" or "file <size>", with
// " v<version> <updatedAt>" when the entry carries them.
func EntryStrings(es []verbs.DirEntry) []string {
	var out []string
	for _, e := range es {
		s := e.Name
		switch {
		case e.IsDirectory:
			s += "/"
		case e.SizeBytes != nil:
			s += fmt.Sprintf(" %d", *e.SizeBytes)
		}
		if e.Version != 0 || e.UpdatedAt != "" {
			s += fmt.Sprintf(" v%d %s", e.Version, e.UpdatedAt)
		}
		out = append(out, s)
	}
	return out
}

// Snapshot records everything under dir: type, mode, size, content hash,
// link target and modification time of every entry.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			v += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// DiffSnapshots says, line by line, how snapshot b differs from a.
func DiffSnapshots(a, b map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if b[k] != a[k] {
			lines = append(lines, fmt.Sprintf("  %s: %q -> %q", k, a[k], b[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			lines = append(lines, fmt.Sprintf("  %s: new %q", k, b[k]))
		}
	}
	return strings.Join(lines, "\n")
}

// Tree lists every regular file under dir as "path=content", sorted.
func Tree(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel)+"="+strings.TrimSpace(string(b)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Zombie reports whether pid has exited and only awaits reaping (Linux;
// false where /proc is missing).
func Zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// AsRoot skips t (fails it under CI=true) unless the test runs as root:
// changing user needs it.
func AsRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testkit.Unavailable(t, "running programs as another user needs root")
	}
}

// DefaultProcUser is the user a hub running as root gives its programs.
func DefaultProcUser(t *testing.T) *verbs.ProcUser {
	t.Helper()
	u, why, err := verbs.ChooseProcUser("")
	if err != nil || u == nil || u.UID != 65534 || u.GID != 65534 {
		t.Fatalf("the default proc user as root: %v %q %v", u, why, err)
	}
	return u
}
