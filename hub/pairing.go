package hub

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Pairing: a stranger who writes to the bot on Telegram or Discord gets a
// short single-use code; an operator approves it with a role (`hub access
// approve`, the panel, or /approve from chat), which grants the role to
// the stranger's identity in the state.
const (
	// PairingTTL is how long a code may be approved.
	PairingTTL = time.Hour
	// PairingInterval is how often one identity may get a code.
	PairingInterval = DenialInterval
	// MaxPairingCodes caps the codes outstanding at once, so a flood of
	// strangers cannot grow the state without bound.
	MaxPairingCodes = 1000
	// pairingAlphabet has no 0/O, 1/I: 32 symbols a person reads back
	// without doubt.
	pairingAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
)

// AccessState is the part of the state that pairing codes and approved
// grants live in (store.Access).
type AccessState interface {
	IssueCode(identity, code string, now time.Time, lim store.PairingLimits) error
	Approve(code, role, by string, now time.Time) (store.Grant, error)
	Revoke(identity string) ([]store.Grant, error)
	Grants() ([]store.Grant, error)
	Codes(now time.Time) ([]store.PairingCode, error)
}

var _ AccessState = (*store.Access)(nil)

// ErrNoAccessState is returned by the approval methods of a hub opened
// without an AccessState.
var ErrNoAccessState = errors.New("approved grants are unavailable: the hub has no access state")

// ErrConfigGrant is returned (wrapped) by Revoke for an identity whose
// roles come from the configuration only.
var ErrConfigGrant = errors.New("the grant comes from the configuration")

// NewPairingCode returns a fresh code, XXXX-XXXX, from crypto/rand.
func NewPairingCode() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	out := make([]byte, 0, 9)
	for i, c := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, pairingAlphabet[int(c)%len(pairingAlphabet)])
	}
	return string(out)
}

// pairs reports whether a stranger on in's platform is offered a code.
func pairs(in *chat.Inbound) bool {
	return in.Platform == chat.Telegram || in.Platform == chat.Discord
}

// privateChat reports whether in comes from a chat of the stranger and the
// bot alone (a Telegram private chat, a Discord DM), the only place a
// pairing code is given: in a group, anyone could read it and pass it to
// the operator as their own.
func privateChat(in *chat.Inbound) bool {
	return in.ChatType == chat.ChatPrivate || in.ChatType == chat.ChatDM
}

// denialKey is what a stranger's denial notices are counted by: its
// identity, apart in groups and in private chats, so that being told in a
// group to write to the bot directly does not silence the bot there.
func denialKey(in *chat.Inbound) string {
	if privateChat(in) {
		return in.Identity()
	}
	return in.Identity() + " in groups"
}

// writeDirectly says how to reach the bot privately on in's platform.
func writeDirectly(in *chat.Inbound) string {
	if in.Platform == chat.Discord {
		return "send the bot a direct message"
	}
	return "open a private chat with the bot"
}

// denialText is what a stranger is told, at most once per DenialInterval:
// its identity and, in a private chat, a pairing code with the operator's
// command (withCode), or the way to ask for one, or the configuration line
// that grants access.
func (h *Hub) denialText(in *chat.Inbound, now time.Time) (text string, withCode bool) {
	id := in.Identity()
	line := executor.Fence(GrantLine(id, ReaderRole), "yaml")
	if h.opts.AccessState == nil || !pairs(in) {
		return fmt.Sprintf("This hub does not know you. Your identity is %s. To grant access, the operator adds this line under access.grants in the configuration:\n%s", id, line), false
	}
	if !privateChat(in) {
		return fmt.Sprintf("This hub does not know you. Your identity is %s. To ask for access, %s: it answers there with a pairing code for the operator of this hub (never in a group). Or the operator adds this line under access.grants in the configuration:\n%s", id, writeDirectly(in), line), false
	}
	code := NewPairingCode()
	err := h.opts.AccessState.IssueCode(id, code, now, store.PairingLimits{TTL: PairingTTL, Interval: PairingInterval, Max: MaxPairingCodes})
	switch {
	case err == nil:
		h.log.Info("pairing code issued", "identity", id, "expires", now.Add(PairingTTL).UTC().Format(time.RFC3339))
		return fmt.Sprintf("This hub does not know you. Your identity is %s.\nYour pairing code is %s (it works once and expires in an hour). Send it to the operator of this hub, who approves it with:\n%s\n(or /approve %s reader from a chat), or adds this line under access.grants in the configuration:\n%s",
			id, code, executor.Fence("hub access approve "+code+" --role reader", "sh"), code, line), true
	case errors.Is(err, store.ErrPairingFull):
		h.log.Warn("pairing code not issued: too many outstanding", "identity", id, "max", MaxPairingCodes)
		return fmt.Sprintf("This hub does not know you. Your identity is %s. It has too many pending access requests to give you a pairing code now; write again in an hour, or ask the operator to add this line under access.grants in the configuration:\n%s", id, line), false
	case errors.Is(err, store.ErrPairingRateLimited):
		return fmt.Sprintf("This hub does not know you. Your identity is %s. Your pairing code was sent earlier and stays valid for an hour from then.", id), false
	default:
		h.log.Error("pairing code not issued", "identity", id, "err", err)
		return fmt.Sprintf("This hub does not know you. Your identity is %s. To grant access, the operator adds this line under access.grants in the configuration:\n%s", id, line), false
	}
}

// The mirror never keeps a usable pairing code: a code in a reply (the
// stranger's) and in a /approve command (a refused approval leaves the
// code valid) is mirrored as redactedCode.
const (
	redactedCode = "[pairing code]"
	// metaMirrorRedact on an outbox entry names what its mirror record
	// must not keep: redactPairingCode, the pairing codes in its text.
	metaMirrorRedact  = "mirror_redact"
	redactPairingCode = "pairing_code"
)

// pairingCodeRE matches a code as NewPairingCode writes it.
var pairingCodeRE = regexp.MustCompile(`\b[` + pairingAlphabet + `]{4}-[` + pairingAlphabet + `]{4}\b`)

// mirrorEntryText is what the mirror keeps of an outbox entry's text.
func mirrorEntryText(text string, meta map[string]string) string {
	if meta[metaMirrorRedact] == redactPairingCode {
		return pairingCodeRE.ReplaceAllLiteralString(text, redactedCode)
	}
	return text
}

// mirrorInboundText is what the mirror keeps of an inbound text: a
// /approve command's code (every argument but the role) is replaced by
// redactedCode, whoever sent it and whatever became of it.
func mirrorInboundText(text string) string {
	args, ok := approveCommand(text)
	if !ok || len(args) == 0 {
		return text
	}
	head, rest, more := strings.Cut(strings.TrimSpace(text), "\n")
	out := strings.Fields(head)[0] + " " + redactedCode
	if len(args) > 1 {
		out += " " + args[len(args)-1]
	}
	if more {
		out += "\n" + rest
	}
	return out
}

// loadApproved installs the approved grants of the state in the access
// policy.
func (h *Hub) loadApproved() error {
	if h.opts.AccessState == nil {
		return nil
	}
	gs, err := h.opts.AccessState.Grants()
	if err != nil {
		return err
	}
	h.opts.Access.SetApproved(gs)
	return nil
}

// Approve grants role to the identity a pairing code was issued to. by
// names who approved (an identity, or admin.Operator). The role must be
// configured or the built-in reader; the code must be outstanding. The
// approval takes effect on the identity's next turn and is mirrored.
func (h *Hub) Approve(ctx context.Context, code, role, by string) (store.Grant, error) {
	if h.opts.AccessState == nil {
		return store.Grant{}, ErrNoAccessState
	}
	code = strings.TrimSpace(code)
	if n := store.NormalizeCode(code); len(n) != 8 || strings.Trim(n, pairingAlphabet) != "" {
		return store.Grant{}, fmt.Errorf("%q is not a pairing code (accepted: 8 letters and digits, such as ABCD-EF23, as the stranger was given it)", code)
	}
	if !h.opts.Access.RoleDefined(role) {
		return store.Grant{}, fmt.Errorf("role %q is not defined (accepted: %s; define roles under access.roles)", role, strings.Join(h.opts.Access.Roles(), ", "))
	}
	g, err := h.opts.AccessState.Approve(code, role, by, h.opts.Clock.Now())
	if err != nil {
		return store.Grant{}, err
	}
	if err := h.loadApproved(); err != nil {
		return g, fmt.Errorf("approved, but the running hub could not reload its grants: %w", err)
	}
	h.log.Info("access approved", "identity", g.Identity, "role", g.Role, "by", by)
	h.mirrorAdmin(ctx, by, "approve", fmt.Sprintf("approved %s as %s", g.Identity, g.Role), map[string]string{"identity": g.Identity, "role": g.Role})
	return g, nil
}

// Revoke removes the approved grants of identity; it takes effect on the
// identity's next turn. A grant of the configuration cannot be revoked
// here: with no approved grant to remove, the error wraps ErrConfigGrant
// when the configuration grants the identity a role.
func (h *Hub) Revoke(ctx context.Context, identity, by string) ([]store.Grant, error) {
	if h.opts.AccessState == nil {
		return nil, ErrNoAccessState
	}
	if err := config.ValidIdentity(identity); err != nil {
		return nil, err
	}
	gone, err := h.opts.AccessState.Revoke(identity)
	if err != nil {
		return nil, err
	}
	if err := h.loadApproved(); err != nil {
		return gone, fmt.Errorf("revoked, but the running hub could not reload its grants: %w", err)
	}
	if len(gone) > 0 {
		roles := make([]string, len(gone))
		for i, g := range gone {
			roles[i] = g.Role
		}
		h.log.Info("access revoked", "identity", identity, "roles", strings.Join(roles, ","), "by", by)
		h.mirrorAdmin(ctx, by, "revoke", fmt.Sprintf("revoked %s (%s)", identity, strings.Join(roles, ", ")), map[string]string{"identity": identity, "role": strings.Join(roles, ",")})
		return gone, nil
	}
	if roles := h.opts.Access.ConfigGrants()[identity]; len(roles) > 0 {
		return nil, fmt.Errorf("%s holds %s through access.grants in the configuration, which `hub access revoke` does not change (%w): remove its line there, then run `hub reload`", identity, strings.Join(roles, ", "), ErrConfigGrant)
	}
	return nil, nil
}

// GrantView is one grant as `hub access list` shows it.
type GrantView struct {
	Identity   string    `json:"identity"`
	Role       string    `json:"role"`
	Source     string    `json:"source"` // "config" or "state"
	ApprovedBy string    `json:"approved_by,omitempty"`
	At         time.Time `json:"at,omitzero"`
	// Inactive says why a grant of the state counts for nothing (its role
	// is no longer defined).
	Inactive string `json:"inactive,omitempty"`
}

// AccessList is every grant, the configuration's and the state's, and the
// pairing codes outstanding (whom they are for; the codes are not kept).
type AccessList struct {
	Grants []GrantView         `json:"grants"`
	Codes  []store.PairingCode `json:"codes"`
	Roles  []string            `json:"roles"`
}

// AccessList lists the grants and the outstanding pairing codes.
func (h *Hub) AccessList() (AccessList, error) {
	acc := h.opts.Access.Current()
	out := AccessList{Grants: []GrantView{}, Codes: []store.PairingCode{}, Roles: acc.Roles()}
	for id, roles := range acc.ConfigGrants() {
		for _, r := range roles {
			out.Grants = append(out.Grants, GrantView{Identity: id, Role: r, Source: "config"})
		}
	}
	if h.opts.AccessState != nil {
		gs, err := h.opts.AccessState.Grants()
		if err != nil {
			return out, err
		}
		for _, g := range gs {
			v := GrantView{Identity: g.Identity, Role: g.Role, Source: "state", ApprovedBy: g.ApprovedBy, At: g.At}
			if !acc.RoleDefined(g.Role) {
				v.Inactive = "role " + g.Role + " is not defined in the configuration"
			}
			out.Grants = append(out.Grants, v)
		}
		codes, err := h.opts.AccessState.Codes(h.opts.Clock.Now())
		if err != nil {
			return out, err
		}
		if codes != nil {
			out.Codes = codes
		}
	}
	sort.SliceStable(out.Grants, func(i, j int) bool {
		a, b := out.Grants[i], out.Grants[j]
		if a.Identity != b.Identity {
			return a.Identity < b.Identity
		}
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return a.Role < b.Role
	})
	return out, nil
}

// approveCommand reports whether text is /approve (with its arguments).
func approveCommand(text string) (args []string, ok bool) {
	head, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	f := strings.Fields(head)
	if len(f) == 0 {
		return nil, false
	}
	name, _, _ := strings.Cut(strings.ToLower(f[0]), "@")
	if name != "/approve" && name != "/hub.approve" && name != "/hub_approve" {
		return nil, false
	}
	return f[1:], true
}

// approveFromChat answers /approve CODE ROLE from an identity whose roles
// name admin.access, in this chat (its ceilings apply).
func (h *Hub) approveFromChat(ctx context.Context, d *decision, args []string, in *chat.Inbound) (text string, private bool) {
	acc := d.acc
	if !acc.permits(d.standing, executor.Info{Name: config.AdminAccess}) {
		return fmt.Sprintf("⚠ You may not approve access: none of your roles grants %s. %s", config.AdminAccess, acc.ForbiddenHint(in.Identity(), config.AdminAccess)), true
	}
	if len(args) != 2 {
		return "Usage: /approve CODE ROLE, for example /approve ABCD-EF23 reader (roles: " + strings.Join(acc.Roles(), ", ") + ")", true
	}
	g, err := h.Approve(ctx, args[0], args[1], in.Identity())
	if err != nil {
		return "⚠ Not approved: " + err.Error(), true
	}
	return fmt.Sprintf("Approved: %s now holds the role %s.", g.Identity, g.Role), false
}

// mirrorAdmin records an operator's action on access in the mirror (an
// admin record: platform "admin", the approver as actor).
func (h *Hub) mirrorAdmin(ctx context.Context, by, action, text string, meta map[string]string) {
	if h.opts.Mirror == nil {
		return
	}
	m := map[string]string{"action": action}
	for k, v := range meta {
		m[k] = v
	}
	rec := store.MirrorRecord{
		TS: h.opts.Clock.Now().UTC(), Direction: store.DirectionInbound, Platform: "admin",
		Actor: by, Kind: "admin", Text: text, Meta: m,
	}
	if err := h.opts.Mirror.Append(context.WithoutCancel(ctx), rec, true); err != nil {
		h.log.Error("mirror admin action", "action", action, "err", err)
	}
}
