package confine_test

import (
	"context"
	"encoding/json"
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

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// fileEnv is the README's layout: the configuration file hub.yml and a
// token file in the workspace (secrets/telegram.token), the state directory
// .hub inside it, and a token file outside it (etc/web.token), all
// protected; every protected file's content says CANARY.
type fileEnv struct {
	*verbtest.Env
	files []verbs.ProtectedFile
}

func newFileEnv(t *testing.T) *fileEnv {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	state := filepath.Join(ws, ".hub")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	verbtest.WriteFile(t, filepath.Join(ws, "hub.yml"), "CANARY-CONFIG: 1\n")
	verbtest.WriteFile(t, filepath.Join(ws, "secrets", "telegram.token"), "CANARY-TOKEN\n")
	verbtest.WriteFile(t, filepath.Join(base, "etc", "web.token"), "CANARY-WEB\n")
	verbtest.WriteFile(t, filepath.Join(ws, "ok.txt"), "harmless\n")
	files := []verbs.ProtectedFile{
		{Path: filepath.Join(ws, "hub.yml"), What: "the configuration file"},
		{Path: filepath.Join(ws, "secrets", "telegram.token"), What: "telegram.token_file"},
		{Path: filepath.Join(base, "etc", "web.token"), What: "web.token_file"},
	}
	w, err := verbs.OpenWorkspace(ws, verbs.WorkspaceOptions{Protect: []string{state}, ProtectFiles: files})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	e := &verbtest.Env{T: t, Base: base, Dir: ws, State: state, WS: w}
	if e.Set, err = verbs.NewSet(w, verbs.DefaultOptions(state)); err != nil {
		t.Fatal(err)
	}
	reg := executor.NewRegistry()
	if err := e.Set.Register(reg); err != nil {
		t.Fatal(err)
	}
	e.X = executor.New(reg, executor.Options{})
	return &fileEnv{Env: e, files: files}
}

// fileCalls are the calls of every verb that takes a path, on the file p,
// in each path argument.
func fileCalls(p string) []struct {
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
		{"fs.readRange", verbs.FsReadRangeArgs{Path: p, LastLines: verbtest.Ptr(1)}},
		{"fs.stat", verbs.FsStatArgs{Path: p, Sha256: true}},
		{"fs.edit", verbs.FsEditArgs{Path: p, OldText: "CANARY", NewText: verbtest.Ptr("pwned")}},
		{"fs.lineCount", verbs.FsLineCountArgs{Path: p}},
		{"fs.listDir", verbs.FsListDirArgs{Path: p}},
		{"fs.writeFile", verbs.FsWriteFileArgs{Path: p, Content: "pwned"}},
		{"fs.writeFile", verbs.FsWriteFileArgs{Path: p, Content: "pwned", Mode: verbs.ModeOverwrite}},
		{"fs.writeFile", verbs.FsWriteFileArgs{Path: p, Content: "pwned", Mode: verbs.ModeAppend}},
		{"fs.writeRange", verbs.FsWriteRangeArgs{Path: p, StartLine: 1, EndLine: verbtest.Ptr(1), Content: "pwned"}},
		{"fs.deleteFile", verbs.FsDeleteFileArgs{Path: p}},
		{"fs.moveFile", verbs.FsMoveFileArgs{SourcePath: p, DestinationPath: "moved.txt"}},
		{"fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "ok.txt", DestinationPath: p}},
		{"fs.copyFile", verbs.FsCopyFileArgs{SourcePath: p, DestinationPath: "copied.txt"}},
		{"fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "ok.txt", DestinationPath: p}},
		{"fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: p}},
		{"fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: p}},
	}
}

// refusedEverywhere runs every file call on each path: each must be
// refused with forbidden_path, show no protected content and name no host
// path, and the whole tree must stay as it was.
func (e *fileEnv) refusedEverywhere(paths ...string) {
	e.T.Helper()
	before := verbtest.Snapshot(e.T.(*testing.T), e.Base)
	for _, p := range paths {
		for _, c := range fileCalls(p) {
			out := e.Run(c.verb, c.args)
			if out.Err == nil || out.Err.Code != executor.CodeForbiddenPath {
				e.T.Errorf("%s %+v: got %v, want forbidden_path", c.verb, c.args, out.Err)
				continue
			}
			if strings.Contains(string(out.JSON()), "CANARY") {
				e.T.Errorf("%s %+v: result shows a protected file: %s", c.verb, c.args, out.JSON())
			}
			if strings.Contains(out.Err.Message, e.Base) {
				e.T.Errorf("%s %+v: message shows a host path: %s", c.verb, c.args, out.Err.Message)
			}
		}
	}
	for _, p := range paths {
		r := verbtest.OK[verbs.FsReadManyResult](e.Env, "fs.readMany", verbs.FsReadManyArgs{Paths: []string{p}})
		if f := r.Files[0]; f.Succeeded || f.ErrorCode != executor.CodeForbiddenPath || strings.Contains(f.Content+f.ErrorMessage, "CANARY") {
			e.T.Errorf("fs.readMany %q: %+v, want forbidden_path", p, f)
		}
	}
	if after := verbtest.Snapshot(e.T.(*testing.T), e.Base); !maps.Equal(before, after) {
		e.T.Fatalf("refused calls changed the filesystem:\n%s", verbtest.DiffSnapshots(before, after))
	}
}

// TestProtectedFilesHoweverSpelled: the configuration file and the token
// files, in the workspace or outside it, are refused to every verb by their
// direct name, by a hard link, by a symbolic link and through a parent
// renamed on the host after the workspace opened; nothing changes.
func TestProtectedFilesHoweverSpelled(t *testing.T) {
	e := newFileEnv(t)
	ws := e.Dir
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "deep", "er"), 0o755))
	must(os.Link(filepath.Join(ws, "hub.yml"), filepath.Join(ws, "hl-config")))
	must(os.Link(filepath.Join(ws, "secrets", "telegram.token"), filepath.Join(ws, "deep", "hl-token")))
	must(os.Link(filepath.Join(e.Base, "etc", "web.token"), filepath.Join(ws, "deep", "er", "hl-web")))
	must(os.Symlink("hub.yml", filepath.Join(ws, "sl-config")))
	must(os.Symlink("../secrets/telegram.token", filepath.Join(ws, "deep", "sl-token")))
	must(os.Symlink("deep", filepath.Join(ws, "sl-dir")))
	e.refusedEverywhere(
		"hub.yml", "secrets/telegram.token",
		"hl-config", "deep/hl-token", "deep/er/hl-web",
		"sl-config", "deep/sl-token", "sl-dir/hl-token", "sl-dir/er/hl-web",
	)
	// A parent renamed on the host: the file keeps its identity and its
	// directory's, whatever the path now says.
	must(os.Rename(filepath.Join(ws, "secrets"), filepath.Join(ws, "renamed")))
	e.refusedEverywhere("renamed/telegram.token")
	e.Fails(executor.CodeForbiddenPath, "fs.readFile", verbs.FsReadFileArgs{Path: "hub.yml"}, "the configuration file", "protected file")
	e.Fails(executor.CodeForbiddenPath, "fs.readFile", verbs.FsReadFileArgs{Path: "renamed/telegram.token"}, "telegram.token_file")
	// The rest of the workspace works.
	if got := verbtest.OK[verbs.FsReadFileResult](e.Env, "fs.readFile", verbs.FsReadFileArgs{Path: "ok.txt"}).Content; got != "harmless\n" {
		t.Fatalf("ok.txt = %q", got)
	}
	verbtest.OK[verbs.FsWriteFileResult](e.Env, "fs.writeFile", verbs.FsWriteFileArgs{Path: "renamed/other.txt", Content: "fine"})
}

// TestProtectedFileReplacedByRename: an editor that saves by renaming a new
// file over hub.yml gives it another identity; the place (the directory's
// identity and the name) still refuses every verb, including a write that
// would create the file anew once it is gone. RefreshProtected (a reload)
// records the new identity, so a hard link made to it afterwards is
// refused too, and the old identity, still reachable as the editor's
// backup, stays protected.
func TestProtectedFileReplacedByRename(t *testing.T) {
	e := newFileEnv(t)
	cfg := filepath.Join(e.Dir, "hub.yml")
	// The editor keeps the old file as a backup and renames the new one in.
	if err := os.Rename(cfg, cfg+"~"); err != nil {
		t.Fatal(err)
	}
	verbtest.WriteFile(t, cfg+".new", "CANARY-CONFIG: 2\n")
	if err := os.Rename(cfg+".new", cfg); err != nil {
		t.Fatal(err)
	}
	e.refusedEverywhere("hub.yml", "hub.yml~")

	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		verb string
		args any
	}{
		{"fs.writeFile", verbs.FsWriteFileArgs{Path: "hub.yml", Content: "access: {default_roles: [admin]}\n"}},
		{"fs.writeFile", verbs.FsWriteFileArgs{Path: "hub.yml", Content: "x", Mode: verbs.ModeCreate}},
		{"fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "ok.txt", DestinationPath: "hub.yml"}},
		{"fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "ok.txt", DestinationPath: "hub.yml"}},
		{"fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: "hub.yml"}},
	} {
		e.Fails(executor.CodeForbiddenPath, c.verb, c.args, "the configuration file")
	}
	if e.Exists("hub.yml") {
		t.Fatal("a refused call created hub.yml")
	}

	// The operator writes the configuration again, then reloads.
	verbtest.WriteFile(t, cfg, "CANARY-CONFIG: 3\n")
	if err := e.WS.RefreshProtected(e.files); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(cfg, filepath.Join(e.Dir, "later-link")); err != nil {
		t.Fatal(err)
	}
	e.refusedEverywhere("hub.yml", "later-link", "hub.yml~")
}

// TestProtectedFileMissingDirectory: a protected file whose directory does
// not exist yet cannot be planted: the first missing directory cannot be
// made, nor a file at its name.
func TestProtectedFileMissingDirectory(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	state := filepath.Join(ws, ".hub")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	files := []verbs.ProtectedFile{{Path: filepath.Join(ws, "certs", "tls", "key.pem"), What: "web.tls_key"}}
	e := newEnvAt(t, base, ws, state, verbs.WorkspaceOptions{Protect: []string{state}, ProtectFiles: files})
	for _, c := range []struct {
		verb string
		args any
	}{
		{"fs.writeFile", verbs.FsWriteFileArgs{Path: "certs/tls/key.pem", Content: "attacker's key"}},
		{"fs.writeFile", verbs.FsWriteFileArgs{Path: "certs", Content: "x"}},
		{"fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: "certs"}},
		{"fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: "certs/tls"}},
		{"fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "a.txt", DestinationPath: "certs/tls/key.pem"}},
	} {
		e.Fails(executor.CodeForbiddenPath, c.verb, c.args, "web.tls_key")
	}
	if e.Exists("certs") {
		t.Fatal("a refused call created certs")
	}
}

// newEnvAt is a verbtest.Env over ws with wo.
func newEnvAt(t *testing.T, base, ws, state string, wo verbs.WorkspaceOptions) *verbtest.Env {
	t.Helper()
	verbtest.WriteFile(t, filepath.Join(ws, "a.txt"), "a\n")
	w, err := verbs.OpenWorkspace(ws, wo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	e := &verbtest.Env{T: t, Base: base, Dir: ws, State: state, WS: w}
	if e.Set, err = verbs.NewSet(w, verbs.DefaultOptions(state)); err != nil {
		t.Fatal(err)
	}
	reg := executor.NewRegistry()
	if err := e.Set.Register(reg); err != nil {
		t.Fatal(err)
	}
	e.X = executor.New(reg, executor.Options{})
	return e
}

// TestProtectedFilesListedByNoOne: listings leave the protected files out,
// by their place and, when one has another name (a hard link), by
// identity; a symbolic link to one is listed (it is refused when used). A
// kept listing is dropped when RefreshProtected protects more.
func TestProtectedFilesListedByNoOne(t *testing.T) {
	e := newFileEnv(t)
	ws := e.Dir
	// The verbs' clock reads an hour ahead, so listings are kept (one of a
	// directory changed less than two seconds before it is read is not).
	o := verbs.DefaultOptions(e.State)
	o.Clock = clock.NewFake(time.Now().Add(time.Hour))
	var err error
	if e.Set, err = verbs.NewSet(e.WS, o); err != nil {
		t.Fatal(err)
	}
	reg := executor.NewRegistry()
	if err := e.Set.Register(reg); err != nil {
		t.Fatal(err)
	}
	e.X = executor.New(reg, executor.Options{})
	list := func(p string) []string {
		t.Helper()
		return verbtest.EntryStrings(verbtest.OK[verbs.FsListDirResult](e.Env, "fs.listDir", verbs.FsListDirArgs{Path: p}).Entries)
	}
	if got := list("."); !slices.Equal(got, []string{"secrets/", "ok.txt"}) {
		t.Fatalf("listDir . = %v, want hub.yml and .hub left out", got)
	}
	if got := list("secrets"); len(got) != 0 {
		t.Fatalf("listDir secrets = %v, want the token left out", got)
	}
	verbtest.WriteFile(t, filepath.Join(ws, "deep", "plain.txt"), "plain\n")
	if err := os.Link(filepath.Join(e.Base, "etc", "web.token"), filepath.Join(ws, "deep", "hl-web")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../hub.yml", filepath.Join(ws, "deep", "sl-config")); err != nil {
		t.Fatal(err)
	}
	if got := list("deep"); !slices.Equal(got, []string{"plain.txt", "sl-config"}) {
		t.Fatalf("listDir deep = %v, want the hard link left out and the symbolic link listed", got)
	}
	e.Fails(executor.CodeForbiddenPath, "fs.readFile", verbs.FsReadFileArgs{Path: "deep/sl-config"}, "the configuration file")

	// Kept, then more is protected: the next listing leaves it out.
	if got := list("deep"); !slices.Equal(got, []string{"plain.txt", "sl-config"}) {
		t.Fatalf("listDir deep again = %v", got)
	}
	more := append(slices.Clone(e.files), verbs.ProtectedFile{Path: filepath.Join(ws, "deep", "plain.txt"), What: "discord.token_file"})
	if err := e.WS.RefreshProtected(more); err != nil {
		t.Fatal(err)
	}
	if got := list("deep"); !slices.Equal(got, []string{"sl-config"}) {
		t.Fatalf("listDir deep after the refresh = %v, want plain.txt left out", got)
	}
}

// TestDirectoryHoldingProtectedFileIsKept: a directory holding a protected
// file's place cannot be deleted, nor one holding it deeper; a deletion
// that meets a hard link of a protected file inside a tree stops there.
func TestDirectoryHoldingProtectedFileIsKept(t *testing.T) {
	e := newFileEnv(t)
	ws := e.Dir
	if err := os.MkdirAll(filepath.Join(ws, "outer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(ws, "secrets"), filepath.Join(ws, "outer", "secrets")); err != nil {
		t.Fatal(err)
	}
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "outer/secrets"}, "telegram.token_file", "cannot be deleted")
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "outer"}, "telegram.token_file", "cannot be deleted")
	verbtest.WriteFile(t, filepath.Join(ws, "tree", "a", "b.txt"), "b\n")
	if err := os.Link(filepath.Join(ws, "hub.yml"), filepath.Join(ws, "tree", "a", "z-config")); err != nil {
		t.Fatal(err)
	}
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "tree"}, "the configuration file")
	if b, err := os.ReadFile(filepath.Join(ws, "tree", "a", "z-config")); err != nil || !strings.Contains(string(b), "CANARY") {
		t.Fatalf("the hard link after a refused deletion: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "outer", "secrets", "telegram.token")); err != nil || string(b) != "CANARY-TOKEN\n" {
		t.Fatalf("the token after refused deletions: %q %v", b, err)
	}
}

// TestProtectedFilesInSessions: session workspaces share the protection:
// a mount of the whole workspace copies neither the configuration nor the
// token (nor a hard link of one), a mount naming one is refused, and a
// session's own files are untouched by it.
func TestProtectedFilesInSessions(t *testing.T) {
	e := newFileEnv(t)
	verbtest.WriteFile(t, filepath.Join(e.Dir, "docs", "a.md"), "doc\n")
	if err := os.Link(filepath.Join(e.Base, "etc", "web.token"), filepath.Join(e.Dir, "docs", "hl-web")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../hub.yml", filepath.Join(e.Dir, "docs", "sl-config")); err != nil {
		t.Fatal(err)
	}
	opts := verbs.SessionOptions{
		Root:       filepath.Join(e.State, "sessions"),
		Meta:       verbs.NewMemoryMeta(),
		MountRoots: []string{e.Dir},
		Mounts:     []verbs.Mount{{HostPath: ".", MountPath: ".", FollowSymlinks: true}},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	src, err := verbs.OpenSessions(e.WS, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	reg := executor.NewRegistry()
	if err := verbs.Register(reg, src, verbs.DefaultOptions(e.State)); err != nil {
		t.Fatal(err)
	}
	x := executor.New(reg, executor.Options{})
	in, _ := json.Marshal(map[string]any{"verb": "fs.writeFile", "arguments": verbs.FsWriteFileArgs{Path: "hub.yml", Content: "mine"}})
	if out := x.ExecuteInput(executor.WithCall(context.Background(), executor.Call{TurnID: "t.1", Session: "chat:1"}), in); out.Err != nil {
		t.Fatalf("a session's own hub.yml: %s", out.Err.Message)
	}
	live := filepath.Join(opts.Root, verbs.SessionDirName("chat:1"), "live")
	got := verbtest.Tree(t, live)
	for _, f := range got {
		if strings.Contains(f, "CANARY") {
			t.Errorf("the mount copied a protected file into the session: %s", f)
		}
	}
	if !slices.Contains(got, "docs/a.md=doc") || !slices.Contains(got, "hub.yml=mine") {
		t.Errorf("session tree %v", got)
	}
	for _, hp := range []string{"hub.yml", "secrets/telegram.token", "docs/hl-web"} {
		opts.Mounts = []verbs.Mount{{HostPath: hp, MountPath: "x"}}
		if s, err := verbs.OpenSessions(e.WS, opts); err == nil {
			s.Close()
			t.Errorf("a mount of %s was accepted", hp)
		} else if !strings.Contains(err.Error(), "protected file") {
			t.Errorf("mount of %s: %v", hp, err)
		}
	}
}

// TestProtectFilesOptions: a protected file must be named by an absolute
// path and not be a directory.
func TestProtectFilesOptions(t *testing.T) {
	ws := t.TempDir()
	for _, c := range []struct {
		path, want string
	}{
		{"hub.yml", "not an absolute path"},
		{ws, "is a directory"},
	} {
		w, err := verbs.OpenWorkspace(ws, verbs.WorkspaceOptions{ProtectFiles: []verbs.ProtectedFile{{Path: c.path, What: "x"}}})
		if err == nil {
			w.Close()
			t.Errorf("ProtectFiles %q accepted", c.path)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ProtectFiles %q: %v, want %q", c.path, err, c.want)
		}
	}
}

// TestProtectedFileSwapRace: while a goroutine swaps a directory of
// ordinary files with one holding hard links to the configuration and a
// token file under the same names, other goroutines read, copy, write,
// append to, move and delete those names through the swapped path. No
// result and no file written may carry a protected file's content, the
// protected files and their links must stay as they were, and some calls
// must have succeeded on the ordinary files, proving the race ran. It runs
// for 20 s when CI=true or -run names it, 3 s otherwise.
func TestProtectedFileSwapRace(t *testing.T) {
	e := newFileEnv(t)
	ws := e.Dir
	d, alt := filepath.Join(ws, "d"), filepath.Join(ws, "d.alt")
	verbtest.WriteFile(t, filepath.Join(d, "cfg"), "harmless\n")
	verbtest.WriteFile(t, filepath.Join(d, "tok"), "harmless\n")
	if err := os.MkdirAll(alt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(ws, "hub.yml"), filepath.Join(alt, "cfg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(ws, "secrets", "telegram.token"), filepath.Join(alt, "tok")); err != nil {
		t.Fatal(err)
	}
	protectedBefore := verbtest.Snapshot(t, filepath.Join(ws, "secrets"))
	configBefore, _ := os.ReadFile(filepath.Join(ws, "hub.yml"))

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		swapper(t, d, alt, stop, &swaps)
	}()
	var mu sync.Mutex
	succeeded := map[string]int{}
	var leaks []string
	call := func(verb string, args any) {
		in, _ := json.Marshal(map[string]any{"verb": verb, "arguments": args})
		out := e.X.ExecuteInput(context.Background(), in)
		res := string(out.JSON())
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(res, "CANARY") {
			leaks = append(leaks, fmt.Sprintf("%s %+v: %s", verb, args, res))
		}
		if out.Err == nil {
			succeeded[verb]++
		}
	}
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := fmt.Sprintf("out-%d-%d", w, i)
				for _, f := range []string{"d/cfg", "d/tok"} {
					call("fs.readFile", verbs.FsReadFileArgs{Path: f})
					call("fs.readRange", verbs.FsReadRangeArgs{Path: f, StartLine: 1, EndLine: 1})
					call("fs.copyFile", verbs.FsCopyFileArgs{SourcePath: f, DestinationPath: n})
					call("fs.readFile", verbs.FsReadFileArgs{Path: n})
					call("fs.deleteFile", verbs.FsDeleteFileArgs{Path: n})
					call("fs.writeFile", verbs.FsWriteFileArgs{Path: f, Content: "pwned\n", Mode: verbs.ModeAppend})
					call("fs.writeRange", verbs.FsWriteRangeArgs{Path: f, StartLine: 1, EndLine: verbtest.Ptr(1), Content: "harmless"})
					call("fs.moveFile", verbs.FsMoveFileArgs{SourcePath: f, DestinationPath: n + ".moved"})
					call("fs.readFile", verbs.FsReadFileArgs{Path: n + ".moved"})
					call("fs.deleteFile", verbs.FsDeleteFileArgs{Path: n + ".moved"})
					call("fs.deleteFile", verbs.FsDeleteFileArgs{Path: f})
					call("fs.writeFile", verbs.FsWriteFileArgs{Path: f, Content: "harmless\n", Mode: verbs.ModeCreate})
				}
			}
		}()
	}
	dur := raceDuration(t.Name())
	t.Logf("racing a swapper and 2 callers for %s", dur)
	time.Sleep(dur)
	close(stop)
	wg.Wait()

	for _, l := range leaks[:min(len(leaks), 10)] {
		t.Errorf("leak: %s", l)
	}
	if after := verbtest.Snapshot(t, filepath.Join(ws, "secrets")); !maps.Equal(protectedBefore, after) {
		t.Errorf("the token changed:\n%s", verbtest.DiffSnapshots(protectedBefore, after))
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "hub.yml")); string(b) != string(configBefore) {
		t.Errorf("the configuration changed: %q", b)
	}
	// The links are where the swaps left them, never removed or rewritten.
	for _, name := range []string{"cfg", "tok"} {
		found := 0
		for _, dir := range []string{d, alt} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && strings.Contains(string(b), "CANARY") {
				found++
			}
		}
		if found != 1 {
			t.Errorf("the hard link %s is found %d times, want once", name, found)
		}
	}
	err := filepath.WalkDir(ws, func(p string, de os.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() || !strings.HasPrefix(filepath.Base(p), "out-") {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "CANARY") {
			t.Errorf("protected content copied out to %s", p)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	t.Logf("%d swaps; succeeded: %v", swaps.Load(), succeeded)
	if swaps.Load() < 10 {
		t.Errorf("only %d swaps: the race did not run", swaps.Load())
	}
	for _, verb := range []string{"fs.readFile", "fs.copyFile", "fs.writeFile", "fs.moveFile", "fs.deleteFile"} {
		if succeeded[verb] == 0 {
			t.Errorf("%s never succeeded: the calls did not reach the ordinary files", verb)
		}
	}
}
