package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
)

// Mirror directions, which are also the base names of the mirror files.
const (
	DirectionInbound  = "inbound"
	DirectionOutbound = "outbound"
)

// Default event types.
const (
	EventInbound  = "chat.inbound"
	EventOutbound = "chat.outbound"
)

// Record kinds callers use.
const (
	KindMessage   = "message"   // inbound: a message
	KindCommand   = "command"   // inbound: a verb or built-in
	KindEdited    = "edited"    // inbound: an edited message
	KindDenied    = "denied"    // inbound: from someone not authorised
	KindFile      = "file"      // inbound: a file sent with a message, as saved (name, path, size, SHA-256)
	KindReply     = "reply"     // outbound: a reply chunk
	KindNotice    = "notice"    // outbound: a hub notice
	KindPMA       = "pma"       // outbound: a fan-out chunk to a delivery target
	KindDead      = "dead"      // outbound: a dead letter
	KindDelivered = "delivered" // outbound: a chunk the platform accepted
	KindSchedule  = "schedule"  // inbound: a schedule's call, before it runs
)

// Meta keys of outbound records.
const (
	MetaOutboxID          = "outbox_id"
	MetaPlatformMessageID = "platform_message_id"
)

// Meta keys of an inbound message that came with a file: the name, size
// and media type its platform announced (docs/uploads.md).
const (
	MetaUploadName = "upload_name"
	MetaUploadSize = "upload_size"
	MetaUploadMIME = "upload_mime"
)

// Meta keys of the records of a verb call: the verb's registered name (on
// the request, and on an API call's result), and the error code of an
// answer that reports a failure or a refusal (an API call's result, a
// reply's chunks). An audit search reads them (SearchMirrors).
const (
	MetaVerb      = "verb"
	MetaErrorCode = "error_code"
)

// Meta keys of a record whose text was cut to MirrorOptions.MaxTextBytes:
// MetaTextTruncated is "true" and MetaTextSHA256 is the hex SHA-256 of the
// whole text (TextBytes keeps its length).
const (
	MetaTextTruncated = "text_truncated"
	MetaTextSHA256    = "text_sha256"
)

// PreviewRunes is the length of MirrorRecord.TextPreview.
const PreviewRunes = 200

// Defaults for MirrorOptions.
const (
	DefaultRotateBytes  = 64 << 20
	DefaultSyncInterval = 50 * time.Millisecond
	DefaultMaxTextBytes = 64 << 10
)

// maxMirrorLine bounds one record when reading; longer lines are reported
// as bad and skipped so a damaged file cannot exhaust memory.
const maxMirrorLine = 64 << 20

// ErrMirrorClosed is returned by Append after Close.
var ErrMirrorClosed = errors.New("mirror is closed")

// MirrorRecord is one line of a chat mirror (docs/state.md, "Mirrors").
// Every field is always written, empty or not.
type MirrorRecord struct {
	TS        time.Time `json:"ts"`
	Direction string    `json:"direction"` // "inbound" | "outbound"
	Platform  string    `json:"platform"`
	ChatID    string    `json:"chat_id"`
	ThreadID  string    `json:"thread_id"`
	MessageID string    `json:"message_id"`
	Actor     string    `json:"actor"`
	Kind      string    `json:"kind"`
	Text      string    `json:"text"`
	// Bytes, when set, is the text as the caller holds it, in place of
	// Text: a result is not copied into a string; the record is encoded
	// from these bytes (the first MaxTextBytes of them), which the caller
	// must not change until Append returns.
	Bytes       []byte            `json:"-"`
	Meta        map[string]string `json:"meta"`
	RunID       string            `json:"run_id"`
	EventType   string            `json:"event_type"`
	TextPreview string            `json:"text_preview"`
	TextBytes   int               `json:"text_bytes"`
}

// InboundRecord builds the mirror record of an inbound message. kind ""
// means "message", or "edited" for an edited message. The chat and topic
// titles, chat type and guild id go into meta (RebuildDirectory reads them
// back), with the sender's name, the turn id and the adapter's own meta,
// except keys naming a token, which never reach disk.
func InboundRecord(in *chat.Inbound, kind string) MirrorRecord {
	if kind == "" {
		kind = KindMessage
		if in.Edited {
			kind = KindEdited
		}
	}
	meta := map[string]string{}
	for k, v := range in.Meta {
		if !strings.Contains(strings.ToLower(k), "token") {
			meta[k] = v
		}
	}
	if u := in.Upload; u != nil {
		// What the platform announced; never the bytes, nor how to fetch
		// them (a signed URL, a file id).
		meta[MetaUploadName], meta[MetaUploadSize], meta[MetaUploadMIME] = u.Name, strconv.FormatInt(u.Size, 10), u.MIME
	}
	for k, v := range map[string]string{
		MetaChatType: string(in.ChatType), MetaChatTitle: in.ChatTitle, MetaTopicTitle: in.TopicTitle,
		MetaGuildID: in.GuildID, "user_name": in.UserName, "turn_id": in.TurnID,
	} {
		if v != "" {
			meta[k] = v
		}
	}
	return MirrorRecord{
		Direction: DirectionInbound, Platform: string(in.Platform),
		ChatID: in.ChatID, ThreadID: in.ThreadID, MessageID: in.MessageID,
		Actor: in.Identity(), Kind: kind, Text: in.Text, Meta: meta,
	}
}

// TextPreview is the first PreviewRunes runes of s on one line, with "…"
// when cut.
func TextPreview(s string) string {
	var b strings.Builder
	b.Grow(min(len(s), PreviewRunes*utf8.UTFMax) + len("…"))
	n := 0
	for i := 0; i < len(s); {
		if n == PreviewRunes {
			b.WriteString("…")
			break
		}
		if c := s[i]; c < utf8.RuneSelf && c != '\r' && c != '\n' {
			b.WriteByte(c)
			i++
			n++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch r {
		case '\r':
			if i < len(s) && s[i] == '\n' {
				i++
			}
			r = ' '
		case '\n':
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// cutText returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// NewRunID returns a sortable id for one run of the hub, such as
// "20261121T234640Z-3f9a": the UTC start time and 4 random hex digits.
func NewRunID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return now.UTC().Format(runIDTime) + "-" + hex.EncodeToString(b[:])
}

const runIDTime = "20060102T150405Z"

// ParseRunID returns the start time encoded in a run id, or an error if id
// is not exactly of NewRunID's form.
func ParseRunID(id string) (time.Time, error) {
	bad := fmt.Errorf("invalid run id %q (expected the form 20261121T234640Z-3f9a)", id)
	if len(id) != len(runIDTime)+5 || id[len(runIDTime)] != '-' {
		return time.Time{}, bad
	}
	for _, c := range []byte(id[len(runIDTime)+1:]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return time.Time{}, bad
		}
	}
	t, err := time.Parse(runIDTime, id[:len(runIDTime)])
	if err != nil {
		return time.Time{}, bad
	}
	return t, nil
}

// MirrorFile is what a Mirror writes to; *os.File is one.
type MirrorFile interface {
	io.Writer
	Sync() error
	Close() error
}

// MirrorOptions tune a Mirror; zero values mean the defaults.
type MirrorOptions struct {
	// RotateBytes is the size past which a mirror file is rotated.
	// Default 64 MiB.
	RotateBytes int64
	// Kind is what writes the run, recorded in its marker (RunMarkerFile);
	// default RunServe. Retention (PruneRuns) is decided per kind.
	Kind RunKind
	// SyncInterval is the group fsync window: the longest a durable append
	// that is about to fsync waits for appends already under way, so that
	// they share its fsync. It only waits while other appends are in
	// progress. Default 50ms.
	SyncInterval time.Duration
	// MaxTextBytes bounds the text kept in one record; a longer text is cut
	// (on a rune boundary) and the record says so in its meta, with the
	// whole text's SHA-256 (MetaTextTruncated, MetaTextSHA256). Default
	// 64 KiB.
	MaxTextBytes int
	// Clock fills record timestamps and judges run age; default the real
	// clock.
	Clock clock.Clock
	// Logger receives retention failures; default slog.Default().
	Logger *slog.Logger
	// OpenFile opens mirror files, name being relative to the flows
	// directory root; default root.OpenFile. Tests use it to inject
	// failing writers.
	OpenFile func(root *os.Root, name string, flag int, perm os.FileMode) (MirrorFile, error)
}

func (o MirrorOptions) withDefaults() MirrorOptions {
	if o.RotateBytes <= 0 {
		o.RotateBytes = DefaultRotateBytes
	}
	if o.Kind == "" {
		o.Kind = RunServe
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = DefaultMaxTextBytes
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OpenFile == nil {
		o.OpenFile = func(root *os.Root, name string, flag int, perm os.FileMode) (MirrorFile, error) {
			return root.OpenFile(name, flag, perm)
		}
	}
	return o
}

// Mirror appends the chat records of one hub run to
// flows/<run_id>/chat/inbound.jsonl and outbound.jsonl. It is safe for
// concurrent use.
type Mirror struct {
	runID string
	opts  MirrorOptions
	lock  *runLock // held while the mirror is open: pruning leaves the run alone
	in    *mirrorStream
	out   *mirrorStream
}

// Bytes returns how many bytes this mirror has appended to its inbound and
// outbound files since it was opened (what the hub_mirror_bytes_total
// metric reports).
func (m *Mirror) Bytes() (inbound, outbound uint64) {
	return m.in.bytes.Load(), m.out.bytes.Load()
}

// OpenMirror creates <run_id>/ in flows (the state directory's flows/,
// opened by the caller: StateDir.Flows), marked with opts.Kind, or reopens
// it, and opens its mirror files for appending. The run stays locked until
// Close, so pruning (PruneRuns) never removes it meanwhile; a run another
// writer holds is refused with ErrRunOpen. OpenMirror removes nothing.
// Every file is reached through flows; errors name files relative to the
// state directory, never by their host path.
func OpenMirror(flows *os.Root, runID string, opts MirrorOptions) (*Mirror, error) {
	if _, err := ParseRunID(runID); err != nil {
		return nil, fmt.Errorf("open mirror: %w", err)
	}
	opts = opts.withDefaults()
	lock, err := openRun(flows, runID, opts.Kind)
	if err != nil {
		return nil, fmt.Errorf("open mirror: %w", err)
	}
	dir := filepath.Join(runID, "chat")
	m := &Mirror{runID: runID, opts: opts, lock: lock}
	if m.in, err = openStream(flows, dir, DirectionInbound, opts); err != nil {
		lock.release()
		return nil, err
	}
	if m.out, err = openStream(flows, dir, DirectionOutbound, opts); err != nil {
		m.in.close()
		lock.release()
		return nil, err
	}
	return m, nil
}

// RunID is the run this mirror writes.
func (m *Mirror) RunID() string { return m.runID }

// Append writes rec as one line of its direction's file. It sets RunID,
// TextPreview and TextBytes, and TS (now) and EventType when they are
// empty. A text over MaxTextBytes is cut to it, with MetaTextTruncated and
// MetaTextSHA256 in the meta. With durable it returns only once the line is fsynced; concurrent
// durable appends share fsyncs. Without, it returns after the write. A
// failed write is returned with the file's path; the mirror stays usable,
// and a line cut short by the failure is never glued to the next one.
// If ctx ends while waiting for the fsync, the line is written but its
// durability is unconfirmed.
func (m *Mirror) Append(ctx context.Context, rec MirrorRecord, durable bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s, seq, err := m.write(rec)
	if err != nil || !durable {
		return err
	}
	return s.waitSynced(ctx, seq)
}

// AppendAll appends recs in order, each as Append does, and with durable
// returns once every line written is fsynced, waiting once per file for the
// last line written to it: an fsync covers every line written to the file
// before it, and a rotation fsyncs the file it renames. errs[i] is the
// error of recs[i] (nil: written, and durable if asked); a failed fsync is
// the error of every line it was to cover.
func (m *Mirror) AppendAll(ctx context.Context, recs []MirrorRecord, durable bool) []error {
	errs := make([]error, len(recs))
	if err := ctx.Err(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	type last struct {
		seq uint64
		idx []int // the records written to the stream
	}
	var waits map[*mirrorStream]*last
	for i, rec := range recs {
		s, seq, err := m.write(rec)
		if err != nil {
			errs[i] = err
			continue
		}
		if !durable {
			continue
		}
		if waits == nil {
			waits = map[*mirrorStream]*last{}
		}
		w := waits[s]
		if w == nil {
			w = &last{}
			waits[s] = w
		}
		w.seq = seq
		w.idx = append(w.idx, i)
	}
	for s, w := range waits {
		if err := s.waitSynced(ctx, w.seq); err != nil {
			for _, i := range w.idx {
				errs[i] = err
			}
		}
	}
	return errs
}

// write completes rec, encodes it and appends it to its direction's file,
// returning the file and the line's sequence number in it.
func (m *Mirror) write(rec MirrorRecord) (*mirrorStream, uint64, error) {
	var s *mirrorStream
	switch rec.Direction {
	case DirectionInbound:
		s = m.in
		if rec.EventType == "" {
			rec.EventType = EventInbound
		}
	case DirectionOutbound:
		s = m.out
		if rec.EventType == "" {
			rec.EventType = EventOutbound
		}
	default:
		return nil, 0, fmt.Errorf("mirror append: direction %q is not %q or %q", rec.Direction, DirectionInbound, DirectionOutbound)
	}
	rec.RunID = m.runID
	if rec.TS.IsZero() {
		rec.TS = m.opts.Clock.Now()
	}
	rec.TS = rec.TS.UTC()
	text, size := rec.Text, len(rec.Text)
	if b := rec.Bytes; b != nil {
		// Enough of it for the preview and for the text kept, read in
		// place: the record is encoded here and kept nowhere, and the
		// caller does not change its bytes while Append runs.
		keep := max(m.opts.MaxTextBytes+utf8.UTFMax, PreviewRunes*utf8.UTFMax+2)
		text, size = unsafe.String(unsafe.SliceData(b), min(len(b), keep)), len(b)
	}
	rec.TextPreview = TextPreview(text)
	rec.TextBytes = size
	if rec.Meta == nil {
		rec.Meta = map[string]string{}
	}
	if size > m.opts.MaxTextBytes {
		whole := rec.Bytes
		if whole == nil { // the text in place, only read by the hash
			whole = unsafe.Slice(unsafe.StringData(rec.Text), len(rec.Text))
		}
		sum := sha256.Sum256(whole)
		meta := make(map[string]string, len(rec.Meta)+2) // the caller's map stays as it is
		maps.Copy(meta, rec.Meta)
		meta[MetaTextTruncated] = "true"
		meta[MetaTextSHA256] = hex.EncodeToString(sum[:])
		rec.Meta = meta
		text = cutText(text, m.opts.MaxTextBytes)
	}
	rec.Text = text
	bp := lineBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= keptLineBuf {
			lineBufs.Put(bp)
		}
	}()
	line, err := rec.appendJSON((*bp)[:0])
	*bp = line
	if err != nil {
		return nil, 0, fmt.Errorf("mirror append: encode: %w", err)
	}
	seq, err := s.write(line)
	if err != nil {
		return nil, 0, err
	}
	return s, seq, nil
}

// Close fsyncs and closes the mirror files, then lets the run's lock go.
func (m *Mirror) Close() error {
	err := errors.Join(m.in.close(), m.out.close())
	if lerr := m.lock.release(); lerr != nil {
		err = errors.Join(err, fmt.Errorf("close mirror %s: %w", m.runID, lerr))
	}
	return err
}

// mirrorStream is one append-only file with its rotations and group commit.
type mirrorStream struct {
	flows           *os.Root
	dir, name, path string // path: the file, relative to flows
	opts            MirrorOptions

	mu     sync.Mutex // serialises writes, rotation and close
	f      MirrorFile // replaced only while holding both mu and rot
	size   int64
	torn   bool // the file does not end with a newline
	rotN   int  // highest rotated file index
	closed bool

	rot      sync.RWMutex  // held for reading during fsync, for writing while f changes
	written  atomic.Uint64 // sequence number of the last completed write
	bytes    atomic.Uint64 // bytes appended since the stream was opened
	inflight atomic.Int64  // appends that have not finished their write
	wrote    chan struct{} // pinged after each write, for the fsync leader

	smu    sync.Mutex
	synced uint64     // every write up to this sequence number is durable
	round  *syncRound // the fsync in progress, if any
}

// syncRound is one fsync shared by every write up to upTo.
type syncRound struct {
	done chan struct{}
	upTo uint64
	err  error
}

func openStream(flows *os.Root, dir, name string, opts MirrorOptions) (*mirrorStream, error) {
	s := &mirrorStream{flows: flows, dir: dir, name: name, path: filepath.Join(dir, name+".jsonl"), opts: opts, wrote: make(chan struct{}, 1)}
	for _, r := range rotatedFiles(flows, dir, name) {
		s.rotN = max(s.rotN, r.n)
	}
	f, size, torn, err := s.open()
	if err != nil {
		return nil, err
	}
	s.f, s.size, s.torn = f, size, torn
	return s, nil
}

// open opens the active file for appending and reports its size and whether
// it ends in the middle of a line.
func (s *mirrorStream) open() (MirrorFile, int64, bool, error) {
	f, err := s.opts.OpenFile(s.flows, s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, false, flowsError("open mirror", s.path, err)
	}
	var size int64
	torn := false
	if r, err := s.flows.Open(s.path); err == nil {
		if fi, err := r.Stat(); err == nil && fi.Size() > 0 {
			size = fi.Size()
			var last [1]byte
			if _, err := r.ReadAt(last[:], size-1); err == nil && last[0] != '\n' {
				torn = true
			}
		}
		r.Close()
	}
	if err := SyncDir(s.flows, s.dir); err != nil {
		f.Close()
		return nil, 0, false, flowsError("open mirror", s.path, err)
	}
	return f, size, torn, nil
}

// write appends one encoded line and returns its sequence number.
func (s *mirrorStream) write(line []byte) (uint64, error) {
	s.inflight.Add(1)
	defer func() {
		s.inflight.Add(-1)
		select {
		case s.wrote <- struct{}{}:
		default:
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrMirrorClosed
	}
	if s.size > 0 && s.size+int64(len(line)) > s.opts.RotateBytes {
		if err := s.rotateLocked(); err != nil {
			return 0, err
		}
	}
	if s.torn {
		// Finish the line a failed write cut short, so it stays a line of
		// its own; the prefix goes out in the same write call.
		line = append([]byte{'\n'}, line...)
	}
	n, err := s.f.Write(line)
	if n < 0 || n > len(line) {
		n = 0 // a misbehaving writer; assume nothing was written
	}
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	s.size += int64(n)
	s.bytes.Add(uint64(n))
	if n > 0 {
		s.torn = line[n-1] != '\n'
	}
	if err != nil {
		return 0, flowsError("append to", s.path, err)
	}
	seq := s.written.Add(1)
	return seq, nil
}

// rotateLocked renames the active file to <name>.<n>.jsonl and starts a new
// one. Everything written so far is fsynced first. On failure the current
// file stays in use.
func (s *mirrorStream) rotateLocked() error {
	s.rot.Lock()
	defer s.rot.Unlock()
	if err := s.f.Sync(); err != nil {
		return flowsError("rotate: sync", s.path, err)
	}
	s.markSynced(s.written.Load())
	next := s.rotN + 1
	var rotated string
	for ; ; next++ {
		rotated = filepath.Join(s.dir, s.name+"."+strconv.Itoa(next)+".jsonl")
		_, err := s.flows.Lstat(rotated)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return flowsError("rotate", s.path, err)
		}
	}
	if err := s.flows.Rename(s.path, rotated); err != nil {
		return flowsError("rotate", s.path, err)
	}
	f, size, torn, err := s.open()
	if err != nil {
		if rerr := s.flows.Rename(rotated, s.path); rerr != nil {
			// The old handle still works; it now writes to the rotated name.
			s.rotN = next
			return fmt.Errorf("rotate: %w (and moving it back failed: %v)", err, flowsError("rename", rotated, rerr))
		}
		return fmt.Errorf("rotate: %w", err)
	}
	old := s.f
	s.f, s.size, s.torn, s.rotN = f, size, torn, next
	if err := old.Close(); err != nil {
		s.opts.Logger.Warn("mirror: closing a rotated file failed", "path", flowsName(rotated), "err", err)
	}
	return nil
}

func (s *mirrorStream) markSynced(upTo uint64) {
	s.smu.Lock()
	if upTo > s.synced {
		s.synced = upTo
	}
	s.smu.Unlock()
}

// waitSynced returns once write seq is durable. The first waiter to find no
// fsync in progress leads one for everyone written so far; the others wait
// for it, or for the next round if theirs came too late for it.
func (s *mirrorStream) waitSynced(ctx context.Context, seq uint64) error {
	for {
		s.smu.Lock()
		if s.synced >= seq {
			s.smu.Unlock()
			return nil
		}
		if r := s.round; r != nil {
			s.smu.Unlock()
			select {
			case <-r.done:
			case <-ctx.Done():
				return fmt.Errorf("wait for fsync of %s: %w", flowsName(s.path), ctx.Err())
			}
			if r.upTo >= seq && r.err != nil {
				return r.err
			}
			continue
		}
		r := &syncRound{done: make(chan struct{})}
		s.round = r
		s.smu.Unlock()

		s.gather()
		s.rot.RLock()
		r.upTo = s.written.Load()
		err := s.f.Sync()
		s.rot.RUnlock()
		if err != nil {
			err = flowsError("sync", s.path, err)
		}
		s.smu.Lock()
		r.err = err
		if err == nil && r.upTo > s.synced {
			s.synced = r.upTo
		}
		s.round = nil
		close(r.done)
		s.smu.Unlock()
		if err != nil {
			return err
		}
	}
}

// gather lets appends that are already under way finish their writes so
// that the coming fsync covers them too, waiting at most SyncInterval.
func (s *mirrorStream) gather() {
	if s.inflight.Load() == 0 {
		return
	}
	t := time.NewTimer(s.opts.SyncInterval)
	defer t.Stop()
	for s.inflight.Load() > 0 {
		select {
		case <-s.wrote:
		case <-t.C:
			return
		}
	}
}

func (s *mirrorStream) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.rot.Lock()
	defer s.rot.Unlock()
	err := s.f.Sync()
	if err == nil {
		s.markSynced(s.written.Load())
	} else {
		err = flowsError("close: sync", s.path, err)
	}
	if cerr := s.f.Close(); cerr != nil {
		err = errors.Join(err, flowsError("close", s.path, cerr))
	}
	return err
}

// rotatedFile is <name>.<n>.jsonl.
type rotatedFile struct {
	n    int
	path string // relative to the flows directory
}

// rotatedFiles lists the rotated files of a direction in the directory dir
// of flows, in rotation order.
func rotatedFiles(flows *os.Root, dir, name string) []rotatedFile {
	ents, err := fs.ReadDir(flows.FS(), filepath.ToSlash(dir))
	if err != nil {
		return nil
	}
	var out []rotatedFile
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), name+".")
		if !ok {
			continue
		}
		num, ok := strings.CutSuffix(rest, ".jsonl")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n <= 0 || strconv.Itoa(n) != num {
			continue
		}
		out = append(out, rotatedFile{n: n, path: filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(out, func(a, b rotatedFile) int { return a.n - b.n })
	return out
}

// mirrorFiles lists a run's files of one direction, oldest first, by their
// names in flows.
func mirrorFiles(flows *os.Root, runID, direction string) []string {
	dir := filepath.Join(runID, "chat")
	var out []string
	for _, r := range rotatedFiles(flows, dir, direction) {
		out = append(out, r.path)
	}
	return append(out, filepath.Join(dir, direction+".jsonl"))
}

// ListRuns returns the run ids in flows, oldest first. Directories whose
// names are not run ids are not runs and are ignored.
func ListRuns(flows *os.Root) []string {
	ents, err := fs.ReadDir(flows.FS(), ".")
	if err != nil {
		return nil
	}
	var runs []string
	for _, e := range ents {
		if _, err := ParseRunID(e.Name()); err == nil && e.IsDir() {
			runs = append(runs, e.Name())
		}
	}
	slices.Sort(runs)
	return runs
}

// flowsName is the name of the file name of the flows directory relative to
// the state directory (flows/<run_id>/chat/inbound.jsonl), which is how
// errors and logs name mirror files.
func flowsName(name string) string { return filepath.Join(FlowsDir, name) }

// flowsError is the error of op on the file name of the flows directory,
// naming the file relative to the state directory: the host path an I/O
// error carries is dropped, as errors of the mirror reach API callers, who
// never see host paths (docs/security.md). errors.Is still finds the cause.
func flowsError(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: flowsName(name), Err: err}
}
