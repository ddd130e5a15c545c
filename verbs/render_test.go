package verbs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// usesGenericRendering lists the verbs whose results have no renderer of
// their own and are shown by the executor's generic "key: value" rendering.
// Every other verb's result must implement executor.Renderer.
var usesGenericRendering = map[string]bool{}

// TestRenderers renders every result type from typed values, as chat shows
// them.
func TestRenderers(t *testing.T) {
	ok := executor.Result{Succeeded: true}
	v3 := &verbs.VfsFile{Path: "n.md", Encoding: verbs.EncodingUTF8, SizeBytes: 2, Version: 3}
	host := &verbs.VfsFile{Path: "a.go", Encoding: verbs.EncodingUTF8, SizeBytes: 2}
	size := int64(3)
	snap := verbs.SnapshotInfo{SnapshotID: "20260102T030405.678Z-3f9a", CreatedAt: "2026-01-02T03:04:05.678Z", ExpiresAt: "2026-01-09T03:04:05.678Z", FileCount: 2, TotalBytes: 13}
	for _, tc := range []struct {
		name   string
		args   any
		result executor.Renderer
		want   string
	}{
		{"exists", &verbs.FsExistsArgs{Path: "a.txt"}, &verbs.FsExistsResult{Result: ok, Exists: true}, "`a.txt` exists."},
		{"does not exist", &verbs.FsExistsArgs{Path: "b"}, &verbs.FsExistsResult{Result: ok}, "`b` does not exist."},
		{"readFile host", &verbs.FsReadFileArgs{Path: "a.go"}, &verbs.FsReadFileResult{Result: ok, Content: "x\n", File: host}, "`a.go`\n```go\nx\n```"},
		{"readFile session", &verbs.FsReadFileArgs{Path: "n.md"}, &verbs.FsReadFileResult{Result: ok, Content: "# t\n```sh\nls\n```\n", File: v3}, "`n.md` (version 3)\n````markdown\n# t\n```sh\nls\n```\n````"},
		{"readFile Makefile", &verbs.FsReadFileArgs{Path: "sub/Makefile"}, &verbs.FsReadFileResult{Result: ok, Content: "all:\n"}, "`sub/Makefile`\n```makefile\nall:\n```"},
		{"readFile upper-case extension", &verbs.FsReadFileArgs{Path: "X.PY"}, &verbs.FsReadFileResult{Result: ok, Content: "p"}, "`X.PY`\n```python\np\n```"},
		{"readFile unknown language", &verbs.FsReadFileArgs{Path: "notes"}, &verbs.FsReadFileResult{Result: ok, Content: ""}, "`notes`\n```\n\n```"},
		{"readFile binary", &verbs.FsReadFileArgs{Path: "logo.png"}, &verbs.FsReadFileResult{Result: ok, Content: "iVBO", File: &verbs.VfsFile{Path: "logo.png", Encoding: verbs.EncodingBase64, SizeBytes: 7, Version: 2}}, "`logo.png` is binary (7 bytes); add --json for its content in base64."},
		{"readRange", &verbs.FsReadRangeArgs{Path: "a.ts", StartLine: 2, EndLine: 3}, &verbs.FsReadRangeResult{Result: ok, Content: "2: b\n3: c"}, "`a.ts` lines 2–3\n```typescript\n2: b\n3: c\n```"},
		{"lineCount one", &verbs.FsLineCountArgs{Path: "a"}, &verbs.FsLineCountResult{Result: ok, LineCount: 1}, "`a` has 1 line."},
		{"lineCount many", &verbs.FsLineCountArgs{Path: "a"}, &verbs.FsLineCountResult{Result: ok, LineCount: 0}, "`a` has 0 lines."},
		{"listDir", &verbs.FsListDirArgs{Path: "."}, &verbs.FsListDirResult{Result: ok, Entries: []verbs.DirEntry{{Name: "docs", IsDirectory: true}, {Name: "a.md", SizeBytes: &size, Version: 1}}}, "`.` (2 entries)\n📁 docs/\n📄 a.md"},
		{"listDir one", &verbs.FsListDirArgs{Path: "d"}, &verbs.FsListDirResult{Result: ok, Entries: []verbs.DirEntry{{Name: "x"}}}, "`d` (1 entry)\n📄 x"},
		{"listDir empty", &verbs.FsListDirArgs{Path: "d"}, &verbs.FsListDirResult{Result: ok, Entries: []verbs.DirEntry{}}, "`d` is empty."},
		{"proc exit 0", &verbs.ProcRunArgs{Executable: "true", Arguments: []string{}}, &verbs.ProcRunResult{Result: ok, DurationMs: 3}, "`true` — exit 0 ✓ in 3ms\n(no output)"},
		{"proc non-zero with streams", &verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "echo out; exit 3", "", "it's", `"q"`, "a\tb", "plain"}},
			&verbs.ProcRunResult{Result: ok, ExitCode: 3, DurationMs: 1500, StdoutBytes: 4, StdoutTail: "out\n", StderrBytes: 4, StderrTail: "err\n", StdoutPath: "proc/t/stdout.txt", StderrPath: "proc/t/stderr.txt"},
			"`sh -c \"echo out; exit 3\" \"\" \"it's\" \"\\\"q\\\"\" \"a\\tb\" plain` — exit 3 in 1.5s\nstdout:\n```\nout\n```\nstderr:\n```\nerr\n```"},
		{"proc timed out with truncated stdout", &verbs.ProcRunArgs{Executable: "yes", Arguments: []string{}},
			&verbs.ProcRunResult{Result: ok, ExitCode: -1, TimedOut: true, DurationMs: 60_000, StdoutBytes: 20_000, StdoutTail: "y\ny\n", StdoutPath: "proc/t/stdout.txt", StderrPath: "proc/t/stderr.txt"},
			"`yes` — timed out, killed in 1m0s\nstdout (last 4 of 20000 bytes; all in proc/t/stdout.txt):\n```\ny\ny\n```"},
		{"proc truncated with an output id", &verbs.ProcRunArgs{Executable: "make", Arguments: []string{}},
			&verbs.ProcRunResult{Result: ok, ExitCode: 2, DurationMs: 2000, OutputID: "telegram.5.9", StdoutBytes: 9000, StdoutTail: "ok\n", StderrBytes: 300, StderrTail: "bad\n", StdoutPath: "proc/telegram.5.9/stdout.txt", StderrPath: "proc/telegram.5.9/stderr.txt"},
			"`make` — exit 2 in 2s\nstdout (last 3 of 9000 bytes):\n```\nok\n```\nstderr (last 4 of 300 bytes):\n```\nbad\n```\n" +
				"All of stdout: `/proc.output outputId=telegram.5.9 stream=stdout startLine=1`\nAll of stderr: `/proc.output outputId=telegram.5.9 stream=stderr startLine=1`"},
		{"proc whole output with an output id", &verbs.ProcRunArgs{Executable: "ls", Arguments: []string{}},
			&verbs.ProcRunResult{Result: ok, DurationMs: 1, OutputID: "web.1", StdoutBytes: 2, StdoutTail: "a\n"}, "`ls` — exit 0 ✓ in 1ms\nstdout:\n```\na\n```"},
		{"proc.output first page", &verbs.ProcOutputArgs{OutputID: "web.1"},
			&verbs.ProcOutputResult{Result: ok, OutputID: "web.1", Stream: verbs.StreamStdout, Content: "1\n2", StartLine: 1, EndLine: 2, TotalLines: 5, TotalBytes: 10, NextStartLine: 3},
			"stdout of `web.1`, lines 1–2 of 5\n```\n1\n2\n```\nNext page: `/proc.output outputId=web.1 stream=stdout startLine=3`\nThe whole stdout as a file: `/proc.output outputId=web.1 stream=stdout asFile=true`"},
		{"proc.output last page", nil,
			&verbs.ProcOutputResult{Result: ok, OutputID: "web.1", Stream: verbs.StreamStderr, Content: "5", StartLine: 5, EndLine: 5, TotalLines: 5, TotalBytes: 10},
			"stderr of `web.1`, lines 5–5 of 5\n```\n5\n```"},
		{"proc.output cut line", nil,
			&verbs.ProcOutputResult{Result: ok, OutputID: "web.1", Stream: verbs.StreamStdout, Content: "xx", StartLine: 4, EndLine: 4, TotalLines: 9, TotalBytes: 99999, LineCut: true, NextStartLine: 5},
			"stdout of `web.1`, lines 4–4 of 9\n```\nxx\n```\nLine 4 is longer than a page: only its first 32768 bytes are shown.\nNext page: `/proc.output outputId=web.1 stream=stdout startLine=5`\nThe whole stdout as a file: `/proc.output outputId=web.1 stream=stdout asFile=true`"},
		{"proc.output as a file", nil,
			&verbs.ProcOutputResult{Result: ok, OutputID: "web.1", Stream: verbs.StreamStdout, StartLine: 1, EndLine: 450, TotalLines: 450, TotalBytes: 1692, SentAs: "web.1.stdout.txt"},
			"The stdout of `web.1` (450 lines, 1692 bytes) is sent as the file web.1.stdout.txt."},
		{"upload", nil, &verbs.FsUploadResult{Result: ok, Path: "uploads/q3.pdf", SizeBytes: 2 << 20, SHA256: "ab12"}, "Saved `uploads/q3.pdf` (2097152 bytes, 2.0 MiB, SHA-256 ab12)."},
		{"upload replacing", nil, &verbs.FsUploadResult{Result: ok, Path: "a.txt", SizeBytes: 1, SHA256: "ab12", Replaced: true}, "Replaced `a.txt` (1 byte, SHA-256 ab12)."},
		{"send", nil, &verbs.FsSendResult{Result: ok, Path: "build/app.bin", Name: "app.bin", SizeBytes: 4096, FileSizeBytes: 4096}, "`build/app.bin` (4096 bytes, 4.0 KiB) is sent as a file."},
		{"send a part", nil, &verbs.FsSendResult{Result: ok, Path: "big.iso", Name: "big.iso.100-200", Offset: 100, SizeBytes: 100, FileSizeBytes: 1000}, "`big.iso` bytes 100–200 of 1000 are sent as the file big.iso.100-200."},
		{"proc.output empty", nil, &verbs.ProcOutputResult{Result: ok, OutputID: "web.1", Stream: verbs.StreamStderr, StartLine: 1}, "The stderr of `web.1` is empty."},
		{"proc stderr only", &verbs.ProcRunArgs{Executable: "x", Arguments: []string{}}, &verbs.ProcRunResult{Result: ok, ExitCode: 1, StderrBytes: 2, StderrTail: "e\n"}, "`x` — exit 1 in 0s\nstderr:\n```\ne\n```"},
		{"machineInfo", &verbs.SysMachineInfoArgs{}, &verbs.SysMachineInfoResult{Result: ok, OperatingSystem: "linux debian 12", Hostname: "box", CPUCount: 8, TotalMemoryBytes: 16 << 30, UptimeSeconds: 93784,
			Disks: []verbs.DiskInfo{{Name: "/", FsType: "ext4", TotalBytes: 100 << 30, FreeBytes: 30 << 30}, {Name: "/mnt/empty", FsType: "tmpfs"}}},
			"```\nhost             box\nos               linux debian 12\ncpus             8\nmemory           16.0 GiB\nuptime           26h3m4s\ndisk /           30.0 GiB free of 100.0 GiB (70% used)\ndisk /mnt/empty  0.0 GiB free of 0.0 GiB (0% used)\n```"},
		{"machineInfo without disks", nil, &verbs.SysMachineInfoResult{Result: ok, OperatingSystem: "linux", Hostname: "h", CPUCount: 1, TotalMemoryBytes: 1 << 29},
			"```\nhost    h\nos      linux\ncpus    1\nmemory  0.5 GiB\nuptime  0s\n```"},
		{"writeFile host", &verbs.FsWriteFileArgs{Path: "a.go", Content: "x"}, &verbs.FsWriteFileResult{Result: ok, File: host}, "✓ Wrote `a.go`."},
		{"writeFile session", &verbs.FsWriteFileArgs{Path: "n.md", Content: "x"}, &verbs.FsWriteFileResult{Result: ok, File: v3}, "✓ Wrote `n.md` (version 3)."},
		{"writeRange", &verbs.FsWriteRangeArgs{Path: "n.md", StartLine: 1}, &verbs.FsWriteRangeResult{Result: ok, File: v3}, "✓ Updated `n.md`."},
		{"deleteFile", &verbs.FsDeleteFileArgs{Path: "a"}, &verbs.FsDeleteFileResult{Result: ok}, "✓ Deleted `a`."},
		{"deleteDirectory", &verbs.FsDeleteDirectoryArgs{Path: "d"}, &verbs.FsDeleteDirectoryResult{Result: ok}, "✓ Deleted directory `d` and everything in it."},
		{"createDirectory", &verbs.FsCreateDirectoryArgs{Path: "d/e"}, &verbs.FsCreateDirectoryResult{Result: ok}, "✓ Created directory `d/e`."},
		{"moveFile", &verbs.FsMoveFileArgs{SourcePath: "a", DestinationPath: "b/c"}, &verbs.FsMoveFileResult{Result: ok}, "✓ Moved `a` to `b/c`."},
		{"copyFile", &verbs.FsCopyFileArgs{SourcePath: "a", DestinationPath: "b"}, &verbs.FsCopyFileResult{Result: ok}, "✓ Copied `a` to `b`."},
		{"vfs.snapshot", &verbs.VfsSnapshotArgs{}, &verbs.VfsSnapshotResult{Result: ok, Snapshot: snap},
			"✓ Snapshot `20260102T030405.678Z-3f9a` taken: 2 files, 13 bytes, kept until 2026-01-09T03:04:05.678Z. Restore it with `/vfs.restore 20260102T030405.678Z-3f9a`."},
		{"vfs.restore", &verbs.VfsRestoreArgs{SnapshotID: snap.SnapshotID}, &verbs.VfsRestoreResult{Result: ok, FileCount: 1, TotalBytes: 1},
			"✓ Restored snapshot `20260102T030405.678Z-3f9a`: 1 file, 1 byte."},
		{"vfs.reset", &verbs.VfsResetArgs{}, &verbs.VfsResetResult{Result: ok}, "✓ Reset the session workspace from the host mounts: 0 files, 0 bytes."},
		{"vfs.info", &verbs.VfsInfoArgs{}, &verbs.VfsInfoResult{Result: ok, Session: "chat:telegram:1", Root: "/srv/hub/sessions/x/live", FileCount: 2, TotalBytes: 3, SnapshotCount: 1,
			Files: []verbs.VfsFile{{Path: "docs/a.md", SizeBytes: 1, Version: 1}, *v3}},
			"Session `chat:telegram:1`: 2 files, 3 bytes, 1 snapshot\nroot: `/srv/hub/sessions/x/live`\n📄 docs/a.md (version 1, 1 byte)\n📄 n.md (version 3, 2 bytes)"},
		{"vfs.info truncated", &verbs.VfsInfoArgs{}, &verbs.VfsInfoResult{Result: ok, Session: "s", Root: "/r", FileCount: 300, TotalBytes: 300, Files: []verbs.VfsFile{{Path: "a", SizeBytes: 1, Version: 1}}, FilesTruncated: true},
			"Session `s`: 300 files, 300 bytes, 0 snapshots\nroot: `/r`\n📄 a (version 1, 1 byte)\n… only the first 1 files are listed."},
		{"vfs.list", &verbs.VfsListArgs{}, &verbs.VfsListResult{Result: ok, Snapshots: []verbs.SnapshotInfo{snap, {SnapshotID: "20260103T000000.000Z-0001", CreatedAt: "2026-01-03T00:00:00.000Z", ExpiresAt: "2026-01-10T00:00:00.000Z", FileCount: 1, TotalBytes: 1}}},
			"2 snapshots (restore one with `/vfs.restore <snapshotId>`)\n```\n20260102T030405.678Z-3f9a  2 files, 13 bytes, taken 2026-01-02T03:04:05.678Z, kept until 2026-01-09T03:04:05.678Z\n20260103T000000.000Z-0001  1 file, 1 byte, taken 2026-01-03T00:00:00.000Z, kept until 2026-01-10T00:00:00.000Z\n```"},
		{"vfs.list empty", &verbs.VfsListArgs{}, &verbs.VfsListResult{Result: ok, Snapshots: []verbs.SnapshotInfo{}}, "No snapshots of this conversation; /vfs.snapshot takes one."},
		// Without arguments (or with another type) a renderer still renders.
		{"no arguments", nil, &verbs.FsMoveFileResult{Result: ok}, "✓ Moved `` to ``."},
		{"foreign arguments", &verbs.FsExistsArgs{Path: "a"}, &verbs.FsDeleteFileResult{Result: ok}, "✓ Deleted ``."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &executor.Outcome{Verb: "x.y", Args: tc.args, Value: tc.result}
			if got := executor.RenderText(out, false); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s\n(%q)", got, tc.want, got)
			}
		})
	}
}

// renderCase is one call in testdata/render/<verb>.json: arguments and the
// result JSON as the verb produces it.
type renderCase struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
}

// TestRenderGolden pins how every registered verb's results read in chat.
// testdata/render/<verb>.json holds calls with result JSON as the verb
// produces it; each is decoded strictly into the verb's typed arguments and
// result, must encode back to the same JSON (so renaming a json tag fails
// here rather than silently changing what chat shows), and is rendered and
// compared with testdata/render/<verb>.md. Run with -update to rewrite the
// .md files after an intended change of the rendering.
func TestRenderGolden(t *testing.T) {
	reg := newSessEnv(t).x.Registry()
	dir := filepath.Join("testdata", "render")
	for _, info := range reg.Verbs() {
		t.Run(info.Name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, info.Name+".json"))
			if err != nil {
				t.Fatalf("%v: every verb needs representative results to render", err)
			}
			var cases []renderCase
			if err := json.Unmarshal(data, &cases); err != nil || len(cases) == 0 {
				t.Fatalf("%s.json: %v (want a non-empty list of {name, arguments, result})", info.Name, err)
			}
			var b strings.Builder
			for _, c := range cases {
				out, err := reg.DecodeOutcome(info.Name, c.Arguments, c.Result)
				if err != nil {
					t.Fatalf("%s: %v", c.Name, err)
				}
				var want bytes.Buffer
				if err := json.Compact(&want, c.Result); err != nil {
					t.Fatal(err)
				}
				if got := out.JSON(); !bytes.Equal(got, want.Bytes()) {
					t.Errorf("%s: the result type encodes as\n%s\nnot as the verb's result\n%s", c.Name, got, want.Bytes())
				}
				if _, isRenderer := out.Value.(executor.Renderer); out.Succeeded() && !isRenderer && !usesGenericRendering[info.Name] {
					t.Errorf("%s: result %T is not an executor.Renderer", c.Name, out.Value)
				}
				fmt.Fprintf(&b, "<!-- %s -->\n%s\n\n", c.Name, executor.RenderText(out, false))
			}
			golden := filepath.Join(dir, info.Name+".md")
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./verbs/ -run TestRenderGolden -args -update to create it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("%s differs from the rendering (run with -update if the change is intended):\n%s", golden, b.String())
			}
		})
	}
}

// TestResultsRender checks, for every registered verb, that a real call
// keeps its typed arguments on the outcome and that its result renders
// itself: RenderText uses the result's Renderer, and a result decoded from
// the call's JSON renders the same.
func TestResultsRender(t *testing.T) {
	e := newSessEnv(t)
	const sess = "chat:telegram:1"
	sok[verbs.FsWriteFileResult](e, "", "fs.writeFile", map[string]any{"path": "a.txt", "content": "one\ntwo\n"})
	snap := sok[verbs.VfsSnapshotResult](e, sess, "vfs.snapshot", map[string]any{}).Snapshot
	// In order, in the host workspace or (vfs.*) a session.
	calls := []struct {
		verb string
		args any
	}{
		{"fs.exists", map[string]any{"path": "a.txt"}},
		{"fs.readFile", map[string]any{"path": "a.txt"}},
		{"fs.readRange", map[string]any{"path": "a.txt", "startLine": 1, "endLine": 2}},
		{"fs.readRange", map[string]any{"path": "a.txt", "lastLines": 1}},
		{"fs.readMany", map[string]any{"paths": []string{"a.txt", "missing.txt"}}},
		{"fs.stat", map[string]any{"path": "a.txt", "sha256": true, "countLines": true}},
		{"fs.edit", map[string]any{"path": "a.txt", "oldText": "two", "newText": "2", "dryRun": true}},
		{"fs.lineCount", map[string]any{"path": "a.txt"}},
		{"fs.listDir", map[string]any{"path": "."}},
		{"fs.search", map[string]any{"pattern": "two", "contextLines": 1}},
		{"fs.find", map[string]any{"pattern": "*.txt"}},
		{"fs.watch", map[string]any{"path": "a.txt", "timeoutSeconds": 1}},
		{"fs.writeFile", map[string]any{"path": "b.txt", "content": "x"}},
		{"fs.writeRange", map[string]any{"path": "b.txt", "startLine": 1, "endLine": 1, "content": "y"}},
		{"fs.copyFile", map[string]any{"sourcePath": "b.txt", "destinationPath": "c.txt"}},
		{"fs.moveFile", map[string]any{"sourcePath": "c.txt", "destinationPath": "d.txt"}},
		{"fs.deleteFile", map[string]any{"path": "d.txt"}},
		{"fs.createDirectory", map[string]any{"path": "x/y"}},
		{"fs.deleteDirectory", map[string]any{"path": "x"}},
		{"proc.run", map[string]any{"executable": "sh", "arguments": []string{"-c", "echo out; echo err >&2"}}},
		{"proc.output", map[string]any{"outputId": "test.1", "stream": "stderr"}},
		{"sys.machineInfo", map[string]any{}},
		{"vfs.snapshot", map[string]any{}},
		{"vfs.list", map[string]any{}},
		{"vfs.info", map[string]any{}},
		{"vfs.restore", map[string]any{"snapshotId": snap.SnapshotID}},
		{"vfs.reset", map[string]any{}},
		{"fs.upload", map[string]any{"path": "up.bin"}},
		{"fs.send", map[string]any{"path": "a.txt"}},
	}
	reg := e.x.Registry()
	checked := map[string]bool{}
	// The files of a chat conversation: the one sent with the message, and
	// a store for those sent back.
	data := []byte("uploaded\x00")
	files := executor.WithFiles(context.Background(), executor.FileOffer{Sink: &sink{}, Limit: 1 << 20, Where: "Telegram"})
	files = executor.WithUpload(files, &executor.Upload{Name: "up.bin", Size: int64(len(data)), Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}})
	for _, c := range calls {
		checked[c.verb] = true
		session := ""
		if strings.HasPrefix(c.verb, "vfs.") {
			session = sess
		}
		out := e.runCtx(files, session, c.verb, c.args)
		if !out.Succeeded() {
			t.Errorf("%s: %s (%s)", c.verb, out.Err.Message, out.Err.Code)
			continue
		}
		schema, _ := reg.Schema(c.verb)
		if at := reflect.TypeOf(out.Args); at == nil || at.Kind() != reflect.Pointer || at.Elem().Name() != schema.Arguments.Name {
			t.Errorf("%s: Outcome.Args is %T, want *%s", c.verb, out.Args, schema.Arguments.Name)
		}
		r, isRenderer := out.Value.(executor.Renderer)
		switch {
		case usesGenericRendering[c.verb] && isRenderer:
			t.Errorf("%s: listed as using the generic rendering, but %T renders itself", c.verb, out.Value)
		case !usesGenericRendering[c.verb] && !isRenderer:
			t.Errorf("%s: result %T is not an executor.Renderer (implement it in render.go, or list the verb in usesGenericRendering)", c.verb, out.Value)
		case isRenderer:
			if got, want := executor.RenderText(out, false), r.Render(out.Args); got != want {
				t.Errorf("%s: RenderText does not use the result's renderer:\n%s", c.verb, got)
			}
		}
		aj, _ := json.Marshal(c.args)
		decoded, err := reg.DecodeOutcome(c.verb, aj, out.JSON())
		if err != nil {
			t.Errorf("%s: %v", c.verb, err)
			continue
		}
		if got, want := executor.RenderText(decoded, false), executor.RenderText(out, false); got != want {
			t.Errorf("%s: decoded from JSON renders\n%s\nbut the call rendered\n%s", c.verb, got, want)
		}
	}
	for _, info := range reg.Verbs() {
		if !checked[info.Name] {
			t.Errorf("%s: no call checks how it renders", info.Name)
		}
	}
}
