package verbs

import (
	"fmt"
	"os"

	"github.com/fsnotify/fsnotify"
)

// wakeDirs listens to the open directories through inotify: each is
// watched by its descriptor's name in /proc/self/fd, so the kernel watches
// the directory that was opened through the confined workspace, whatever
// its path becomes. The directories may be closed once it returns.
func wakeDirs(dirs []*os.File) (<-chan struct{}, func()) {
	if len(dirs) == 0 {
		return nil, func() {}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, func() {} // no inotify left: the poll finds changes
	}
	for _, d := range dirs {
		_ = w.Add(fmt.Sprintf("/proc/self/fd/%d", d.Fd())) // one not watched is polled
	}
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				select {
				case wake <- struct{}{}:
				default:
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return wake, func() { w.Close(); <-done }
}
