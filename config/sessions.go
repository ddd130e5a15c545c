package config

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// Sessions configures per-conversation session workspaces.
type Sessions struct {
	Mode    string            `yaml:"mode"`     // host (default) or session
	ByChat  map[string]string `yaml:"by_chat"`  // chat key → host|session
	ByRole  map[string]string `yaml:"by_role"`  // role → host|session
	Root    string            `yaml:"root"`     // "state" (default) or "temp"
	IdleTTL Duration          `yaml:"idle_ttl"` // idle sessions expire
	SnapTTL Duration          `yaml:"snapshot_ttl"`
	// MaxSnapshots per session; taking one more removes the oldest.
	MaxSnapshots int `yaml:"max_snapshots"`
	// SweepInterval is how often expired sessions and snapshots are removed.
	SweepInterval Duration `yaml:"sweep_interval"`
	// AllowProc lets proc.run run in session workspaces (off: a process is
	// not confined to its directory).
	AllowProc bool     `yaml:"allow_proc"`
	Allowed   []string `yaml:"mount_roots"`
	Mounts    []Mount  `yaml:"mounts"`
}

// Mount copies host files into every new session.
type Mount struct {
	HostPath       string   `yaml:"host_path"`
	MountPath      string   `yaml:"mount_path"`
	Include        []string `yaml:"include"`
	Exclude        []string `yaml:"exclude"`
	MaxBytes       Size     `yaml:"max_bytes"`
	FollowSymlinks bool     `yaml:"follow_symlinks"`
}

// SessionsDir is the directory holding session workspaces: <state_dir>/sessions
// for root "state", or hermes-hub-sessions-<uid> in the system temporary
// directory for root "temp".
func (c *Config) SessionsDir() string {
	if c.Sessions.Root == "temp" {
		return filepath.Join(os.TempDir(), fmt.Sprintf("hermes-hub-sessions-%d", os.Getuid()))
	}
	return filepath.Join(c.StateDir, "sessions")
}

func (s *Sessions) applyDefaults(*Config) {
	setDefault(&s.Mode, "host")
	setDefault(&s.Root, "state")
	setDefault(&s.IdleTTL, Duration(24*time.Hour))
	setDefault(&s.SnapTTL, Duration(168*time.Hour))
	setDefault(&s.MaxSnapshots, 20)
	setDefault(&s.SweepInterval, Duration(5*time.Minute))
}

func (s *Sessions) validate(c *Config, v *validator) {
	v.oneOf("sessions.mode", s.Mode, "host", "session")
	v.oneOf("sessions.root", s.Root, "state", "temp")
	for _, k := range sortedKeys(s.ByChat) {
		v.oneOf("sessions.by_chat."+k, s.ByChat[k], "host", "session")
		// Turns are matched by their canonical key, so only that form would
		// ever apply: anything else is refused rather than silently unused.
		if key, err := chat.ParseKey(k); err != nil || key.Kind == chat.KindLocal || key.String() != k {
			v.badAt("sessions.by_chat."+k, "sessions.by_chat", ": %q is not a chat key (accepted: web, chat:telegram:<chat_id>[:<thread_id>], chat:discord:<channel_id>)", k)
		}
	}
	for _, r := range sortedKeys(s.ByRole) {
		v.oneOf("sessions.by_role."+r, s.ByRole[r], "host", "session")
		if !c.roleKnown(r) {
			v.badAt("sessions.by_role."+r, "sessions.by_role", ": role %q is not defined (define it under access.roles, or use reader)", r)
		}
	}
	for _, t := range []struct {
		key string
		d   Duration
	}{{"sessions.idle_ttl", s.IdleTTL}, {"sessions.snapshot_ttl", s.SnapTTL}, {"sessions.sweep_interval", s.SweepInterval}} {
		if t.d <= 0 {
			v.badAt(t.key, "sessions.idle_ttl", ", sessions.snapshot_ttl and sessions.sweep_interval must be positive")
			break
		}
	}
	if s.MaxSnapshots < 1 {
		v.bad("sessions.max_snapshots", " must be at least 1")
	}
	s.validateMounts(v)
}

// validateMounts checks the mounts and the roots they may come from.
func (s *Sessions) validateMounts(v *validator) {
	for i, r := range s.Allowed {
		if r == "" {
			v.bad(item("sessions.mount_roots", i), " is empty")
		}
	}
	if len(s.Mounts) > 0 && len(s.Allowed) == 0 {
		v.bad("sessions.mounts", " need sessions.mount_roots: list the host directories mounts may come from")
	}
	for i, m := range s.Mounts {
		key := item("sessions.mounts", i) + ".host_path"
		if m.HostPath == "" {
			v.bad(key, " is empty")
		}
		for _, ch := range m.HostPath {
			if ch < 0x20 || ch >= 0x7f {
				v.bad(key, " %q must be printable ASCII", m.HostPath)
				break
			}
		}
	}
}
