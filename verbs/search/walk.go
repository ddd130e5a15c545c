package search

import (
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// WalkOptions say which entries a walk visits.
type WalkOptions struct {
	// Hidden visits entries whose name starts with a dot; without it they
	// are left out, directories with what they hold.
	Hidden bool
	// NoIgnore leaves IgnoreFiles unread. Without it, .git directories are
	// never walked either.
	NoIgnore bool
	// MaxDepth is the deepest workspace-relative path visited, in
	// segments: the workspace's path limit, so that every path a walk
	// shows is one the other verbs accept.
	MaxDepth int
	// Exclude leaves out the entries it matches, directories with what
	// they hold.
	Exclude *Globs
	// Descend, when set, says whether a directory (start-relative path,
	// depth in segments below the start) is worth walking into.
	Descend func(rel string, depth int) bool
}

// Entry is one entry a walk visits.
type Entry struct {
	// Dir holds the entry, open while the visit runs.
	Dir    *confine.Dir
	Name   string
	dirRel string
	// Type is fs.ModeDir for a directory, 0 for a regular file.
	Type fs.FileMode
}

// Path is the entry's workspace-relative path.
func (e Entry) Path() string { return confine.Join(e.Dir.Name(), e.Name) }

// Rel is the entry's path relative to the walk's start.
func (e Entry) Rel() string { return joinRel(e.dirRel, e.Name) }

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// Visitor receives a walk's entries: each worker has its own, called on
// the worker's goroutine. Entries that are neither directories nor
// regular files (symbolic links, pipes, devices) are not visited.
type Visitor interface {
	// File visits a regular file.
	File(e Entry)
	// Dir visits a directory, before it is walked (if it is).
	Dir(e Entry)
}

// Walk visits the tree below start, in parallel, one worker per visitor,
// until it ends or stop is set; ign is the chain of ignore files in force
// in start (those of its parents). Walk takes start and closes it. It
// returns how many directories and files could not be opened or read
// (they are left out).
func Walk(start *confine.Dir, ign *Ignores, opts WalkOptions, stop *Stop, visitors []Visitor) int64 {
	w := &walker{opts: opts, stop: stop}
	w.cond.L = &w.mu
	w.push(task{open: start, ign: ign})
	var wg sync.WaitGroup
	for _, v := range visitors {
		wg.Go(func() { w.work(v) })
	}
	wg.Wait()
	return w.failed.Load()
}

// fileBatch is how many files of a directory make one task.
const fileBatch = 32

// node is a directory being walked, held open while tasks need it.
type node struct {
	dir  *confine.Dir
	rel  string // start-relative, "" for the start
	ign  *Ignores
	refs atomic.Int32
}

func (n *node) hold() *node { n.refs.Add(1); return n }

func (n *node) release() {
	if n.refs.Add(-1) == 0 {
		n.dir.Close()
	}
}

// task is a directory to walk (its parent and name, or the start, open)
// or a batch of files of a directory.
type task struct {
	parent *node
	open   *confine.Dir
	name   string
	rel    string
	ign    *Ignores
	files  []string
}

// walker shares a stack of tasks between its workers: last in, first out,
// so a directory's files are searched before its subdirectories are
// opened, and the directories held open stay few.
type walker struct {
	opts   WalkOptions
	stop   *Stop
	failed atomic.Int64

	mu    sync.Mutex
	cond  sync.Cond
	stack []task
	busy  int // tasks queued or running
}

func (w *walker) push(t task) {
	w.mu.Lock()
	w.stack = append(w.stack, t)
	w.busy++
	w.mu.Unlock()
	w.cond.Signal()
}

// pop waits for a task; false when none is left and none is running.
func (w *walker) pop() (task, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.stack) == 0 {
		if w.busy == 0 {
			return task{}, false
		}
		w.cond.Wait()
	}
	t := w.stack[len(w.stack)-1]
	w.stack[len(w.stack)-1] = task{}
	w.stack = w.stack[:len(w.stack)-1]
	return t, true
}

func (w *walker) finish() {
	w.mu.Lock()
	w.busy--
	done := w.busy == 0
	w.mu.Unlock()
	if done {
		w.cond.Broadcast()
	}
}

func (w *walker) work(v Visitor) {
	for {
		t, ok := w.pop()
		if !ok {
			return
		}
		if t.files != nil {
			w.files(t, v)
		} else {
			w.dir(t, v)
		}
		w.finish()
	}
}

func (w *walker) files(t task, v Visitor) {
	defer t.parent.release()
	for _, name := range t.files {
		if w.stop.Stopped() {
			return
		}
		v.File(Entry{Dir: t.parent.dir, Name: name, dirRel: t.parent.rel})
	}
}

// dir opens and reads one directory, visits its subdirectories and queues
// them and its files.
func (w *walker) dir(t task, v Visitor) {
	d := t.open
	if d == nil {
		var err error
		d, err = t.parent.dir.Sub(t.name)
		t.parent.release()
		if err != nil {
			w.failed.Add(1)
			return
		}
	}
	n := &node{dir: d, rel: t.rel}
	n.refs.Store(1)
	defer n.release()
	if w.stop.Stopped() {
		return
	}
	des, err := d.Read()
	if err != nil {
		w.failed.Add(1)
		return
	}
	n.ign = t.ign
	if !w.opts.NoIgnore {
		n.ign = n.ign.Load(d, func(name string) bool { return hasEntry(des, name) })
	}
	var files []string
	for _, e := range des {
		if !w.keep(n, e) {
			continue
		}
		if e.Type.IsDir() {
			ent := Entry{Dir: d, Name: e.Name, dirRel: n.rel, Type: fs.ModeDir}
			v.Dir(ent)
			rel := ent.Rel()
			depth := strings.Count(rel, "/") + 1
			if segments(d.Name())+1 < w.opts.MaxDepth && (w.opts.Descend == nil || w.opts.Descend(rel, depth)) {
				w.push(task{parent: n.hold(), name: e.Name, rel: rel, ign: n.ign})
			}
			continue
		}
		files = append(files, e.Name)
	}
	for len(files) > 0 {
		k := min(len(files), fileBatch)
		w.push(task{parent: n.hold(), files: files[:k:k]})
		files = files[k:]
	}
}

// keep reports whether the entry e of n is visited.
func (w *walker) keep(n *node, e confine.Entry) bool {
	isDir := e.Type.IsDir()
	switch {
	case !isDir && e.Type != 0:
		return false // links are not followed; pipes and devices are not files
	case !w.opts.Hidden && strings.HasPrefix(e.Name, "."):
		return false
	case isDir && e.Name == ".git" && !w.opts.NoIgnore:
		return false
	}
	if n.ign != nil && n.ign.Ignored(confine.Join(n.dir.Name(), e.Name), isDir) {
		return false
	}
	return w.opts.Exclude == nil || !w.opts.Exclude.Match(joinRel(n.rel, e.Name))
}

func hasEntry(des []confine.Entry, name string) bool {
	for _, e := range des {
		if e.Name == name {
			return true
		}
	}
	return false
}

// segments counts the segments of a workspace-relative path ("." has none).
func segments(p string) int {
	if p == "." || p == "" {
		return 0
	}
	return strings.Count(p, "/") + 1
}
