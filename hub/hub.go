package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// DenialInterval is how often a stranger is told it was denied.
const DenialInterval = time.Hour

// Options wire a Hub. Executor, Outbox, Ledger and Access are required.
type Options struct {
	Executor  *executor.Executor
	Access    *Access
	Ledger    *store.Ledger
	Outbox    *outbox.Outbox
	Mirror    *store.Mirror    // nil: no mirroring (tests only)
	Directory *store.Directory // nil: no channel directory
	Targets   *store.Targets   // nil: no delivery targets
	// Conversations is told every inbound message the hub mirrors; nil
	// tells no one.
	Conversations *Conversations
	// Chunking: how many chunks before a reply becomes head + attachment, and
	// whether chunks carry (i/N) markers.
	OverflowChunks int
	ChunkMarkers   bool
	// VerbTimeout bounds one verb call; zero means none.
	VerbTimeout time.Duration
	// SessionFor picks the session workspace of a turn ("" = host workspace).
	SessionFor func(in *chat.Inbound, roles []string) string
	// Workspaces resolves the named workspace of every call and who may use
	// it; nil: every call acts in the default workspace.
	Workspaces *policy.Policy
	// Choices keeps each conversation's /use choice; nil: /use cannot
	// record one.
	Choices WorkspaceChoices
	// Destinations describes where a workspace runs its programs (its
	// runner's own words); nil: from the configuration.
	Destinations Destinations
	// Remote runs the calls of workspaces of kind remote on their nodes;
	// nil: such calls fail with a clear message.
	Remote Remote
	// Observer hears every turn and verb call; nil: no one.
	Observer Observer
	// ProgressAfter is how long a call from chat runs before its progress
	// shows (default DefaultProgressAfter); ProgressEvery how often it is
	// refreshed (default DefaultProgressEvery). Progress records the
	// messages that show it (nil: none recorded, none finalised after a
	// restart).
	ProgressAfter time.Duration
	ProgressEvery time.Duration
	Progress      ProgressStore
	Clock         clock.Clock
	Logger        *slog.Logger
	// AccessState keeps pairing codes and approved grants (pairing.go);
	// nil: strangers are shown the configuration line instead of a code.
	AccessState AccessState
	// Files keeps the files a chat turn's call sends until they are
	// delivered (files.go); nil: chat turns send no files. FileLimits
	// overrides a platform's largest file (chat.Spec.MaxFileBytes), as
	// discord.max_file_bytes does.
	Files      FileStore
	FileLimits map[chat.Platform]int64
	// Commands are the named commands (cmd.<name> verbs); nil: none.
	Commands *Commands
	// Confirmations keeps the calls held for confirmation (confirm.go);
	// nil: such calls are refused with confirmation_required.
	Confirmations *store.Confirmations
}

// Hub routes turns. It is safe for concurrent use by every adapter.
type Hub struct {
	opts     Options
	commands *Commands
	x        *executor.Executor
	log      *slog.Logger

	mu       sync.Mutex
	inFlight map[string]bool
	// held: chats whose turns accepted before the last stop have not all
	// run (by reply key), and those turns (turn id → reply key).
	held      map[string]*heldChat
	heldTurns map[string]string
	calls     map[string]*runningCall // verb calls from chat, by turn id
	views     map[chat.Platform]ProgressView
	sources   map[chat.Platform]FileSource // by platform (SetFileSource)
	dir       atomic.Pointer[store.Directory]
	ws        atomic.Pointer[policy.Policy] // the workspace policy in force (reloaded)
}

// New returns a Hub.
func New(opts Options) (*Hub, error) {
	if opts.Executor == nil || opts.Outbox == nil || opts.Ledger == nil || opts.Access == nil {
		return nil, errors.New("hub: Executor, Outbox, Ledger and Access are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.OverflowChunks <= 0 {
		opts.OverflowChunks = chat.DefaultMaxChunks
	}
	if opts.ProgressAfter <= 0 {
		opts.ProgressAfter = DefaultProgressAfter
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = DefaultProgressEvery
	}
	if opts.Commands == nil {
		opts.Commands = NewCommands(opts.Executor.Registry())
	}
	h := &Hub{opts: opts, commands: opts.Commands, x: opts.Executor, log: opts.Logger, inFlight: map[string]bool{}, calls: map[string]*runningCall{},
		held: map[string]*heldChat{}, heldTurns: map[string]string{}}
	if opts.Directory != nil {
		h.dir.Store(opts.Directory)
	}
	if opts.Workspaces != nil {
		h.ws.Store(opts.Workspaces)
	}
	if err := h.loadApproved(); err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	return h, nil
}

// SetDirectory installs a channel directory, such as one rebuilt from the
// mirrors while the hub runs without one.
func (h *Hub) SetDirectory(d *store.Directory) (old *store.Directory) { return h.dir.Swap(d) }

// Directory is the channel directory in use, nil when there is none.
func (h *Hub) Directory() *store.Directory { return h.dir.Load() }

// RenameChannel moves a chat's directory entries (its topics included) to a
// new key, as when a Telegram group becomes a supergroup.
func (h *Hub) RenameChannel(from, to chat.ChannelKey) {
	if d := h.dir.Load(); d != nil {
		d.Rename(from, to)
	}
}

// Executor returns the hub's executor.
func (h *Hub) Executor() *executor.Executor { return h.x }

// Access returns the access policy.
func (h *Hub) Access() *Access { return h.opts.Access }

// Outbox returns the outbox.
func (h *Hub) Outbox() *outbox.Outbox { return h.opts.Outbox }

// Status says what Handle did with a turn.
type Status string

// Turn statuses.
const (
	StatusExecuted  Status = "executed"  // a verb ran; its reply is enqueued
	StatusBuiltin   Status = "builtin"   // /help, /verbs, /whoami, /start answered
	StatusRejected  Status = "rejected"  // the command did not parse; the error is enqueued
	StatusForbidden Status = "forbidden" // a known identity asked for a verb it may not run
	StatusDenied    Status = "denied"    // a stranger; told at most once an hour
	StatusDuplicate Status = "duplicate" // the turn was seen before; nothing ran
	StatusNotice    Status = "notice"    // the turn was cut short by a crash; a notice is enqueued
	StatusIgnored   Status = "ignored"   // not a command and not a conversation with the hub
)

// TurnResult reports one turn.
type TurnResult struct {
	TurnID string
	Status Status
	Verb   string
	// Outbox lists the ids enqueued (none for an already-known id).
	Outbox []string
	// Outcome is the verb's outcome for executed turns.
	Outcome *executor.Outcome
}

// Identities returns every access-control identity of an inbound message:
// its sender, and for Discord its roles.
func Identities(in *chat.Inbound) []string {
	ids := []string{in.Identity()}
	if in.Platform == chat.Discord {
		for _, r := range in.RoleIDs {
			ids = append(ids, "discord-role:"+r)
		}
	}
	return ids
}

// Handle runs one chat turn (docs/architecture.md, "One path for a
// turn"). It returns once the reply is durably enqueued: only then may the
// adapter acknowledge the inbound (advance the Telegram offset, say). A
// duplicate (same TurnID) never runs twice; a turn the hub died in is
// answered with a notice and not run again. A turn of a chat whose turns
// accepted before the last stop have not all run yet waits for them (or
// returns ctx's error, the turn not run).
func (h *Hub) Handle(ctx context.Context, in *chat.Inbound) (*TurnResult, error) {
	if err := validInbound(in); err != nil {
		return nil, err
	}
	if err := h.waitHeld(ctx, in); err != nil {
		return nil, err
	}
	return h.handle(ctx, in)
}

// handle is Handle without the wait for held turns: the chat surface's
// turn (chatturn.go) on the path every surface shares (turn.go).
func (h *Hub) handle(ctx context.Context, in *chat.Inbound) (res *TurnResult, err error) {
	return h.handleTurn(ctx, in, nil)
}

// handleTurn is handle for a message, or (cf set) for the run of the call
// held from it, which its caller confirmed: not held again, in the
// workspace its prompt named.
func (h *Hub) handleTurn(ctx context.Context, in *chat.Inbound, cf *store.Confirmation) (res *TurnResult, err error) {
	if err := validInbound(in); err != nil {
		return nil, err
	}
	defer func() { h.observeTurn(string(in.Platform), res, err) }()
	if !h.claim(in.TurnID) {
		h.mirrorInbound(ctx, in, "", map[string]string{"duplicate": "in-flight"})
		return &TurnResult{TurnID: in.TurnID, Status: StatusDuplicate}, nil
	}
	defer h.release(in.TurnID)
	t := chatTurn(in)
	if cf != nil {
		t.confirmed, t.asked = true, cf.Workspace
	}
	d := h.identify(&t)
	now := h.opts.Clock.Now()
	accepted, done, err := h.beginTurn(ctx, in, now)
	if done != nil || err != nil {
		return done, err
	}
	if dir := h.dir.Load(); dir != nil {
		dir.Observe(in)
	}
	if len(d.roles) > 0 {
		h.parseChat(&t)
		h.decide(&t, &d)
	}
	if err := h.mirrorChat(ctx, &t, &d, accepted); err != nil {
		return nil, err
	}
	res = &TurnResult{TurnID: in.TurnID}
	if len(d.roles) == 0 {
		return h.deny(ctx, in, res, now)
	}
	r, ok := h.answer(ctx, &t, &d, res)
	if !ok {
		return res, h.opts.Ledger.Finish(in.TurnID, store.TurnDone, "", nil, now)
	}
	return h.deliverReply(ctx, in, r, res)
}

// enqueueAndFinish enqueues a turn's answer and, in the same transaction
// when the outbox's store allows it, finishes the turn in the ledger
// (state, code, at): the turn is finished exactly when its answer is
// durable, one commit for both. It reports whether the turn was finished;
// when not (and the enqueue succeeded), the caller calls Ledger.Finish,
// after the enqueue as before. On an enqueue error nothing is finished.
func (h *Hub) enqueueAndFinish(ctx context.Context, turnID string, entries []outbox.Entry, state, code string, at time.Time) (added []string, finished bool, err error) {
	ctx, done := h.opts.Ledger.FinishWith(ctx, turnID, state, code, idsOf(entries), at)
	added, err = h.opts.Outbox.Enqueue(ctx, entries)
	if err != nil {
		return nil, false, err
	}
	return added, done(), nil
}

// deny answers a stranger at most once per DenialInterval (in private
// chats, and apart in groups) with its identity, a pairing code in a
// private chat, and the configuration line that would grant it access.
func (h *Hub) deny(ctx context.Context, in *chat.Inbound, res *TurnResult, now time.Time) (*TurnResult, error) {
	res.Status = StatusDenied
	ok, err := h.opts.Ledger.ShouldNotifyDenial(denialKey(in), now, DenialInterval)
	if err != nil {
		return nil, fmt.Errorf("turn %s: %w", in.TurnID, err)
	}
	if !ok {
		return res, h.opts.Ledger.Finish(in.TurnID, store.TurnDone, string(executor.CodeForbidden), nil, now)
	}
	text, withCode := h.denialText(in, now)
	meta := replyMeta(in, true)
	if withCode {
		meta[metaMirrorRedact] = redactPairingCode
	}
	entries := outbox.NewEntries(outbox.KindReply, in.TurnID, in.ReplyKey(), chat.SplitText(text, h.chunkOptions(in.ReplyKey())), meta)
	added, finished, err := h.enqueueAndFinish(ctx, in.TurnID, entries, store.TurnDone, string(executor.CodeForbidden), now)
	if err != nil {
		return nil, fmt.Errorf("turn %s: enqueue denial: %w", in.TurnID, err)
	}
	res.Outbox = added
	if finished {
		return res, nil
	}
	return res, h.opts.Ledger.Finish(in.TurnID, store.TurnDone, string(executor.CodeForbidden), idsOf(entries), now)
}

// interrupted answers a turn that a previous run of the hub died in: the
// verb is not run again; the chat is told it may or may not have completed.
// If the reply was enqueued before the crash, nothing more is needed.
func (h *Hub) interrupted(ctx context.Context, rec store.TurnRecord) (*TurnResult, error) {
	if rec.Platform == SchedulePlatform {
		return h.interruptedSchedule(ctx, rec)
	}
	res := &TurnResult{TurnID: rec.TurnID, Status: StatusNotice, Verb: rec.Verb}
	key, err := chat.ParseKey(rec.Reply)
	if err != nil {
		return nil, fmt.Errorf("turn %s: %w", rec.TurnID, err)
	}
	st := h.opts.Outbox.Store()
	if _, err := st.Get(ctx, outbox.ID(outbox.KindReply, rec.TurnID, key, 0)); err == nil {
		res.Status = StatusDuplicate
		return res, h.opts.Ledger.Finish(rec.TurnID, store.TurnDone, "", nil, h.opts.Clock.Now())
	}
	text := fmt.Sprintf("⚠ The hub restarted while it was handling your message (turn %s). It may or may not have completed: check its effects before you send it again.", rec.TurnID)
	entries := outbox.NewEntries(outbox.KindNotice, rec.TurnID, key, chat.SplitText(text, h.chunkOptions(key)), rec.ReplyMeta)
	now := h.opts.Clock.Now()
	added, finished, err := h.enqueueAndFinish(ctx, rec.TurnID, entries, store.TurnInterrupted, "", now)
	if err != nil {
		return nil, fmt.Errorf("turn %s: enqueue notice: %w", rec.TurnID, err)
	}
	res.Outbox = added
	if finished {
		return res, nil
	}
	return res, h.opts.Ledger.Finish(rec.TurnID, store.TurnInterrupted, "", idsOf(entries), now)
}

// Accept records an inbound durably before the adapter acknowledges it to a
// platform that will not deliver it again: a Discord interaction must be
// acknowledged before its verb runs, and gateway events are never replayed
// after a restart. A turn accepted and not yet run when the hub stops runs
// at the next start (see Recover), before the turns its chat sends then.
// Accepting a known turn does nothing.
func (h *Hub) Accept(ctx context.Context, in *chat.Inbound) error {
	if err := validInbound(in); err != nil {
		return err
	}
	rec := store.TurnRecord{
		TurnID: in.TurnID, Identity: in.Identity(), Reply: in.ReplyKey().String(),
		ReplyMeta: in.ReplyMeta, Platform: string(in.Platform), Started: h.opts.Clock.Now().UTC(), Inbound: in,
	}
	if _, err := h.opts.Ledger.Receive(rec); err != nil {
		return fmt.Errorf("accept turn %s: %w", in.TurnID, err)
	}
	return nil
}

// Abandon forgets an accepted turn the adapter decided not to run (the
// platform refused its acknowledgement), so that no later start runs it. A
// turn that has started is left alone.
func (h *Hub) Abandon(turnID string) error {
	rec, err := h.opts.Ledger.Get(turnID)
	if err != nil || rec == nil || rec.State != store.TurnReceived {
		return err
	}
	return h.opts.Ledger.Forget(turnID)
}

// Recover handles what a previous run left in the ledger. A turn it died
// in while the verb ran is answered with a notice and not run again; a turn
// accepted but never run is returned, to be run (Handle) once the outbox is
// up. Call it once at start-up, before adapters deliver new messages.
func (h *Hub) Recover(ctx context.Context) (notices int, pending []*chat.Inbound, err error) {
	recs, err := h.opts.Ledger.Unfinished()
	if err != nil {
		return 0, nil, err
	}
	for _, r := range recs {
		if r.State == store.TurnReceived {
			if r.Inbound != nil && r.Inbound.TurnID == r.TurnID {
				pending = append(pending, r.Inbound)
			}
			continue
		}
		if !h.claim(r.TurnID) {
			continue
		}
		res, err := h.interrupted(ctx, r)
		h.release(r.TurnID)
		if err != nil {
			return notices, pending, err
		}
		if res.Status == StatusNotice {
			notices++
			h.log.Warn("answered a turn interrupted by a restart", "turn", r.TurnID)
		}
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].Time.Before(pending[j].Time) })
	return notices, pending, nil
}

func (h *Hub) claim(turnID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inFlight[turnID] {
		return false
	}
	h.inFlight[turnID] = true
	return true
}

func (h *Hub) release(turnID string) {
	h.mu.Lock()
	delete(h.inFlight, turnID)
	h.mu.Unlock()
}

func (h *Hub) mirrorInbound(ctx context.Context, in *chat.Inbound, kind string, extra map[string]string) error {
	rec := store.InboundRecord(in, kind)
	rec.Text = mirrorInboundText(rec.Text)
	for k, v := range extra {
		rec.Meta[k] = v
	}
	if rec.TS.IsZero() {
		rec.TS = h.opts.Clock.Now().UTC()
	}
	if h.opts.Mirror == nil {
		h.opts.Conversations.record(rec)
		return nil
	}
	if err := h.opts.Mirror.Append(ctx, rec, true); err != nil {
		h.log.Error("mirror inbound", "turn", in.TurnID, "err", err)
		return fmt.Errorf("mirror inbound: %w", err)
	}
	h.opts.Conversations.record(rec)
	return nil
}

// chunkOptions chunks for the target's platform with the configured
// overflow threshold and markers.
func (h *Hub) chunkOptions(k chat.Key) chat.ChunkOptions {
	var o chat.ChunkOptions
	if k.Kind == chat.KindChat {
		o = chat.ChunkOptionsFor(k.Platform)
	}
	o.MaxChunks = h.opts.OverflowChunks
	o.Markers = h.opts.ChunkMarkers
	return o
}

// isConversation reports whether plain text to the hub deserves an answer:
// in a private chat or the web panel, yes; in a group, the hub speaks only
// when spoken to with a command.
func isConversation(in *chat.Inbound) bool {
	return in.ChatType.Conversational()
}

// Reply meta keys the senders understand.
const (
	MetaPrivate = "private" // "1": show only to the asker where the platform can (Discord ephemeral)
	// MetaProgress is "1" when the call's progress was shown: the reply
	// must not replace the progress message (a Discord interaction's
	// original response), it follows it.
	MetaProgress = "progress"
)

func replyMeta(in *chat.Inbound, private bool) map[string]string {
	m := make(map[string]string, len(in.ReplyMeta)+1)
	for k, v := range in.ReplyMeta {
		m[k] = v
	}
	if private {
		m[MetaPrivate] = "1"
	}
	return m
}

func idsOf(entries []outbox.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}

func validInbound(in *chat.Inbound) error {
	if in == nil {
		return errors.New("hub: nil inbound")
	}
	if err := validTurnID(in.TurnID); err != nil {
		return err
	}
	if in.Platform == chat.Web {
		return nil
	}
	if _, ok := chat.SpecOf(in.Platform); !ok {
		return fmt.Errorf("hub: unknown platform %q", in.Platform)
	}
	if err := in.ReplyKey().Validate(); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	return nil
}

// NewTurnID returns a fresh turn id with the given prefix, for turns that
// have no platform event id (hub send, API calls without a client id).
func NewTurnID(prefix string, now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "." + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Deliver fans hub-level output out to every delivery target (hub send, hub
// exec --deliver, POST /api/deliver). A turn already delivered to a target is
// skipped there.
func (h *Hub) Deliver(ctx context.Context, turnID, text string) ([]string, error) {
	if h.opts.Targets == nil {
		return nil, errors.New("deliver: no delivery targets file")
	}
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("deliver: the text is empty")
	}
	return outbox.FanOut(ctx, h.opts.Outbox, h.opts.Targets, turnID, text, h.chunkOptions)
}
