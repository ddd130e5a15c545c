package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// RunKind is what wrote a mirror run: a `hub serve` process (the chat
// history) or one CLI invocation. Retention is decided per kind, so CLI
// activity never counts against the hub's own runs (docs/state.md,
// "Retention").
type RunKind string

// The kinds of run.
const (
	RunServe RunKind = "serve"
	RunCLI   RunKind = "cli"
)

// RunKinds are the kinds of run, in the order reports list them.
var RunKinds = []RunKind{RunServe, RunCLI}

// RunMarkerFile is the file in a run's directory that records its kind,
// written before the directory appears under its run id.
const RunMarkerFile = "run.json"

// runMarkerVersion is the version of run.json this hub writes.
const runMarkerVersion = 1

// A run's lock file is flows/<run_id>.lock, next to its directory: the
// process writing the run holds a lock on it for as long as the run is open,
// and pruning never removes a run whose lock is held. A run being created
// lives in flows/.<run_id>.new until it is complete.
const (
	runLockSuffix = ".lock"
	runNewPrefix  = "."
	runNewSuffix  = ".new"
)

// runMarker is run.json.
type runMarker struct {
	Version int     `json:"version"`
	Kind    RunKind `json:"kind"`
	PID     int     `json:"pid"`
}

// RunLockName is the name of run runID's lock file in the flows directory.
func RunLockName(runID string) string { return runID + runLockSuffix }

// validKind reports whether k is a kind this hub knows.
func validKind(k RunKind) bool { return k == RunServe || k == RunCLI }

// runLock is a held lock on a run's lock file.
type runLock struct{ f *os.File }

// release lets the lock go; the file stays (pruning removes it with the run).
func (l *runLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the file releases the lock
	l.f = nil
	return err
}

// ErrRunOpen is the error of opening a run that another writer holds open
// (a run id is made of the second and a random suffix: pick another), and
// tryLockFile's answer when another open file holds the lock.
var ErrRunOpen = errors.New("the run is open in another process")

// lockRun opens (creating with create) and locks the lock file of runID
// without waiting. It returns ErrRunOpen when someone holds it and an error
// matching fs.ErrNotExist when the file is missing and create is false.
func lockRun(flows *os.Root, runID string, create bool) (*runLock, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	f, err := flows.OpenFile(RunLockName(runID), flag, 0o600)
	if err != nil {
		return nil, err
	}
	if err := tryLockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return &runLock{f: f}, nil
}

// openRun makes flows/<runID>/chat/ ready for a writer of kind and returns
// the run's lock, held until the writer closes. A new run's directory
// appears complete, marker included, and locked: it is built under a
// temporary name and renamed once its lock is held, so pruning never sees a
// run that is being written without its lock. An existing run is reopened
// (its kind is kept; one without a marker gets one) unless another writer
// holds it.
func openRun(flows *os.Root, runID string, kind RunKind) (_ *runLock, err error) {
	if !validKind(kind) {
		return nil, fmt.Errorf("open run %s: kind %q is not %q or %q", runID, kind, RunServe, RunCLI)
	}
	lock, err := lockRun(flows, runID, true)
	if err != nil {
		if errors.Is(err, ErrRunOpen) {
			return nil, fmt.Errorf("open run %s: %w", runID, err)
		}
		return nil, fmt.Errorf("open run %s: lock: %w", runID, err)
	}
	defer func() {
		if err != nil {
			lock.release()
		}
	}()
	if fi, err := flows.Lstat(runID); err == nil {
		if !fi.IsDir() {
			return nil, fmt.Errorf("open run %s: %s is not a directory", runID, flowsName(runID))
		}
		return lock, reopenRun(flows, runID, kind)
	}
	tmp := runNewPrefix + runID + runNewSuffix
	if err := flows.RemoveAll(tmp); err != nil { // left by a creation that failed; we hold the lock
		return nil, fmt.Errorf("open run %s: %w", runID, flowsError("remove", tmp, err))
	}
	if err := buildRun(flows, tmp, kind); err != nil {
		flows.RemoveAll(tmp)
		return nil, fmt.Errorf("open run %s: %w", runID, err)
	}
	if err := flows.Rename(tmp, runID); err != nil {
		flows.RemoveAll(tmp)
		return nil, fmt.Errorf("open run %s: %w", runID, flowsError("rename", tmp, err))
	}
	if err := SyncDir(flows, "."); err != nil {
		return nil, fmt.Errorf("open run %s: %w", runID, flowsError("sync directory", ".", err))
	}
	return lock, nil
}

// buildRun creates dir in flows with chat/ and the marker, durably.
func buildRun(flows *os.Root, dir string, kind RunKind) error {
	chat := filepath.Join(dir, "chat")
	if err := flows.MkdirAll(chat, 0o700); err != nil {
		return flowsError("create", chat, err)
	}
	if err := writeMarker(flows, dir, kind); err != nil {
		return err
	}
	if err := SyncDir(flows, dir); err != nil {
		return flowsError("sync directory", dir, err)
	}
	return nil
}

// reopenRun makes sure the existing run dir in flows has chat/ and a
// marker.
func reopenRun(flows *os.Root, dir string, kind RunKind) error {
	chat := filepath.Join(dir, "chat")
	if err := flows.MkdirAll(chat, 0o700); err != nil {
		return fmt.Errorf("open run %s: %w", dir, flowsError("create", chat, err))
	}
	marker := filepath.Join(dir, RunMarkerFile)
	if _, err := flows.Lstat(marker); errors.Is(err, fs.ErrNotExist) {
		if err := writeMarker(flows, dir, kind); err != nil {
			return fmt.Errorf("open run %s: %w", dir, err)
		}
	}
	if err := SyncDir(flows, dir); err != nil {
		return fmt.Errorf("open run %s: %w", dir, flowsError("sync directory", dir, err))
	}
	return nil
}

func writeMarker(flows *os.Root, dir string, kind RunKind) error {
	b, err := marshalFile(runMarker{Version: runMarkerVersion, Kind: kind, PID: os.Getpid()})
	if err != nil {
		return err
	}
	name := filepath.Join(dir, RunMarkerFile)
	if err := WriteFileAtomic(flows, name, b, 0o600); err != nil {
		return flowsError("write", name, err)
	}
	return nil
}

// readRunKind is the kind the marker of run dir in flows records. A run
// without a readable marker of a known kind (made before kinds were
// recorded, or damaged) is taken as a serve run, whose retention keeps the
// most: marked is false.
func readRunKind(flows *os.Root, dir string) (kind RunKind, marked bool) {
	b, err := flows.ReadFile(filepath.Join(dir, RunMarkerFile))
	if err != nil {
		return RunServe, false
	}
	var m runMarker
	if json.Unmarshal(b, &m) != nil || !validKind(m.Kind) {
		return RunServe, false
	}
	return m.Kind, true
}

// runOfLock returns the run id of a lock file name, or "".
func runOfLock(name string) string {
	id, ok := strings.CutSuffix(name, runLockSuffix)
	if !ok {
		return ""
	}
	if _, err := ParseRunID(id); err != nil {
		return ""
	}
	return id
}

// runOfNew returns the run id of an unfinished run's directory name, or "".
func runOfNew(name string) string {
	id, ok := strings.CutPrefix(name, runNewPrefix)
	if !ok {
		return ""
	}
	if id, ok = strings.CutSuffix(id, runNewSuffix); !ok {
		return ""
	}
	if _, err := ParseRunID(id); err != nil {
		return ""
	}
	return id
}
