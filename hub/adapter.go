package hub

import (
	"context"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
)

// Adapter is one platform connection run by `hub serve`: it receives
// messages, normalises them into chat.Inbound, calls Hub.Handle, and
// acknowledges the platform only after Handle returned. It is attached to
// the runtime with its outbox.Sender and progress view as one Platform.
type Adapter interface {
	// Name is the platform's name: telegram, discord, web.
	Name() string
	// Run receives until ctx is done, then returns nil (or the error that
	// stopped it for good).
	Run(ctx context.Context) error
}

// State is an adapter's health as the status page, hub doctor and the
// readiness probe show it.
type State string

// Adapter states.
const (
	// StateStarting: the adapter is connecting for the first time.
	StateStarting State = "starting"
	// StateRunning: the adapter receives and delivers.
	StateRunning State = "running"
	// StateDegraded: the adapter is retrying (the platform is down, a turn
	// could not be recorded); it recovers on its own.
	StateDegraded State = "degraded"
	// StateStopped: the adapter does not run (it stopped, or failed for
	// good: the detail says why).
	StateStopped State = "stopped"
)

// States are every adapter state, in the order above.
var States = []State{StateStarting, StateRunning, StateDegraded, StateStopped}

// Ready reports whether an adapter in state s counts as serving: running,
// or degraded while it retries.
func (s State) Ready() bool { return s == StateRunning || s == StateDegraded }

// AdapterState is an adapter's health, for GET /api/status and hub doctor.
type AdapterState struct {
	Name   string    `json:"name"`
	State  State     `json:"state"`
	Detail string    `json:"detail,omitempty"`
	Since  time.Time `json:"since"`
}

// StateBoard collects adapter states; adapters report into it through a
// Reporter each. The zero value uses the real clock.
type StateBoard struct {
	Clock clock.Clock

	mu     sync.Mutex
	states map[string]AdapterState
}

// Reporter is one adapter's line on a StateBoard: the status reporter an
// adapter receives.
type Reporter struct {
	b    *StateBoard
	name string
}

// Reporter returns the reporter of the adapter called name.
func (b *StateBoard) Reporter(name string) Reporter { return Reporter{b: b, name: name} }

// Report records the adapter's state and a detail for people. A zero
// Reporter reports nowhere.
func (r Reporter) Report(state State, detail string) {
	if r.b != nil {
		r.b.Set(r.name, state, detail)
	}
}

// Set records an adapter's state; Since changes only when State does.
func (b *StateBoard) Set(name string, state State, detail string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.states == nil {
		b.states = map[string]AdapterState{}
	}
	old, ok := b.states[name]
	clk := b.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	since := clk.Now().UTC()
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
