package verbs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
)

// Defaults for Options.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxTimeout     = 10 * time.Minute
	DefaultMaxOutputBytes = 16 << 20
	DefaultTailBytes      = 8 << 10
	DefaultMaxProcs       = 256
	DefaultMaxMemory      = 4 << 30 // the JVM reserves over 2GiB of address space at start
)

// DefaultEnvAllow is the environment a child process gets from the hub's own:
// these variables and nothing else, so the hub's tokens never reach a child.
var DefaultEnvAllow = []string{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "LOGNAME", "TMPDIR"}

// Options configure the verbs beyond the workspace's own limits.
type Options struct {
	// Clock times proc.run and names the output of calls without a turn;
	// nil means the real clock.
	Clock clock.Clock
	// StateDir is the hub's state root; result paths such as stdoutPath are
	// relative to it.
	StateDir string
	// State is the state directory StateDir, opened once by the caller and
	// held open (store.StateDir.Root). proc.run's output is written, read
	// and removed through it, in its proc/, one directory per turn, so a
	// symbolic link there never leads out of it. nil: the Set opens
	// StateDir itself when it first needs it.
	State *os.Root
	// EnvAllow names the environment variables copied from the hub's
	// environment into a child process.
	EnvAllow []string
	// DefaultTimeout applies when proc.run names none; MaxTimeout caps what
	// it may ask for.
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	// MaxOutputBytes caps each of a child's stdout and stderr files; bytes
	// beyond it are counted and dropped.
	MaxOutputBytes int64
	// TailBytes is how much of the end of each stream a result carries.
	TailBytes int
	// MaxProcs bounds how many processes a proc.run program may have at
	// once, itself included; the whole tree is killed beyond it.
	MaxProcs int
	// MaxMemory is each process's address space limit in bytes (RLIMIT_AS).
	MaxMemory int64
	// MaxCPUSeconds is each process's CPU time limit (RLIMIT_CPU); 0 means
	// the call's timeout.
	MaxCPUSeconds int
	// User is whom proc.run runs programs as; nil means the hub's own user
	// (ChooseProcUser decides it from the configuration). Changing user
	// needs a hub running as root.
	User *ProcUser
	// UploadDir is where fs.upload saves a file sent without a path,
	// relative to the workspace (uploads.dir); MaxUploadBytes the largest
	// file it saves (uploads.max_bytes); UploadTimeout how long the
	// download may take (uploads.timeout).
	UploadDir      string
	MaxUploadBytes int64
	UploadTimeout  time.Duration
	// Runners picks, by workspace name, the Runner that runs proc.run's
	// programs somewhere other than on the host (a container); nil, or no
	// runner for a workspace, runs them as host processes.
	Runners RunnerSource
}

// DefaultOptions returns the defaults for a hub whose state root is stateDir.
func DefaultOptions(stateDir string) Options {
	return Options{
		StateDir:       stateDir,
		EnvAllow:       append([]string(nil), DefaultEnvAllow...),
		DefaultTimeout: DefaultTimeout,
		MaxTimeout:     DefaultMaxTimeout,
		MaxOutputBytes: DefaultMaxOutputBytes,
		TailBytes:      DefaultTailBytes,
		MaxProcs:       DefaultMaxProcs,
		MaxMemory:      DefaultMaxMemory,
	}
}

func (o Options) validate() (Options, error) {
	if o.StateDir == "" {
		return o, errors.New("verbs: Options.StateDir is empty")
	}
	if o.EnvAllow == nil {
		o.EnvAllow = append([]string(nil), DefaultEnvAllow...)
	}
	if o.DefaultTimeout == 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	if o.MaxTimeout == 0 {
		o.MaxTimeout = DefaultMaxTimeout
	}
	if o.MaxOutputBytes == 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if o.TailBytes == 0 {
		o.TailBytes = DefaultTailBytes
	}
	if o.MaxProcs == 0 {
		o.MaxProcs = DefaultMaxProcs
	}
	if o.MaxMemory == 0 {
		o.MaxMemory = DefaultMaxMemory
	}
	if o.UploadDir == "" {
		o.UploadDir = DefaultUploadDir
	}
	if o.MaxUploadBytes == 0 {
		o.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if o.UploadTimeout == 0 {
		o.UploadTimeout = DefaultUploadTimeout
	}
	if o.DefaultTimeout < 0 || o.MaxTimeout < 0 || o.MaxOutputBytes < 0 || o.TailBytes < 0 || o.MaxUploadBytes < 0 || o.UploadTimeout < 0 {
		return o, errors.New("verbs: timeouts and sizes in Options must not be negative")
	}
	if o.MaxProcs < 0 || o.MaxMemory < 0 || o.MaxCPUSeconds < 0 {
		return o, fmt.Errorf("verbs: process limits must not be negative (MaxProcs %d, MaxMemory %d, MaxCPUSeconds %d)", o.MaxProcs, o.MaxMemory, o.MaxCPUSeconds)
	}
	if o.DefaultTimeout > o.MaxTimeout {
		o.DefaultTimeout = o.MaxTimeout
	}
	var err error
	if o.StateDir, err = filepath.Abs(o.StateDir); err != nil {
		return o, fmt.Errorf("verbs: state dir: %w", err)
	}
	return o, nil
}

// Set holds the verbs' implementations. Its methods can be called directly
// from Go; Register exposes them through an executor.Registry.
type Set struct {
	src   WorkspaceSource
	opts  Options
	lines *lineCache // line counts of files, for fs.lineCount and fs.readRange
	lists *listCache // fs.listDir's host listings: the process's one cache

	stateMu sync.Mutex
	state   *os.Root // StateDir, opened when opts.State was not given
}

// NewSet returns the verbs acting in the workspaces src hands out.
func NewSet(src WorkspaceSource, opts Options) (*Set, error) {
	if src == nil {
		return nil, errors.New("verbs: nil workspace source")
	}
	opts, err := opts.validate()
	if err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &Set{src: src, opts: opts, lines: newLineCache(lineCacheSize), lists: sharedLists}, nil
}

// Register adds the fs, proc and sys verbs to reg.
func Register(reg *executor.Registry, src WorkspaceSource, opts Options) error {
	s, err := NewSet(src, opts)
	if err != nil {
		return err
	}
	return s.Register(reg)
}

// Register adds s's fs, proc and sys verbs to reg.
func (s *Set) Register(reg *executor.Registry) error {
	regs := []func() error{
		reg1(reg, "fs.exists", "Check whether a file or directory exists", true, s.Exists),
		reg1(reg, "fs.readFile", "Read a whole file: text as it is, binary content as base64", true, s.ReadFile),
		reg1(reg, "fs.readRange", "Read lines startLine to endLine, or the last lines, of a text file", true, s.ReadRange),
		reg1(reg, "fs.readMany", "Read several files at once, each with its own success or error", true, s.ReadMany),
		reg1(reg, "fs.stat", "Describe a file or directory: type, size, mode, modification time, lines, SHA-256", true, s.Stat),
		reg1(reg, "fs.writeFile", "Create, replace or append to a file atomically", false, s.WriteFile),
		reg1(reg, "fs.writeRange", "Replace, insert or append lines in a text file", false, s.WriteRange),
		regInfo(reg, executor.Info{Name: "fs.upload", Summary: "Save the file sent with the message in the workspace", Permission: "fs.writeFile", TakesFile: true, ChatOnly: true, Aliases: []string{"upload"}}, s.Upload),
		regInfo(reg, executor.Info{Name: "fs.send", Summary: "Send a workspace file to the chat as a file", ReadOnly: true, ChatOnly: true, Aliases: []string{"get"}}, s.Send),
		reg1(reg, "fs.edit", "Replace exact passages of a text file and show the diff", false, s.Edit),
		reg1(reg, "fs.deleteFile", "Delete a file", false, s.DeleteFile),
		reg1(reg, "fs.moveFile", "Move a file to a path that does not exist yet", false, s.MoveFile),
		reg1(reg, "fs.copyFile", "Copy a file to a path that does not exist yet", false, s.CopyFile),
		reg1(reg, "fs.createDirectory", "Create a directory and its parents", false, s.CreateDirectory),
		reg1(reg, "fs.deleteDirectory", "Delete a directory and everything in it", false, s.DeleteDirectory),
		reg1(reg, "fs.lineCount", "Count the lines of a text file", true, s.LineCount),
		reg1(reg, "fs.listDir", "List a directory, directories first", true, s.ListDir),
		reg1(reg, "fs.search", "Search file contents for a regular expression or a literal, honouring .gitignore", true, s.Search),
		reg1(reg, "fs.find", "Find files and directories whose path matches a glob, like **/*_test.go", true, s.Find),
		reg1(reg, "fs.watch", "Wait until a file or directory is created, changed or removed, or a timeout passes", true, s.Watch),
		reg1(reg, "proc.run", "Run a program without a shell, with a timeout and captured output", false, s.ProcRun),
		reg1(reg, "proc.output", "Read lines of a proc.run call's stdout or stderr (the caller's own calls)", true, s.ProcOutput),
		reg1(reg, "sys.machineInfo", "Describe the machine: OS, CPUs, memory, disks", true, s.MachineInfo),
	}
	for _, r := range regs {
		if err := r(); err != nil {
			return err
		}
	}
	return nil
}

func reg1[A, R any](reg *executor.Registry, name, summary string, readOnly bool, f executor.VerbFunc[A, R]) func() error {
	return regInfo(reg, executor.Info{Name: name, Summary: summary, ReadOnly: readOnly}, f)
}

func regInfo[A, R any](reg *executor.Registry, info executor.Info, f executor.VerbFunc[A, R]) func() error {
	return func() error { return executor.Register(reg, info, f) }
}
