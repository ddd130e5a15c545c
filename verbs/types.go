package verbs

import "github.com/a6afc2ce/hermes-hub/executor"

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

// FsReadFileArgs are the arguments of fs.readFile.
type FsReadFileArgs struct {
	Path string `json:"path" desc:"Workspace-relative path of a UTF-8 text file"`
}

// FsReadFileResult is the result of fs.readFile.
type FsReadFileResult struct {
	executor.Result
	Content string `json:"content" desc:"The whole file"`
}

// FsReadRangeArgs are the arguments of fs.readRange.
type FsReadRangeArgs struct {
	Path               string `json:"path" desc:"Workspace-relative path of a text file"`
	StartLine          int    `json:"startLine" desc:"First line to read, counting from 1"`
	EndLine            int    `json:"endLine" desc:"Last line to read, inclusive; at most the file's line count"`
	IncludeLineNumbers *bool  `json:"includeLineNumbers,omitempty" default:"true" desc:"Prefix each line with its number as 'N: '"`
}

// FsReadRangeResult is the result of fs.readRange.
type FsReadRangeResult struct {
	executor.Result
	Content string `json:"content" desc:"The lines joined with \\n, without their line endings"`
}

// FsWriteFileArgs are the arguments of fs.writeFile.
type FsWriteFileArgs struct {
	Path    string `json:"path" desc:"Workspace-relative path; missing parent directories are created and an existing file is replaced"`
	Content string `json:"content" desc:"The file's new content, at most 48000 characters by default"`
}

// FsWriteFileResult is the result of fs.writeFile.
type FsWriteFileResult struct {
	executor.Result
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
	Path string `json:"path" desc:"Workspace-relative directory; \".\" is the workspace root"`
}

// FsListDirResult is the result of fs.listDir.
type FsListDirResult struct {
	executor.Result
	Entries []DirEntry `json:"entries" desc:"Directories first, then files, each group sorted by name"`
}

// DirEntry is one entry of a directory listing.
type DirEntry struct {
	Name        string `json:"name" desc:"The entry's name within the directory"`
	IsDirectory bool   `json:"isDirectory" desc:"Whether the entry is a directory (or a link to one)"`
}

// ProcRunArgs are the arguments of proc.run.
type ProcRunArgs struct {
	Executable       string   `json:"executable" desc:"Program name looked up in PATH, an absolute path, or a workspace path containing a slash (relative to workingDirectory); no shell is involved"`
	Arguments        []string `json:"arguments" desc:"Arguments passed to the program as they are; may be empty"`
	TimeoutSeconds   *int     `json:"timeoutSeconds,omitempty" default:"60" desc:"Seconds before the process and everything it started are killed; capped by the hub's maximum"`
	WorkingDirectory string   `json:"workingDirectory,omitempty" default:"." desc:"Workspace-relative directory the program runs in"`
}

// ProcRunResult is the result of proc.run. A program that exits non-zero or
// times out is still a successful verb; ExitCode and TimedOut tell.
type ProcRunResult struct {
	executor.Result
	ExitCode    int    `json:"exitCode" desc:"The program's exit status; -1 when it timed out or died from a signal"`
	StdoutPath  string `json:"stdoutPath" desc:"Standard output's file, relative to the hub's state directory"`
	StderrPath  string `json:"stderrPath" desc:"Standard error's file, relative to the hub's state directory"`
	TimedOut    bool   `json:"timedOut" desc:"Whether the timeout killed the process group"`
	DurationMs  int64  `json:"durationMs" desc:"Wall-clock run time in milliseconds"`
	StdoutBytes int64  `json:"stdoutBytes" desc:"Bytes the program wrote to standard output, including any dropped over the cap"`
	StderrBytes int64  `json:"stderrBytes" desc:"Bytes the program wrote to standard error, including any dropped over the cap"`
	StdoutTail  string `json:"stdoutTail" desc:"The end of standard output as UTF-8"`
	StderrTail  string `json:"stderrTail" desc:"The end of standard error as UTF-8"`
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
