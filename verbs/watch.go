package verbs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// fs.watch waits until an entry of the workspace changes: it is created,
// written, removed or replaced. It compares the entry's state (whether it
// exists, its type, size and modification time) with the one it started
// from, or with the state a caller saw before (since, the state a
// previous fs.watch returned), so a change made between two calls is not
// missed. On Linux the kernel wakes it when the entry's directory changes
// (inotify); elsewhere, and as a safety net, it looks every
// WatchPollInterval. It holds no lock of the workspace while it waits.

// WatchPollInterval is how often fs.watch looks at its entry when nothing
// woke it.
const WatchPollInterval = time.Second

// watchPoll is WatchPollInterval; tests lengthen it to show that inotify
// alone wakes a watch on Linux.
var watchPoll = WatchPollInterval

// The bounds of fs.watch's timeoutSeconds.
const (
	DefaultWatchSeconds = 30
	MaxWatchSeconds     = 600
)

// FsWatchArgs are the arguments of fs.watch.
type FsWatchArgs struct {
	Path           string `json:"path" desc:"Workspace-relative path of the file or directory to watch (it may not exist yet)"`
	Since          string `json:"since,omitempty" desc:"The state a previous fs.watch returned: a change since then answers at once"`
	TimeoutSeconds *int   `json:"timeoutSeconds,omitempty" default:"30" desc:"Seconds to wait for a change, 0 to 600 (the verb timeout bounds it too); 0 answers at once with the state now"`
}

// FsWatchResult is the result of fs.watch.
type FsWatchResult struct {
	executor.Result
	Changed    bool   `json:"changed" desc:"Whether the entry changed before the timeout"`
	Exists     bool   `json:"exists" desc:"Whether the entry exists now"`
	State      string `json:"state" desc:"The entry's state now, to pass as since to the next fs.watch"`
	SizeBytes  int64  `json:"sizeBytes,omitempty" desc:"Size in bytes, when it exists"`
	ModifiedAt string `json:"modifiedAt,omitempty" desc:"Last modification, UTC with milliseconds, when it exists"`
}

// Watch implements fs.watch.
func (s *Set) Watch(ctx context.Context, a FsWatchArgs) (FsWatchResult, error) {
	secs := DefaultWatchSeconds
	if a.TimeoutSeconds != nil {
		secs = *a.TimeoutSeconds
	}
	if secs < 0 || secs > MaxWatchSeconds {
		return FsWatchResult{}, executor.Errorf(executor.CodeInvalidArguments, "timeoutSeconds %d is not accepted (accepted: 0 to %d; 0 answers at once with the state now)", secs, MaxWatchSeconds)
	}
	res, err := s.watchState(ctx, a.Path)
	if err != nil {
		return res, err
	}
	since := a.Since
	if since == "" {
		since = res.State
	}
	if res.State != since || secs == 0 {
		res.Changed = res.State != since
		return res, nil
	}
	wait, stop := watchWindow(ctx, time.Duration(secs)*time.Second)
	defer stop()
	for {
		// Listen first, then look: a change between the two is heard.
		wake, closeWake := s.wakeOn(ctx, a.Path)
		now, err := s.watchState(ctx, a.Path)
		if err != nil || now.State != since {
			closeWake()
			now.Changed = err == nil
			return now, err
		}
		err = waitWake(wait, wake)
		closeWake()
		if err != nil {
			return now, err
		}
		if wait.Err() != nil {
			return now, nil
		}
	}
}

// waitWake waits until wake hears, the poll interval passes or the window
// closes; an error means the call itself was cancelled.
func waitWake(wait context.Context, wake <-chan struct{}) error {
	t := time.NewTimer(watchPoll)
	defer t.Stop()
	select {
	case <-wait.Done():
		if err := context.Cause(wait); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	case <-wake:
	case <-t.C:
	}
	return nil
}

// watchWindow is the context fs.watch waits in: timeout, or the call's
// own deadline less a grace to answer in, whichever comes first.
func watchWindow(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		grace := min(max(left/10, 20*time.Millisecond), 2*time.Second)
		timeout = min(timeout, left-grace)
	}
	return context.WithTimeout(ctx, max(timeout, 0))
}

// watchState is the entry's state, looked at under the workspace's lock,
// which it releases before returning.
func (s *Set) watchState(ctx context.Context, p string) (FsWatchResult, error) {
	var res FsWatchResult
	_, l, release, err := s.usePath(ctx, false, p, confine.FollowFinal|confine.AllowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	fi, err := l.Stat()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.State = stateOf(l.Show(), nil)
		return res, nil
	case err != nil:
		return res, confine.FSError(err, l.Show(), "stat")
	}
	res.Exists, res.SizeBytes, res.ModifiedAt = true, fi.Size(), fmtTime(fi.ModTime())
	res.State = stateOf(l.Show(), fi)
	return res, nil
}

// stateOf is an entry's state as fs.watch compares it: a short hash of its
// path, type, size, permissions and modification time (nanoseconds).
func stateOf(show string, fi fs.FileInfo) string {
	h := sha256.New()
	if fi == nil {
		fmt.Fprintf(h, "%s\x00absent", show)
	} else {
		fmt.Fprintf(h, "%s\x00%v\x00%d\x00%d", show, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// wakeOn returns a channel that hears when the nearest existing directory
// above p, or p itself when it is a directory, may have changed, and a function that
// stops listening. The directories are opened through the confined
// workspace; wakeDirs listens to them (inotify on Linux; elsewhere nothing
// wakes the watch, and the poll alone finds changes).
func (s *Set) wakeOn(ctx context.Context, p string) (<-chan struct{}, func()) {
	var dirs []*os.File
	open := func(d string) bool {
		_, l, release, err := s.usePath(ctx, false, d, confine.FollowFinal|confine.AllowRoot)
		if err != nil {
			return false
		}
		defer release()
		if fi, err := l.Stat(); err != nil || !fi.IsDir() {
			return false
		}
		f, err := l.OpenDir()
		if err == nil {
			dirs = append(dirs, f)
		}
		return err == nil
	}
	open(orRoot(p))
	// The nearest directory above that exists: what is missing below it
	// appears there first.
	for d := path.Dir(orRoot(p)); !open(d) && d != "."; d = path.Dir(d) {
	}
	defer func() {
		for _, f := range dirs {
			f.Close()
		}
	}()
	return wakeDirs(dirs)
}

var _ executor.Renderer = (*FsWatchResult)(nil)

// Render implements executor.Renderer: whether the entry changed, and how
// it is now.
func (r *FsWatchResult) Render(args any) string {
	p := argsAs[FsWatchArgs](args).Path
	var now string
	if r.Exists {
		now = fmt.Sprintf("%d bytes, modified %s", r.SizeBytes, r.ModifiedAt)
	} else {
		now = "does not exist"
	}
	if r.Changed {
		if !r.Exists {
			return fmt.Sprintf("`%s` changed: it does not exist now.", p)
		}
		return fmt.Sprintf("`%s` changed: %s.", p, now)
	}
	return fmt.Sprintf("`%s` did not change before the timeout (%s).", p, now)
}
