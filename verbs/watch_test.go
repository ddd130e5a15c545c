package verbs_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// TestWatch waits for changes of a file: none before the timeout, one
// since a state a previous call returned, a write, a removal and a
// creation while it waits; paths are confined and the timeout bounded.
func TestWatch(t *testing.T) {
	e := verbtest.New(t)
	e.Put("a.txt", "one\n")
	w := verbtest.OK[verbs.FsWatchResult](e, "fs.watch", map[string]any{"path": "a.txt", "timeoutSeconds": 1})
	if w.Changed || !w.Exists || w.State == "" || w.SizeBytes != 4 {
		t.Fatalf("an unchanged file: %+v", w)
	}
	again := verbtest.OK[verbs.FsWatchResult](e, "fs.watch", map[string]any{"path": "a.txt", "since": w.State, "timeoutSeconds": 1})
	if again.Changed || again.State != w.State {
		t.Fatalf("unchanged since its state: %+v, want state %s", again, w.State)
	}
	stale := verbtest.OK[verbs.FsWatchResult](e, "fs.watch", map[string]any{"path": "a.txt", "since": "0123", "timeoutSeconds": 600})
	if !stale.Changed || stale.State != w.State {
		t.Fatalf("a state other than the file's answers at once: %+v", stale)
	}

	// Only inotify can wake these on Linux: the poll waits an hour.
	if runtime.GOOS == "linux" {
		verbs.SetWatchPoll(t, time.Hour)
	}
	// One change while the watch runs, or before it starts: since names
	// the state before it, and the verb listens before it looks, so it is
	// heard either way. (Changing again while waiting for the answer
	// would move the file past the state the answer gives.)
	change := func(args map[string]any, do func()) verbs.FsWatchResult {
		t.Helper()
		args["timeoutSeconds"] = 600
		got := make(chan *executor.Outcome, 1)
		go func() { got <- e.Run("fs.watch", args) }()
		time.Sleep(20 * time.Millisecond) // most often the watch listens already
		do()
		select {
		case out := <-got:
			if !out.Succeeded() {
				t.Fatalf("fs.watch %v: %v", args, out.Err)
			}
			return *out.Value.(*verbs.FsWatchResult)
		case <-time.After(time.Minute):
			t.Fatalf("fs.watch %v heard no change within a minute", args)
			return verbs.FsWatchResult{}
		}
	}
	written := change(map[string]any{"path": "a.txt", "since": w.State}, func() { e.Put("a.txt", "one\ntwo\n") })
	if !written.Changed || !written.Exists || written.State == w.State {
		t.Fatalf("a write: %+v", written)
	}
	removed := change(map[string]any{"path": "a.txt", "since": written.State}, func() { os.Remove(filepath.Join(e.Dir, "a.txt")) })
	if !removed.Changed || removed.Exists {
		t.Fatalf("a removal: %+v", removed)
	}
	absent := verbtest.OK[verbs.FsWatchResult](e, "fs.watch", map[string]any{"path": "sub/new.txt", "timeoutSeconds": 1})
	if absent.Changed || absent.Exists {
		t.Fatalf("a missing file: %+v", absent)
	}
	created := change(map[string]any{"path": "sub/new.txt", "since": absent.State}, func() {
		if err := os.MkdirAll(filepath.Join(e.Dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		// Made whole elsewhere and renamed in: written in place, the file
		// would be heard as it was created, empty.
		e.Put("new.tmp", "x")
		if err := os.Rename(filepath.Join(e.Dir, "new.tmp"), filepath.Join(e.Dir, "sub", "new.txt")); err != nil {
			t.Fatal(err)
		}
	})
	if !created.Changed || !created.Exists || created.SizeBytes != 1 {
		t.Fatalf("a creation: %+v", created)
	}

	e.Fails(executor.CodeForbiddenPath, "fs.watch", map[string]any{"path": "../etc/passwd"}, "..")
	e.Fails(executor.CodeInvalidArguments, "fs.watch", map[string]any{"path": "a.txt", "timeoutSeconds": -1}, "accepted: 0 to 600")
	now := verbtest.OK[verbs.FsWatchResult](e, "fs.watch", map[string]any{"path": "sub/new.txt", "timeoutSeconds": 0})
	if now.Changed || !now.Exists || now.State != created.State {
		t.Fatalf("timeoutSeconds 0 answers the state now: %+v, want state %s", now, created.State)
	}
}
