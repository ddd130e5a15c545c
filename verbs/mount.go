package verbs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// Mount copies host files into every new session workspace (and again on
// vfs.reset). Mounts come from the configuration only; no verb adds one.
// They are copies, never links: nothing a session does reaches the host.
//
// HostPath is resolved against the mount roots: an absolute path must lie
// inside one of them once its symbolic links are resolved (whole path
// components: /data2 is not inside /data); a relative path is taken
// relative to the first root under which it exists (and must stay inside
// that root once resolved). A directory is copied recursively, a file on its
// own.
//
// Include and Exclude are glob patterns matched against a file's path
// relative to HostPath: a pattern without '/' matches the name alone, at any
// depth ("*.md"); a pattern with '/' matches the whole relative path, each
// segment with path.Match, and a "**" segment matches any number of
// segments ("src/**/*.go"). With Include empty every file is included; a
// file must match some Include pattern and no Exclude pattern; a directory
// matching an Exclude pattern is not entered.
//
// MaxBytes is the budget of the whole mount: files are copied in path order
// and, when the next one would take the total over the budget, the mount
// fails with an error naming the budget (no session is created from a mount
// that does not fit). Symbolic links inside the tree are skipped unless
// FollowSymlinks is set; even then a link whose target lies outside every
// mount root is skipped with a warning. Files whose session path the path
// guard would refuse (non-ASCII names, too deep, segments too long) are
// skipped with a warning too. The hub's state directory (the host
// workspace's protected directories) and its protected files (the
// configuration and secret files) are never copied: a directory or file
// with a protected identity, or at a protected file's place, is skipped
// with a warning, a host path inside the state or naming a protected file
// is refused, and the copy itself opens every file from its mount root's
// descriptor without following links, refusing the protected identities
// and places on the way.
type Mount struct {
	HostPath string
	// MountPath is where the files appear in the session ("." is the
	// workspace root); empty means HostPath's path relative to its mount
	// root. For a single file it is the file's own path.
	MountPath      string
	Include        []string
	Exclude        []string
	MaxBytes       int64 // zero means DefaultMountMaxBytes
	FollowSymlinks bool
}

// resolvedMount is a Mount with its host path located.
type resolvedMount struct {
	Mount
	index  int
	root   int    // index into SessionSource.roots
	rel    string // host path relative to the root, slash-separated, "." for the root
	target string // clean session path, "." for the workspace root
	isDir  bool
	label  string // for messages: the host path as configured
}

// resolveRoots makes the mount roots absolute with their links resolved.
func resolveRoots(roots []string) ([]string, error) {
	var out []string
	for _, r := range roots {
		if r == "" {
			return nil, errors.New("sessions: a mount root is empty")
		}
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("sessions: mount root %s: %w", r, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("sessions: mount root %s: %w", r, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("sessions: mount root %s: %w", r, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("sessions: mount root %s is not a directory", r)
		}
		out = append(out, real)
	}
	return out, nil
}

// within returns dir-relative form of p when p is dir or inside it, by
// whole path components.
func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// inRoots finds the first root holding the resolved path p.
func inRoots(roots []string, p string) (int, string, bool) {
	for i, r := range roots {
		if rel, ok := within(r, p); ok {
			return i, rel, true
		}
	}
	return 0, "", false
}

// resolveMounts locates every mount's host path inside the roots and checks
// its mount path and globs.
func resolveMounts(mounts []Mount, roots []string, wo WorkspaceOptions, prot *confine.Protection) ([]resolvedMount, error) {
	if len(mounts) > 0 && len(roots) == 0 {
		return nil, errors.New("sessions: mounts need mount roots: list the host directories they may come from under sessions.mount_roots")
	}
	var out []resolvedMount
	for i, m := range mounts {
		rm, err := resolveMount(i, m, roots, wo)
		if err == nil {
			real := filepath.Join(roots[rm.root], filepath.FromSlash(rm.rel))
			if label, ok := prot.HoldingPath(real); ok {
				err = fmt.Errorf("host_path lies inside %s, which is reserved for the hub's state", label)
			} else if what, ok := prot.FileAt(real); ok {
				err = fmt.Errorf("host_path is %s, a protected file of the hub", what)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("sessions: mount %d (%s): %w", i+1, m.HostPath, err)
		}
		out = append(out, rm)
	}
	return out, nil
}

func resolveMount(i int, m Mount, roots []string, wo WorkspaceOptions) (resolvedMount, error) {
	rm := resolvedMount{Mount: m, index: i, label: m.HostPath}
	hp := m.HostPath
	switch {
	case hp == "":
		return rm, errors.New("host_path is empty")
	case strings.IndexByte(hp, 0) >= 0:
		return rm, errors.New("host_path contains a NUL byte")
	}
	for j := 0; j < len(hp); j++ {
		if hp[j] < 0x20 || hp[j] >= 0x7f {
			return rm, errors.New("host_path must be printable ASCII")
		}
	}
	if m.MaxBytes < 0 {
		return rm, errors.New("max_bytes must not be negative (zero means the default)")
	}
	if rm.MaxBytes == 0 {
		rm.MaxBytes = DefaultMountMaxBytes
	}
	for _, g := range append(append([]string(nil), m.Include...), m.Exclude...) {
		if err := checkGlob(g); err != nil {
			return rm, err
		}
	}
	var real string
	if filepath.IsAbs(hp) {
		r, err := filepath.EvalSymlinks(filepath.Clean(hp))
		if err != nil {
			return rm, fmt.Errorf("host_path: %w", err)
		}
		ri, rel, ok := inRoots(roots, r)
		if !ok {
			return rm, fmt.Errorf("host_path resolves to %s, which is outside every mount root (%s)", r, strings.Join(roots, ", "))
		}
		real, rm.root, rm.rel = r, ri, rel
	} else {
		found := false
		var escaped string
		for ri, root := range roots {
			r, err := filepath.EvalSymlinks(filepath.Join(root, hp))
			if err != nil {
				continue
			}
			rel, ok := within(root, r)
			if !ok {
				escaped = r
				continue
			}
			real, rm.root, rm.rel, found = r, ri, rel, true
			break
		}
		switch {
		case !found && escaped != "":
			return rm, fmt.Errorf("host_path resolves to %s, which is outside its mount root; mounts may not escape the roots", escaped)
		case !found:
			return rm, fmt.Errorf("host_path does not exist under any mount root (%s)", strings.Join(roots, ", "))
		}
	}
	fi, err := os.Stat(real)
	if err != nil {
		return rm, fmt.Errorf("host_path: %w", err)
	}
	switch {
	case fi.IsDir():
		rm.isDir = true
	case !fi.Mode().IsRegular():
		return rm, fmt.Errorf("host_path is a %s; mount a directory or a regular file", fileKind(fi.Mode()))
	}
	target := m.MountPath
	if target == "" {
		target = rm.rel
	}
	clean, err := confine.CleanPath(target, wo.limits())
	if err != nil {
		return rm, fmt.Errorf("mount path: %s", err.Error())
	}
	if clean == "." && !rm.isDir {
		return rm, errors.New("a single file cannot be mounted at the workspace root; give mount_path a file name")
	}
	rm.target = clean
	return rm, nil
}

// checkGlob validates an include or exclude pattern.
func checkGlob(g string) error {
	if g == "" || strings.HasPrefix(g, "/") {
		return fmt.Errorf("glob %q is not accepted: patterns are relative to the mounted directory, like *.md or src/**/*.go", g)
	}
	for seg := range strings.SplitSeq(g, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("glob %q is not a valid pattern: %v", g, err)
		}
	}
	return nil
}

// matchGlob matches pattern against a slash-separated relative path (see
// Mount for the rules).
func matchGlob(pattern, rel string) bool {
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, path.Base(rel))
		return ok
	}
	return matchSegs(strings.Split(pattern, "/"), strings.Split(rel, "/"))
}

func matchSegs(ps, ss []string) bool {
	for len(ps) > 0 {
		if ps[0] == "**" {
			for i := 0; i <= len(ss); i++ {
				if matchSegs(ps[1:], ss[i:]) {
					return true
				}
			}
			return false
		}
		if len(ss) == 0 {
			return false
		}
		if ok, _ := path.Match(ps[0], ss[0]); !ok {
			return false
		}
		ps, ss = ps[1:], ss[1:]
	}
	return len(ss) == 0
}

func matchAny(patterns []string, rel string) bool {
	for _, p := range patterns {
		if matchGlob(p, rel) {
			return true
		}
	}
	return false
}

// planEntry is one file to copy into a session.
type planEntry struct {
	path  string // session path
	root  int    // mount root holding the file
	rel   string // its path relative to that root
	size  int64
	mount int
}

// skippedFile is a file a mount left out, for a warning.
type skippedFile struct {
	mount, file, reason string
}

// mountPlan is the merged result of walking every mount: later mounts win.
type mountPlan struct {
	files   map[string]planEntry
	dirs    map[string]bool // directories implied by planned files
	skipped []skippedFile
}

// plan walks every mount (without reading contents) and merges them.
func (s *SessionSource) plan() (*mountPlan, error) {
	p := &mountPlan{files: map[string]planEntry{}, dirs: map[string]bool{}}
	for i := range s.mounts {
		m := &s.mounts[i]
		files, err := s.collect(m, p)
		if err != nil {
			return nil, err
		}
		for _, e := range files {
			p.add(e)
		}
	}
	return p, nil
}

// add puts e in the plan, removing what an earlier mount put in its way: a
// file where e needs a directory, or a directory's files where e is a file.
func (p *mountPlan) add(e planEntry) {
	for d := path.Dir(e.path); d != "."; d = path.Dir(d) {
		delete(p.files, d)
	}
	if p.dirs[e.path] {
		for k := range p.files {
			if strings.HasPrefix(k, e.path+"/") {
				delete(p.files, k)
			}
		}
		delete(p.dirs, e.path)
	}
	p.files[e.path] = e
	for d := path.Dir(e.path); d != "."; d = path.Dir(d) {
		p.dirs[d] = true
	}
}

// collect lists the files of one mount in path order, enforcing its budget.
func (s *SessionSource) collect(m *resolvedMount, p *mountPlan) ([]planEntry, error) {
	c := &collector{s: s, m: m, p: p, visited: map[string]bool{}}
	if !m.isDir {
		fi, err := os.Stat(filepath.Join(s.roots[m.root], filepath.FromSlash(m.rel)))
		if err != nil {
			return nil, fmt.Errorf("mount %s: %w", m.label, err)
		}
		if err := c.file(m.target, path.Base(m.rel), m.root, m.rel, fi.Size()); err != nil {
			return nil, err
		}
		return c.out, nil
	}
	real := filepath.Join(s.roots[m.root], filepath.FromSlash(m.rel))
	c.visited[real] = true
	if err := c.dir(m.root, m.rel, "."); err != nil {
		return nil, err
	}
	return c.out, nil
}

type collector struct {
	s       *SessionSource
	m       *resolvedMount
	p       *mountPlan
	out     []planEntry
	used    int64
	visited map[string]bool // resolved directories on the current path (link loops)
}

// dir walks directory rel of root ri, which is inMount inside the mount.
func (c *collector) dir(ri int, rel, inMount string) error {
	abs := filepath.Join(c.s.roots[ri], filepath.FromSlash(rel))
	des, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("mount %s: read %s: %w", c.m.label, confine.Join(c.m.rel, inMount), err)
	}
	for _, de := range des {
		name := de.Name()
		childRel, childIn := confine.Join(rel, name), confine.Join(inMount, name)
		typ := de.Type()
		fri, frel := ri, childRel
		if typ&fs.ModeSymlink != 0 {
			if !c.m.FollowSymlinks {
				continue
			}
			target, err := filepath.EvalSymlinks(filepath.Join(abs, name))
			if err != nil {
				c.skip(childIn, "a symbolic link that leads nowhere")
				continue
			}
			var ok bool
			if fri, frel, ok = inRoots(c.s.roots, target); !ok {
				c.skip(childIn, "a symbolic link to a path outside the mount roots")
				continue
			}
			fi, err := os.Stat(target)
			if err != nil {
				c.skip(childIn, "a symbolic link whose target cannot be read")
				continue
			}
			if label, ok := c.s.protection().HoldingPath(target); ok {
				c.skip(childIn, "a symbolic link into "+label+", reserved for the hub's state")
				continue
			}
			if what, ok := c.s.protection().FileAt(target); ok {
				c.skip(childIn, "a symbolic link to "+what+", a protected file of the hub")
				continue
			}
			if fi.IsDir() {
				if c.visited[target] {
					c.skip(childIn, "a symbolic link loop")
					continue
				}
				if matchAny(c.m.Exclude, childIn) {
					continue
				}
				c.visited[target] = true
				err := c.dir(fri, frel, childIn)
				delete(c.visited, target)
				if err != nil {
					return err
				}
				continue
			}
			if !fi.Mode().IsRegular() {
				continue
			}
			if err := c.file(confine.Join(c.m.target, childIn), childIn, fri, frel, fi.Size()); err != nil {
				return err
			}
			continue
		}
		switch {
		case de.IsDir():
			if matchAny(c.m.Exclude, childIn) {
				continue
			}
			if fi, err := os.Lstat(filepath.Join(abs, name)); err == nil {
				if label, ok := c.s.protection().LookupDir(fi); ok {
					c.skip(childIn, "it is "+label+", reserved for the hub's state")
					continue
				}
			}
			if err := c.dir(ri, childRel, childIn); err != nil {
				return err
			}
		case typ.IsRegular():
			fi, err := de.Info()
			if err != nil {
				return fmt.Errorf("mount %s: stat %s: %w", c.m.label, childIn, err)
			}
			if what, ok := c.s.protection().FileAt(filepath.Join(abs, name)); ok {
				c.skip(childIn, "it is "+what+", a protected file of the hub")
				continue
			}
			if err := c.file(confine.Join(c.m.target, childIn), childIn, ri, childRel, fi.Size()); err != nil {
				return err
			}
		}
	}
	return nil
}

// file plans one file, if the globs and the path guard let it in.
func (c *collector) file(sessPath, inMount string, ri int, rel string, size int64) error {
	if len(c.m.Include) > 0 && !matchAny(c.m.Include, inMount) || matchAny(c.m.Exclude, inMount) {
		return nil
	}
	clean, err := confine.CleanPath(sessPath, c.s.opts.Workspace.limits())
	if err != nil {
		c.skip(inMount, err.Error())
		return nil
	}
	if c.used+size > c.m.MaxBytes {
		return budgetError(c.m, inMount)
	}
	c.used += size
	c.out = append(c.out, planEntry{path: clean, root: ri, rel: rel, size: size, mount: c.m.index})
	return nil
}

func (c *collector) skip(file, reason string) {
	c.p.skipped = append(c.p.skipped, skippedFile{mount: c.m.label, file: file, reason: reason})
}

func budgetError(m *resolvedMount, at string) error {
	return executor.Errorf(executor.CodeTooLarge,
		"Mount %s holds more than its max_bytes budget of %d bytes (stopped at %s): narrow include/exclude or raise max_bytes", m.label, m.MaxBytes, at)
}

// materialise copies the mounts into the empty directory dir and returns
// the files' records: version 1, created now, encoding decided on read.
func (s *SessionSource) materialise(dir string) ([]Meta, error) {
	p, err := s.plan()
	if err != nil {
		return nil, err
	}
	if len(p.files) == 0 {
		return nil, nil
	}
	dst, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	roots := make([]*os.File, len(s.roots))
	defer func() {
		for _, r := range roots {
			if r != nil {
				r.Close()
			}
		}
	}()
	paths := make([]string, 0, len(p.files))
	for k := range p.files {
		paths = append(paths, k)
	}
	slices.SortFunc(paths, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case pathLess(a, b):
			return -1
		}
		return 1
	})
	used := make([]int64, len(s.mounts))
	now := s.now()
	metas := make([]Meta, 0, len(paths))
	for _, sp := range paths {
		e := p.files[sp]
		m := &s.mounts[e.mount]
		if roots[e.root] == nil {
			if roots[e.root], err = os.Open(s.roots[e.root]); err != nil {
				return nil, fmt.Errorf("mount %s: %w", m.label, err)
			}
		}
		n, err := s.copyMounted(roots[e.root], dst, e, m.MaxBytes-used[e.mount])
		if errors.Is(err, errOverBudget) {
			return nil, budgetError(m, e.path)
		}
		if err != nil {
			return nil, fmt.Errorf("mount %s: copy %s: %w", m.label, e.path, err)
		}
		used[e.mount] += n
		metas = append(metas, Meta{Path: sp, Version: 1, CreatedAt: now, UpdatedAt: now})
	}
	return metas, nil
}

var errOverBudget = errors.New("over the mount's budget")

// copyMounted copies one planned file, reading at most budget bytes. The
// file is opened from its mount root src by descriptors, following no link
// (the plan resolved them) and refusing the hub's state directory and its
// protected files (confine.Protection.OpenBelow).
func (s *SessionSource) copyMounted(src *os.File, dst *os.Root, e planEntry, budget int64) (int64, error) {
	in, fi, err := s.protection().OpenBelow(src, e.rel)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is no longer a regular file", e.path)
	}
	if d := path.Dir(e.path); d != "." {
		if err := dst.MkdirAll(d, 0o755); err != nil {
			return 0, err
		}
	}
	lr := &io.LimitedReader{R: in, N: budget + 1}
	n, err := writeNew(dst, e.path, fi.Mode().Perm()&0o755, lr)
	if err != nil {
		return n, err
	}
	if n > budget {
		_ = dst.Remove(e.path)
		return n, errOverBudget
	}
	return n, nil
}
