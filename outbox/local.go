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
	root string
	clk  clock.Clock

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

var _ Sender = (*LocalSender)(nil)

// NewLocalSender returns the sender for local:<path> targets. A relative
// path is taken from stateDir (the state root); an absolute one is used as
// is. Parent directories are created with mode 0700, files with 0600.
func NewLocalSender(stateDir string, clk clock.Clock) *LocalSender {
	if clk == nil {
		clk = clock.Real{}
	}
	return &LocalSender{root: stateDir, clk: clk, locks: map[string]*sync.Mutex{}}
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

// Path returns the file a local target key writes to.
func (s *LocalSender) Path(target string) (string, error) {
	k, err := chat.ParseKey(target)
	if err != nil {
		return "", err
	}
	if k.Kind != chat.KindLocal {
		return "", fmt.Errorf("target %q is not a local:<path> target", target)
	}
	p := k.Path
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.root, p)
	}
	return filepath.Clean(p), nil
}

// Send appends one JSON line for e with a single write and fsyncs it. The
// receipt's MessageID is the line's byte offset. If the file's last line is
// already e (written before a crash, not yet marked delivered), nothing is
// written again.
func (s *LocalSender) Send(ctx context.Context, e *Entry) (Receipt, error) {
	path, err := s.Path(e.Target)
	if err != nil {
		return Receipt{}, Permanent(fmt.Errorf("local delivery: %w", err))
	}
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
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return Receipt{}, fmt.Errorf("local delivery: create %s: %w", filepath.Dir(path), err)
		}
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
		created = true
	}
	if err != nil {
		return Receipt{}, fmt.Errorf("local delivery: open %s: %w", path, err)
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
		if err := store.SyncDir(filepath.Dir(path)); err != nil {
			return Receipt{}, fmt.Errorf("local delivery: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return Receipt{}, fmt.Errorf("local delivery: close %s: %w", path, err)
	}
	return Receipt{MessageID: strconv.FormatInt(at, 10)}, nil
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
