package hub

import (
	"context"
	"sync"
	"time"
)

// Adapter is one platform connection run by `hub serve`: it receives
// messages, normalises them into chat.Inbound, calls Hub.Handle, and
// acknowledges the platform only after Handle returned. Its outbox.Sender
// is registered separately.
type Adapter interface {
	// Name is the platform's name: telegram, discord, web.
	Name() string
	// Run receives until ctx is done, then returns nil (or the error that
	// stopped it for good).
	Run(ctx context.Context) error
}

// AdapterState is an adapter's health, for GET /api/status and hub doctor.
type AdapterState struct {
	Name   string    `json:"name"`
	State  string    `json:"state"` // starting, running, degraded, stopped
	Detail string    `json:"detail,omitempty"`
	Since  time.Time `json:"since"`
}

// StateBoard collects adapter states; adapters report into it.
type StateBoard struct {
	mu     sync.Mutex
	states map[string]AdapterState
}

// Set records an adapter's state; Since changes only when State does.
func (b *StateBoard) Set(name, state, detail string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.states == nil {
		b.states = map[string]AdapterState{}
	}
	old, ok := b.states[name]
	since := time.Now().UTC()
	if ok && old.State == state {
		since = old.Since
	}
	b.states[name] = AdapterState{Name: name, State: state, Detail: detail, Since: since}
}

// All returns every adapter's state.
func (b *StateBoard) All() []AdapterState {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]AdapterState, 0, len(b.states))
	for _, s := range b.states {
		out = append(out, s)
	}
	return out
}
