package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Confirmation before harm (docs/chatops.md#confirmation-before-harm): a
// verb a role lists under confirm is not run when asked. The turn is held
// in hub.db (store.Confirmations) and the asker is shown the exact call
// with Run and Cancel buttons; a role with approvers then needs someone
// else, holding one of them, to approve. A press is decided here, the
// same for every platform (Confirm): pressed by the wrong person, twice,
// or after the call expired, it does nothing but say so. The call that
// runs is the held message again, as a turn of its own (confirm.<id>),
// decided afresh by the access policy of that moment in the workspace the
// prompt named.

// Meta keys of a held call's prompt: MetaConfirm names the held call, and
// MetaConfirmStage which buttons the platform shows (ConfirmStageRun: Run
// and Cancel, for the caller; ConfirmStageApprove: Approve and Reject).
const (
	MetaConfirm         = "confirm"
	MetaConfirmStage    = "confirm_stage"
	ConfirmStageRun     = "run"
	ConfirmStageApprove = "approve"
)

// The actions of a press on a held call.
const (
	ConfirmRun     = "run"
	ConfirmCancel  = "cancel"
	ConfirmApprove = "approve"
	ConfirmReject  = "reject"
)

// StatusHeld is the status of a turn held for confirmation.
const StatusHeld Status = "held"

// KindConfirm is the mirror kind of a press on a held call.
const KindConfirm = "confirm"

// ConfirmPress is one press of a button of a held call's prompt.
type ConfirmPress struct {
	// ID is the held call (the prompt's MetaConfirm), Action one of
	// ConfirmRun, ConfirmCancel, ConfirmApprove, ConfirmReject.
	ID, Action string
	// Identities are the presser's access identities, the person first
	// (Identities of the press's message).
	Identities []string
	// Decided, when set, is called with the presser's text as soon as the
	// press is decided and recorded, before the call it lets run: a
	// platform answers the press then (a button's answer cannot wait for
	// a long call) and decides the next press on the same call after it.
	Decided func(text string)
}

// ConfirmResult is what came of a press: the text the presser is shown
// and, when the press ran the call, the run's turn.
type ConfirmResult struct {
	Text string
	Turn *TurnResult
}

// confirmRule is the role whose confirm holds verb for the standing (the
// first, by name) and the approvers of every role that holds it; "" when
// none does.
func (a *Access) confirmRule(st Standing, verbs ...string) (role string, approvers []string) {
	p := a.p.Load()
	for _, r := range st.Roles {
		c := p.confirm[r]
		if !slices.ContainsFunc(verbs, func(v string) bool { return matchAny(c.verbs, v) }) {
			continue
		}
		if role == "" {
			role = r
		}
		for _, ap := range c.approvers {
			if !slices.Contains(approvers, ap) {
				approvers = append(approvers, ap)
			}
		}
	}
	return role, approvers
}

// MayHold reports whether a call of verb by the identities ids, outside
// any chat (the API, MCP), would be held for confirmation: a role of
// theirs lists the verb, or for a named command the verb it runs, under
// confirm. A surface that can ask for confirmation (an MCP client with
// elicitation) takes its asking path for such a call only.
func (h *Hub) MayHold(ids []string, info executor.Info) bool {
	acc := h.opts.Access.Current()
	verbs := []string{info.Name}
	if cmd, ok := h.commands.Lookup(info.Name); ok {
		verbs = append(verbs, cmd.Run.Verb)
	}
	role, _ := acc.confirmRule(acc.StandingIn(ids, nil), verbs...)
	return role != ""
}

// confirmRole is a role's confirm and approvers.
type confirmRole struct {
	verbs, approvers []string
}

// holdsConfirm applies a role's confirm to a turn decided to run: when a
// role of the caller lists the verb (or, for a named command, the verb it
// calls), the verdict is verdictConfirm. A turn that is itself the run of
// a confirmed call is not held again.
func (h *Hub) holdsConfirm(t *turn, d *decision) {
	if d.verdict != verdictRun || t.confirmed || !t.known {
		return
	}
	verbs := []string{t.info.Name}
	if t.named != nil {
		verbs = append(verbs, t.call.Verb)
	}
	if role, ap := d.acc.confirmRule(d.standing, verbs...); role != "" {
		d.verdict, d.confirmRole, d.approvers = verdictConfirm, role, ap
	}
}

// confirmError is the refusal of a call that needs confirmation on a
// surface that cannot ask for it (the API, a schedule, an MCP client
// without elicitation).
func confirmError(t *turn, d *decision) *executor.Error {
	return executor.Errorf(executor.CodeConfirmationRequired,
		"%s needs confirmation before it runs: access.roles.%s.confirm lists it. This request cannot show Run and Cancel: send it from chat (Telegram, Discord, the panel), or from an MCP client that supports elicitation.", t.info.Name, d.confirmRole)
}

// holdChat holds a chat turn's call: recorded in hub.db, the asker is
// answered with the exact call and the Run and Cancel buttons.
func (h *Hub) holdChat(t *turn, d *decision) chatReply {
	if h.opts.Confirmations == nil {
		e := confirmError(t, d)
		return chatReply{code: string(e.Code), private: true, text: "⚠ " + e.Message}
	}
	now := h.opts.Clock.Now().UTC()
	cf := store.Confirmation{
		ID: newConfirmID(), In: *t.in, Verb: t.info.Name, Call: callText(t.env), Role: d.confirmRole,
		Approvers: d.approvers, State: store.ConfirmPending, Workspace: d.where.Name,
		Created: now, Expires: now.Add(d.acc.p.Load().confirmTTL),
	}
	if t.named != nil {
		cf.Runs = callText(t.call)
	}
	if err := h.opts.Confirmations.Add(cf); err != nil {
		h.log.Error("hold a call for confirmation", "turn", t.id, "err", err)
		return chatReply{code: string(executor.CodeIOError), private: true, text: "⚠ The call was not run: it could not be held for confirmation (" + err.Error() + ")."}
	}
	return chatReply{text: promptText(cf), meta: map[string]string{MetaConfirm: cf.ID, MetaConfirmStage: ConfirmStageRun}}
}

// promptText is a held call as its asker sees it: the exact call, where
// it runs, who must decide and until when.
func promptText(cf store.Confirmation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "⏸ Confirm %s (access.roles.%s.confirm). It runs exactly:\n", cf.Verb, cf.Role)
	b.WriteString(executor.Fence(cf.Call, "json") + "\n")
	if cf.Runs != "" {
		b.WriteString("which stands for:\n" + executor.Fence(cf.Runs, "json") + "\n")
	}
	fmt.Fprintf(&b, "in workspace %s, as %s.", cf.Workspace, cf.In.Identity())
	if len(cf.Approvers) > 0 {
		fmt.Fprintf(&b, " After your Run, someone else holding %s must approve it.", strings.Join(cf.Approvers, " or "))
	}
	fmt.Fprintf(&b, "\nPress Run or Cancel before %s.", cf.Expires.Format("2006-01-02 15:04:05 MST"))
	return b.String()
}

func newConfirmID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("hub: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// Confirm decides a press on a held call's button, the same for every
// platform. Pressed by someone who may not, twice, or after the call
// expired, it changes nothing but says so. The caller's Run (or, when
// the role names approvers, an approver's Approve) runs the call as a turn
// of its own, answered in the chat it was asked in; ConfirmResult.Turn is
// that turn. Every press is recorded in the mirror with who pressed what.
func (h *Hub) Confirm(ctx context.Context, p ConfirmPress) (ConfirmResult, error) {
	if h.opts.Confirmations == nil {
		return ConfirmResult{Text: "This hub holds no calls for confirmation."}, nil
	}
	if len(p.Identities) == 0 {
		return ConfirmResult{}, errors.New("hub: a press without an identity")
	}
	var text, result string
	cf, err := h.opts.Confirmations.Update(p.ID, func(cf *store.Confirmation) error {
		text, result = h.press(cf, p)
		cf.Presses = append(cf.Presses, store.Press{Identity: p.Identities[0], Action: p.Action, Result: result, At: h.opts.Clock.Now().UTC()})
		return nil
	})
	if errors.Is(err, store.ErrNoConfirmation) {
		return ConfirmResult{Text: "This request is not held any more."}, nil
	}
	if err != nil {
		return ConfirmResult{}, err
	}
	h.mirrorPress(ctx, cf, p, result)
	res := ConfirmResult{Text: text}
	if p.Decided != nil {
		p.Decided(text)
	}
	switch result {
	case store.ConfirmApproving:
		if err := h.askApprovers(ctx, cf); err != nil {
			return res, err
		}
	case store.ConfirmRunning:
		res.Turn, err = h.runConfirmed(ctx, cf)
	}
	return res, err
}

// press decides one press on cf (and changes its state): the text for the
// presser and the result recorded (the new state, or why nothing changed).
func (h *Hub) press(cf *store.Confirmation, p ConfirmPress) (text, result string) {
	who, asker := p.Identities[0], cf.In.Identity()
	now := h.opts.Clock.Now()
	open := cf.State == store.ConfirmPending || cf.State == store.ConfirmApproving
	switch {
	case open && !now.Before(cf.Expires):
		cf.State = store.ConfirmExpired
		return fmt.Sprintf("This request expired at %s; nothing ran. Send the command again.", cf.Expires.Format("15:04:05 MST")), store.ConfirmExpired
	case !open:
		return fmt.Sprintf("This request was already decided (%s); nothing more happens.", cf.State), "already " + cf.State
	}
	switch p.Action {
	case ConfirmRun, ConfirmCancel:
		if who != asker {
			return fmt.Sprintf("Only %s, who asked for it, may run or cancel this call.", asker), "refused: not the asker"
		}
		if p.Action == ConfirmCancel {
			cf.State = store.ConfirmCancelled
			return "Cancelled: nothing ran.", store.ConfirmCancelled
		}
		if cf.State == store.ConfirmApproving {
			return "Already waiting for approval.", "already " + cf.State
		}
		if len(cf.Approvers) > 0 {
			cf.State = store.ConfirmApproving
			return fmt.Sprintf("Waiting for someone holding %s to approve.", strings.Join(cf.Approvers, " or ")), store.ConfirmApproving
		}
		cf.State = store.ConfirmRunning
		return "Running it.", store.ConfirmRunning
	case ConfirmApprove, ConfirmReject:
		return h.approve(cf, p)
	}
	return fmt.Sprintf("Unknown action %q.", p.Action), "refused: unknown action"
}

// approve decides an approver's press.
func (h *Hub) approve(cf *store.Confirmation, p ConfirmPress) (text, result string) {
	who := p.Identities[0]
	switch {
	case cf.State != store.ConfirmApproving:
		return "Nothing to approve yet: the asker has not pressed Run.", "refused: not approving"
	case who == cf.In.Identity():
		return "You asked for this call: someone else must approve it.", "refused: the asker"
	}
	st := h.opts.Access.Current().StandingIn(p.Identities, &cf.In)
	if !slices.ContainsFunc(cf.Approvers, func(r string) bool { return approverIn(st, r) }) {
		return fmt.Sprintf("Only someone holding %s may approve this call.", strings.Join(cf.Approvers, " or ")), "refused: not an approver"
	}
	if p.Action == ConfirmReject {
		cf.State = store.ConfirmRejected
		return "Rejected: nothing ran.", store.ConfirmRejected
	}
	cf.State = store.ConfirmRunning
	return "Approved: running it.", store.ConfirmRunning
}

// approverIn reports whether the standing holds the approver role r in
// the held call's chat: granted there, and within every ceiling of the
// chat (a ceiling caps approving as it caps everything else).
func approverIn(st Standing, r string) bool {
	if !slices.Contains(st.Roles, r) {
		return false
	}
	for _, c := range st.Ceilings {
		if !slices.Contains(c.Roles, r) {
			return false
		}
	}
	return true
}

// mirrorPress records a press: who pressed what on which held call, and
// what came of it.
func (h *Hub) mirrorPress(ctx context.Context, cf store.Confirmation, p ConfirmPress, result string) {
	if h.opts.Mirror == nil {
		return
	}
	rec := store.MirrorRecord{
		Direction: store.DirectionInbound, Platform: string(cf.In.Platform), ChatID: cf.In.ChatID, Actor: p.Identities[0], Kind: KindConfirm,
		Text: p.Action + " " + cf.Call,
		Meta: map[string]string{MetaConfirm: cf.ID, "action": p.Action, "result": result, "asker": cf.In.Identity(), "turn_id": cf.In.TurnID, store.MetaVerb: cf.Verb},
	}
	if err := h.opts.Mirror.Append(ctx, rec, true); err != nil {
		h.log.Error("mirror a press on a held call", "confirm", cf.ID, "err", fmt.Sprint(err))
	}
}

// askApprovers posts the approval request in the chat the call was asked
// in, with the Approve and Reject buttons.
func (h *Hub) askApprovers(ctx context.Context, cf store.Confirmation) error {
	text := fmt.Sprintf("⏸ %s asks to run %s; someone holding %s must approve:\n%s\nin workspace %s.", cf.In.Identity(), cf.Verb, strings.Join(cf.Approvers, " or "), executor.Fence(cf.Call, "json"), cf.Workspace)
	key := cf.In.ReplyKey()
	meta := map[string]string{MetaConfirm: cf.ID, MetaConfirmStage: ConfirmStageApprove}
	entries := outbox.NewEntries(outbox.KindNotice, "confirm."+cf.ID+".approve", key, chat.SplitText(text, h.chunkOptions(key)), meta)
	if _, err := h.opts.Outbox.Enqueue(context.WithoutCancel(ctx), entries); err != nil {
		return fmt.Errorf("held call %s: ask the approvers: %w", cf.ID, err)
	}
	return nil
}

// runConfirmed runs a confirmed call: the held message as a turn of its
// own (confirm.<id>, so a second run is a duplicate), decided afresh, in
// the workspace its prompt named; then the held call is done.
func (h *Hub) runConfirmed(ctx context.Context, cf store.Confirmation) (*TurnResult, error) {
	in := cf.In
	in.TurnID = "confirm." + cf.ID
	res, err := h.handleTurn(ctx, &in, &cf)
	if err != nil {
		return res, err
	}
	if _, err := h.opts.Confirmations.Update(cf.ID, func(c *store.Confirmation) error {
		c.State = store.ConfirmDone
		return nil
	}); err != nil {
		return res, err
	}
	return res, nil
}

// confirmedNotDone lists the held calls a previous run of the hub decided
// to run (state running) and did not mark done: it may have died before
// their run began, or during it.
func (h *Hub) confirmedNotDone() ([]store.Confirmation, error) {
	if h.opts.Confirmations == nil {
		return nil, nil
	}
	all, err := h.opts.Confirmations.List()
	var out []store.Confirmation
	for _, cf := range all {
		if cf.State == store.ConfirmRunning {
			out = append(out, cf)
		}
	}
	return out, err
}

// resumeConfirmed runs the held calls confirmed before the last stop
// (confirmedNotDone) once the runtime starts. Their turn (confirm.<id>)
// is in the ledger when their run began: such a run is not made again (a
// duplicate; Recover has told the chat it was cut short), so a call runs
// at most once, and one whose run never began runs now.
func (h *Hub) resumeConfirmed(ctx context.Context, cfs []store.Confirmation) {
	for _, cf := range cfs {
		if ctx.Err() != nil {
			return
		}
		res, err := h.runConfirmed(ctx, cf)
		if err != nil {
			h.log.Error("run a held call confirmed before the last stop", "confirm", cf.ID, "err", err)
			continue
		}
		h.log.Info("held call confirmed before the last stop", "confirm", cf.ID, "status", res.Status)
	}
}

// PruneConfirmations forgets the held calls that expired or were decided
// before cutoff (the outbox's retention, as the ledger's turns).
func (h *Hub) PruneConfirmations(cutoff time.Time) (int, error) {
	if h.opts.Confirmations == nil {
		return 0, nil
	}
	return h.opts.Confirmations.Prune(cutoff)
}

// confirmTTL is access.confirm_ttl of cfg (its default when unset).
func confirmTTL(cfg config.Access) time.Duration {
	if cfg.ConfirmTTL > 0 {
		return cfg.ConfirmTTL.D()
	}
	return config.DefaultConfirmTTL.D()
}
