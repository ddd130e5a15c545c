package outbox

import (
	"fmt"
	"strings"
	"sync"
)

// Mux chooses the Sender for a target. Patterns are a target kind ("web",
// "local", "chat") or "chat:<platform>" ("chat:telegram", "chat:discord");
// "chat:<platform>" is preferred over "chat". It is safe for concurrent use.
type Mux struct {
	mu sync.RWMutex
	m  map[string]Sender
}

// AcceptedPatterns is shown in every Handle error.
const AcceptedPatterns = "accepted patterns: web, local, chat, chat:telegram, chat:discord"

// NewMux returns an empty Mux: every target has no sender until Handle.
func NewMux() *Mux { return &Mux{m: map[string]Sender{}} }

// Handle registers s for the targets pattern matches, replacing any sender
// registered for the same pattern.
func (m *Mux) Handle(pattern string, s Sender) error {
	switch pattern {
	case "web", "local", "chat", "chat:telegram", "chat:discord":
	default:
		return fmt.Errorf("outbox mux: unknown pattern %q (%s)", pattern, AcceptedPatterns)
	}
	if s == nil {
		return fmt.Errorf("outbox mux: nil sender for pattern %q", pattern)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]Sender{}
	}
	m.m[pattern] = s
	return nil
}

// Sender returns the sender for a canonical target key, and false when none
// is registered.
func (m *Mux) Sender(target string) (Sender, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	switch {
	case target == "web":
		s, ok := m.m["web"]
		return s, ok
	case strings.HasPrefix(target, "local:"):
		s, ok := m.m["local"]
		return s, ok
	case strings.HasPrefix(target, "chat:"):
		if s, ok := m.m["chat:"+platformOf(target)]; ok {
			return s, true
		}
		s, ok := m.m["chat"]
		return s, ok
	}
	return nil, false
}
