package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Progress defaults: a call shows progress once it has run DefaultProgressAfter,
// refreshed every DefaultProgressEvery.
const (
	DefaultProgressAfter = 3 * time.Second
	DefaultProgressEvery = 3 * time.Second
)

// progressCallTimeout bounds one call to a ProgressView.
const progressCallTimeout = 10 * time.Second

// staleProgressAge is how old a progress message left by a previous run may
// be and still be finalised: Telegram refuses to edit older messages, and a
// Discord interaction's token lasts 15 minutes.
const staleProgressAge = 48 * time.Hour

// ProgressState is where a call whose progress is shown stands.
type ProgressState string

// Progress states. Every state but ProgressRunning is final: the view
// shows it once and never hears of the call again.
const (
	ProgressRunning     ProgressState = "running"
	ProgressDone        ProgressState = "done"        // the verb finished; its result follows
	ProgressFailed      ProgressState = "failed"      // the verb failed; the error follows
	ProgressCanceled    ProgressState = "cancelled"   // stopped by /cancel or a Cancel button
	ProgressInterrupted ProgressState = "interrupted" // the hub stopped while the call ran
)

// ProgressUpdate is the progress of one call, for the surface the call came
// from.
type ProgressUpdate struct {
	TurnID string
	// Target is the chat the call came from; Meta its reply meta (the
	// Discord interaction, the Telegram message to answer).
	Target chat.Key
	Meta   map[string]string
	Verb   string
	State  ProgressState
	// Elapsed is how long the call has run; Tail the last lines of its
	// output so far ("" when it reported none).
	Elapsed time.Duration
	Tail    string
	// Text is the whole update for people, in the chunks' markdown: a
	// status line and the tail in a code block. Views format it as they
	// format chunks.
	Text string
	// MessageID is the platform message that shows the progress, as the
	// view returned it before ("" for the first update).
	MessageID string
}

// Final reports whether u is the last update of its call.
func (u ProgressUpdate) Final() bool { return u.State != ProgressRunning }

// ProgressView shows the progress of calls on one platform: the first
// update creates a message (or, for a Discord interaction, fills the
// deferred response) and returns its id, later ones edit it, with a control
// that cancels the call while it runs. A view may skip a running update it
// cannot send now (a platform's edit rate); a final update is always sent,
// and nothing is sent after it. Progress never goes through the outbox: it
// is not a chunk and never stands for one.
type ProgressView interface {
	ShowProgress(ctx context.Context, u ProgressUpdate) (messageID string, err error)
}

// ProgressStore keeps the progress messages of running calls durably, so a
// message a crash left ticking is finalised at the next start;
// *store.ProgressMessages satisfies it.
type ProgressStore interface {
	PutProgress(m store.ProgressMessage) error
	DeleteProgress(turnID string) error
	ProgressMessages() ([]store.ProgressMessage, error)
}

// SetProgressView installs the view of a platform's progress (nil removes
// it); Runtime.Attach installs an attached platform's. Install it before
// Runtime.Start, which finalises the progress messages a previous run left.
func (h *Hub) SetProgressView(p chat.Platform, v ProgressView) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.views == nil {
		h.views = map[chat.Platform]ProgressView{}
	}
	if v == nil {
		delete(h.views, p)
		return
	}
	h.views[p] = v
}

func (h *Hub) progressView(p chat.Platform) ProgressView {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.views[p]
}

// runningCall is a verb call from chat that /cancel can stop.
type runningCall struct {
	turnID   string
	identity string
	target   chat.Key
	verb     string
	cancel   context.CancelCauseFunc

	mu         sync.Mutex
	canceledBy string
}

// errCanceledByUser is the cause of a call stopped by /cancel or a button.
var errCanceledByUser = errors.New("cancelled by a user")

// runTracked runs a decided verb call from chat: registered so that
// /cancel can stop it, with its progress shown on the platform's view once
// it has run ProgressAfter. A call someone cancelled has the last lines of
// its output (note) added to its reply; answered says which node answered
// (remote workspaces) and shown whether a progress message was shown, which
// the reply's meta tells the sender (MetaProgress).
func (h *Hub) runTracked(ctx context.Context, t *turn, d *decision) (out *executor.Outcome, note string, answered answeredBy, shown bool) {
	in, cmd := t.in, t.cmd
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rc := &runningCall{turnID: in.TurnID, identity: in.Identity(), target: in.ReplyKey(), verb: cmd.Verb, cancel: cancel}
	h.mu.Lock()
	h.calls[in.TurnID] = rc
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.calls, in.TurnID)
		h.mu.Unlock()
	}()
	tr := h.newTracker(ctx, h.progressView(in.Platform), ProgressUpdate{TurnID: in.TurnID, Target: in.ReplyKey(), Meta: in.ReplyMeta, Verb: cmd.Verb})
	out, answered = h.run(executor.WithProgress(ctx, tr.report), t, d)
	rc.mu.Lock()
	by := rc.canceledBy
	rc.mu.Unlock()
	state := ProgressDone
	switch {
	case by != "":
		state = ProgressCanceled
	case !out.Succeeded():
		state = ProgressFailed
	}
	tail, shown := tr.finish(state, by)
	if by != "" {
		note = fmt.Sprintf("Cancelled by %s.", by)
		if tail != "" {
			note += " The last lines of its output:\n" + executor.Fence(tail, "")
		}
	}
	return out, note, answered, shown
}

// progressTracker shows one call's progress: the first update after
// ProgressAfter, then one every ProgressEvery, then the final one.
type progressTracker struct {
	h     *Hub
	ctx   context.Context
	view  ProgressView
	start time.Time

	mu      sync.Mutex
	u       ProgressUpdate
	timer   clock.Timer
	stopped bool
	shown   bool
	ticking sync.WaitGroup
}

// newTracker starts tracking a call; with a nil view it only keeps the
// call's last lines.
func (h *Hub) newTracker(ctx context.Context, v ProgressView, u ProgressUpdate) *progressTracker {
	t := &progressTracker{h: h, ctx: context.WithoutCancel(ctx), view: v, start: h.opts.Clock.Now(), u: u}
	if v != nil {
		t.mu.Lock()
		t.timer = h.opts.Clock.AfterFunc(h.opts.ProgressAfter, t.tick)
		t.mu.Unlock()
	}
	return t
}

// report keeps the verb's latest tail for the next update.
func (t *progressTracker) report(p executor.Progress) {
	t.mu.Lock()
	t.u.Tail = p.Tail
	t.mu.Unlock()
}

func (t *progressTracker) tick() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.ticking.Add(1)
	u := t.u
	t.mu.Unlock()
	defer t.ticking.Done()
	u.State = ProgressRunning
	t.show(u)
	t.mu.Lock()
	if !t.stopped {
		t.timer = t.h.opts.Clock.AfterFunc(t.h.opts.ProgressEvery, t.tick)
	}
	t.mu.Unlock()
}

// show sends u to the view and records the message it created.
func (t *progressTracker) show(u ProgressUpdate) {
	u.Elapsed = t.h.opts.Clock.Now().Sub(t.start)
	u.Text = progressText(u, "")
	ctx, cancel := context.WithTimeout(t.ctx, progressCallTimeout)
	defer cancel()
	id, err := t.view.ShowProgress(ctx, u)
	if err != nil {
		t.h.log.Warn("progress not shown", "turn", u.TurnID, "err", err)
		return
	}
	t.mu.Lock()
	t.shown = true
	changed := id != "" && id != t.u.MessageID
	if changed {
		t.u.MessageID = id
	}
	t.mu.Unlock()
	if changed && t.h.opts.Progress != nil {
		m := store.ProgressMessage{TurnID: u.TurnID, Target: u.Target.String(), MessageID: id, Meta: u.Meta, Verb: u.Verb, Started: t.start.UTC()}
		if err := t.h.opts.Progress.PutProgress(m); err != nil {
			t.h.log.Error("record progress message", "turn", u.TurnID, "err", err)
		}
	}
}

// finish stops the updates, waits for one under way, and shows the final
// state if anything was shown. When it returns the view hears nothing more
// of the call, so the reply's chunks cannot be overwritten by a late edit.
// It returns the last tail the verb reported, and whether a progress
// message was shown.
func (t *progressTracker) finish(state ProgressState, by string) (tail string, shown bool) {
	t.mu.Lock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
	t.mu.Unlock()
	t.ticking.Wait()
	t.mu.Lock()
	u, shown := t.u, t.shown
	t.mu.Unlock()
	if !shown {
		return u.Tail, false
	}
	tail = u.Tail
	// The reply that follows carries the output (the result, or the last
	// lines of a cancelled call): the final state shows none, so no view
	// shows it twice.
	u.State, u.Tail = state, ""
	u.Elapsed = t.h.opts.Clock.Now().Sub(t.start)
	u.Text = progressText(u, by)
	ctx, cancel := context.WithTimeout(t.ctx, progressCallTimeout)
	defer cancel()
	if _, err := t.view.ShowProgress(ctx, u); err != nil {
		t.h.log.Warn("final progress not shown", "turn", u.TurnID, "err", err)
		if u.MessageID != "" {
			return tail, true // recorded: the next start finalises it
		}
	}
	if t.h.opts.Progress != nil && u.MessageID != "" {
		if err := t.h.opts.Progress.DeleteProgress(u.TurnID); err != nil {
			t.h.log.Error("forget progress message", "turn", u.TurnID, "err", err)
		}
	}
	return tail, true
}

// progressText is the update for people: a status line and, while the call
// runs, the last lines of its output.
func progressText(u ProgressUpdate, by string) string {
	el := u.Elapsed.Round(time.Second)
	switch u.State {
	case ProgressDone:
		return fmt.Sprintf("✓ %s finished after %s; its result follows.", u.Verb, el)
	case ProgressFailed:
		return fmt.Sprintf("⚠ %s ended with an error after %s; the details follow.", u.Verb, el)
	case ProgressCanceled:
		return fmt.Sprintf("✖ %s was cancelled by %s after %s; its output so far follows.", u.Verb, by, el)
	case ProgressInterrupted:
		return fmt.Sprintf("⚠ The hub restarted while %s ran (turn %s); it did not finish here.", u.Verb, u.TurnID)
	}
	s := fmt.Sprintf("⏳ %s running for %s (/cancel stops it)", u.Verb, el)
	if u.Tail != "" {
		s += "\n" + executor.Fence(u.Tail, "")
	}
	return s
}

// CancelRequest asks to stop running calls from chat.
type CancelRequest struct {
	// Chat is where the request comes from: only calls started in that
	// chat (its platform and chat id) are stopped.
	Chat chat.Key
	// TurnID names one call (a Cancel button); "" means every call in the
	// chat that the caller may stop (/cancel).
	TurnID string
	// Identities are the caller's (Identities of its inbound): the first
	// is the caller, the others its roles' holders (Discord roles).
	Identities []string
}

// CancelResult says what a cancel request did.
type CancelResult struct {
	// Canceled lists the turns whose calls were told to stop.
	Canceled []string
	// Text is the answer for people.
	Text string
}

// Cancel stops the running calls a request names. A caller may stop the
// calls it started; an identity whose role grants admin.cancel may stop
// anyone's. A stopped call ends as cancelled (executor.CodeCanceled) with
// its output so far, which its own turn delivers.
func (h *Hub) Cancel(req CancelRequest) CancelResult {
	if len(req.Identities) == 0 {
		return CancelResult{Text: "Nothing to cancel: the request names no caller."}
	}
	caller := req.Identities[0]
	admin := h.opts.Access.Allowed(req.Identities, config.AdminCancel)
	var mine, others []*runningCall
	h.mu.Lock()
	for _, rc := range h.calls {
		if rc.target.Platform != req.Chat.Platform || rc.target.ChatID != req.Chat.ChatID || rc.target.Kind != req.Chat.Kind {
			continue
		}
		if req.TurnID != "" && rc.turnID != req.TurnID {
			continue
		}
		if rc.identity == caller || admin {
			mine = append(mine, rc)
		} else {
			others = append(others, rc)
		}
	}
	h.mu.Unlock()
	if len(mine) == 0 {
		switch {
		case len(others) > 0:
			return CancelResult{Text: fmt.Sprintf("⚠ You may not cancel %s: %s started it, and stopping someone else's call needs a role with %s. %s", others[0].verb, others[0].identity, config.AdminCancel, h.opts.Access.ForbiddenHint(caller, config.AdminCancel))}
		case req.TurnID != "":
			return CancelResult{Text: "Nothing to cancel: that call has already finished."}
		}
		return CancelResult{Text: "Nothing to cancel: no call of yours is running here."}
	}
	var res CancelResult
	var names []string
	for _, rc := range mine {
		rc.mu.Lock()
		if rc.canceledBy == "" {
			rc.canceledBy = caller
		}
		rc.mu.Unlock()
		rc.cancel(errCanceledByUser)
		res.Canceled = append(res.Canceled, rc.turnID)
		names = append(names, fmt.Sprintf("%s (turn %s)", rc.verb, rc.turnID))
	}
	h.log.Info("calls cancelled", "by", caller, "turns", res.Canceled)
	res.Text = fmt.Sprintf("Cancelling %s; its output so far follows.", strings.Join(names, ", "))
	return res
}

// FinishStaleProgress finalises the progress messages a previous run left
// (the hub stopped while their calls ran): each is edited to say so, and
// forgotten. A message whose platform has no view now is kept for a later
// start; one older than Telegram lets a bot edit is forgotten.
func (h *Hub) FinishStaleProgress(ctx context.Context) (int, error) {
	if h.opts.Progress == nil {
		return 0, nil
	}
	msgs, listErr := h.opts.Progress.ProgressMessages()
	n := 0
	now := h.opts.Clock.Now()
	for _, m := range msgs {
		k, err := chat.ParseKey(m.Target)
		if err != nil || now.Sub(m.Started) > staleProgressAge {
			if err := h.opts.Progress.DeleteProgress(m.TurnID); err != nil {
				return n, err
			}
			continue
		}
		v := h.progressView(k.Platform)
		if v == nil && k.Kind == chat.KindWeb {
			v = h.progressView(chat.Web)
		}
		if v == nil {
			continue
		}
		u := ProgressUpdate{TurnID: m.TurnID, Target: k, Meta: m.Meta, Verb: m.Verb, State: ProgressInterrupted, MessageID: m.MessageID, Elapsed: now.Sub(m.Started)}
		u.Text = progressText(u, "")
		cctx, cancel := context.WithTimeout(ctx, progressCallTimeout)
		_, err = v.ShowProgress(cctx, u)
		cancel()
		if err != nil {
			h.log.Warn("stale progress message not finalised; tried again at the next start", "turn", m.TurnID, "err", err)
			continue
		}
		if err := h.opts.Progress.DeleteProgress(m.TurnID); err != nil {
			return n, err
		}
		n++
	}
	return n, listErr
}
