package store

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
)

// DirectoryVersion is the version of chat/channel_directory.json this binary
// reads and writes.
const DirectoryVersion = 1

// Defaults for DirectoryOptions.
const (
	DefaultDirectoryMaxEntries    = 2000
	DefaultDirectoryFlushInterval = time.Second
)

// Meta keys the directory fills from inbound traffic.
const (
	MetaChatType   = "chat_type"
	MetaChatTitle  = "chat_title"
	MetaTopicTitle = "topic_title"
	MetaGuildID    = "guild_id"
)

// DirectoryEntry is one chat the hub has seen (docs/state.md,
// "channel_directory.json").
type DirectoryEntry struct {
	Platform chat.Platform     `json:"platform"`
	ChatID   string            `json:"chat_id"`
	ThreadID string            `json:"thread_id,omitempty"`
	Display  string            `json:"display"`
	SeenAt   time.Time         `json:"seen_at"`
	Meta     map[string]string `json:"meta"`
}

// Key is the entry's channel-directory key.
func (e DirectoryEntry) Key() chat.ChannelKey {
	return chat.ChannelKey{Platform: e.Platform, ChatID: e.ChatID, ThreadID: e.ThreadID}
}

// directoryFile is the on-disk shape of chat/channel_directory.json. Entries
// are decoded loosely so that a bad seen_at is reported with its line.
type directoryFile struct {
	Version   int              `json:"version"`
	UpdatedAt string           `json:"updated_at"`
	Entries   []directoryEntry `json:"entries"`
}

type directoryEntry struct {
	Platform string            `json:"platform"`
	ChatID   string            `json:"chat_id"`
	ThreadID string            `json:"thread_id,omitempty"`
	Display  string            `json:"display"`
	SeenAt   string            `json:"seen_at"`
	Meta     map[string]string `json:"meta"`
}

// DirectoryOptions tune a Directory; zero values mean the defaults.
type DirectoryOptions struct {
	// MaxEntries caps the directory; past it the entry seen longest ago is
	// evicted. Default 2000.
	MaxEntries int
	// FlushInterval is the least time between two scheduled writes.
	// Default 1s.
	FlushInterval time.Duration
	// Clock drives seen_at and the flush timer; default the real clock.
	Clock clock.Clock
	// Logger receives flush failures and dropped entries; default
	// slog.Default().
	Logger *slog.Logger
}

func (o DirectoryOptions) withDefaults() DirectoryOptions {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultDirectoryMaxEntries
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultDirectoryFlushInterval
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Directory is the channel directory: a cache, derived from inbound traffic,
// of the chats the hub has seen and what they are called. It helps people
// pick targets; it is never consulted for delivery. Changes are kept in
// memory and written atomically at most once per FlushInterval.
// All methods are safe for concurrent use.
type Directory struct {
	root *os.Root
	name string
	path string // for messages
	opts DirectoryOptions

	mu      sync.Mutex
	entries map[chat.ChannelKey]DirectoryEntry
	dirty   bool
	timer   clock.Timer // armed while a scheduled flush is pending
	closed  bool
	lastErr string // the last flush failure logged, to log each kind once
	wg      sync.WaitGroup

	writeMu sync.Mutex // serialises writes; taken before mu
	stamp   fileStamp  // guarded by writeMu
	writes  atomic.Int64
}

// OpenDirectory loads the channel directory file name (ChannelDirectory)
// of the state directory state, and reads and writes it through state only.
// A missing file is an empty directory. A file that does not parse or holds
// an invalid entry is a *CorruptFileError and is left untouched
// (RebuildDirectory replaces it).
func OpenDirectory(state *os.Root, name string, opts DirectoryOptions) (*Directory, error) {
	d := newDirectory(state, name, opts)
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	entries, stamp, err := d.loadFile()
	if err != nil {
		return nil, err
	}
	d.stamp = stamp
	for _, e := range entries {
		d.upsertLocked(e)
	}
	return d, nil
}

func newDirectory(state *os.Root, name string, opts DirectoryOptions) *Directory {
	return &Directory{root: state, name: name, path: filepath.Join(state.Name(), name), opts: opts.withDefaults(), entries: map[chat.ChannelKey]DirectoryEntry{}}
}

// corruptDirectoryHint tells the operator how to recover a bad directory file.
const corruptDirectoryHint = "repair it, move it away, or rebuild it from the chat mirrors (the directory is a derived cache)"

// loadFile reads and validates the file.
func (d *Directory) loadFile() ([]DirectoryEntry, fileStamp, error) {
	stamp, err := stampOf(d.root, d.name)
	if err != nil {
		return nil, fileStamp{}, err
	}
	data, ok, err := readFileData(d.root, d.name)
	if err != nil || !ok {
		return nil, stamp, err
	}
	withHint := func(err error) error {
		var ce *CorruptFileError
		if errors.As(err, &ce) {
			ce.Hint = corruptDirectoryHint
		}
		return err
	}
	var f directoryFile
	if err := decodeJSON(d.path, data, &f); err != nil {
		return nil, fileStamp{}, withHint(err)
	}
	if err := checkVersion(d.path, f.Version, DirectoryVersion); err != nil {
		return nil, fileStamp{}, withHint(err)
	}
	out := make([]DirectoryEntry, 0, len(f.Entries))
	for i, raw := range f.Entries {
		e, err := raw.entry()
		if err != nil {
			return nil, fileStamp{}, withHint(entryError(d.path, data, "entries", i, err))
		}
		out = append(out, e)
	}
	return out, stamp, nil
}

func (r directoryEntry) entry() (DirectoryEntry, error) {
	e := DirectoryEntry{Platform: chat.Platform(r.Platform), ChatID: r.ChatID, ThreadID: r.ThreadID, Display: r.Display, Meta: r.Meta}
	if err := validChannel(e.Key()); err != nil {
		return DirectoryEntry{}, err
	}
	if r.SeenAt == "" {
		return DirectoryEntry{}, errors.New(`missing "seen_at"`)
	}
	t, err := time.Parse(time.RFC3339, r.SeenAt)
	if err != nil {
		return DirectoryEntry{}, fmt.Errorf("seen_at %q is not an RFC 3339 time such as 2026-02-26T09:55:00Z", r.SeenAt)
	}
	e.SeenAt = t
	return e, nil
}

// validChannel accepts c only if its key parses back to c.
func validChannel(c chat.ChannelKey) error {
	p, err := chat.ParseChannelKey(c.String())
	if err != nil {
		return err
	}
	if p != c {
		return fmt.Errorf("invalid channel key %q: its parts are not canonical (%s)", c.String(), chat.AcceptedChannelForms)
	}
	return nil
}

// Path is the file the directory lives in.
func (d *Directory) Path() string { return d.path }

// Upsert records that the chat of e was seen. It merges with an existing
// entry: a newer sighting replaces the display name (when it has one) and
// overrides meta keys it sets; an older one is ignored. A zero SeenAt means
// now. Entries with an invalid key are dropped (and logged). The write
// happens later; see Flush.
func (d *Directory) Upsert(e DirectoryEntry) {
	if err := validChannel(e.Key()); err != nil {
		d.opts.Logger.Warn("channel directory: entry dropped", "err", err)
		return
	}
	if e.SeenAt.IsZero() {
		e.SeenAt = d.opts.Clock.Now()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if d.upsertLocked(e) {
		d.markDirtyLocked()
	}
}

// Observe records the chat an inbound message came from, named
// "Chat title / Topic", with the chat type, topic title and guild id as
// meta. Web messages are not chats and are ignored.
func (d *Directory) Observe(in *chat.Inbound) {
	if in == nil || in.Platform == chat.Web {
		return
	}
	d.Upsert(DirectoryEntry{
		Platform: in.Platform, ChatID: in.ChatID, ThreadID: in.ThreadID,
		SeenAt: d.opts.Clock.Now(),
		Meta: map[string]string{
			MetaChatType:   string(in.ChatType),
			MetaChatTitle:  in.ChatTitle,
			MetaTopicTitle: in.TopicTitle,
			MetaGuildID:    in.GuildID,
		},
	})
}

// upsertLocked merges e in and reports whether anything changed. The
// display name is derived from the chat_title and topic_title meta keys
// when e has none; a topic title learned once is kept for later messages
// that do not repeat it (Telegram names a topic only when it is created).
func (d *Directory) upsertLocked(e DirectoryEntry) bool {
	k := e.Key()
	e.SeenAt = e.SeenAt.UTC().Truncate(time.Second)
	meta := make(map[string]string, len(e.Meta))
	for mk, mv := range e.Meta {
		if mv = strings.TrimSpace(mv); mv != "" {
			meta[mk] = mv
		}
	}
	old, had := d.entries[k]
	if had {
		if e.SeenAt.Before(old.SeenAt) {
			return false
		}
		for mk, mv := range old.Meta {
			if _, ok := meta[mk]; !ok {
				meta[mk] = mv
			}
		}
	}
	// chat_title only feeds the display name; the file keeps the other meta
	// (docs/state.md, "channel_directory.json").
	title := meta[MetaChatTitle]
	delete(meta, MetaChatTitle)
	switch {
	case e.Display != "":
	case title != "":
		e.Display = displayName(title, meta[MetaTopicTitle])
	case old.Display != "":
		e.Display = old.Display
	case meta[MetaTopicTitle] != "":
		e.Display = meta[MetaTopicTitle]
	default:
		e.Display = k.String()
	}
	e.Meta = meta
	if had && old.Display == e.Display && old.SeenAt.Equal(e.SeenAt) && maps.Equal(old.Meta, e.Meta) {
		return false
	}
	d.entries[k] = e
	d.evictLocked()
	return true
}

// displayName joins a chat title and topic title as "Chat / Topic".
func displayName(chatTitle, topicTitle string) string {
	parts := make([]string, 0, 2)
	for _, p := range []string{chatTitle, topicTitle} {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " / ")
}

// evictLocked drops the entries seen longest ago until the cap holds.
func (d *Directory) evictLocked() {
	for len(d.entries) > d.opts.MaxEntries {
		var oldest chat.ChannelKey
		var oldestAt time.Time
		first := true
		for k, e := range d.entries {
			if first || e.SeenAt.Before(oldestAt) || e.SeenAt.Equal(oldestAt) && k.String() < oldest.String() {
				oldest, oldestAt, first = k, e.SeenAt, false
			}
		}
		delete(d.entries, oldest)
	}
}

// markDirtyLocked notes unsaved changes and arms the flush timer if it is
// not armed already, so a burst of changes costs one write per interval.
func (d *Directory) markDirtyLocked() {
	d.dirty = true
	if d.timer != nil || d.closed {
		return
	}
	d.wg.Add(1)
	d.timer = d.opts.Clock.AfterFunc(d.opts.FlushInterval, d.onTimer)
}

func (d *Directory) onTimer() {
	defer d.wg.Done()
	d.mu.Lock()
	d.timer = nil
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return // Close flushes
	}
	err := d.Flush()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.lastErr = ""
		return
	}
	// The changes stay dirty; the next change schedules another attempt.
	if msg := err.Error(); msg != d.lastErr {
		d.lastErr = msg
		d.opts.Logger.Error("channel directory: write failed; will retry on the next change", "err", err)
	}
}

// List returns the entries whose key, display name, platform or meta values
// contain query (case-insensitively; "" matches all), most recently seen
// first.
func (d *Directory) List(query string) []DirectoryEntry {
	q := strings.ToLower(strings.TrimSpace(query))
	d.mu.Lock()
	out := make([]DirectoryEntry, 0, len(d.entries))
	for k, e := range d.entries {
		if q == "" || matches(q, k, e) {
			e.Meta = maps.Clone(e.Meta)
			out = append(out, e)
		}
	}
	d.mu.Unlock()
	sortEntries(out)
	return out
}

func matches(q string, k chat.ChannelKey, e DirectoryEntry) bool {
	if strings.Contains(strings.ToLower(k.String()), q) ||
		strings.Contains(strings.ToLower(e.Display), q) ||
		strings.Contains(strings.ToLower(string(e.Platform)), q) {
		return true
	}
	for _, v := range e.Meta {
		if strings.Contains(strings.ToLower(v), q) {
			return true
		}
	}
	return false
}

// sortEntries orders by seen_at, newest first, then by key.
func sortEntries(es []DirectoryEntry) {
	slices.SortFunc(es, func(a, b DirectoryEntry) int {
		if c := b.SeenAt.Compare(a.SeenAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Key().String(), b.Key().String())
	})
}

// Get returns the entry for k.
func (d *Directory) Get(k chat.ChannelKey) (DirectoryEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.entries[k]
	e.Meta = maps.Clone(e.Meta)
	return e, ok
}

// Len is the number of entries.
func (d *Directory) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}

// Rename moves the entry for from to to, as when a Telegram group migrates
// to a supergroup with a new chat id. When neither key has a thread, the
// chat's thread entries move too. If to already has an entry, the more
// recently seen of the two wins and meta from the other fills the gaps.
func (d *Directory) Rename(from, to chat.ChannelKey) {
	if err := validChannel(to); err != nil {
		d.opts.Logger.Warn("channel directory: rename refused", "from", from.String(), "err", err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || from == to {
		return
	}
	wholeChat := from.ThreadID == "" && to.ThreadID == ""
	type move struct {
		from, to chat.ChannelKey
	}
	var moves []move
	for k := range d.entries {
		switch {
		case k == from:
			moves = append(moves, move{k, to})
		case wholeChat && k.Platform == from.Platform && k.ChatID == from.ChatID && k.ThreadID != "":
			moves = append(moves, move{k, chat.ChannelKey{Platform: to.Platform, ChatID: to.ChatID, ThreadID: k.ThreadID}})
		}
	}
	for _, m := range moves {
		e := d.entries[m.from]
		delete(d.entries, m.from)
		e.Platform, e.ChatID, e.ThreadID = m.to.Platform, m.to.ChatID, m.to.ThreadID
		if cur, ok := d.entries[m.to]; ok {
			newer, older := cur, e
			if e.SeenAt.After(cur.SeenAt) {
				newer, older = e, cur
			}
			meta := maps.Clone(older.Meta)
			if meta == nil {
				meta = map[string]string{}
			}
			maps.Copy(meta, newer.Meta)
			newer.Meta = meta
			e = newer
		}
		if e.Display == m.from.String() {
			e.Display = m.to.String()
		}
		d.entries[m.to] = e
	}
	if len(moves) > 0 {
		d.markDirtyLocked()
	}
}

// Flush writes the directory now if it has unsaved changes. If the file was
// changed by someone else since it was loaded, its entries are merged in
// first; if it no longer parses, nothing is written and the error says why.
func (d *Directory) Flush() error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	return d.flushLocked(false)
}

func (d *Directory) flushLocked(replace bool) error {
	d.mu.Lock()
	dirty := d.dirty
	d.mu.Unlock()
	if !dirty {
		return nil
	}
	if !replace {
		now, err := stampOf(d.root, d.name)
		if err != nil {
			return err
		}
		if !now.same(d.stamp) {
			theirs, stamp, err := d.loadFile()
			if err != nil {
				return err
			}
			d.mu.Lock()
			for _, e := range theirs {
				d.upsertLocked(e)
			}
			d.mu.Unlock()
			d.stamp = stamp
		}
	}
	d.mu.Lock()
	f := directoryFile{
		Version:   DirectoryVersion,
		UpdatedAt: d.opts.Clock.Now().UTC().Truncate(time.Second).Format(time.RFC3339),
		Entries:   make([]directoryEntry, 0, len(d.entries)),
	}
	list := slices.Collect(maps.Values(d.entries))
	d.dirty = false
	d.mu.Unlock()
	sortEntries(list)
	for _, e := range list {
		meta := e.Meta
		if meta == nil {
			meta = map[string]string{}
		}
		f.Entries = append(f.Entries, directoryEntry{
			Platform: string(e.Platform), ChatID: e.ChatID, ThreadID: e.ThreadID,
			Display: e.Display, SeenAt: e.SeenAt.UTC().Format(time.RFC3339), Meta: meta,
		})
	}
	err := d.write(f)
	if err != nil {
		d.mu.Lock()
		d.dirty = true
		d.mu.Unlock()
		return err
	}
	return nil
}

func (d *Directory) write(f directoryFile) error {
	data, err := marshalFile(f)
	if err != nil {
		return fmt.Errorf("encode %s: %w", d.path, err)
	}
	if err := d.root.MkdirAll(filepath.Dir(d.name), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", d.path, err)
	}
	if err := WriteFileAtomic(d.root, d.name, data, 0o600); err != nil {
		return err
	}
	d.writes.Add(1)
	d.stamp, _ = stampOf(d.root, d.name)
	return nil
}

// Close writes any unsaved changes and stops the flush timer. Later
// changes are ignored.
func (d *Directory) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	t := d.timer
	d.timer = nil
	d.mu.Unlock()
	if t != nil && t.Stop() {
		d.wg.Done()
	}
	err := d.Flush()
	d.wg.Wait()
	return err
}

// RebuildDirectory recreates the channel directory file name of the state
// directory state from every inbound record of the chat mirrors in flows
// (the latest sighting of a chat wins) and writes it at once, replacing the
// file. Because the directory is derived from the mirrors, this is the one
// operation allowed to replace a directory file that does not parse. It
// returns the open directory and its number of entries.
func RebuildDirectory(state *os.Root, name string, flows *os.Root, opts DirectoryOptions) (*Directory, int, error) {
	d := newDirectory(state, name, opts)
	if _, err := d.merge(flows); err != nil {
		return nil, 0, fmt.Errorf("rebuild %s: %w", d.path, err)
	}
	d.mu.Lock()
	d.dirty = true
	n := len(d.entries)
	d.mu.Unlock()
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if err := d.flushLocked(true); err != nil {
		return nil, 0, fmt.Errorf("rebuild: %w", err)
	}
	return d, n, nil
}

// MergeMirrors adds every inbound sighting of the chat mirrors in flows to
// a directory in use, each at the time it was recorded (a newer sighting
// already known wins), and writes the directory. It returns the number of
// sightings read.
func (d *Directory) MergeMirrors(flows *os.Root) (int, error) {
	n, err := d.merge(flows)
	if err != nil {
		return n, fmt.Errorf("merge the mirrors into %s: %w", d.path, err)
	}
	return n, d.Flush()
}

// merge upserts the inbound sightings of the mirrors in flows and returns
// how many it read; the caller writes the directory.
func (d *Directory) merge(flows *os.Root) (int, error) {
	filter := MirrorFilter{
		Direction: DirectionInbound,
		OnBadLine: func(p string, line int, err error) {
			d.opts.Logger.Warn("channel directory rebuild: skipped a bad mirror line", "path", p, "line", line, "err", err)
		},
	}
	n := 0
	err := ReadMirror(flows, filter, func(rec MirrorRecord) error {
		e, ok := entryFromRecord(rec)
		if !ok {
			return nil
		}
		n++
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.closed && d.upsertLocked(e) {
			d.dirty = true
		}
		return nil
	})
	return n, err
}

// entryFromRecord turns an inbound mirror record into a directory entry;
// web records and records without a valid chat key give none.
func entryFromRecord(rec MirrorRecord) (DirectoryEntry, bool) {
	p := chat.Platform(rec.Platform)
	if _, ok := chat.SpecOf(p); !ok {
		return DirectoryEntry{}, false
	}
	e := DirectoryEntry{Platform: p, ChatID: rec.ChatID, ThreadID: rec.ThreadID, SeenAt: rec.TS}
	if validChannel(e.Key()) != nil || rec.TS.IsZero() {
		return DirectoryEntry{}, false
	}
	e.Meta = map[string]string{}
	for _, k := range []string{MetaChatType, MetaChatTitle, MetaTopicTitle, MetaGuildID} {
		if v := rec.Meta[k]; v != "" {
			e.Meta[k] = v
		}
	}
	return e, true
}
