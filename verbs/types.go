package verbs

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// Argument and result types of the verbs. Schemas are derived from these
// structs by reflection: a field is required unless it is a pointer or has
// omitempty, `default` documents an optional field's default and `desc`
// says what the field means.

// FsExistsArgs are the arguments of fs.exists.
type FsExistsArgs struct {
	Path string `json:"path" desc:"Workspace-relative path to check; \".\" is the workspace root"`
}

// FsExistsResult is the result of fs.exists.
type FsExistsResult struct {
	executor.Result
	Exists bool `json:"exists" desc:"Whether a file or directory exists at the path"`
}

// AppendJSON appends the result as encoding/json encodes it (see
// executor.JSONAppender): fs.exists is the cheapest verb, so its encoding is
// a large part of its cost.
func (r *FsExistsResult) AppendJSON(dst []byte) []byte {
	dst = executor.AppendResultJSON(dst, &r.Result)
	if r.Exists {
		return append(dst, `,"exists":true}`...)
	}
	return append(dst, `,"exists":false}`...)
}

// FsReadFileArgs are the arguments of fs.readFile.
type FsReadFileArgs struct {
	Path string `json:"path" desc:"Workspace-relative path of a file"`
}

// FsReadFileResult is the result of fs.readFile.
type FsReadFileResult struct {
	executor.Result
	Content string `json:"content" desc:"The whole file: text as it is, or base64 when file.encoding is base64"`
	// File is always set on success; in the host workspace it carries no
	// version or timestamps.
	File *VfsFile `json:"file,omitempty" desc:"The file's path, encoding and size; in session workspaces also its version and timestamps"`
	// sent is the file a chat got instead of the content: binary, or text
	// longer than a chat reply should carry (docs/uploads.md).
	sent *executor.SentFile
	// buf is the buffer Content shares, if it does (readWhole).
	buf []byte
}

// Release implements executor.Releaser: the buffer the content shares goes
// back to the reads of large files, and Content is cleared.
func (r *FsReadFileResult) Release() {
	if r.buf != nil {
		readBuffers.Put(r.buf)
		r.buf, r.Content = nil, ""
	}
}

// AppendJSON appends the result as encoding/json encodes it (see
// executor.JSONAppender): a read's content is the largest string the hub
// encodes, and encoding/json's reflection and buffer copy showed in the
// profile of a 1 MB read.
func (r *FsReadFileResult) AppendJSON(dst []byte) []byte {
	dst = slices.Grow(dst, len(r.Content)+len(r.Content)/16+256)
	dst = executor.AppendResultJSON(dst, &r.Result)
	dst = append(dst, `,"content":`...)
	dst = executor.AppendJSONString(dst, r.Content)
	if r.File != nil {
		dst = append(dst, `,"file":`...)
		dst = r.File.appendJSON(dst)
	}
	return append(dst, '}')
}

// appendJSON appends f as encoding/json encodes it.
func (f *VfsFile) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"path":`...)
	dst = executor.AppendJSONString(dst, f.Path)
	dst = append(dst, `,"encoding":`...)
	dst = executor.AppendJSONString(dst, string(f.Encoding))
	dst = append(dst, `,"sizeBytes":`...)
	dst = strconv.AppendInt(dst, f.SizeBytes, 10)
	if f.Version != 0 {
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, f.Version, 10)
	}
	if f.CreatedAt != "" {
		dst = append(dst, `,"createdAt":`...)
		dst = executor.AppendJSONString(dst, f.CreatedAt)
	}
	if f.UpdatedAt != "" {
		dst = append(dst, `,"updatedAt":`...)
		dst = executor.AppendJSONString(dst, f.UpdatedAt)
	}
	return append(dst, '}')
}

// VfsFile describes a file. Version, CreatedAt and UpdatedAt are kept in
// session workspaces only: in the host workspace they are left out, since
// other programs change host files without the hub knowing.
type VfsFile struct {
	Path      string       `json:"path" desc:"Workspace-relative path"`
	Encoding  FileEncoding `json:"encoding" desc:"How content is carried: utf-8 text, or base64 for binary content"`
	SizeBytes int64        `json:"sizeBytes" desc:"Size on disk in bytes"`
	Version   int64        `json:"version,omitempty" desc:"Session workspaces: 1 when created, plus one for every write (appends too); base edits on the version you read"`
	CreatedAt string       `json:"createdAt,omitempty" desc:"Session workspaces: when the file was created, UTC with milliseconds, like 2026-01-02T03:04:05.678Z"`
	UpdatedAt string       `json:"updatedAt,omitempty" desc:"Session workspaces: when the file was last written, same format"`
}

// FileEncoding names how file content is carried in a verb's JSON.
type FileEncoding string

// File encodings.
const (
	EncodingUTF8   FileEncoding = "utf-8"
	EncodingBase64 FileEncoding = "base64"
)

// Values implements executor.Enum.
func (FileEncoding) Values() []string { return []string{string(EncodingUTF8), string(EncodingBase64)} }

// ContentEncoding names how a write's content is given: a FileEncoding, or
// "binary", the original specification's name for base64, which is read as
// base64 (results always say base64).
type ContentEncoding FileEncoding

// Content encodings: EncodingBinary is accepted as another name for base64.
const (
	ContentUTF8                    = ContentEncoding(EncodingUTF8)
	ContentBase64                  = ContentEncoding(EncodingBase64)
	EncodingBinary ContentEncoding = "binary"
)

// Values implements executor.Enum.
func (ContentEncoding) Values() []string {
	return []string{string(EncodingUTF8), string(EncodingBase64), string(EncodingBinary)}
}

// UnmarshalJSON reads an encoding, "binary" as base64.
func (e *ContentEncoding) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*e = ContentEncoding(s)
	if *e == EncodingBinary {
		*e = ContentBase64
	}
	return nil
}

// WriteMode says what fs.writeFile does with an existing file.
type WriteMode string

// Write modes. Without a mode, fs.writeFile creates the file or replaces it.
const (
	ModeCreate    WriteMode = "create"    // the file must not exist
	ModeOverwrite WriteMode = "overwrite" // the file must exist; its content is replaced
	ModeAppend    WriteMode = "append"    // the file must exist; content is added at its end
)

// Values implements executor.Enum.
func (WriteMode) Values() []string {
	return []string{string(ModeCreate), string(ModeOverwrite), string(ModeAppend)}
}

// FsUploadArgs are the arguments of fs.upload.
type FsUploadArgs struct {
	Path      string `json:"path,omitempty" positional:"true" default:"uploads.dir/<the file's name>" desc:"Where to save the file sent with the message: a workspace-relative file path, or a directory ending in /"`
	Overwrite bool   `json:"overwrite,omitempty" default:"false" desc:"Replace a file already at the path; without it such a file is kept and nothing is saved"`
}

// FsUploadResult is the result of fs.upload.
type FsUploadResult struct {
	executor.Result
	Path      string `json:"path" desc:"Where the file was saved, workspace-relative"`
	SizeBytes int64  `json:"sizeBytes" desc:"Its size in bytes"`
	SHA256    string `json:"sha256" desc:"The SHA-256 of its bytes, hexadecimal"`
	Replaced  bool   `json:"replaced,omitempty" desc:"Whether it replaced a file (overwrite)"`
}

// FsSendArgs are the arguments of fs.send.
type FsSendArgs struct {
	Path   string `json:"path" desc:"Workspace-relative path of the file to send as a file"`
	Offset *int64 `json:"offset,omitempty" default:"0" desc:"First byte to send, for a file larger than the chat takes"`
	Length *int64 `json:"length,omitempty" default:"the rest of the file" desc:"How many bytes to send from offset"`
}

// FsSendResult is the result of fs.send.
type FsSendResult struct {
	executor.Result
	Path          string `json:"path" desc:"The file sent, workspace-relative"`
	Name          string `json:"name" desc:"The name it is delivered with (a part: name.START-END)"`
	Offset        int64  `json:"offset" desc:"The first byte sent"`
	SizeBytes     int64  `json:"sizeBytes" desc:"How many bytes were sent"`
	FileSizeBytes int64  `json:"fileSizeBytes" desc:"The whole file's size in bytes"`
	SHA256        string `json:"sha256" desc:"The SHA-256 of the bytes sent, hexadecimal"`
}

// FsReadRangeArgs are the arguments of fs.readRange: a range of lines, or
// the last lines (lastLines), read backwards from the end of the file.
type FsReadRangeArgs struct {
	Path               string `json:"path" desc:"Workspace-relative path of a text file"`
	StartLine          int    `json:"startLine,omitempty" positional:"true" default:"none" desc:"First line to read, counting from 1; give it with endLine, or lastLines instead"`
	EndLine            int    `json:"endLine,omitempty" positional:"true" default:"none" desc:"Last line to read, inclusive; at most the file's line count"`
	LastLines          *int   `json:"lastLines,omitempty" default:"none" desc:"Instead of startLine and endLine: the last N lines, read from the end of the file whatever its size"`
	IncludeLineNumbers *bool  `json:"includeLineNumbers,omitempty" default:"true" desc:"Prefix each line with its number as 'N: '; with lastLines and the file's line count unknown, numbers count from the end as '-N: ' (-1 is the last line)"`
}

// FsReadRangeResult is the result of fs.readRange.
type FsReadRangeResult struct {
	executor.Result
	Content   string `json:"content" desc:"The lines joined with \\n, without their line endings"`
	StartLine int    `json:"startLine,omitempty" desc:"With lastLines: the number of the first line returned, when the file's line count is known (counted before and unchanged since, or the file has no more lines than asked); absent when lines are numbered from the end"`
	Lines     int    `json:"lines,omitempty" desc:"With lastLines: how many lines were returned, fewer than asked when the file has fewer"`
}

// FsWriteFileArgs are the arguments of fs.writeFile.
type FsWriteFileArgs struct {
	Path     string          `json:"path" desc:"Workspace-relative path; missing parent directories are created"`
	Content  string          `json:"content" desc:"The content to write, at most 48000 characters by default (for base64, that many bytes once decoded)"`
	Mode     WriteMode       `json:"mode,omitempty" default:"create or overwrite" desc:"create fails if the file exists; overwrite replaces and append extends an existing file and fail if there is none"`
	Encoding ContentEncoding `json:"encoding,omitempty" default:"utf-8" desc:"How content is given: utf-8 text, or base64 for binary content (binary is another name for base64)"`
}

// FsWriteFileResult is the result of fs.writeFile.
type FsWriteFileResult struct {
	executor.Result
	File *VfsFile `json:"file,omitempty" desc:"The file as written: size, and in session workspaces its new version"`
}

// FsWriteRangeArgs are the arguments of fs.writeRange.
type FsWriteRangeArgs struct {
	Path      string `json:"path" desc:"Workspace-relative path of an existing text file"`
	StartLine int    `json:"startLine" desc:"First line to replace, or the line to insert before; line count + 1 appends"`
	EndLine   *int   `json:"endLine,omitempty" default:"null" desc:"Last line to replace, inclusive; null inserts before startLine without replacing"`
	Content   string `json:"content" desc:"The new lines; written with the file's line endings (LF or CRLF); empty deletes the range"`
}

// FsWriteRangeResult is the result of fs.writeRange.
type FsWriteRangeResult struct {
	executor.Result
	File *VfsFile `json:"file,omitempty" desc:"The file as written: size, and in session workspaces its new version"`
}

// FsDeleteFileArgs are the arguments of fs.deleteFile.
type FsDeleteFileArgs struct {
	Path string `json:"path" desc:"Workspace-relative path of a file or symbolic link; directories need fs.deleteDirectory"`
}

// FsDeleteFileResult is the result of fs.deleteFile.
type FsDeleteFileResult struct {
	executor.Result
}

// FsMoveFileArgs are the arguments of fs.moveFile.
type FsMoveFileArgs struct {
	SourcePath      string `json:"sourcePath" desc:"Workspace-relative path of the file to move (files only)"`
	DestinationPath string `json:"destinationPath" desc:"Workspace-relative new path; must not exist (never overwritten); parent directories are created"`
}

// FsMoveFileResult is the result of fs.moveFile.
type FsMoveFileResult struct {
	executor.Result
}

// FsCopyFileArgs are the arguments of fs.copyFile.
type FsCopyFileArgs struct {
	SourcePath      string `json:"sourcePath" desc:"Workspace-relative path of the file to copy (files only)"`
	DestinationPath string `json:"destinationPath" desc:"Workspace-relative path of the copy; must not exist (never overwritten); parent directories are created"`
}

// FsCopyFileResult is the result of fs.copyFile.
type FsCopyFileResult struct {
	executor.Result
}

// FsCreateDirectoryArgs are the arguments of fs.createDirectory.
type FsCreateDirectoryArgs struct {
	Path string `json:"path" desc:"Workspace-relative directory to create with its parents; an existing directory is fine"`
}

// FsCreateDirectoryResult is the result of fs.createDirectory.
type FsCreateDirectoryResult struct {
	executor.Result
}

// FsDeleteDirectoryArgs are the arguments of fs.deleteDirectory.
type FsDeleteDirectoryArgs struct {
	Path string `json:"path" desc:"Workspace-relative directory to delete with everything in it; never the workspace root"`
}

// FsDeleteDirectoryResult is the result of fs.deleteDirectory.
type FsDeleteDirectoryResult struct {
	executor.Result
}

// FsLineCountArgs are the arguments of fs.lineCount.
type FsLineCountArgs struct {
	Path string `json:"path" desc:"Workspace-relative path of a text file"`
}

// FsLineCountResult is the result of fs.lineCount.
type FsLineCountResult struct {
	executor.Result
	LineCount int `json:"lineCount" desc:"Number of lines; a last line without a newline counts, an empty file has 0"`
}

// FsListDirArgs are the arguments of fs.listDir.
type FsListDirArgs struct {
	Path string `json:"path,omitempty" default:"." desc:"Workspace-relative directory; \".\" is the workspace root"`
}

// FsListDirResult is the result of fs.listDir.
type FsListDirResult struct {
	executor.Result
	Entries []DirEntry `json:"entries" desc:"Directories first, then files, each group sorted by name"`
}

// DirEntry is one entry of a directory listing. In session workspaces
// files also carry their size, version and last write time.
type DirEntry struct {
	Name        string `json:"name" desc:"The entry's name within the directory"`
	IsDirectory bool   `json:"isDirectory" desc:"Whether the entry is a directory (or a link to one)"`
	SizeBytes   *int64 `json:"sizeBytes,omitempty" desc:"Files in session workspaces: size in bytes"`
	Version     int64  `json:"version,omitempty" desc:"Files in session workspaces: the file's version"`
	UpdatedAt   string `json:"updatedAt,omitempty" desc:"Files in session workspaces: when the file was last written, UTC with milliseconds"`
}

// ProcRunArgs are the arguments of proc.run.
type ProcRunArgs struct {
	Executable       string   `json:"executable" desc:"Program name looked up in PATH, an absolute path, or a workspace path containing a slash (relative to workingDirectory); no shell is involved"`
	Arguments        []string `json:"arguments,omitempty" default:"[]" desc:"Arguments passed to the program as they are; may be empty"`
	TimeoutSeconds   *int     `json:"timeoutSeconds,omitempty" default:"60" desc:"Seconds before the process and everything it started are killed; capped by the hub's maximum"`
	WorkingDirectory string   `json:"workingDirectory,omitempty" default:"." desc:"Workspace-relative directory the program runs in"`
}

// ProcRunResult is the result of proc.run. A program that exits non-zero or
// times out is still a successful verb; ExitCode and TimedOut tell.
type ProcRunResult struct {
	executor.Result
	ExitCode    int    `json:"exitCode" desc:"The program's exit status; -1 when it timed out or died from a signal"`
	OutputID    string `json:"outputId" desc:"Names this call's output for proc.output, which returns any lines of it to the caller who ran it"`
	StdoutPath  string `json:"stdoutPath" desc:"Standard output's file, relative to the hub's state directory (no verb reads it there: use proc.output with outputId)"`
	StderrPath  string `json:"stderrPath" desc:"Standard error's file, relative to the hub's state directory (no verb reads it there: use proc.output with outputId)"`
	TimedOut    bool   `json:"timedOut" desc:"Whether the timeout killed the process group"`
	DurationMs  int64  `json:"durationMs" desc:"Wall-clock run time in milliseconds"`
	StdoutBytes int64  `json:"stdoutBytes" desc:"Bytes the program wrote to standard output, including any dropped over the cap"`
	StderrBytes int64  `json:"stderrBytes" desc:"Bytes the program wrote to standard error, including any dropped over the cap"`
	StdoutTail  string `json:"stdoutTail" desc:"The end of standard output as UTF-8"`
	StderrTail  string `json:"stderrTail" desc:"The end of standard error as UTF-8"`
}

// ProcOutputArgs are the arguments of proc.output.
type ProcOutputArgs struct {
	OutputID  string       `json:"outputId" desc:"The outputId of a proc.run result"`
	Stream    OutputStream `json:"stream,omitempty" default:"stdout" desc:"Which stream to read"`
	StartLine *int         `json:"startLine,omitempty" default:"1" desc:"First line to return, counting from 1"`
	EndLine   *int         `json:"endLine,omitempty" default:"startLine+199" desc:"Last line to return; a page also ends before 32 KiB, and at the last line"`
	AsFile    bool         `json:"asFile,omitempty" default:"false" desc:"Send the whole stream as a file instead of a page (in a chat conversation)"`
}

// OutputStream names one of a program's output streams.
type OutputStream string

// Output streams.
const (
	StreamStdout OutputStream = "stdout"
	StreamStderr OutputStream = "stderr"
)

// Values implements executor.Enum.
func (OutputStream) Values() []string { return []string{string(StreamStdout), string(StreamStderr)} }

// ProcOutputResult is the result of proc.output: one page of a stream.
type ProcOutputResult struct {
	executor.Result
	OutputID      string       `json:"outputId" desc:"The output read"`
	Stream        OutputStream `json:"stream" desc:"The stream read"`
	Content       string       `json:"content" desc:"Lines startLine to endLine as UTF-8, joined by newlines, without line numbers"`
	StartLine     int          `json:"startLine" desc:"The first line returned"`
	EndLine       int          `json:"endLine" desc:"The last line returned; startLine-1 when the stream is empty"`
	TotalLines    int          `json:"totalLines" desc:"Lines in the stream"`
	TotalBytes    int64        `json:"totalBytes" desc:"Bytes in the stream's file (capped by verbs.proc.max_output_bytes)"`
	NextStartLine int          `json:"nextStartLine,omitempty" desc:"Where the next page starts; absent after the last line"`
	LineCut       bool         `json:"lineCut,omitempty" desc:"The one line returned is longer than a page and was cut at 32 KiB"`
	SentAs        string       `json:"sentAs,omitempty" desc:"With asFile: the name the whole stream was sent with as a file (no content then)"`
	SHA256        string       `json:"sha256,omitempty" desc:"With asFile: the SHA-256 of the bytes sent"`
}

// SysMachineInfoArgs are the (empty) arguments of sys.machineInfo.
type SysMachineInfoArgs struct{}

// SysMachineInfoResult is the result of sys.machineInfo.
type SysMachineInfoResult struct {
	executor.Result
	OperatingSystem  string     `json:"operatingSystem" desc:"Operating system, distribution and kernel, like 'linux debian 12.2 (kernel 6.1.0)'"`
	Hostname         string     `json:"hostname" desc:"The machine's host name"`
	CPUCount         int        `json:"cpuCount" desc:"Logical CPUs available to the hub"`
	TotalMemoryBytes int64      `json:"totalMemoryBytes" desc:"Physical memory in bytes"`
	UptimeSeconds    int64      `json:"uptimeSeconds" desc:"Seconds since the machine booted"`
	Disks            []DiskInfo `json:"disks" desc:"Mounted disk filesystems (pseudo filesystems left out), sorted by mount point"`
}

// DiskInfo describes one mounted filesystem.
type DiskInfo struct {
	Name       string `json:"name" desc:"Mount point"`
	Device     string `json:"device,omitempty" desc:"Block device or source, when known"`
	FsType     string `json:"fsType" desc:"Filesystem type, like ext4"`
	TotalBytes int64  `json:"totalBytes" desc:"Size in bytes"`
	FreeBytes  int64  `json:"freeBytes" desc:"Bytes available to unprivileged users"`
}

// VfsSnapshotArgs are the (empty) arguments of vfs.snapshot.
type VfsSnapshotArgs struct{}

// VfsSnapshotResult is the result of vfs.snapshot.
type VfsSnapshotResult struct {
	executor.Result
	Snapshot SnapshotInfo `json:"snapshot" desc:"The new snapshot; pass its snapshotId to vfs.restore"`
}

// VfsRestoreArgs are the arguments of vfs.restore.
type VfsRestoreArgs struct {
	SnapshotID string `json:"snapshotId" desc:"A snapshot of this conversation, as vfs.snapshot returned it or vfs.list shows it"`
}

// VfsRestoreResult is the result of vfs.restore.
type VfsRestoreResult struct {
	executor.Result
	FileCount  int   `json:"fileCount" desc:"Files in the workspace after the restore"`
	TotalBytes int64 `json:"totalBytes" desc:"Their total size in bytes"`
}

// VfsResetArgs are the (empty) arguments of vfs.reset.
type VfsResetArgs struct{}

// VfsResetResult is the result of vfs.reset.
type VfsResetResult struct {
	executor.Result
	FileCount  int   `json:"fileCount" desc:"Files in the fresh workspace (those of the host mounts)"`
	TotalBytes int64 `json:"totalBytes" desc:"Their total size in bytes"`
}

// VfsInfoArgs are the (empty) arguments of vfs.info.
type VfsInfoArgs struct{}

// VfsInfoResult is the result of vfs.info.
type VfsInfoResult struct {
	executor.Result
	Session        string    `json:"session" desc:"The session id: the conversation's chat key, or the API caller's session"`
	Root           string    `json:"root" desc:"The workspace's directory, relative to the sessions root (sessions.root)"`
	FileCount      int       `json:"fileCount" desc:"Files in the workspace"`
	TotalBytes     int64     `json:"totalBytes" desc:"Their total size in bytes"`
	SnapshotCount  int       `json:"snapshotCount" desc:"Snapshots this conversation can restore"`
	Files          []VfsFile `json:"files" desc:"The files with their versions, sorted by path; at most 200"`
	FilesTruncated bool      `json:"filesTruncated,omitempty" desc:"Whether files lists only the first 200"`
}

// VfsListArgs are the (empty) arguments of vfs.list.
type VfsListArgs struct{}

// VfsListResult is the result of vfs.list.
type VfsListResult struct {
	executor.Result
	Snapshots []SnapshotInfo `json:"snapshots" desc:"This conversation's snapshots, oldest first"`
}

// SnapshotInfo describes a snapshot.
type SnapshotInfo struct {
	SnapshotID string `json:"snapshotId" desc:"Opaque id, sortable by creation time"`
	CreatedAt  string `json:"createdAt" desc:"When it was taken, UTC with milliseconds"`
	ExpiresAt  string `json:"expiresAt" desc:"When it will be removed"`
	FileCount  int    `json:"fileCount" desc:"Files it holds"`
	TotalBytes int64  `json:"totalBytes" desc:"Their total size in bytes"`
}
