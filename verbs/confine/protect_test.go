package confine_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// protEnv is a workspace opened through a symbolic link to its real
// directory, with the hub's state directory ".hub" inside it created just
// before the workspace opened (a first run) and protected by identity only:
// no Deny entry is given.
type protEnv struct {
	*verbtest.Env
	real  string // the workspace's real directory
	link  string // the symbolic link the workspace is opened through
	state string // the state directory, real path
}

func newProtEnv(t *testing.T) *protEnv {
	t.Helper()
	base := t.TempDir()
	real, link := filepath.Join(base, "realws"), filepath.Join(base, "lnws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{real, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	verbtest.WriteFile(t, filepath.Join(outside, "secret.txt"), "outside secret\n")
	if err := os.Symlink("realws", link); err != nil {
		t.Fatal(err)
	}
	// As cmd/hub does: the state directory, spelled through the link, is
	// created just before the workspace opens.
	state := filepath.Join(link, ".hub")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	verbtest.WriteFile(t, filepath.Join(state, "hub.db"), "CANARY-DB\n")
	verbtest.WriteFile(t, filepath.Join(state, "pma", "delivery_targets.json"), `{"CANARY":"targets"}`)
	verbtest.WriteFile(t, filepath.Join(state, "canary", "secret.txt"), "CANARY-SECRET\n")
	verbtest.WriteFile(t, filepath.Join(state, "canary", "only-in-state.txt"), "CANARY-ONLY\n")
	ws, err := verbs.OpenWorkspace(link, verbs.WorkspaceOptions{Protect: []string{state}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	e := &verbtest.Env{T: t, Base: base, Dir: link, Outside: outside, State: state, WS: ws}
	o := verbs.DefaultOptions(state)
	if e.Set, err = verbs.NewSet(ws, o); err != nil {
		t.Fatal(err)
	}
	reg := executor.NewRegistry()
	if err := e.Set.Register(reg); err != nil {
		t.Fatal(err)
	}
	e.X = executor.New(reg, executor.Options{})
	return &protEnv{Env: e, real: real, link: link, state: filepath.Join(real, ".hub")}
}

// pathCalls are the calls of every verb that takes a path, in each of its
// path arguments, with harmless other arguments.
func pathCalls(p string) []struct {
	verb string
	args any
} {
	type c = struct {
		verb string
		args any
	}
	return []c{
		{"fs.exists", verbs.FsExistsArgs{Path: p}},
		{"fs.readFile", verbs.FsReadFileArgs{Path: p}},
		{"fs.readRange", verbs.FsReadRangeArgs{Path: p, StartLine: 1, EndLine: 1}},
		{"fs.lineCount", verbs.FsLineCountArgs{Path: p}},
		{"fs.listDir", verbs.FsListDirArgs{Path: p}},
		{"fs.writeFile", verbs.FsWriteFileArgs{Path: p, Content: "pwned"}},
		{"fs.writeFile", verbs.FsWriteFileArgs{Path: p, Content: "pwned", Mode: verbs.ModeAppend}},
		{"fs.writeRange", verbs.FsWriteRangeArgs{Path: p, StartLine: 1, EndLine: verbtest.Ptr(1), Content: "pwned"}},
		{"fs.deleteFile", verbs.FsDeleteFileArgs{Path: p}},
		{"fs.moveFile", verbs.FsMoveFileArgs{SourcePath: p, DestinationPath: "moved.txt"}},
		{"fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "ok.txt", DestinationPath: p}},
		{"fs.copyFile", verbs.FsCopyFileArgs{SourcePath: p, DestinationPath: "copied.txt"}},
		{"fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "ok.txt", DestinationPath: p}},
		{"fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: p}},
		{"fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: p + "/sub"}},
		{"fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: p}},
		{"proc.run", verbs.ProcRunArgs{Executable: "true", Arguments: []string{}, WorkingDirectory: p}},
		{"fs.upload", verbs.FsUploadArgs{Path: p}},
		{"fs.upload", verbs.FsUploadArgs{Path: p, Overwrite: true}},
		{"fs.send", verbs.FsSendArgs{Path: p}},
	}
}

// chatCall is the context of a call from a chat conversation: a file
// came with the message, and files may be sent back (kept in memory).
func chatCall() context.Context {
	ctx := executor.WithFiles(context.Background(), executor.FileOffer{Sink: memSink{}, Where: "a chat"})
	return executor.WithUpload(ctx, &executor.Upload{Name: "pwned.txt", Size: 5, Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader("pwned")), nil
	}})
}

// memSink is a FileSink that reads what it is given and keeps nothing.
type memSink struct{}

func (memSink) Put(_ context.Context, r io.Reader, _ int64) (string, int64, error) {
	n, err := io.Copy(io.Discard, r)
	return "0", n, err
}

// TestStateDirThroughSymlinkedWorkspace: on a first run with the workspace
// reached through a symbolic link, every path-taking verb is refused on the
// state directory however the path is spelled, and nothing in the state,
// the workspace or beside it changes.
func TestStateDirThroughSymlinkedWorkspace(t *testing.T) {
	e := newProtEnv(t)
	e.Put("ok.txt", "inside\n")
	for name, target := range map[string]string{
		"state-link":  ".hub",
		"db-link":     ".hub/hub.db",
		"inner/up":    "../.hub",
		"via-link":    "../lnws/.hub", // out of the root by name: refused as an escape
		"abs-state":   e.state,
		"abs-through": filepath.Join(e.link, ".hub"),
	} {
		p := filepath.Join(e.real, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{
		".hub", ".hub/", ".hub/hub.db", ".hub/pma/delivery_targets.json", ".hub/new.txt", ".hub/canary",
		"./.hub/../.hub/x", ".hub/./hub.db", ".//.hub//hub.db",
		"state-link", "state-link/hub.db", "state-link/pma/delivery_targets.json", "db-link",
		"inner/up", "inner/up/hub.db", "via-link/hub.db", "abs-state/hub.db", "abs-through/hub.db",
		e.state, filepath.Join(e.link, ".hub", "hub.db"),
	}
	before := verbtest.Snapshot(t, e.Base)
	for _, p := range paths {
		for _, c := range pathCalls(p) {
			out := e.RunCtx(chatCall(), c.verb, c.args)
			if out.Err == nil || out.Err.Code != executor.CodeForbiddenPath {
				t.Errorf("%s %+v: got %v, want forbidden_path", c.verb, c.args, out.Err)
			}
			if strings.Contains(string(out.JSON()), "CANARY") {
				t.Errorf("%s %+v: result shows the state: %s", c.verb, c.args, out.JSON())
			}
			if out.Err != nil && !strings.Contains(p, e.Base) && strings.Contains(out.Err.Message, e.Base) {
				t.Errorf("%s %q: message shows a host path: %s", c.verb, p, out.Err.Message)
			}
		}
	}
	if after := verbtest.Snapshot(t, e.Base); !maps.Equal(before, after) {
		t.Fatalf("the refused calls changed the filesystem:\n%s", verbtest.DiffSnapshots(before, after))
	}
	// The refusal of .hub itself keeps its friendly message.
	e.Fails(executor.CodeForbiddenPath, "fs.listDir", verbs.FsListDirArgs{Path: ".hub"}, "Path .hub is reserved for the hub's state")
	// The root listing leaves the state out; the rest still works.
	for _, de := range verbtest.OK[verbs.FsListDirResult](e.Env, "fs.listDir", verbs.FsListDirArgs{Path: "."}).Entries {
		if de.Name == ".hub" {
			t.Error("listDir . shows .hub")
		}
	}
	if got := verbtest.OK[verbs.FsReadFileResult](e.Env, "fs.readFile", verbs.FsReadFileArgs{Path: "ok.txt"}).Content; got != "inside\n" {
		t.Errorf("ok.txt = %q", got)
	}
}

// TestStateDirProtectedByIdentity: the state directory renamed on the host
// after the workspace opened no longer matches any path rule, and is still
// refused, listed by no one, and neither deleted nor moved with its parent.
func TestStateDirProtectedByIdentity(t *testing.T) {
	e := newProtEnv(t)
	e.Put("ok.txt", "inside\n")
	if err := os.MkdirAll(filepath.Join(e.real, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(e.state, filepath.Join(e.real, "var", "renamed")); err != nil {
		t.Fatal(err)
	}
	e.Put("var/other.txt", "other\n")
	before := verbtest.Snapshot(t, e.Base)
	for _, p := range []string{"var/renamed", "var/renamed/hub.db", "var/renamed/canary/secret.txt", "var/renamed/new.txt"} {
		for _, c := range pathCalls(p) {
			out := e.RunCtx(chatCall(), c.verb, c.args)
			if out.Err == nil || out.Err.Code != executor.CodeForbiddenPath {
				t.Errorf("%s %+v: got %v, want forbidden_path", c.verb, c.args, out.Err)
			}
			if out.Err != nil && !strings.Contains(out.Err.Message, "reserved for the hub's state") {
				t.Errorf("%s %+v: message %q does not say why", c.verb, c.args, out.Err.Message)
			}
		}
	}
	if got := verbtest.EntryStrings(verbtest.OK[verbs.FsListDirResult](e.Env, "fs.listDir", verbs.FsListDirArgs{Path: "var"}).Entries); !slices.Equal(got, []string{"other.txt"}) {
		t.Errorf("listDir var = %v, want the state left out", got)
	}
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "var"}, "Directory var holds", "reserved for the hub's state", "cannot be deleted")
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "."}, "workspace root")
	e.Fails(executor.CodeIsADirectory, "fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "var", DestinationPath: "elsewhere"})
	e.Fails(executor.CodeIsADirectory, "fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "var", DestinationPath: "elsewhere"})
	if after := verbtest.Snapshot(t, e.Base); !maps.Equal(before, after) {
		t.Fatalf("the refused calls changed the filesystem:\n%s", verbtest.DiffSnapshots(before, after))
	}
}

// TestDirectoryHoldingStateIsKept: with the state in var/hub, a directory
// holding it can be neither deleted, moved nor copied, and a deletion that
// meets the state deep inside a tree stops there.
func TestDirectoryHoldingStateIsKept(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	state := filepath.Join(ws, "var", "hub")
	verbtest.WriteFile(t, filepath.Join(state, "hub.db"), "CANARY-DB\n")
	verbtest.WriteFile(t, filepath.Join(ws, "var", "other.txt"), "other\n")
	w, err := verbs.OpenWorkspace(ws, verbs.WorkspaceOptions{Protect: []string{state}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e := &verbtest.Env{T: t, Base: base, Dir: ws, State: state, WS: w}
	if e.Set, err = verbs.NewSet(w, verbs.DefaultOptions(state)); err != nil {
		t.Fatal(err)
	}
	reg := executor.NewRegistry()
	if err := e.Set.Register(reg); err != nil {
		t.Fatal(err)
	}
	e.X = executor.New(reg, executor.Options{})

	before := verbtest.Snapshot(t, base)
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "."}, "workspace root")
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "var"}, "var/hub", "reserved for the hub's state")
	e.Fails(executor.CodeIsADirectory, "fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "var", DestinationPath: "moved"})
	e.Fails(executor.CodeIsADirectory, "fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "var", DestinationPath: "copied"})
	if after := verbtest.Snapshot(t, base); !maps.Equal(before, after) {
		t.Fatalf("refused calls changed the filesystem:\n%s", verbtest.DiffSnapshots(before, after))
	}

	// Moved on the host below a tree the path rules do not know: the
	// recursive deletion stops at it, by identity.
	if err := os.MkdirAll(filepath.Join(ws, "tree", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(state, filepath.Join(ws, "tree", "a", "z")); err != nil {
		t.Fatal(err)
	}
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "tree"}, "Directory tree holds", "cannot be deleted")
	if b, err := os.ReadFile(filepath.Join(ws, "tree", "a", "z", "hub.db")); err != nil || string(b) != "CANARY-DB\n" {
		t.Fatalf("state after refused delete: %q, %v", b, err)
	}
}

// TestProtectOptions: protected directories must exist, be absolute, and
// neither be nor contain the workspace.
func TestProtectOptions(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".hub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		protect string
		want    string
	}{
		{filepath.Join(ws, "missing"), "create it before opening the workspace"},
		{".hub", "not an absolute path"},
		{ws, "is the workspace itself"},
		{base, "contains the workspace"},
		{"/", "contains the workspace"},
	} {
		w, err := verbs.OpenWorkspace(ws, verbs.WorkspaceOptions{Protect: []string{c.protect}})
		if err == nil {
			w.Close()
			t.Errorf("Protect %q accepted", c.protect)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Protect %q: %v, want %q", c.protect, err, c.want)
		}
	}
}

// raceDuration is how long TestStateDirSwapRace runs: 20 s in CI or when
// -run names the test, 3 s otherwise (1 s with -short).
func raceDuration(name string) time.Duration {
	if os.Getenv("CI") == "true" {
		return 20 * time.Second
	}
	if f := flag.Lookup("test.run"); f != nil && strings.Contains(f.Value.String(), name) {
		return 20 * time.Second
	}
	if testing.Short() {
		return time.Second
	}
	return 3 * time.Second
}

// swapper exchanges the names a and b (a directory and a symbolic link) in a
// loop until stop closes, atomically where the filesystem can.
func swapper(t *testing.T, a, b string, stop <-chan struct{}, swaps *atomic.Int64) {
	atomicSwap := true
	for {
		select {
		case <-stop:
			return
		default:
		}
		if atomicSwap {
			if exchange(a, b) == nil {
				swaps.Add(1)
				continue
			}
			atomicSwap = false // not supported here: three renames
		}
		tmp := a + ".swap"
		if os.Rename(a, tmp) == nil {
			if os.Rename(b, a) != nil || os.Rename(tmp, b) != nil {
				t.Errorf("swapper lost track of %s", a)
				return
			}
			swaps.Add(1)
		}
	}
}

// TestStateDirSwapRace: while goroutines swap workspace directories with
// symbolic links into the state directory (d -> .hub, n/d -> ../.hub and
// a/d -> the state's absolute path), other goroutines call every verb that
// takes a path, on paths under those directories that name files of the
// state (hub.db, canary/...). The state's checksum (paths, sizes, modes,
// content hashes, times) must not change, no result may carry its content
// or list a name only it has, and no file of it may be copied out; some
// calls must have succeeded on the real directories, proving the race ran.
// The vfs verbs take no paths; the fs verbs run in the host workspace. It
// runs for 20 s when CI=true or -run names it, 3 s otherwise.
func TestStateDirSwapRace(t *testing.T) {
	e := newProtEnv(t)
	e.Put("ok.txt", "inside\n")
	e.Put("copy-src.txt", "harmless\n")
	type racer struct{ dir, alt, target string }
	racers := []racer{
		{"d", "d.alt", ".hub"},
		{"n/d", "n/d.alt", "../.hub"},
		{"a/d", "a/d.alt", e.state},
	}
	fill := func(dir string) {
		e.Put(dir+"/canary/secret.txt", "harmless\n")
		e.Put(dir+"/sub/b.txt", "harmless\n")
	}
	for _, r := range racers {
		fill(r.dir)
		if err := os.Symlink(r.target, filepath.Join(e.real, filepath.FromSlash(r.alt))); err != nil {
			t.Fatal(err)
		}
	}
	stateBefore := verbtest.Snapshot(t, e.state)

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	for _, r := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			swapper(t, filepath.Join(e.real, filepath.FromSlash(r.dir)), filepath.Join(e.real, filepath.FromSlash(r.alt)), stop, &swaps)
		}()
	}

	var mu sync.Mutex
	succeeded := map[string]int{}
	var leaks []string
	call := func(verb string, args any) {
		in, err := json.Marshal(map[string]any{"verb": verb, "arguments": args})
		if err != nil {
			panic(err)
		}
		out := e.X.ExecuteInput(context.Background(), in)
		res := string(out.JSON())
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(res, "CANARY") {
			leaks = append(leaks, fmt.Sprintf("%s %+v: %s", verb, args, res))
		}
		if verb == "fs.listDir" && (strings.Contains(res, `"hub.db"`) || strings.Contains(res, "only-in-state")) {
			leaks = append(leaks, fmt.Sprintf("%s %+v lists the state: %s", verb, args, res))
		}
		if out.Err == nil {
			succeeded[verb]++
		}
	}
	hammer := func(d string, worker int) {
		defer wg.Done()
		out := fmt.Sprintf("out-%s-%d", strings.ReplaceAll(d, "/", "_"), worker)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n := fmt.Sprintf("%s-%d.txt", out, i)
			call("fs.readFile", verbs.FsReadFileArgs{Path: d + "/canary/secret.txt"})
			call("fs.readFile", verbs.FsReadFileArgs{Path: d + "/hub.db"})
			call("fs.readRange", verbs.FsReadRangeArgs{Path: d + "/canary/secret.txt", StartLine: 1, EndLine: 1})
			call("fs.lineCount", verbs.FsLineCountArgs{Path: d + "/canary/secret.txt"})
			call("fs.exists", verbs.FsExistsArgs{Path: d + "/canary/secret.txt"})
			call("fs.listDir", verbs.FsListDirArgs{Path: d})
			call("fs.listDir", verbs.FsListDirArgs{Path: d + "/canary"})
			call("fs.writeFile", verbs.FsWriteFileArgs{Path: d + "/canary/secret.txt", Content: "harmless\n"})
			call("fs.writeFile", verbs.FsWriteFileArgs{Path: d + "/hub.db", Content: "pwned", Mode: verbs.ModeOverwrite})
			call("fs.writeFile", verbs.FsWriteFileArgs{Path: d + "/pma/delivery_targets.json", Content: "pwned", Mode: verbs.ModeAppend})
			call("fs.writeRange", verbs.FsWriteRangeArgs{Path: d + "/canary/secret.txt", StartLine: 1, EndLine: verbtest.Ptr(1), Content: "harmless"})
			call("fs.writeRange", verbs.FsWriteRangeArgs{Path: d + "/hub.db", StartLine: 1, EndLine: verbtest.Ptr(1), Content: "pwned"})
			call("fs.copyFile", verbs.FsCopyFileArgs{SourcePath: d + "/canary/secret.txt", DestinationPath: n})
			call("fs.copyFile", verbs.FsCopyFileArgs{SourcePath: d + "/hub.db", DestinationPath: n + ".db"})
			call("fs.readFile", verbs.FsReadFileArgs{Path: n})
			call("fs.readFile", verbs.FsReadFileArgs{Path: n + ".db"})
			call("fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "copy-src.txt", DestinationPath: d + "/canary/copied.txt"})
			call("fs.deleteFile", verbs.FsDeleteFileArgs{Path: d + "/canary/copied.txt"})
			call("fs.moveFile", verbs.FsMoveFileArgs{SourcePath: d + "/canary/secret.txt", DestinationPath: n + ".moved"})
			call("fs.readFile", verbs.FsReadFileArgs{Path: n + ".moved"})
			call("fs.moveFile", verbs.FsMoveFileArgs{SourcePath: n + ".moved", DestinationPath: d + "/canary/secret.txt"})
			call("fs.moveFile", verbs.FsMoveFileArgs{SourcePath: d + "/hub.db", DestinationPath: n + ".db.moved"})
			call("fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "ok.txt", DestinationPath: d + "/canary/ok.txt"})
			call("fs.moveFile", verbs.FsMoveFileArgs{SourcePath: d + "/canary/ok.txt", DestinationPath: "ok.txt"})
			call("fs.deleteFile", verbs.FsDeleteFileArgs{Path: d + "/canary/only-in-state.txt"})
			call("fs.deleteFile", verbs.FsDeleteFileArgs{Path: d + "/hub.db"})
			call("fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: d + "/canary/newdir"})
			call("fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: d + "/pma/newdir"})
			call("fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: d + "/canary/newdir"})
			call("fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: d + "/pma"})
			call("fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: d + "/canary"})
			call("fs.writeFile", verbs.FsWriteFileArgs{Path: d + "/canary/secret.txt", Content: "harmless\n"})
			call("fs.deleteFile", verbs.FsDeleteFileArgs{Path: n})
			call("fs.deleteFile", verbs.FsDeleteFileArgs{Path: n + ".db"})
			call("fs.deleteFile", verbs.FsDeleteFileArgs{Path: n + ".db.moved"})
			call("fs.deleteFile", verbs.FsDeleteFileArgs{Path: n + ".moved"})
		}
	}
	workers := 0
	for _, r := range racers {
		for w := range 2 {
			wg.Add(1)
			workers++
			go hammer(r.dir, w)
		}
	}
	d := raceDuration(t.Name())
	t.Logf("racing %d swappers and %d callers for %s", len(racers), workers, d)
	time.Sleep(d)
	close(stop)
	wg.Wait()

	for _, l := range leaks[:min(len(leaks), 10)] {
		t.Errorf("leak: %s", l)
	}
	if after := verbtest.Snapshot(t, e.state); !maps.Equal(stateBefore, after) {
		t.Errorf("the state changed:\n%s", verbtest.DiffSnapshots(stateBefore, after))
	}
	// Nothing of the state was copied or moved out into the workspace.
	err := filepath.WalkDir(e.real, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == e.state && de.IsDir() {
			return filepath.SkipDir
		}
		if de.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "CANARY") {
				t.Errorf("state content found in the workspace at %s", p)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Error(err)
	}
	total := 0
	for _, n := range succeeded {
		total += n
	}
	t.Logf("%d swaps; %d calls succeeded on the real directories: %v", swaps.Load(), total, succeeded)
	if swaps.Load() < 10 {
		t.Errorf("only %d swaps: the race did not run", swaps.Load())
	}
	for _, verb := range []string{"fs.readFile", "fs.writeFile", "fs.listDir", "fs.copyFile", "fs.moveFile", "fs.deleteFile", "fs.deleteDirectory", "fs.createDirectory"} {
		if succeeded[verb] == 0 {
			t.Errorf("%s never succeeded: the calls did not reach the real directories", verb)
		}
	}
}

// TestSessionsUnderProtectedState: session workspaces live inside the
// protected state directory and work; mounting the workspace leaves the
// state out; a mount inside the state is refused.
func TestSessionsUnderProtectedState(t *testing.T) {
	e := newProtEnv(t)
	e.Put("docs/a.md", "doc\n")
	if err := os.Symlink("../.hub/canary", filepath.Join(e.real, "docs", "to-state")); err != nil {
		t.Fatal(err)
	}
	opts := verbs.SessionOptions{
		Root:       filepath.Join(e.state, "sessions"),
		Meta:       verbs.NewMemoryMeta(),
		MountRoots: []string{e.link},
		Mounts:     []verbs.Mount{{HostPath: ".", MountPath: ".", FollowSymlinks: true}},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	src, err := verbs.OpenSessions(e.WS, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	reg := executor.NewRegistry()
	if err := verbs.Register(reg, src, verbs.DefaultOptions(e.state)); err != nil {
		t.Fatal(err)
	}
	x := executor.New(reg, executor.Options{})
	run := func(verb string, args any) *executor.Outcome {
		in, _ := json.Marshal(map[string]any{"verb": verb, "arguments": args})
		return x.ExecuteInput(executor.WithCall(context.Background(), executor.Call{TurnID: "t.1", Session: "chat:1"}), in)
	}
	for _, c := range []struct {
		verb string
		args any
	}{
		{"fs.writeFile", verbs.FsWriteFileArgs{Path: "x/y.txt", Content: "y"}},
		{"fs.readFile", verbs.FsReadFileArgs{Path: "docs/a.md"}},
		{"fs.listDir", verbs.FsListDirArgs{Path: "."}},
		{"fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "x/y.txt", DestinationPath: "x/z.txt"}},
		{"fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "x"}},
	} {
		if out := run(c.verb, c.args); out.Err != nil {
			t.Fatalf("%s in a session: %s", c.verb, out.Err.Message)
		}
	}
	live := filepath.Join(opts.Root, verbs.SessionDirName("chat:1"), "live")
	for _, f := range verbtest.Tree(t, live) {
		if strings.Contains(f, "CANARY") || strings.HasPrefix(f, ".hub/") {
			t.Errorf("the mount copied the state into the session: %s", f)
		}
	}
	if !slices.Contains(verbtest.Tree(t, live), "docs/a.md=doc") {
		t.Errorf("session tree %v lacks the mounted docs", verbtest.Tree(t, live))
	}
	opts.Mounts = []verbs.Mount{{HostPath: ".hub/canary"}}
	if s, err := verbs.OpenSessions(e.WS, opts); err == nil {
		s.Close()
		t.Fatal("a mount inside the state directory was accepted")
	} else if !strings.Contains(err.Error(), "reserved for the hub's state") {
		t.Fatalf("mount inside the state: %v", err)
	}
}
