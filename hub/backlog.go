package hub

import (
	"context"
	"fmt"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// heldChat is a chat with turns accepted before the last stop that have
// not run yet: its new turns wait until done is closed.
type heldChat struct {
	left int
	done chan struct{}
}

// hold holds back the new turns of every chat of pending (turns accepted
// before the last stop, in the order they arrived) until runHeld has run
// each of them: a Discord channel's messages are answered in the order
// they were sent, also when some were accepted by the previous run and the
// next ones reach this one. Call it before the adapters deliver anything.
func (h *Hub) hold(pending []*chat.Inbound) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, in := range pending {
		if _, ok := h.heldTurns[in.TurnID]; ok {
			continue
		}
		key := in.ReplyKey().String()
		c := h.held[key]
		if c == nil {
			c = &heldChat{done: make(chan struct{})}
			h.held[key] = c
		}
		c.left++
		h.heldTurns[in.TurnID] = key
	}
}

// unhold releases one held turn; the last one of a chat lets its waiting
// turns go. Releasing a turn that is not held does nothing.
func (h *Hub) unhold(turnID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key, ok := h.heldTurns[turnID]
	if !ok {
		return
	}
	delete(h.heldTurns, turnID)
	c := h.held[key]
	if c.left--; c.left == 0 {
		close(c.done)
		delete(h.held, key)
	}
}

// runHeld runs the held turns in order, each once, releasing each after
// its turn whatever its outcome, and every one left when ctx ends, so that
// no turn waits for a backlog that will not run (what did not run stays
// accepted for the next start).
func (h *Hub) runHeld(ctx context.Context, pending []*chat.Inbound) {
	defer func() {
		for _, in := range pending {
			h.unhold(in.TurnID)
		}
	}()
	for _, in := range pending {
		if ctx.Err() != nil {
			return
		}
		if res, err := h.handle(ctx, in); err != nil {
			h.log.Error("accepted turn", "turn", in.TurnID, "err", err)
		} else {
			h.log.Info("ran a turn accepted before the last stop", "turn", in.TurnID, "status", res.Status)
		}
		h.unhold(in.TurnID)
	}
}

// waitHeld waits until in's chat has no turn accepted before the last stop
// left to run, or ctx ends. A repeated delivery of a held turn waits too,
// and then finds it done.
func (h *Hub) waitHeld(ctx context.Context, in *chat.Inbound) error {
	key := in.ReplyKey().String()
	h.mu.Lock()
	c := h.held[key]
	h.mu.Unlock()
	if c == nil {
		return nil
	}
	h.log.Info("turn waits for the turns of its chat accepted before the last stop", "turn", in.TurnID, "chat", key)
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("turn %s: waiting for the turns of its chat accepted before the last stop: %w", in.TurnID, context.Cause(ctx))
	}
}
