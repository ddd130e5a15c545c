package outbox

import (
	"fmt"
	"strings"
	"sync"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// Mux chooses the Sender for a target. Patterns are a target kind ("web",
// "local", "chat") or "chat:<platform>" for a chat platform of chat.Specs
// ("chat:telegram", "chat:discord");
// "chat:<platform>" is preferred over "chat". It is safe for concurrent use.
type Mux struct {
	mu sync.RWMutex
	m  map[string]Sender
}

// AcceptedPatterns is shown in every Handle error.
var AcceptedPatterns = "accepted patterns: web, local, chat" + chatPatterns()

// chatPatterns lists ", chat:<platform>" for every chat platform.
func chatPatterns() string {
	var b strings.Builder
	for _, s := range chat.Specs() {
		b.WriteString(", " + PatternOf(chat.ChatKey(s.Name, "", "")))
	}
	return b.String()
}

// PatternOf is the most specific pattern that matches k: web, local or
// chat:<platform>.
func PatternOf(k chat.Key) string {
	if k.Kind == chat.KindChat {
		return "chat:" + string(k.Platform)
	}
	return string(k.Kind)
}

// validPattern reports whether Handle accepts pattern.
func validPattern(pattern string) bool {
	switch pattern {
	case "web", "local", "chat":
		return true
	}
	p, ok := strings.CutPrefix(pattern, "chat:")
	if !ok {
		return false
	}
	_, ok = chat.SpecOf(chat.Platform(p))
	return ok
}

// NewMux returns an empty Mux: every target has no sender until Handle.
func NewMux() *Mux { return &Mux{m: map[string]Sender{}} }

// Handle registers s for the targets pattern matches, replacing any sender
// registered for the same pattern.
func (m *Mux) Handle(pattern string, s Sender) error {
	if !validPattern(pattern) {
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
