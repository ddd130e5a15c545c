package hub

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Exchange is one message of a conversation as the hub recorded it in the
// mirrors: a message that came in, or a chunk the outbox delivered.
type Exchange struct {
	Inbound bool
	// Kind is the mirror kind: message, command, denied … for inbound;
	// reply, notice, pma … for delivered chunks.
	Kind     string
	TurnID   string
	OutboxID string
	Text     string
	TS       time.Time
	// File is the stored file a delivered chunk carried (a file reply,
	// docs/uploads.md); nil for text.
	File *ExchangeFile
	// Confirm names the held call a chunk is the prompt of (its buttons:
	// ConfirmStage), "" for any other.
	Confirm, ConfirmStage string
}

// ExchangeFile is a file a conversation was sent: its name, size and the
// SHA-256 under which the state's files/ keeps it (Hub.OpenFile).
type ExchangeFile struct {
	Name   string
	Size   int64
	SHA256 string
}

// Conversations is the one source of truth of what a platform's
// conversations showed: every exchange the hub mirrors, live, and the last
// ones read back from the mirror files. A surface that shows a conversation
// (the web panel) builds its view from it alone.
type Conversations struct {
	flows *os.Root // the mirrors' directory; nil reads nothing back

	mu        sync.Mutex
	next      int
	listeners map[chat.Platform]map[int]func(Exchange)
}

// NewConversations reads back from the mirrors in flows (the state
// directory's flows/).
func NewConversations(flows *os.Root) *Conversations {
	return &Conversations{flows: flows, listeners: map[chat.Platform]map[int]func(Exchange){}}
}

// Conversation is one platform's view of Conversations.
type Conversation struct {
	c *Conversations
	p chat.Platform
}

// For returns the view of platform p's conversations.
func (c *Conversations) For(p chat.Platform) Conversation { return Conversation{c: c, p: p} }

// Listen calls f with every exchange recorded from now on, in the order
// recorded, until stop is called. f must not block.
func (v Conversation) Listen(f func(Exchange)) (stop func()) {
	c := v.c
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	if c.listeners[v.p] == nil {
		c.listeners[v.p] = map[int]func(Exchange){}
	}
	c.listeners[v.p][id] = f
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.listeners[v.p], id)
	}
}

// Recent returns up to n of the platform's last exchanges from the mirror
// files, oldest first, newest runs first until n are found. Runs that
// cannot be read are skipped and reported in the error with the rest.
func (v Conversation) Recent(n int) ([]Exchange, error) {
	if v.c.flows == nil || n <= 0 {
		return nil, nil
	}
	var picked [][]Exchange // per run, newest run first
	found := 0
	runs := store.ListRuns(v.c.flows)
	var errs []error
	for i := len(runs) - 1; i >= 0 && found < n; i-- {
		var xs []Exchange
		err := store.ReadMirror(v.c.flows, store.MirrorFilter{RunID: runs[i]}, func(rec store.MirrorRecord) error {
			if x, ok := exchangeOf(v.p, rec); ok {
				xs = append(xs, x)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", runs[i], err))
			continue
		}
		if len(xs) > n-found {
			xs = xs[len(xs)-(n-found):]
		}
		found += len(xs)
		picked = append(picked, xs)
	}
	out := make([]Exchange, 0, found)
	for i := len(picked) - 1; i >= 0; i-- {
		out = append(out, picked[i]...)
	}
	return out, errors.Join(errs...)
}

// record passes a mirrored record to the listeners of its platform.
func (c *Conversations) record(rec store.MirrorRecord) {
	if c == nil {
		return
	}
	p := chat.Platform(rec.Platform)
	x, ok := exchangeOf(p, rec)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.listeners[p] {
		f(x)
	}
}

// exchangeOf selects the records that belong in platform p's conversation
// view: messages that came in (not redeliveries, not empty) and chunks that
// were delivered (not dead letters).
func exchangeOf(p chat.Platform, rec store.MirrorRecord) (Exchange, bool) {
	if rec.Platform != string(p) {
		return Exchange{}, false
	}
	x := Exchange{Kind: rec.Kind, TurnID: rec.Meta["turn_id"], Text: rec.Text, TS: rec.TS}
	if rec.Direction == store.DirectionInbound {
		if rec.Kind == store.KindFile && rec.Meta[MetaFilePath] != "" {
			// A file the person sent, saved: shown by its name.
			x.Text = fmt.Sprintf("📎 %s (%s bytes)", rec.Meta[MetaFileName], rec.Meta[MetaFileSize])
		}
		if rec.Meta["duplicate"] != "" || strings.TrimSpace(x.Text) == "" {
			return Exchange{}, false
		}
		x.Inbound = true
		return x, true
	}
	if rec.Kind == store.KindDead {
		return Exchange{}, false
	}
	x.OutboxID = rec.Meta[store.MetaOutboxID]
	if sha := rec.Meta[MetaFileSHA256]; sha != "" {
		size, _ := strconv.ParseInt(rec.Meta[MetaFileSize], 10, 64)
		x.File = &ExchangeFile{Name: rec.Meta[MetaAttachment], Size: size, SHA256: sha}
	}
	x.Confirm, x.ConfirmStage = rec.Meta[MetaConfirm], rec.Meta[MetaConfirmStage]
	return x, true
}
