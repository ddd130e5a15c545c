package hub

import (
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/executor"
)

// What an adapter receives from the hub (docs/architecture.md, "What an
// adapter receives"): the Hub itself, seen through an interface the adapter
// declares with only the methods it calls (Handle, Accept, Abandon,
// Preview, VerbsFor, Registry, Execute, RenameChannel); a cursor store of
// its own (store.State.Cursors); a status Reporter; and for the web panel a
// Conversation. Nothing else of the runtime reaches an adapter.

// Preview is how the hub will answer a turn, known before it runs.
type Preview struct {
	// Private is true when the answer is for the asker only (Discord sends
	// it ephemeral): a stranger's denial, a command that does not parse, a
	// verb the asker may not run. A verb that fails is also answered
	// privately, which cannot be known before it runs.
	Private bool
}

// Preview tells how in will be answered, cheaply and without running or
// recording anything, by the same access and parse decisions Handle makes.
func (h *Hub) Preview(in *chat.Inbound) Preview {
	t := chatTurn(in)
	d := h.identify(&t)
	if len(d.roles) == 0 {
		return Preview{Private: true}
	}
	h.parseChat(&t)
	switch {
	case t.err != nil:
		return Preview{Private: true}
	case t.env.Verb == "":
		return Preview{} // a builtin
	}
	h.permit(&t, &d)
	return Preview{Private: !d.allowed}
}

// VerbsFor lists the verbs the identities may run, sorted by name, for
// command menus and the panel.
func (h *Hub) VerbsFor(ids []string) []executor.Info { return h.opts.Access.VerbsFor(ids) }

// Registry is the verbs' registry, for surfaces that derive their commands
// and forms from the schemas.
func (h *Hub) Registry() *executor.Registry { return h.x.Registry() }

// Usage is a verb's one-line usage in the chat grammar.
func (h *Hub) Usage(verb string) (string, bool) { return h.x.Usage(verb) }
