package hub

import (
	"errors"
	"fmt"
	"slices"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// Platform is one chat platform as `hub serve` runs it: the adapter that
// receives its messages, the sender of its chunks and the view of its
// progress, attached to the runtime once (Runtime.Attach). How its chats
// are spelled and how long its messages may be are the platform's row in
// chat.Specs, which the configuration and the command line read where no
// adapter runs.
type Platform struct {
	// Name is the platform as keys and inbound messages name it: a chat
	// platform of chat.Specs, or chat.Web for the panel.
	Name chat.Platform
	// Adapter receives the platform's messages; its Name is Name.
	Adapter Adapter
	// Sender delivers the outbox's chunks for the platform's targets
	// (chat:<name>:…, or web for the panel).
	Sender outbox.Sender
	// Progress shows the progress of long calls from the platform; nil
	// shows none.
	Progress ProgressView
	// Files fetches the files people send on the platform (files.go); nil:
	// a file that comes with a message cannot be saved.
	Files FileSource
}

// acceptedPlatforms lists the names Attach takes, for its errors.
func acceptedPlatforms() string {
	s := "accepted: " + string(chat.Web)
	for _, p := range chat.Specs() {
		s += ", " + string(p.Name)
	}
	return s
}

// targets is the key of the platform's targets in the outbox's mux.
func (p Platform) targets() (chat.Key, error) {
	if p.Name == chat.Web {
		return chat.WebKey, nil
	}
	if _, ok := chat.SpecOf(p.Name); !ok {
		return chat.Key{}, fmt.Errorf("unknown platform %q (%s)", p.Name, acceptedPlatforms())
	}
	return chat.ChatKey(p.Name, "", ""), nil
}

// Attach makes p part of the runtime, once and before Start: its sender
// delivers the outbox's chunks for its targets, its view shows the
// progress of its calls (and finalises what a previous run left, at
// Start), and its adapter is among those Platforms returns for `hub serve`
// to run.
func (rt *Runtime) Attach(p Platform) error {
	k, err := p.targets()
	switch {
	case err != nil:
		return fmt.Errorf("attach platform: %w", err)
	case p.Adapter == nil || p.Sender == nil:
		return fmt.Errorf("attach platform %s: it needs an adapter and a sender", p.Name)
	case p.Adapter.Name() != string(p.Name):
		return fmt.Errorf("attach platform %s: its adapter is named %q", p.Name, p.Adapter.Name())
	}
	rt.platformsMu.Lock()
	defer rt.platformsMu.Unlock()
	if rt.Running() {
		return fmt.Errorf("attach platform %s: the runtime has started; attach every platform before Start", p.Name)
	}
	if slices.ContainsFunc(rt.platforms, func(q Platform) bool { return q.Name == p.Name }) {
		return fmt.Errorf("attach platform %s: %w", p.Name, errAttached)
	}
	if err := rt.Mux.Handle(outbox.PatternOf(k), p.Sender); err != nil {
		return fmt.Errorf("attach platform %s: %w", p.Name, err)
	}
	if p.Progress != nil {
		rt.Hub.SetProgressView(p.Name, p.Progress)
	}
	if p.Files != nil {
		rt.Hub.SetFileSource(p.Name, p.Files)
	}
	rt.platforms = append(rt.platforms, p)
	return nil
}

// errAttached refuses a platform attached twice: one name has one sender
// and one view.
var errAttached = errors.New("it is attached already")

// Platforms returns the attached platforms, in the order attached.
func (rt *Runtime) Platforms() []Platform {
	rt.platformsMu.Lock()
	defer rt.platformsMu.Unlock()
	return slices.Clone(rt.platforms)
}
