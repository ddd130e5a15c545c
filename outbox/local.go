package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/store"
)

// LocalEventType is the event_type of every line the local sender writes.
const LocalEventType = "pma.delivery"

// maxTailScan bounds how far back the local sender looks for the last line.
const maxTailScan = 4 << 20

// LocalSender appends chunks for local:<path> targets to JSONL files.
type LocalSender struct {
	state *store.StateDir
	roots []string
	clk   clock.Clock

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

var _ Sender = (*LocalSender)(nil)

// NewLocalSender returns the sender for local:<path> targets. A relative
// path is taken from the state directory state and must name a file under
// its pma/ (the rest of the state directory is the hub's own: see
// store.HubOwns); an absolute one must lie there too, or inside one of
// roots (the configuration's outbox.local_roots), which may neither hold
// the state directory nor lie inside it. Files under pma/ are opened
// through the state directory's pma/ as opened at start, the others
// through an os.Root of their directory, so a symbolic link cannot carry a
// write out of it either. Parent directories are created with mode 0700,
// files with 0600.
func NewLocalSender(state *store.StateDir, roots []string, clk clock.Clock) *LocalSender {
	if clk == nil {
		clk = clock.Real{}
	}
	return &LocalSender{state: state, roots: roots, clk: clk, locks: map[string]*sync.Mutex{}}
}

// LocalRootsKey is the configuration key listing the directories outside
// the state root that local targets may write in.
const LocalRootsKey = "outbox.local_roots"

// localPlace is where a local target writes: the file rel inside the
// directory base, or, with pma, the file rel inside the state directory's
// pma/ (base is then that directory).
type localPlace struct {
	base, rel string
	pma       bool
}

func (p localPlace) path() string { return filepath.Join(p.base, p.rel) }

// CheckLocalTarget reports why the local:<path> target k may not be written
// with the state root stateDir and the allowed roots (nil when it may, and
// for every other kind of target).
func CheckLocalTarget(stateDir string, roots []string, k chat.Key) error {
	if k.Kind != chat.KindLocal {
		return nil
	}
	_, err := placeLocal(stateDir, roots, k.Path)
	return err
}

// placeLocal decides where the local target path p writes.
func placeLocal(stateDir string, roots []string, p string) (localPlace, error) {
	state, err := filepath.Abs(stateDir)
	if err != nil {
		return localPlace{}, fmt.Errorf("state directory: %w", err)
	}
	if p == "" {
		return localPlace{}, errors.New("local target has an empty path")
	}
	if !filepath.IsAbs(p) {
		rel := filepath.Clean(p)
		if !filepath.IsLocal(rel) {
			return localPlace{}, fmt.Errorf("local target %q leaves the state directory: a relative path is taken from the state directory and must stay inside it, under %s/", p, store.PMADir)
		}
		return placeInState(state, p, rel)
	}
	clean := filepath.Clean(p)
	if rel, ok := inside(state, clean); ok {
		return placeInState(state, p, rel)
	}
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			continue // config validation refuses these
		}
		r = filepath.Clean(r)
		rel, ok := inside(r, clean)
		if !ok {
			continue
		}
		if overlaps(r, state) {
			return localPlace{}, fmt.Errorf("local target %q is in %s, which %s lists but which holds the state directory %s or lies inside it, where the hub keeps its own files: list a directory apart from the state directory", p, r, LocalRootsKey, state)
		}
		return localPlace{base: r, rel: rel}, nil
	}
	listed := "it lists none"
	if len(roots) > 0 {
		listed = "it lists " + strings.Join(roots, ", ")
	}
	return localPlace{}, fmt.Errorf("local target %q is outside the state directory and outside every directory %s allows (%s); add a directory holding it to %s, or use a path under %s/ relative to the state directory", p, LocalRootsKey, listed, LocalRootsKey, store.PMADir)
}

// placeInState places the local target p, the file rel of the state
// directory state, under pma/, refusing every other file of the state
// directory: those are the hub's own.
func placeInState(state, p, rel string) (localPlace, error) {
	if store.HubOwns(rel) {
		return localPlace{}, fmt.Errorf("local target %q names %s in the state directory, which the hub keeps for itself (its database, socket, delivery targets, channel directory, mirrors, program output, sessions, NATS keys): a local target there must be a file under %s/, such as %s", p, filepath.ToSlash(rel), store.PMADir, store.DefaultDeliveries)
	}
	pma, _ := inside(filepath.Join(state, store.PMADir), filepath.Join(state, rel))
	return localPlace{base: filepath.Join(state, store.PMADir), rel: pma, pma: true}, nil
}

// overlaps reports whether one of the directories a and b holds the other
// (or is it), also once their symbolic links are resolved.
func overlaps(a, b string) bool {
	holds := func(x, y string) bool {
		rel, err := filepath.Rel(x, y)
		return err == nil && (rel == "." || filepath.IsLocal(rel))
	}
	if holds(a, b) || holds(b, a) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && (holds(ra, rb) || holds(rb, ra))
}

// inside returns p relative to dir when p lies strictly inside dir.
func inside(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

// localLine is one line of a local delivery file.
type localLine struct {
	TS          string `json:"ts"`
	TurnID      string `json:"turn_id"`
	EventType   string `json:"event_type"`
	TextPreview string `json:"text_preview"`
	TextBytes   int    `json:"text_bytes"`
	Text        string `json:"text"`
	OutboxID    string `json:"outbox_id,omitempty"`
	Attachment  string `json:"attachment,omitempty"`
	// File, SHA256 and Size describe a stored file the entry carries
	// (docs/uploads.md): it is written beside the JSONL file, in
	// <name>.files/, and File is its path relative to the JSONL file's
	// directory.
	File   string `json:"file,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
}

func (s *LocalSender) lock(path string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.locks[path]
	if m == nil {
		m = new(sync.Mutex)
		s.locks[path] = m
	}
	return m
}

// Path returns the file a local target writes to, or why it may not be
// written (see NewLocalSender).
func (s *LocalSender) Path(k chat.Key) (string, error) {
	pl, err := s.place(k)
	if err != nil {
		return "", err
	}
	return pl.path(), nil
}

func (s *LocalSender) place(k chat.Key) (localPlace, error) {
	if k.Kind != chat.KindLocal {
		return localPlace{}, fmt.Errorf("target %q is not a local:<path> target", k)
	}
	if err := k.Validate(); err != nil {
		return localPlace{}, err
	}
	return placeLocal(s.state.Dir(), s.roots, k.Path)
}

// Send appends one JSON line for e with a single write and fsyncs it. The
// receipt's MessageID is the line's byte offset. If the file's last line is
// already e (written before a crash, not yet marked delivered), nothing is
// written again.
func (s *LocalSender) Send(ctx context.Context, e *Entry) (Receipt, error) {
	pl, err := s.place(e.Target)
	if err != nil {
		return Receipt{}, Permanent(fmt.Errorf("local delivery: %w", err))
	}
	path := pl.path()
	line := localLine{
		TS: s.clk.Now().UTC().Format(time.RFC3339Nano), TurnID: e.TurnID, EventType: LocalEventType,
		TextPreview: store.TextPreview(e.Text), TextBytes: len(e.Text), Text: e.Text, OutboxID: e.ID,
	}
	if a := e.Attachment; a != nil {
		line.Attachment = a.Name
		if a.Stored() {
			line.File, line.SHA256, line.Size = localFileName(pl.rel, a), a.SHA256, a.Size
		}
	}
	b, err := json.Marshal(&line)
	if err != nil {
		return Receipt{}, Permanent(fmt.Errorf("local delivery: encode line: %w", err))
	}
	b = append(b, '\n')

	m := s.lock(path)
	m.Lock()
	defer m.Unlock()
	if err := ctx.Err(); err != nil {
		return Receipt{}, fmt.Errorf("local delivery to %s: %w", path, err)
	}
	root, err := s.openBase(pl)
	if err != nil {
		return Receipt{}, fmt.Errorf("local delivery: open %s: %w", pl.base, err)
	}
	if !pl.pma {
		defer root.Close()
	}
	f, err := root.OpenFile(pl.rel, os.O_RDWR|os.O_APPEND, 0)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		if err := root.MkdirAll(filepath.Dir(pl.rel), 0o700); err != nil {
			return Receipt{}, fmt.Errorf("local delivery: create %s: %w", filepath.Dir(path), err)
		}
		f, err = root.OpenFile(pl.rel, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
		created = true
	}
	if err != nil {
		return Receipt{}, localOpenError(path, err)
	}
	defer f.Close()
	last, off, at, torn, err := lastLine(f)
	if err != nil {
		return Receipt{}, fmt.Errorf("local delivery: read %s: %w", path, err)
	}
	if last != nil && lineID(last) == e.ID {
		return Receipt{MessageID: strconv.FormatInt(off, 10)}, nil
	}
	if line.File != "" {
		// The file first: a line never points at a file that is not there.
		if err := writeLocalFile(root, filepath.Join(filepath.Dir(pl.rel), line.File), e.Attachment); err != nil {
			return Receipt{}, fmt.Errorf("local delivery: %w", err)
		}
	}
	if torn {
		// The previous line was cut short; end it so ours parses.
		b = append([]byte{'\n'}, b...)
		at++
	}
	if _, err := f.Write(b); err != nil {
		return Receipt{}, fmt.Errorf("local delivery: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return Receipt{}, fmt.Errorf("local delivery: sync %s: %w", path, err)
	}
	if created {
		// The file is new: its directory entry must survive a crash too.
		if err := store.SyncDir(root, filepath.Dir(pl.rel)); err != nil {
			return Receipt{}, fmt.Errorf("local delivery: sync the directory of %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return Receipt{}, fmt.Errorf("local delivery: close %s: %w", path, err)
	}
	return Receipt{MessageID: strconv.FormatInt(at, 10)}, nil
}

// localFileName is where the stored file a of a local target's JSONL file
// rel goes, relative to rel's directory: <rel's name>.files/<the first 16
// digits of its SHA-256>-<its name>, the name reduced to its last element
// and to printable ASCII.
func localFileName(rel string, a *chat.Attachment) string {
	base := strings.TrimSuffix(filepath.Base(rel), filepath.Ext(rel))
	name := strings.Map(func(r rune) rune {
		if r <= 0x20 || r >= 0x7f || r == '/' || r == '\\' {
			return '_'
		}
		return r
	}, filepath.Base(filepath.ToSlash(a.Name)))
	return filepath.Join(base+".files", a.SHA256[:16]+"-"+strings.TrimLeft(name, "."))
}

// writeLocalFile writes the stored file a as name in root, through a
// temporary file that is synced and renamed; a file already there with
// a's size is the same file (its name holds the SHA-256), written before.
func writeLocalFile(root *os.Root, name string, a *chat.Attachment) error {
	if fi, err := root.Lstat(name); err == nil && fi.Mode().IsRegular() && fi.Size() == a.Size {
		return nil
	}
	if err := root.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return fmt.Errorf("create the directory of %s: %w", name, err)
	}
	r, err := a.Reader()
	if err != nil {
		return Permanent(fmt.Errorf("read %s: %w", a.Name, err))
	}
	defer r.Close()
	return store.CopyFileAtomic(root, name, r, 0o600)
}

// openBase opens the directory a local target writes in: the state
// directory's pma/ as opened at start (not to be closed), or an os.Root of
// a directory of outbox.local_roots.
func (s *LocalSender) openBase(pl localPlace) (*os.Root, error) {
	if pl.pma {
		return s.state.PMA(), nil
	}
	return os.OpenRoot(pl.base)
}

// localOpenError is why a local file could not be opened; a path whose
// symbolic links lead out of its directory is refused for good.
func localOpenError(path string, err error) error {
	if store.IsEscape(err) {
		return Permanent(fmt.Errorf("local delivery: %s leads out of its directory through a symbolic link: %w", path, err))
	}
	return fmt.Errorf("local delivery: open %s: %w", path, err)
}

// lastLine returns the last complete line of f (without its newline), its
// offset and f's size; torn reports a final line without a newline, which
// is not returned. Lines longer than maxTailScan are not looked at. It reads
// backwards block by block to the line's start, then reads the line once.
func lastLine(f *os.File) (line []byte, off, size int64, torn bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, 0, false, err
	}
	size = fi.Size()
	if size == 0 {
		return nil, 0, 0, false, nil
	}
	var one [1]byte
	if _, err := f.ReadAt(one[:], size-1); err != nil {
		return nil, 0, size, false, err
	}
	if one[0] != '\n' {
		return nil, 0, size, true, nil
	}
	end := size - 1 // the final newline
	block := make([]byte, min(32<<10, end))
	start := end
	for start > 0 {
		if end-start >= maxTailScan {
			return nil, 0, size, false, nil
		}
		b := block[:min(int64(len(block)), start)]
		if _, err := f.ReadAt(b, start-int64(len(b))); err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, size, false, err
		}
		start -= int64(len(b))
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			start += int64(i) + 1
			break
		}
	}
	line = make([]byte, end-start)
	if _, err := f.ReadAt(line, start); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, size, false, err
	}
	return line, start, size, false, nil
}

func lineID(line []byte) string {
	var v struct {
		OutboxID string `json:"outbox_id"`
	}
	if json.Unmarshal(line, &v) != nil {
		return ""
	}
	return v.OutboxID
}
