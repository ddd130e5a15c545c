package verbs

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// How results read in chat: each result type renders itself from its typed
// fields and its call's typed arguments (executor.Renderer), as Markdown with
// code fences; escaping for a platform happens later, in its sender.

var (
	_ executor.Renderer = (*FsExistsResult)(nil)
	_ executor.Renderer = (*FsReadFileResult)(nil)
	_ executor.Renderer = (*FsReadRangeResult)(nil)
	_ executor.Renderer = (*FsWriteFileResult)(nil)
	_ executor.Renderer = (*FsUploadResult)(nil)
	_ executor.Renderer = (*FsSendResult)(nil)
	_ executor.Renderer = (*FsWriteRangeResult)(nil)
	_ executor.Renderer = (*FsDeleteFileResult)(nil)
	_ executor.Renderer = (*FsMoveFileResult)(nil)
	_ executor.Renderer = (*FsCopyFileResult)(nil)
	_ executor.Renderer = (*FsCreateDirectoryResult)(nil)
	_ executor.Renderer = (*FsDeleteDirectoryResult)(nil)
	_ executor.Renderer = (*FsLineCountResult)(nil)
	_ executor.Renderer = (*FsListDirResult)(nil)
	_ executor.Renderer = (*ProcRunResult)(nil)
	_ executor.Renderer = (*ProcOutputResult)(nil)
	_ executor.Renderer = (*SysMachineInfoResult)(nil)
	_ executor.Renderer = (*VfsSnapshotResult)(nil)
	_ executor.Renderer = (*VfsRestoreResult)(nil)
	_ executor.Renderer = (*VfsResetResult)(nil)
	_ executor.Renderer = (*VfsInfoResult)(nil)
	_ executor.Renderer = (*VfsListResult)(nil)
)

// argsAs returns the call's arguments as *A, or zero arguments when the
// renderer was given none (or another type).
func argsAs[A any](args any) *A {
	if a, ok := args.(*A); ok && a != nil {
		return a
	}
	return new(A)
}

// Render implements executor.Renderer.
func (r *FsExistsResult) Render(args any) string {
	p := argsAs[FsExistsArgs](args).Path
	if r.Exists {
		return fmt.Sprintf("`%s` exists.", p)
	}
	return fmt.Sprintf("`%s` does not exist.", p)
}

// Render implements executor.Renderer: text in a code block named after the
// file's language; binary content only as a note, since it is base64.
func (r *FsReadFileResult) Render(args any) string {
	p := argsAs[FsReadFileArgs](args).Path
	if f := r.sent; f != nil {
		return fmt.Sprintf("`%s` (%d bytes) is sent as the file %s.", p, f.Size, f.Name)
	}
	if r.File != nil && r.File.Encoding == EncodingBase64 {
		return fmt.Sprintf("`%s` is binary (%d bytes); add --json for its content in base64.", p, r.File.SizeBytes)
	}
	return executor.Headed("`"+p+"`"+versionNote(r.File), r.Content, langFor(p))
}

// RenderBody implements executor.BodyRenderer: Render's text of a text
// file, whose content enc (this result as AppendJSON writes it) holds
// escaped between `,"content":"` and the file's description. The span is
// checked against enc: the bytes around it are what AppendJSON writes
// around the content, and the line ends Render leaves out are the ones it
// cuts.
func (r *FsReadFileResult) RenderBody(args any, enc []byte) (before, after string, start, end int, ok bool) {
	if r.sent != nil || r.File == nil || r.File.Encoding == EncodingBase64 || !r.Succeeded {
		return "", "", 0, 0, false
	}
	p := argsAs[FsReadFileArgs](args).Path
	before, body, after := executor.HeadedParts("`"+p+"`"+versionNote(r.File), r.Content, langFor(p))
	head := append(executor.AppendResultJSON(nil, &r.Result), `,"content":"`...)
	tail := append(r.File.appendJSON(append([]byte(nil), `","file":`...)), '}')
	cut := 2 * (len(r.Content) - len(body)) // each line end cut is `\n`
	start, end = len(head), len(enc)-len(tail)-cut
	if end < start || !bytes.Equal(enc[:start], head) || !bytes.Equal(enc[len(enc)-len(tail):], tail) {
		return "", "", 0, 0, false
	}
	for i := end; i < end+cut; i += 2 {
		if enc[i] != '\\' || enc[i+1] != 'n' {
			return "", "", 0, 0, false
		}
	}
	return before, after, start, end, true
}

// Render implements executor.Renderer: the range under its line numbers;
// the last lines under theirs when known, or their count.
func (r *FsReadRangeResult) Render(args any) string {
	a := argsAs[FsReadRangeArgs](args)
	var head string
	switch n := int64(r.Lines); {
	case a.LastLines == nil:
		head = fmt.Sprintf("`%s` lines %d–%d", a.Path, a.StartLine, a.EndLine)
	case n == 0:
		return fmt.Sprintf("`%s` is empty.", a.Path)
	case r.StartLine > 0:
		head = fmt.Sprintf("`%s` lines %d–%d (the last %d)", a.Path, r.StartLine, r.StartLine+r.Lines-1, n)
	default:
		head = fmt.Sprintf("`%s` last %d %s", a.Path, n, plural(n, "line", "lines"))
	}
	return executor.Headed(head, r.Content, langFor(a.Path))
}

// Render implements executor.Renderer.
func (r *FsLineCountResult) Render(args any) string {
	n := int64(r.LineCount)
	return fmt.Sprintf("`%s` has %d %s.", argsAs[FsLineCountArgs](args).Path, n, plural(n, "line", "lines"))
}

// Render implements executor.Renderer: one line per entry, directories
// marked with a folder and a trailing slash.
func (r *FsListDirResult) Render(args any) string {
	p := argsAs[FsListDirArgs](args).Path
	if len(r.Entries) == 0 {
		return fmt.Sprintf("`%s` is empty.", p)
	}
	head := fmt.Sprintf("`%s` (%d %s)", p, len(r.Entries), plural(int64(len(r.Entries)), "entry", "entries"))
	// Written without fmt, in a buffer made once: a listing may hold
	// thousands of entries.
	const dir, file = "\n📁 ", "\n📄 "
	n := len(head)
	for _, e := range r.Entries {
		n += len(dir) + len(e.Name) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(head)
	for _, e := range r.Entries {
		if e.IsDirectory {
			b.WriteString(dir)
			b.WriteString(e.Name)
			b.WriteByte('/')
		} else {
			b.WriteString(file)
			b.WriteString(e.Name)
		}
	}
	return b.String()
}

// Render implements executor.Renderer: the command line and how it ended,
// then the tail of each stream that has output; when a tail is not all of
// its stream, the rendering ends with the proc.output command that reads
// the stream from its start.
func (r *ProcRunResult) Render(args any) string {
	a := argsAs[ProcRunArgs](args)
	argv := []string{a.Executable}
	for _, s := range a.Arguments {
		if strings.ContainsAny(s, " \t\"'") || s == "" {
			s = fmt.Sprintf("%q", s)
		}
		argv = append(argv, s)
	}
	var b strings.Builder
	var more []string
	status := fmt.Sprintf("exit %d", r.ExitCode)
	if r.TimedOut {
		status = "timed out, killed"
	} else if r.ExitCode == 0 {
		status = "exit 0 ✓"
	}
	fmt.Fprintf(&b, "`%s` — %s in %s", strings.Join(argv, " "), status, (time.Duration(r.DurationMs) * time.Millisecond).Round(time.Millisecond))
	for _, s := range []struct {
		name, tail, path string
		bytes            int64
	}{{"stdout", r.StdoutTail, r.StdoutPath, r.StdoutBytes}, {"stderr", r.StderrTail, r.StderrPath, r.StderrBytes}} {
		if s.tail == "" {
			continue
		}
		label := s.name
		switch {
		case s.bytes <= int64(len(s.tail)):
		case r.OutputID != "":
			label = fmt.Sprintf("%s (last %d of %d bytes)", s.name, len(s.tail), s.bytes)
			more = append(more, fmt.Sprintf("All of %s: `%s`", s.name, outputCommand(r.OutputID, OutputStream(s.name), 1)))
		default: // a result from before proc.output
			label = fmt.Sprintf("%s (last %d of %d bytes; all in %s)", s.name, len(s.tail), s.bytes, s.path)
		}
		fmt.Fprintf(&b, "\n%s:\n%s", label, executor.Fence(s.tail, ""))
	}
	if r.StdoutTail == "" && r.StderrTail == "" {
		b.WriteString("\n(no output)")
	}
	for _, m := range more {
		b.WriteString("\n" + m)
	}
	return b.String()
}

// Render implements executor.Renderer: the page in a code block under the
// range it holds, ending with the command for the next page, if any.
func (r *ProcOutputResult) Render(any) string {
	n := int64(r.TotalLines)
	if r.SentAs != "" {
		return fmt.Sprintf("The %s of `%s` (%d %s, %d bytes) is sent as the file %s.", r.Stream, r.OutputID, n, plural(n, "line", "lines"), r.TotalBytes, r.SentAs)
	}
	if r.EndLine < r.StartLine {
		return fmt.Sprintf("The %s of `%s` is empty.", r.Stream, r.OutputID)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s of `%s`, lines %d–%d of %d\n%s", r.Stream, r.OutputID, r.StartLine, r.EndLine, n, executor.Fence(r.Content, ""))
	if r.LineCut {
		fmt.Fprintf(&b, "\nLine %d is longer than a page: only its first %d bytes are shown.", r.EndLine, OutputPageBytes)
	}
	if r.NextStartLine > 0 {
		fmt.Fprintf(&b, "\nNext page: `%s`", outputCommand(r.OutputID, r.Stream, r.NextStartLine))
		fmt.Fprintf(&b, "\nThe whole %s as a file: `/proc.output outputId=%s stream=%s asFile=true`", r.Stream, r.OutputID, r.Stream)
	}
	return b.String()
}

// Render implements executor.Renderer.
func (r *FsUploadResult) Render(any) string {
	verb := "Saved"
	if r.Replaced {
		verb = "Replaced"
	}
	return fmt.Sprintf("%s `%s` (%s, SHA-256 %s).", verb, r.Path, sizeText(r.SizeBytes), r.SHA256)
}

// Render implements executor.Renderer.
func (r *FsSendResult) Render(any) string {
	if r.SizeBytes < r.FileSizeBytes {
		return fmt.Sprintf("`%s` bytes %d–%d of %d are sent as the file %s.", r.Path, r.Offset, r.Offset+r.SizeBytes, r.FileSizeBytes, r.Name)
	}
	return fmt.Sprintf("`%s` (%s) is sent as a file.", r.Path, sizeText(r.SizeBytes))
}

// sizeText is a size for people: bytes, and KiB, MiB or GiB from 1 KiB.
func sizeText(n int64) string {
	units := []string{"KiB", "MiB", "GiB"}
	if n < 1024 {
		return fmt.Sprintf("%d %s", n, plural(n, "byte", "bytes"))
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return fmt.Sprintf("%d bytes, %.1f %s", n, v, units[u])
}

// outputCommand is the chat command that reads a page of a call's output.
// Output ids need no quoting: they hold no spaces or quotes (validTurnID).
func outputCommand(id string, stream OutputStream, startLine int) string {
	return fmt.Sprintf("/proc.output outputId=%s stream=%s startLine=%d", id, stream, startLine)
}

// Render implements executor.Renderer: an aligned table in a code block.
func (r *SysMachineInfoResult) Render(any) string {
	rows := [][2]string{
		{"host", r.Hostname},
		{"os", r.OperatingSystem},
		{"cpus", fmt.Sprint(r.CPUCount)},
		{"memory", gib(float64(r.TotalMemoryBytes))},
		{"uptime", (time.Duration(r.UptimeSeconds) * time.Second).String()},
	}
	for _, d := range r.Disks {
		tot, free := float64(d.TotalBytes), float64(d.FreeBytes)
		pct := 0.0
		if tot > 0 {
			pct = 100 * (tot - free) / tot
		}
		rows = append(rows, [2]string{"disk " + d.Name, fmt.Sprintf("%s free of %s (%.0f%% used)", gib(free), gib(tot), pct)})
	}
	return executor.Fence(table(rows), "")
}

// Render implements executor.Renderer.
func (r *FsWriteFileResult) Render(args any) string {
	return fmt.Sprintf("✓ Wrote `%s`%s.", argsAs[FsWriteFileArgs](args).Path, versionNote(r.File))
}

// Render implements executor.Renderer.
func (r *FsWriteRangeResult) Render(args any) string {
	return fmt.Sprintf("✓ Updated `%s`.", argsAs[FsWriteRangeArgs](args).Path)
}

// Render implements executor.Renderer.
func (r *FsDeleteFileResult) Render(args any) string {
	return fmt.Sprintf("✓ Deleted `%s`.", argsAs[FsDeleteFileArgs](args).Path)
}

// Render implements executor.Renderer.
func (r *FsDeleteDirectoryResult) Render(args any) string {
	return fmt.Sprintf("✓ Deleted directory `%s` and everything in it.", argsAs[FsDeleteDirectoryArgs](args).Path)
}

// Render implements executor.Renderer.
func (r *FsCreateDirectoryResult) Render(args any) string {
	return fmt.Sprintf("✓ Created directory `%s`.", argsAs[FsCreateDirectoryArgs](args).Path)
}

// Render implements executor.Renderer.
func (r *FsMoveFileResult) Render(args any) string {
	a := argsAs[FsMoveFileArgs](args)
	return fmt.Sprintf("✓ Moved `%s` to `%s`.", a.SourcePath, a.DestinationPath)
}

// Render implements executor.Renderer.
func (r *FsCopyFileResult) Render(args any) string {
	a := argsAs[FsCopyFileArgs](args)
	return fmt.Sprintf("✓ Copied `%s` to `%s`.", a.SourcePath, a.DestinationPath)
}

// Render implements executor.Renderer: the new snapshot's id, ready to
// restore, with what it holds and how long it is kept.
func (r *VfsSnapshotResult) Render(any) string {
	s := r.Snapshot
	return fmt.Sprintf("✓ Snapshot `%s` taken: %s, kept until %s. Restore it with `/vfs.restore %s`.",
		s.SnapshotID, fileTotals(s.FileCount, s.TotalBytes), s.ExpiresAt, s.SnapshotID)
}

// Render implements executor.Renderer.
func (r *VfsRestoreResult) Render(args any) string {
	return fmt.Sprintf("✓ Restored snapshot `%s`: %s.", argsAs[VfsRestoreArgs](args).SnapshotID, fileTotals(r.FileCount, r.TotalBytes))
}

// Render implements executor.Renderer.
func (r *VfsResetResult) Render(any) string {
	return fmt.Sprintf("✓ Reset the session workspace from the host mounts: %s.", fileTotals(r.FileCount, r.TotalBytes))
}

// Render implements executor.Renderer: the workspace's totals, then its
// files with their versions and sizes.
func (r *VfsInfoResult) Render(any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Session `%s`: %s, %d %s\nroot: `%s`", r.Session, fileTotals(r.FileCount, r.TotalBytes),
		r.SnapshotCount, plural(int64(r.SnapshotCount), "snapshot", "snapshots"), r.Root)
	for _, f := range r.Files {
		fmt.Fprintf(&b, "\n📄 %s (version %d, %d %s)", f.Path, f.Version, f.SizeBytes, plural(f.SizeBytes, "byte", "bytes"))
	}
	if r.FilesTruncated {
		fmt.Fprintf(&b, "\n… only the first %d files are listed.", len(r.Files))
	}
	return b.String()
}

// Render implements executor.Renderer: one row per snapshot, oldest first,
// in a code block so that ids can be copied.
func (r *VfsListResult) Render(any) string {
	if len(r.Snapshots) == 0 {
		return "No snapshots of this conversation; /vfs.snapshot takes one."
	}
	rows := make([][2]string, 0, len(r.Snapshots))
	for _, s := range r.Snapshots {
		rows = append(rows, [2]string{s.SnapshotID, fmt.Sprintf("%s, taken %s, kept until %s", fileTotals(s.FileCount, s.TotalBytes), s.CreatedAt, s.ExpiresAt)})
	}
	n := int64(len(r.Snapshots))
	return fmt.Sprintf("%d %s (restore one with `/vfs.restore <snapshotId>`)\n%s", n, plural(n, "snapshot", "snapshots"), executor.Fence(table(rows), ""))
}

// table lays out rows as two columns, the first padded to its widest cell.
func table(rows [][2]string) string {
	w := 0
	for _, row := range rows {
		w = max(w, len(row[0]))
	}
	var b strings.Builder
	for _, row := range rows {
		fmt.Fprintf(&b, "%-*s  %s\n", w, row[0], row[1])
	}
	return b.String()
}

// versionNote is " (version N)" for files of session workspaces.
func versionNote(f *VfsFile) string {
	if f != nil && f.Version > 0 {
		return fmt.Sprintf(" (version %d)", f.Version)
	}
	return ""
}

// fileTotals is "N files, M bytes".
func fileTotals(n int, size int64) string {
	return fmt.Sprintf("%d %s, %d %s", n, plural(int64(n), "file", "files"), size, plural(size, "byte", "bytes"))
}

func gib(n float64) string { return fmt.Sprintf("%.1f GiB", n/(1<<30)) }

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

var langs = map[string]string{
	".go": "go", ".py": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript",
	".json": "json", ".yml": "yaml", ".yaml": "yaml", ".md": "markdown", ".sh": "bash", ".bash": "bash",
	".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java",
	".rb": "ruby", ".html": "html", ".css": "css", ".sql": "sql", ".toml": "toml", ".xml": "xml",
	".ini": "ini", ".dockerfile": "dockerfile", ".kt": "kotlin", ".swift": "swift", ".php": "php",
	".lua": "lua", ".diff": "diff", ".patch": "diff", ".tf": "hcl", ".cs": "csharp",
}

// langFor names the code block language of a file, from its name.
func langFor(p string) string {
	base := path.Base(p)
	switch base {
	case "Makefile", "makefile", "GNUmakefile":
		return "makefile"
	case "Dockerfile":
		return "dockerfile"
	}
	return langs[strings.ToLower(path.Ext(base))]
}
