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
	root  string
	roots []string
	clk   clock.Clock

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

var _ Sender = (*LocalSender)(nil)

// NewLocalSender returns the sender for local:<path> targets. A relative
// path is taken from stateDir (the state root) and may not leave it; an
// absolute one must lie inside stateDir or inside one of roots (the
// configuration's outbox.local_roots). Every file is opened through an
// os.Root of the directory it belongs to, so a symbolic link cannot carry
// a write out of it either. Parent directories are created with mode 0700,
// files with 0600.
func NewLocalSender(stateDir string, roots []string, clk clock.Clock) *LocalSender {
	if clk == nil {
		clk = clock.Real{}
	}
	return &LocalSender{root: stateDir, roots: roots, clk: clk, locks: map[string]*sync.Mutex{}}
}

// LocalRootsKey is the configuration key listing the directories outside
// the state root that local targets may write in.
const LocalRootsKey = "outbox.local_roots"

// localPlace is where a local target writes: the file rel inside the
// directory base.
type localPlace struct{ base, rel string }

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
			return localPlace{}, fmt.Errorf("local target %q leaves the state directory: a relative path is taken from the state directory and must stay inside it", p)
		}
		return localPlace{base: state, rel: rel}, nil
	}
	clean := filepath.Clean(p)
	if rel, ok := inside(state, clean); ok {
		return localPlace{base: state, rel: rel}, nil
	}
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			continue // config validation refuses these
		}
		if rel, ok := inside(filepath.Clean(r), clean); ok {
			return localPlace{base: filepath.Clean(r), rel: rel}, nil
		}
	}
	listed := "it lists none"
	if len(roots) > 0 {
		listed = "it lists " + strings.Join(roots, ", ")
	}
	return localPlace{}, fmt.Errorf("local target %q is outside the state directory and outside every directory %s allows (%s); add a directory holding it to %s, or use a path relative to the state directory", p, LocalRootsKey, listed, LocalRootsKey)
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

// Path returns the file a local target key writes to, or why it may not
// be written (see NewLocalSender).
func (s *LocalSender) Path(target string) (string, error) {
	pl, err := s.place(target)
	if err != nil {
		return "", err
	}
	return pl.path(), nil
}

func (s *LocalSender) place(target string) (localPlace, error) {
	k, err := chat.ParseKey(target)
	if err != nil {
		return localPlace{}, err
	}
	if k.Kind != chat.KindLocal {
		return localPlace{}, fmt.Errorf("target %q is not a local:<path> target", target)
	}
	return placeLocal(s.root, s.roots, k.Path)
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
	if e.Attachment != nil {
		line.Attachment = e.Attachment.Name
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
	root, err := os.OpenRoot(pl.base)
	if err != nil {
		return Receipt{}, fmt.Errorf("local delivery: open %s: %w", pl.base, err)
	}
	defer root.Close()
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
		if err := syncRootDir(root, filepath.Dir(pl.rel)); err != nil {
			return Receipt{}, fmt.Errorf("local delivery: sync the directory of %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return Receipt{}, fmt.Errorf("local delivery: close %s: %w", path, err)
	}
	return Receipt{MessageID: strconv.FormatInt(at, 10)}, nil
}

// localOpenError is why a local file could not be opened; a path whose
// symbolic links lead out of its directory is refused for good.
func localOpenError(path string, err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" { // os.Root's refusal, not exported
			return Permanent(fmt.Errorf("local delivery: %s leads out of its directory through a symbolic link: %w", path, err))
		}
	}
	return fmt.Errorf("local delivery: open %s: %w", path, err)
}

// syncRootDir fsyncs the directory dir inside root.
func syncRootDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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
