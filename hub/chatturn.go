package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// The chat surface of a turn (turn.go): Telegram, Discord and the web
// panel's messages. Its parse step reads the chat grammar; it has a
// ledger, mirrors every message durably before anything runs, and delivers
// by enqueueing reply entries.

// chatTurn is the turn of a chat message, its command not yet parsed:
// parseChat runs once the sender's roles are known, so a stranger's
// message is never parsed.
func chatTurn(in *chat.Inbound) turn {
	return turn{id: in.TurnID, identity: in.Identity(), ids: Identities(in), in: in}
}

// parseChat reads a chat turn's command, or what a file that came with
// it asks (parseUpload). Parsing is pure: the command is known before the
// turn is mirrored, so the mirror records the workspace a verb acts in.
func (h *Hub) parseChat(t *turn) {
	if t.in.Upload != nil {
		h.parseUpload(t)
		return
	}
	h.parseCommand(t)
}

// parseCommand reads a chat turn's text by the chat grammar.
func (h *Hub) parseCommand(t *turn) {
	t.cmd, t.err = h.x.ParseCommand(t.in.Text)
	if t.err == nil && t.cmd.Verb != "" {
		t.env = t.cmd.Envelope()
	}
}

// beginTurn records a chat turn in the ledger. A turn seen before is answered
// here (done is set): a duplicate, or one a previous run died in; accepted
// says the turn was accepted before (Accept) and runs now.
func (h *Hub) beginTurn(ctx context.Context, in *chat.Inbound, now time.Time) (accepted bool, done *TurnResult, err error) {
	rec := store.TurnRecord{
		TurnID: in.TurnID, Identity: in.Identity(), Reply: in.ReplyKey().String(),
		ReplyMeta: in.ReplyMeta, Platform: string(in.Platform), Started: now.UTC(),
	}
	prev, began, accepted, err := h.opts.Ledger.Begin(rec)
	if err != nil {
		return false, nil, fmt.Errorf("turn %s: %w", in.TurnID, err)
	}
	if began {
		return accepted, nil, nil
	}
	h.mirrorInbound(ctx, in, "", map[string]string{"duplicate": prev.State})
	if prev.State == store.TurnStarted {
		// A previous run died while this turn ran; tell the chat once.
		done, err = h.interrupted(ctx, *prev)
		return false, done, err
	}
	return false, &TurnResult{TurnID: in.TurnID, Status: StatusDuplicate}, nil
}

// mirrorChat records a chat turn's message before anything runs, durably,
// with its kind and the workspace its verb acts in. The mirror is
// contractual: without it the turn does not run. A turn the platform
// delivers again (the adapter does not acknowledge an error) is forgotten,
// so the redelivery runs it once the mirror works again; an accepted one,
// which is never delivered again, goes back to received and runs at the
// next start.
func (h *Hub) mirrorChat(ctx context.Context, t *turn, d *decision, accepted bool) error {
	in := t.in
	extra := map[string]string{}
	if d.placed && d.werr == nil {
		extra[MetaWorkspace] = d.where.Name
	}
	if v := t.verbName(); v != "" {
		extra[store.MetaVerb] = v
	}
	err := h.mirrorInbound(ctx, in, chatKind(in, d.roles), extra)
	if err == nil {
		return nil
	}
	var undo error
	if accepted {
		undo = h.opts.Ledger.Unstart(in)
	} else {
		undo = h.opts.Ledger.Forget(in.TurnID)
	}
	if undo != nil {
		h.log.Error("undo unmirrored turn", "turn", in.TurnID, "err", undo)
	}
	return fmt.Errorf("turn %s: %w", in.TurnID, err)
}

// chatKind is the mirror kind of a chat message.
func chatKind(in *chat.Inbound, roles []string) string {
	switch {
	case len(roles) == 0:
		return store.KindDenied
	case in.Edited:
		return store.KindEdited
	case strings.HasPrefix(strings.TrimSpace(in.Text), "/"):
		return store.KindCommand
	}
	return store.KindMessage
}

// chatReply is a chat turn's answer, before it is chunked.
type chatReply struct {
	text, code string
	meta       map[string]string // more meta of its entries (a held call's buttons)
	private    bool
	progress   bool // the call's progress was shown (MetaProgress)
	by         answeredBy
	files      []chat.Attachment // sent by the call, after the text
}

// answer answers a chat turn from a known identity: /approve, a message
// that is no command, a command that does not parse, a builtin, or a verb
// call. ok is false for a message the hub does not answer (plain text in a
// group).
func (h *Hub) answer(ctx context.Context, t *turn, d *decision, res *TurnResult) (r chatReply, ok bool) {
	in := t.in
	if args, approve := approveCommand(in.Text); approve {
		res.Status = StatusBuiltin
		r.text, r.private = h.approveFromChat(ctx, d, args, in)
		return r, true
	}
	switch {
	case errors.Is(t.err, executor.ErrNotCommand):
		if !isConversation(in) {
			res.Status = StatusIgnored
			return r, false
		}
		res.Status = StatusRejected
		r.text = "Send a command such as /fs.listDir . or /help for what you can do."
	case t.err != nil:
		res.Status = StatusRejected
		e := executor.ErrorFrom(t.err)
		r.text, r.code, r.private = executor.RenderError(e), string(e.Code), true
	case t.cmd.Builtin != "":
		res.Status = StatusBuiltin
		r.text = h.builtin(t.cmd, in, t.ids, d)
	default:
		return h.answerCall(ctx, t, d, res), true
	}
	return r, true
}

// answerCall answers a chat turn's verb call: refused as decided, or run
// with its progress shown and /cancel able to stop it.
func (h *Hub) answerCall(ctx context.Context, t *turn, d *decision, res *TurnResult) chatReply {
	res.Status, res.Verb = d.status(), t.env.Verb
	switch d.verdict {
	case verdictForbidden:
		return chatReply{code: string(executor.CodeForbidden), private: true,
			text: fmt.Sprintf("⚠ You may not run %s (forbidden). Your roles: %s. Send /verbs for what you may run. %s", grantText(t.info), rolesText(d.roles), forbiddenWhy(t, d))}
	case verdictWorkspace:
		return chatReply{code: string(executor.CodeForbidden), private: true,
			text: fmt.Sprintf("⚠ %s was not run: %s. Send /use for the workspaces you may use.%s", t.env.Verb, upperFirst(d.werr.Error()), workspaceHint(t, d))}
	case verdictConfirm:
		return h.holdChat(t, d)
	}
	out, note, by, shown := h.runTracked(ctx, t, d)
	res.Outcome = out
	if t.upload != nil {
		h.mirrorSaved(ctx, t.in, t.upload.Saved)
	}
	r := chatReply{text: executor.RenderText(out, t.cmd.JSON), by: by, progress: shown, files: sentFiles(out)}
	if note != "" && !t.cmd.JSON {
		r.text += "\n" + note
	}
	if !out.Succeeded() {
		r.code, r.private = string(out.Err.Code), true
	}
	return r
}

// deliverReply enqueues a chat turn's answer and finishes the turn in the
// ledger. Once the turn has been decided (a verb may have run), its answer
// is made durable whatever happens to the caller's context: a stop that
// cancels the turn must not leave a verb that ran without its reply.
func (h *Hub) deliverReply(ctx context.Context, in *chat.Inbound, r chatReply, res *TurnResult) (*TurnResult, error) {
	meta := r.by.meta(replyMeta(in, r.private))
	if r.progress {
		meta[MetaProgress] = "1"
	}
	if r.code != "" {
		meta[store.MetaErrorCode] = r.code
	}
	for k, v := range r.meta {
		meta[k] = v
	}
	entries := outbox.NewEntries(outbox.KindReply, in.TurnID, in.ReplyKey(), chat.SplitText(r.text, h.chunkOptions(in.ReplyKey())), meta, r.files...)
	now := h.opts.Clock.Now()
	added, finished, err := h.enqueueAndFinish(context.WithoutCancel(ctx), in.TurnID, entries, store.TurnDone, r.code, now)
	if err != nil {
		// The verb ran but its answer is not durable: leave the turn started
		// so a restart tells the chat, rather than pretend it finished.
		return nil, fmt.Errorf("turn %s: enqueue reply: %w", in.TurnID, err)
	}
	res.Outbox = added
	if !finished {
		if err := h.opts.Ledger.Finish(in.TurnID, store.TurnDone, r.code, idsOf(entries), now); err != nil {
			return res, fmt.Errorf("turn %s: %w", in.TurnID, err)
		}
	}
	return res, nil
}
