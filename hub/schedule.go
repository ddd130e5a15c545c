package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// The schedule surface of a turn (turn.go): a call the hub makes on its
// own, at a schedule's time, as the schedule's identity. Its parse step
// encodes the configured verb and arguments as the envelope they stand
// for; like a chat turn it has a ledger entry (its turn id names one
// scheduled time, so no time runs twice, across restarts too), and like an
// API call it is mirrored before it runs and its outcome after (platform
// schedule, kind schedule and result). It delivers the rendered outcome to
// the schedule's targets through the outbox, as pma entries, the turn
// finished in the same transaction.

// SchedulePlatform is the platform of a schedule's mirror records and
// ledger entries.
const SchedulePlatform = "schedule"

// SurfaceSchedule is the surface of a schedule's runs, for an Observer.
const SurfaceSchedule = "schedule"

// MetaSchedule is the mirror meta key naming the schedule of a run, and
// MetaScheduled the time the run was for (RFC 3339).
const (
	MetaSchedule  = "schedule"
	MetaScheduled = "scheduled"
)

// ScheduledCall is one run of a schedule.
type ScheduledCall struct {
	// Schedule is the schedule's name; TurnID the run's turn id
	// (schedule.<name>.<unix time> for a scheduled time).
	Schedule string
	TurnID   string
	// Identity makes the call (schedule:<name>), with its roles.
	Identity string
	// Verb and Arguments are the call; or Command and Params, a named
	// command (the verb cmd.<Command> with Params as its arguments).
	Verb      string
	Arguments json.RawMessage
	Command   string
	Params    map[string]any
	// Workspace is the workspace the call names ("" lets the workspace
	// rules decide).
	Workspace string
	// Deliver are the targets the rendered outcome goes to.
	Deliver []chat.Key
	// At is the time the run is for, in the schedule's zone; Manual says
	// it was asked for (hub schedules run) rather than due.
	At     time.Time
	Manual bool
}

// ScheduleResult says what RunScheduled did: the turn's status
// (executed, forbidden, rejected; duplicate for a time already run;
// notice for one a previous run of the hub died in), the outcome of the
// call, and the outbox ids enqueued.
type ScheduleResult struct {
	TurnID  string
	Status  Status
	Outcome *executor.Outcome
	Outbox  []string
}

// RunScheduled runs one run of a schedule on the one path of a turn: its
// identity's roles decide, with the access policy of that moment, and the
// workspace rules place it (its conversation, schedule:<name>, has no /use
// choice and no session). A turn id seen before does not run again. The
// call is mirrored before it runs (durably: when that fails nothing runs
// and the error wraps ErrNotMirrored) and its outcome after; the rendered
// outcome is enqueued for the targets with the turn's finish, so a run
// delivered is a run finished. It returns once that is durable.
func (h *Hub) RunScheduled(ctx context.Context, c ScheduledCall) (res *ScheduleResult, err error) {
	defer func() {
		var tr *TurnResult
		if res != nil {
			tr = &TurnResult{TurnID: res.TurnID, Status: res.Status}
		}
		h.observeTurn(SurfaceSchedule, tr, err)
	}()
	if err := validTurnID(c.TurnID); err != nil {
		return nil, err
	}
	res = &ScheduleResult{TurnID: c.TurnID, Status: StatusDuplicate}
	if !h.claim(c.TurnID) {
		return res, nil
	}
	defer h.release(c.TurnID)
	t, text, err := h.scheduleTurn(c)
	if err != nil {
		return nil, err
	}
	if done, err := h.beginScheduled(ctx, c, &t, res); done || err != nil {
		return res, err
	}
	d := h.identify(&t)
	h.decide(&t, &d)
	if err := h.mirrorAPI(ctx, &t, scheduleInbound(&t, &d, c, text), true); err != nil {
		if ferr := h.opts.Ledger.Forget(c.TurnID); ferr != nil {
			h.log.Error("forget unmirrored schedule run", "turn", c.TurnID, "err", ferr)
		}
		return nil, fmt.Errorf("schedule %s, turn %s: %w: %w", c.Schedule, c.TurnID, ErrNotMirrored, err)
	}
	out, by := h.apiOutcome(ctx, &t, &d)
	res.Status, res.Outcome = d.status(), out
	if err := h.mirrorAPI(context.WithoutCancel(ctx), &t, scheduleResult(&t, c, out, by), true); err != nil {
		h.log.Error("mirror schedule result", "turn", c.TurnID, "err", fmt.Sprint(err))
	}
	res.Outbox, err = h.deliverScheduled(ctx, c, renderScheduled(c, out))
	return res, err
}

// scheduleTurn is the parse step of a schedule's run: the configured call
// encoded as the envelope it stands for (text, what the mirror records).
// A named command is resolved first; one that cannot be is the turn's
// parse error, recorded with the command as written. An error means the
// run cannot even be recorded.
func (h *Hub) scheduleTurn(c ScheduledCall) (t turn, text []byte, err error) {
	t = turn{id: c.TurnID, identity: c.Identity, ids: []string{c.Identity}, asked: c.Workspace, own: ScheduleIdentityOf(c.Schedule)}
	verb, args := c.Verb, c.Arguments
	if c.Command != "" {
		verb = config.CommandPrefix + c.Command
		if args, err = json.Marshal(c.Params); err != nil {
			return t, nil, fmt.Errorf("schedule %s, turn %s: the command's params: %w", c.Schedule, c.TurnID, err)
		}
	}
	if args == nil {
		args = json.RawMessage("{}")
	}
	t.env, text, t.err = h.x.EncodeEnvelope(verb, args)
	if text == nil {
		return t, nil, fmt.Errorf("schedule %s, turn %s: %w", c.Schedule, c.TurnID, t.err)
	}
	t.env.Workspace = c.Workspace
	return t, text, nil
}

// ScheduleIdentityOf is the conversation key, and the default identity,
// of the schedule name.
func ScheduleIdentityOf(name string) string { return SchedulePlatform + ":" + name }

// beginScheduled records a schedule's run in the ledger before anything
// runs. A run seen before is not run again (done): one a previous run of
// the hub died in is answered with the notice that it may or may not have
// completed, once.
func (h *Hub) beginScheduled(ctx context.Context, c ScheduledCall, t *turn, res *ScheduleResult) (done bool, err error) {
	targets := make([]string, len(c.Deliver))
	for i, k := range c.Deliver {
		targets[i] = k.String()
	}
	rec := store.TurnRecord{TurnID: c.TurnID, Identity: c.Identity, Platform: SchedulePlatform, Verb: t.env.Verb,
		Started: h.opts.Clock.Now().UTC(), Targets: targets}
	prev, began, _, err := h.opts.Ledger.Begin(rec)
	switch {
	case err != nil:
		return true, fmt.Errorf("schedule %s, turn %s: %w", c.Schedule, c.TurnID, err)
	case began:
		return false, nil
	case prev.State == store.TurnStarted:
		r, err := h.interrupted(ctx, *prev)
		if r != nil {
			res.Status, res.Outbox = r.Status, r.Outbox
		}
		return true, err
	}
	return true, nil
}

// scheduleInbound is the mirror record of a schedule's run before it
// runs: the envelope, the schedule, the time it is for and the workspace
// it acts in (or the one it named, when refused before it was placed).
func scheduleInbound(t *turn, d *decision, c ScheduledCall, text []byte) store.MirrorRecord {
	rec := apiInbound(t, d, text)
	rec.Platform, rec.ChatID, rec.Kind = SchedulePlatform, c.Schedule, store.KindSchedule
	rec.Meta[MetaSchedule], rec.Meta[MetaScheduled] = c.Schedule, c.At.Format(time.RFC3339)
	if c.Manual {
		rec.Meta["manual"] = "true"
	}
	return rec
}

// scheduleResult is the mirror record of a schedule's outcome.
func scheduleResult(t *turn, c ScheduledCall, out *executor.Outcome, by answeredBy) store.MirrorRecord {
	rec := apiResult(t, out, by)
	rec.Platform, rec.ChatID = SchedulePlatform, c.Schedule
	rec.Meta[MetaSchedule] = c.Schedule
	return rec
}

// renderScheduled is a schedule's outcome as its targets read it: a line
// naming the schedule and its time, then the outcome rendered for chat.
func renderScheduled(c ScheduledCall, out *executor.Outcome) string {
	how := c.At.Format("2006-01-02 15:04 MST")
	if c.Manual {
		how = "run by hand at " + how
	}
	return fmt.Sprintf("⏰ Schedule %s (%s, as %s)\n%s", c.Schedule, how, c.Identity, executor.RenderText(out, false))
}

// deliverScheduled enqueues the rendered outcome for each target and
// finishes the turn in the ledger, in one transaction. Once the call has
// run, this is made durable whatever happens to ctx.
func (h *Hub) deliverScheduled(ctx context.Context, c ScheduledCall, text string) ([]string, error) {
	var entries []outbox.Entry
	for _, k := range c.Deliver {
		entries = append(entries, outbox.NewEntries(outbox.KindPMA, c.TurnID, k, chat.SplitText(text, h.chunkOptions(k)), nil)...)
	}
	now := h.opts.Clock.Now()
	ctx = context.WithoutCancel(ctx)
	if len(entries) == 0 {
		return nil, h.opts.Ledger.Finish(c.TurnID, store.TurnDone, "", nil, now)
	}
	added, finished, err := h.enqueueAndFinish(ctx, c.TurnID, entries, store.TurnDone, "", now)
	if err != nil {
		// The call ran but its delivery is not durable: the turn stays
		// started, and the next start tells the targets.
		return nil, fmt.Errorf("schedule %s, turn %s: enqueue the result: %w", c.Schedule, c.TurnID, err)
	}
	if !finished {
		if err := h.opts.Ledger.Finish(c.TurnID, store.TurnDone, "", idsOf(entries), now); err != nil {
			return added, fmt.Errorf("schedule %s, turn %s: %w", c.Schedule, c.TurnID, err)
		}
	}
	return added, nil
}

// interruptedSchedule answers a schedule's run that a previous run of the
// hub died in: it is not run again; its targets are told it may or may
// not have completed.
func (h *Hub) interruptedSchedule(ctx context.Context, rec store.TurnRecord) (*TurnResult, error) {
	res := &TurnResult{TurnID: rec.TurnID, Status: StatusNotice, Verb: rec.Verb}
	what := rec.Verb
	if what == "" {
		what = "a schedule's call"
	}
	text := fmt.Sprintf("⚠ The hub restarted while it ran %s as %s (turn %s). It may or may not have completed: check its effects; it is not run again.",
		what, rec.Identity, rec.TurnID)
	var entries []outbox.Entry
	for _, t := range rec.Targets {
		k, err := chat.ParseKey(t)
		if err != nil {
			return nil, fmt.Errorf("turn %s: %w", rec.TurnID, err)
		}
		entries = append(entries, outbox.NewEntries(outbox.KindNotice, rec.TurnID, k, chat.SplitText(text, h.chunkOptions(k)), nil)...)
	}
	now := h.opts.Clock.Now()
	if len(entries) == 0 {
		return res, h.opts.Ledger.Finish(rec.TurnID, store.TurnInterrupted, "", nil, now)
	}
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

// validTurnID checks a turn id the hub makes itself.
func validTurnID(id string) error {
	if id == "" || strings.ContainsAny(id, ":/\x00") {
		return fmt.Errorf("hub: turn id %q is empty or contains ':', '/' or NUL", id)
	}
	return nil
}
