package outbox

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Kind says why a chunk is sent; it is the first part of its outbox id.
type Kind string

// The kinds of outbox entries (docs/outbox.md).
const (
	KindReply       Kind = "reply"        // answer to the chat a turn came from
	KindPMA         Kind = "pma"          // fan-out of hub-level output to delivery targets
	KindPMADispatch Kind = "pma-dispatch" // dispatch output to delivery targets
	KindNotice      Kind = "notice"       // a notice from the hub itself
)

// AcceptedKinds is shown in every error about a kind.
const AcceptedKinds = "accepted kinds: reply, pma, pma-dispatch, notice"

func (k Kind) valid() bool {
	switch k {
	case KindReply, KindPMA, KindPMADispatch, KindNotice:
		return true
	}
	return false
}

// State is where an entry is in its life.
type State string

// Entry states.
const (
	StatePending   State = "pending"   // queued or in flight
	StateDelivered State = "delivered" // sent; kept for dedupe for the retention window
	StateDead      State = "dead"      // a dead letter: failed permanently or too often
)

// ID formats the deterministic outbox id of one chunk:
// <kind>:<turn_id>:<target_key>:<chunk_index>. The same turn, target and
// index always give the same id, which is what makes a repeated Enqueue a
// no-op.
func ID(kind Kind, turnID string, target chat.Key, index int) string {
	return string(kind) + ":" + turnID + ":" + target.String() + ":" + strconv.Itoa(index)
}

// ParseID splits an outbox id into its parts. It accepts exactly what ID
// produces for a valid kind, a turn id without ':' and a canonical target key.
func ParseID(id string) (kind Kind, turnID string, target chat.Key, index int, err error) {
	const form = "<kind>:<turn_id>:<target_key>:<chunk_index>"
	bad := func(why string) (Kind, string, chat.Key, int, error) {
		return "", "", chat.Key{}, 0, fmt.Errorf("invalid outbox id %q: %s (accepted: %s)", id, why, form)
	}
	k, rest, ok := strings.Cut(id, ":")
	if !ok {
		return bad("no ':' separators")
	}
	if !Kind(k).valid() {
		return bad(fmt.Sprintf("unknown kind %q; %s", k, AcceptedKinds))
	}
	turn, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return bad("missing target key")
	}
	if err := validTurnID(turn); err != nil {
		return bad(err.Error())
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return bad("missing chunk index")
	}
	key, idx := rest[:i], rest[i+1:]
	n, convErr := strconv.Atoi(idx)
	if convErr != nil || n < 0 || strconv.Itoa(n) != idx {
		return bad(fmt.Sprintf("chunk index %q is not a non-negative integer", idx))
	}
	t, keyErr := chat.ParseKey(key)
	if keyErr != nil {
		return bad(keyErr.Error())
	}
	if t.String() != key {
		return bad(fmt.Sprintf("target key %q is not canonical (want %q)", key, t.String()))
	}
	return Kind(k), turn, t, n, nil
}

// validTurnID checks the turn id rules (docs/architecture.md, "Glossary"):
// non-empty, no ':' (the id separator) and no control characters.
func validTurnID(s string) error {
	if s == "" {
		return fmt.Errorf("empty turn id")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ':' || c < 0x20 || c == 0x7f {
			return fmt.Errorf("turn id %q contains %q at byte %d (turn ids have no ':' and no control characters)", s, c, i)
		}
	}
	return nil
}

// Entry is one chunk on its way to one target.
type Entry struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	TurnID string `json:"turn_id"`
	// Target is where the chunk goes: parsed once, when the entry is made
	// or loaded, and stored as its canonical key (chat.Key.String()).
	Target chat.Key `json:"target"`
	// Index is the chunk's position in its turn for this target, from 0;
	// Total is the number of chunks of the turn for this target.
	Index int    `json:"index"`
	Total int    `json:"total"`
	Text  string `json:"text"`
	// Attachment is an overflow document; its bytes are stored with the entry
	// so that a retry can send it again.
	Attachment *chat.Attachment `json:"attachment,omitempty"`
	// Meta holds adapter hints: reply_to_message_id, an interaction token, …
	Meta       map[string]string `json:"meta,omitempty"`
	EnqueuedAt time.Time         `json:"enqueued_at"`

	// Attempts counts failed sends (transient or permanent); Throttled counts
	// retry-after answers, which are not failures and are capped separately.
	Attempts      int       `json:"attempts"`
	Throttled     int       `json:"throttled,omitempty"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
	LastError     string    `json:"last_error,omitempty"`

	State State `json:"state"`
	// DeliveredAt is when the entry was delivered, or when it became a dead
	// letter. PlatformMessageID is the platform's id of the sent message.
	DeliveredAt       time.Time `json:"delivered_at"`
	PlatformMessageID string    `json:"platform_message_id,omitempty"`
}

// NewEntries turns one split text for one target into entries: chunk i gets
// index i; when the split carries an attachment, one more entry carries it
// (its Text is the attachment's caption); then one entry for each of files,
// stored files a verb sent (docs/uploads.md), with its name and size as its
// text. Total is set on all of them, and each entry gets its own copy of
// meta.
func NewEntries(kind Kind, turnID string, target chat.Key, split chat.Split, meta map[string]string, files ...chat.Attachment) []Entry {
	total := len(split.Chunks) + len(files)
	if split.Attachment != nil {
		total++
	}
	out := make([]Entry, 0, total)
	add := func(text string, att *chat.Attachment) {
		i := len(out)
		out = append(out, Entry{
			ID: ID(kind, turnID, target, i), Kind: kind, TurnID: turnID, Target: target,
			Index: i, Total: total, Text: text, Attachment: att, Meta: maps.Clone(meta),
			State: StatePending,
		})
	}
	for _, c := range split.Chunks {
		add(c, nil)
	}
	if a := split.Attachment; a != nil {
		att := *a
		att.Data = append([]byte(nil), a.Data...)
		add(attachmentCaption(split), &att)
	}
	for _, f := range files {
		f.Data, f.Open = nil, nil
		add(fileCaption(&f), &f)
	}
	return out
}

// fileCaption is the text of the entry that carries a stored file: its
// name and size, which platforms show beside the document.
func fileCaption(a *chat.Attachment) string {
	return fmt.Sprintf("%s (%d bytes)", a.Name, a.Size)
}

// validate checks an entry before it is stored: its parts are well formed and
// its id is the one ID derives from them.
func (e *Entry) validate() error {
	if !e.Kind.valid() {
		return fmt.Errorf("outbox entry %q: unknown kind %q (%s)", e.ID, e.Kind, AcceptedKinds)
	}
	if err := validTurnID(e.TurnID); err != nil {
		return fmt.Errorf("outbox entry %q: %w", e.ID, err)
	}
	if err := e.Target.Validate(); err != nil {
		return fmt.Errorf("outbox entry %q: %w", e.ID, err)
	}
	if e.Index < 0 || e.Total < 1 || e.Index >= e.Total {
		return fmt.Errorf("outbox entry %q: chunk index %d of %d is out of range (want 0 <= index < total)", e.ID, e.Index, e.Total)
	}
	if want := ID(e.Kind, e.TurnID, e.Target, e.Index); e.ID != want {
		return fmt.Errorf("outbox entry %q: id does not match its parts (want %q)", e.ID, want)
	}
	if a := e.Attachment; a != nil && a.Stored() {
		if err := store.ValidSHA256(a.SHA256); err != nil {
			return fmt.Errorf("outbox entry %q: stored file: %w", e.ID, err)
		}
		if len(a.Data) > 0 || a.Size < 0 {
			return fmt.Errorf("outbox entry %q: a stored file carries no bytes of its own and a size of at least 0", e.ID)
		}
	}
	return nil
}

// platformOf names the platform a target key belongs to, for counters and
// sender lookup: telegram, discord, web or local.
func platformOf(target string) string {
	switch {
	case target == "web":
		return "web"
	case strings.HasPrefix(target, "local:"):
		return "local"
	case strings.HasPrefix(target, "chat:"):
		p, _, _ := strings.Cut(target[len("chat:"):], ":")
		return p
	}
	return "unknown"
}

// Receipt is what a platform says about a sent chunk.
type Receipt struct {
	// MessageID is the platform's id of the message, if it has one.
	MessageID string
}

// Sender delivers one chunk to its target. It returns an error classified
// with RetryAfter, Permanent or Transient; an unclassified error is
// transient. Send must honour ctx: it is cancelled at the send timeout and
// when shutdown gives up waiting.
type Sender interface {
	Send(ctx context.Context, e *Entry) (Receipt, error)
}

// SenderFunc adapts a function to a Sender.
type SenderFunc func(ctx context.Context, e *Entry) (Receipt, error)

// Send calls f.
func (f SenderFunc) Send(ctx context.Context, e *Entry) (Receipt, error) { return f(ctx, e) }

var _ Sender = SenderFunc(nil)

// attachmentCaption is the text of the entry that carries an overflow
// attachment: the file's name and size (the head chunk already says the
// full output is attached).
func attachmentCaption(split chat.Split) string {
	a := split.Attachment
	return fmt.Sprintf("%s (%d bytes)", a.Name, len(a.Data))
}
