package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// A turn is one request to the hub, from any surface, as the surface's
// parse step leaves it: who asks, in which conversation, and the verb call
// asked for. Every surface then goes the same way: identify (the roles),
// decide (the verb, the permission, the workspace, the session), run (the
// call, within the verb timeout, on a node for a remote workspace).
// Surfaces differ only in how they parse (chat grammar, API envelope, MCP
// tool arguments: chatturn.go, execute.go) and how they deliver (reply
// entries in the outbox, or the outcome returned).
type turn struct {
	id       string
	identity string   // the actor: mirror records, a proc.run's owner
	ids      []string // every access identity of the actor
	// in is a chat turn's message; nil for an API call, which works in the
	// web conversation (conversation).
	in *chat.Inbound
	// own is the key of the conversation of a turn that has one of its
	// own instead of the web's: a schedule's run (schedule:<name>). Such
	// a conversation has no /use choice and no session.
	own string

	env executor.Envelope // the verb call; Verb is "" when none is asked
	// info is the verb as the registry describes it, when known is set:
	// looked up once, by the surface (MCP) or by decide.
	info  executor.Info
	known bool
	// asked is the workspace the request names beside its envelope (the
	// API's ?workspace=), session the session it names; "" for none.
	asked, session string
	err            error            // why the request does not parse
	cmd            executor.Command // a chat turn's command: its builtin and --json
	// upload is the file that came with a chat turn's message, as offered
	// to its call (files.go); nil when none is.
	upload *executor.Upload
	// named is the named command the verb is (cmd.<name>), as the turn
	// found it; call is the call it stands for, once decide expanded it.
	named *config.Command
	call  executor.Envelope
	// confirmed is set for the run of a call its caller confirmed (a
	// pressed Run, an MCP elicitation): it is not held again.
	confirmed bool
}

// verdict is what decide concluded about a turn's verb call.
type verdict int

const (
	verdictNone      verdict = iota // no verb call asked (a builtin, plain text)
	verdictRun                      // the call runs
	verdictInvalid                  // the request does not parse, or names two workspaces
	verdictForbidden                // the roles do not grant the verb
	verdictWorkspace                // the workspace may not be used (werr says why)
	verdictConfirm                  // the call waits for its caller's Run (confirm.go)
)

// decision is what the hub decided about a turn, the same way for every
// surface.
type decision struct {
	acc   *Access // the access policy as the turn began
	roles []string
	// standing is the roles with why they hold and the ceilings of the
	// turn's chat (roles is standing.Roles).
	standing Standing
	verdict  verdict
	err      error // with verdictInvalid: why
	allowed  bool  // the roles grant the verb (or the registry does not know it)
	// placed is set once the workspace was resolved: where, or werr.
	placed  bool
	where   policy.Resolution
	werr    error
	session string
	// confirmRole is the role whose confirm holds the call, approvers
	// the roles that must approve it (verdictConfirm).
	confirmRole string
	approvers   []string
}

// identify finds who asks, and where: the roles of the turn's identities
// in the turn's chat (its grants and ceilings, access.chats). The turn
// decides with the access policy as it is now, whatever a reload or an
// approval changes while it runs.
func (h *Hub) identify(t *turn) decision {
	acc := h.opts.Access.Current()
	st := acc.StandingIn(t.ids, t.in)
	return decision{acc: acc, roles: st.Roles, standing: st}
}

// decide makes the decisions every surface shares about a parsed turn, in
// this order: the verb (looked up once), whether the roles grant it, the
// session, the workspace (the one the call names, the conversation's
// choice, or configuration) with the reason. The workspace is resolved for
// a verb the roles do not grant as well (a chat turn's mirror record names
// it), not for a request that names two.
func (h *Hub) decide(t *turn, d *decision) {
	d.session = t.session
	if t.err != nil {
		d.verdict, d.err = verdictInvalid, t.err
		return
	}
	if t.env.Verb == "" {
		return
	}
	h.permit(t, d)
	if d.allowed && t.named != nil {
		if err := h.expand(t); err != nil {
			d.verdict, d.err = verdictInvalid, err
			return
		}
	}
	if d.allowed && d.session == "" && h.opts.SessionFor != nil && t.own == "" {
		d.session = h.opts.SessionFor(t.conversation(), d.roles)
	}
	explicit, err := t.explicitWorkspace()
	if err == nil {
		d.where, d.werr = h.resolveWorkspace(explicit, t.conversationKey(), d.roles)
		if d.werr == nil {
			d.werr = h.ceilingWorkspace(d)
		}
		d.placed = true
	}
	switch {
	case !d.allowed:
		d.verdict = verdictForbidden
	case err != nil:
		d.verdict, d.err = verdictInvalid, err
	case d.werr != nil:
		d.verdict = verdictWorkspace
	default:
		d.verdict = verdictRun
	}
	h.holdsConfirm(t, d)
}

// permit looks the turn's verb up, unless its surface did, and decides
// whether the roles grant it. A verb the registry does not know is let
// through: running it answers unknown_verb, with the names it resembles.
func (h *Hub) permit(t *turn, d *decision) {
	if !t.known {
		t.info, t.known = h.x.Registry().Lookup(t.env.Verb)
	}
	d.allowed = !t.known || d.acc.permits(d.standing, t.info)
	if cmd, ok := h.commands.Lookup(t.info.Name); t.known && ok {
		t.named = &cmd
	}
}

// expand turns a named command's call into the call it stands for: its
// parameters checked by their types and put in their places. Its
// arguments that do not fit are the turn's invalid arguments.
func (h *Hub) expand(t *turn) error {
	verb, args, err := t.named.Call(t.env.Arguments)
	if err != nil {
		return executor.Errorf(executor.CodeInvalidArguments, "Invalid arguments for %s: %v", t.info.Name, err)
	}
	t.call = executor.Envelope{ID: t.env.ID, Verb: verb, Arguments: args}
	return nil
}

// ceilingWorkspace refuses the resolved workspace when a ceiling of the
// turn's chat may not use it: the chat caps workspaces as it caps verbs.
func (h *Hub) ceilingWorkspace(d *decision) error {
	p := h.ws.Load()
	if p == nil {
		return nil
	}
	for _, c := range d.standing.Ceilings {
		if !p.MayUse(c.Roles, d.where.Name) {
			return fmt.Errorf("workspace %q is beyond this chat's ceiling (access.chats[%q].max_roles: %s)", d.where.Name, c.Scope, strings.Join(c.Roles, ", "))
		}
	}
	return nil
}

// forbiddenWhy says why the roles of a forbidden turn do not grant its
// verb: a ceiling of its chat, or none of its roles (with the
// configuration that would allow it).
func forbiddenWhy(t *turn, d *decision) string {
	if d.acc.grants(d.roles, t.info) {
		if c := d.acc.capping(d.standing, t.info); c != nil {
			return fmt.Sprintf("In this chat, access.chats[%q].max_roles caps what any role may do at what %s may do.", c.Scope, strings.Join(c.Roles, ", "))
		}
	}
	return d.acc.ForbiddenHint(t.identity, t.info.Grant())
}

// workspaceHint is what a workspace refusal adds when the roles may not
// use a workspace that exists: the configuration that would open it to
// the turn's identity (Access.WorkspaceHint), after a space; "" for any
// other refusal (an unknown workspace, a choice that cannot be read).
func workspaceHint(t *turn, d *decision) string {
	var notOpen *policy.NotOpenError
	if !errors.As(d.werr, &notOpen) {
		return ""
	}
	return " " + d.acc.WorkspaceHint(t.identity, notOpen.Workspace)
}

// conversation is the message of the conversation the turn belongs to,
// whose session rules apply: a chat turn's own. An API call without a
// choice of its own works where the web conversation works.
func (t *turn) conversation() *chat.Inbound {
	if t.in != nil {
		return t.in
	}
	return &chat.Inbound{Platform: chat.Web, ChatID: "web", UserID: "web"}
}

// conversationKey is the key of the turn's conversation, whose workspace
// choice (/use) and configured workspace apply.
func (t *turn) conversationKey() string {
	switch {
	case t.in != nil:
		return t.in.ReplyKey().String()
	case t.own != "":
		return t.own
	}
	return WebConversation
}

// explicitWorkspace is the workspace the call names: its envelope's or its
// request's, which must agree ("" for none).
func (t *turn) explicitWorkspace() (string, error) {
	if t.named != nil && t.named.Workspace != "" {
		for _, w := range []string{t.asked, t.env.Workspace} {
			if w != "" && w != t.named.Workspace {
				return "", executor.Errorf(executor.CodeInvalidEnvelope, "%s runs in workspace %q, not %q: send it without a workspace", t.info.Name, t.named.Workspace, w)
			}
		}
		return t.named.Workspace, nil
	}
	switch {
	case t.asked == "":
		return t.env.Workspace, nil
	case t.env.Workspace != "" && t.env.Workspace != t.asked:
		return "", executor.Errorf(executor.CodeInvalidEnvelope, "The envelope names workspace %q and the request %q; name one", t.env.Workspace, t.asked)
	}
	return t.asked, nil
}

// verbName is the verb the turn asks for: its registered name when the
// registry knows it, else as written ("" for none, and for a request that
// does not parse, however its surface read the verb).
func (t *turn) verbName() string {
	switch {
	case t.err != nil:
		return ""
	case t.known:
		return t.info.Name
	}
	return t.env.Verb
}

// status is the turn status a decided verb call comes to, on every
// surface.
func (d *decision) status() Status {
	switch d.verdict {
	case verdictInvalid:
		return StatusRejected
	case verdictForbidden, verdictWorkspace:
		return StatusForbidden
	case verdictConfirm:
		return StatusHeld
	}
	return StatusExecuted
}

// readOnlyRun reports whether the turn runs a read-only verb: the one call
// whose records need not wait for the mirror's fsync, where a surface's
// durability rule allows it.
func (d *decision) readOnlyRun(t *turn) bool {
	return d.verdict == verdictRun && t.known && t.info.ReadOnly
}

// run makes a turn's verb call as decided: as its identity, in its
// workspace and session.
func (h *Hub) run(ctx context.Context, t *turn, d *decision) (*executor.Outcome, answeredBy) {
	c := executor.Call{TurnID: t.id, Identity: t.identity, Session: d.session, Workspace: d.where.Name}
	if t.named != nil {
		// The call a named command stands for, in the command's workspace
		// and within its timeout.
		info, _ := h.x.Registry().Lookup(t.call.Verb)
		return h.callWithin(ctx, c, t.call, info.Name, commandTimeout(*t.named, h.opts.VerbTimeout))
	}
	verb := ""
	if t.known {
		verb = t.info.Name
	}
	ctx = h.callFiles(ctx, t)
	if t.upload = executor.UploadFrom(ctx); t.upload != nil {
		if dest, remote := h.remoteDestination(c.Workspace); remote {
			return uploadRemote(t, c.Workspace, dest.Node), answeredBy{}
		}
	}
	return h.call(ctx, c, t.env, verb)
}

// call runs env as c, within the verb timeout. A call in a remote
// workspace goes to its node, which answers (by names it); the outcome
// stands for the local executor's. verb is the registered name of env's
// verb ("" for one the registry does not know).
func (h *Hub) call(ctx context.Context, c executor.Call, env executor.Envelope, verb string) (*executor.Outcome, answeredBy) {
	return h.callWithin(ctx, c, env, verb, h.opts.VerbTimeout)
}

// callWithin is call within timeout (0: none) instead of the verb timeout.
func (h *Hub) callWithin(ctx context.Context, c executor.Call, env executor.Envelope, verb string, timeout time.Duration) (*executor.Outcome, answeredBy) {
	if d, ok := h.remoteDestination(c.Workspace); ok {
		out, by := h.callRemote(ctx, c, d, env, verb)
		if h.opts.Observer != nil {
			h.opts.Observer.Verb(out)
		}
		return out, by
	}
	ctx = executor.WithCall(ctx, c)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	out := h.x.Run(ctx, env)
	if h.opts.Observer != nil {
		h.opts.Observer.Verb(out)
	}
	return out, answeredBy{}
}
