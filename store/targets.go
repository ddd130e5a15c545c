package store

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
)

// TargetsVersion is the version of pma/delivery_targets.json this binary
// reads and writes.
const TargetsVersion = 1

// targetsFile is the on-disk shape of pma/delivery_targets.json
// (docs/state.md, "delivery_targets.json").
type targetsFile struct {
	Version              int               `json:"version"`
	UpdatedAt            string            `json:"updated_at"`
	Targets              []targetEntry     `json:"targets"`
	LastDeliveryByTarget map[string]string `json:"last_delivery_by_target"`
}

type targetEntry struct {
	Kind     string `json:"kind"`
	Platform string `json:"platform,omitempty"`
	ChatID   string `json:"chat_id,omitempty"`
	ThreadID string `json:"thread_id,omitempty"`
	Path     string `json:"path,omitempty"`
}

// Targets is the delivery targets file: the operator's canonical list of
// fan-out destinations and, per target, the last turn delivered there. It is
// loaded once and kept in memory; every mutation is written atomically
// before it becomes visible. Targets never consult the channel directory.
// Every key it takes or loads is normalized first (Normalize), so a target
// is one target however it is spelled. All methods are safe for concurrent
// use.
type Targets struct {
	root  *os.Root
	name  string
	path  string // for messages
	clock clock.Clock

	mu        sync.Mutex
	keys      []chat.Key
	last      map[string]string
	updatedAt string
	stamp     fileStamp // the file as last loaded or written
}

// OpenTargets loads the delivery targets file name (DeliveryTargetsFile)
// of the state directory state, and reads and writes it through state only.
// A missing file is an empty set (created on the first change). A file that
// does not parse or holds an invalid target is a *CorruptFileError, and a
// file from a newer hub wraps ErrFileTooNew; either way the file is left
// untouched.
func OpenTargets(state *os.Root, name string) (*Targets, error) {
	t := &Targets{root: state, name: name, path: filepath.Join(state.Name(), name), clock: clock.Real{}}
	if err := t.load(); err != nil {
		return nil, err
	}
	return t, nil
}

// load reads the file into t; the caller holds t.mu (or owns t).
func (t *Targets) load() error {
	stamp, err := stampOf(t.root, t.name)
	if err != nil {
		return err
	}
	data, ok, err := readFileData(t.root, t.name)
	if err != nil {
		return err
	}
	keys, last, updatedAt := []chat.Key(nil), map[string]string{}, ""
	if ok {
		var f targetsFile
		if err := decodeJSON(t.path, data, &f); err != nil {
			return err
		}
		if err := checkVersion(t.path, f.Version, TargetsVersion); err != nil {
			return err
		}
		for i, e := range f.Targets {
			k, err := e.key()
			if err != nil {
				return entryError(t.path, data, "targets", i, err)
			}
			if k = t.Normalize(k); !slices.Contains(keys, k) { // a duplicate adds nothing
				keys = append(keys, k)
			}
		}
		last = t.normalLast(f.LastDeliveryByTarget)
		updatedAt = f.UpdatedAt
	}
	t.keys, t.last, t.updatedAt, t.stamp = keys, last, updatedAt, stamp
	return nil
}

// refresh reloads the file if something other than t changed it since it was
// loaded or written, so that a hand edit is never silently overwritten. A
// corrupt file makes the pending mutation fail.
func (t *Targets) refresh() error {
	now, err := stampOf(t.root, t.name)
	if err != nil {
		return err
	}
	if now.same(t.stamp) {
		return nil
	}
	return t.load()
}

// key converts a file entry into a target key, refusing anything that is
// not exactly one of the accepted target forms.
func (e targetEntry) key() (chat.Key, error) {
	var k chat.Key
	switch chat.Kind(e.Kind) {
	case chat.KindWeb:
		if e.Platform != "" || e.ChatID != "" || e.ThreadID != "" || e.Path != "" {
			return chat.Key{}, errors.New(`a "web" target takes no other fields`)
		}
		k = chat.WebKey
	case chat.KindLocal:
		if e.Platform != "" || e.ChatID != "" || e.ThreadID != "" {
			return chat.Key{}, errors.New(`a "local" target takes only "path"`)
		}
		if e.Path == "" {
			return chat.Key{}, errors.New(`a "local" target needs a "path"`)
		}
		k = chat.LocalKey(e.Path)
	case chat.KindChat:
		if e.Path != "" {
			return chat.Key{}, errors.New(`a "chat" target takes "platform", "chat_id" and "thread_id", not "path"`)
		}
		if e.Platform == "" || e.ChatID == "" {
			return chat.Key{}, errors.New(`a "chat" target needs "platform" and "chat_id"`)
		}
		k = chat.ChatKey(chat.Platform(e.Platform), e.ChatID, e.ThreadID)
	case "":
		return chat.Key{}, errors.New(`missing "kind" (accepted: web, local, chat)`)
	default:
		return chat.Key{}, fmt.Errorf(`unknown kind %q (accepted: web, local, chat)`, e.Kind)
	}
	if err := validTarget(k); err != nil {
		return chat.Key{}, err
	}
	return k, nil
}

func entryOf(k chat.Key) targetEntry {
	return targetEntry{Kind: string(k.Kind), Platform: string(k.Platform), ChatID: k.ChatID, ThreadID: k.ThreadID, Path: k.Path}
}

// validTarget accepts k only if its canonical form parses back to k.
func validTarget(k chat.Key) error { return k.Validate() }

// Normalize returns k as the targets store it (chat.Key.Normalized: a
// local path cleaned, and relative when it lies in the state directory).
func (t *Targets) Normalize(k chat.Key) chat.Key { return k.Normalized(t.root.Name()) }

// normalLast returns the delivery bookkeeping of a file with its keys
// normalized. Where several spellings of one target were recorded, the
// canonical spelling's turn wins, else the greatest turn id (turn ids of one
// kind sort by time). Keys that do not parse are kept as they are.
func (t *Targets) normalLast(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	canonical := map[string]bool{}
	for _, s := range slices.Sorted(maps.Keys(m)) {
		k, err := chat.ParseKey(s)
		if err != nil {
			out[s] = m[s]
			continue
		}
		n := t.Normalize(k).String()
		switch {
		case n == s:
			out[n], canonical[n] = m[s], true
		case !canonical[n] && m[s] > out[n]:
			out[n] = m[s]
		}
	}
	return out
}

// Path is the file the targets live in.
func (t *Targets) Path() string { return t.path }

// List returns the targets in file order.
func (t *Targets) List() []chat.Key {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.keys)
}

// Add appends k to the targets. It reports false, without writing, when k
// is already a target.
func (t *Targets) Add(k chat.Key) (added bool, err error) {
	k = t.Normalize(k)
	if err := validTarget(k); err != nil {
		return false, fmt.Errorf("add delivery target: %w", err)
	}
	err = t.mutate(func(keys []chat.Key, last map[string]string) ([]chat.Key, bool) {
		if slices.Contains(keys, k) {
			return keys, false
		}
		added = true
		return append(keys, k), true
	})
	if err != nil {
		return false, fmt.Errorf("add delivery target %s: %w", k, err)
	}
	return added, nil
}

// Remove drops k and its delivery bookkeeping. It reports false, without
// writing, when k is not a target.
func (t *Targets) Remove(k chat.Key) (removed bool, err error) {
	k = t.Normalize(k)
	err = t.mutate(func(keys []chat.Key, last map[string]string) ([]chat.Key, bool) {
		i := slices.Index(keys, k)
		if i < 0 {
			return keys, false
		}
		removed = true
		delete(last, k.String())
		return slices.Delete(keys, i, i+1), true
	})
	if err != nil {
		return false, fmt.Errorf("remove delivery target %s: %w", k, err)
	}
	return removed, nil
}

// Clear removes every target and all delivery bookkeeping, and reports how
// many targets there were.
func (t *Targets) Clear() (n int, err error) {
	err = t.mutate(func(keys []chat.Key, last map[string]string) ([]chat.Key, bool) {
		n = len(keys)
		changed := n > 0 || len(last) > 0
		clear(last)
		return nil, changed
	})
	if err != nil {
		return 0, fmt.Errorf("clear delivery targets: %w", err)
	}
	return n, nil
}

// UpdatedAt is the file's updated_at as last loaded or written ("" for a
// file not written yet).
func (t *Targets) UpdatedAt() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.updatedAt
}

// LastDelivery returns the id of the last turn delivered to k, or "".
func (t *Targets) LastDelivery(k chat.Key) string {
	k = t.Normalize(k)
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last[k.String()]
}

// RecordDelivery records turnID as the last turn delivered to each of keys,
// in one atomic write. Keys need not be current targets: a target removed
// while its delivery was in flight still gets the record.
func (t *Targets) RecordDelivery(turnID string, keys []chat.Key) error {
	if turnID == "" {
		return errors.New("record delivery: empty turn id")
	}
	for i := 0; i < len(turnID); i++ {
		if c := turnID[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("record delivery: turn id %q has a control character", turnID)
		}
	}
	keys = slices.Clone(keys)
	for i, k := range keys {
		keys[i] = t.Normalize(k)
		if err := validTarget(keys[i]); err != nil {
			return fmt.Errorf("record delivery of %s: %w", turnID, err)
		}
	}
	err := t.mutate(func(cur []chat.Key, last map[string]string) ([]chat.Key, bool) {
		changed := false
		for _, k := range keys {
			if s := k.String(); last[s] != turnID {
				last[s] = turnID
				changed = true
			}
		}
		return cur, changed
	})
	if err != nil {
		return fmt.Errorf("record delivery of %s: %w", turnID, err)
	}
	return nil
}

// PendingFor returns the targets, in file order, whose last delivery is not
// turnID: where a fan-out of that turn still has to go.
func (t *Targets) PendingFor(turnID string) []chat.Key {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []chat.Key
	for _, k := range t.keys {
		if t.last[k.String()] != turnID {
			out = append(out, k)
		}
	}
	return out
}

// mutate applies fn to a copy of the state and, if fn reports a change,
// writes the file and only then adopts the new state. Writes are serialised
// by t.mu.
func (t *Targets) mutate(fn func(keys []chat.Key, last map[string]string) ([]chat.Key, bool)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.refresh(); err != nil {
		return err
	}
	keys := slices.Clone(t.keys)
	last := make(map[string]string, len(t.last))
	for k, v := range t.last {
		last[k] = v
	}
	keys, changed := fn(keys, last)
	if !changed {
		return nil
	}
	updatedAt := t.clock.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	f := targetsFile{Version: TargetsVersion, UpdatedAt: updatedAt, Targets: []targetEntry{}, LastDeliveryByTarget: last}
	for _, k := range keys {
		f.Targets = append(f.Targets, entryOf(k))
	}
	data, err := marshalFile(f)
	if err != nil {
		return fmt.Errorf("encode %s: %w", t.path, err)
	}
	if err := t.root.MkdirAll(filepath.Dir(t.name), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", t.path, err)
	}
	if err := WriteFileAtomic(t.root, t.name, data, 0o600); err != nil {
		return err
	}
	// If the stat fails, the zero stamp makes the next mutation reload what
	// was just written, which is harmless.
	stamp, _ := stampOf(t.root, t.name)
	t.keys, t.last, t.updatedAt, t.stamp = keys, last, updatedAt, stamp
	return nil
}
